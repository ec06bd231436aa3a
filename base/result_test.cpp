#include "base/result.h"

#include <gtest/gtest.h>
#include <memory>

namespace pp {
namespace {

Result<int> half(int x) {
  if (x % 2)
    return errorf(EINVAL, "%d is odd", x);
  return x / 2;
}

Result<int> quarter(int x) {
  PP_ASSIGN_OR_RETURN(int h, half(x));
  PP_ASSIGN_OR_RETURN(h, half(h));
  return h;
}

Status check_even(int x) {
  PP_RETURN_IF_ERROR(half(x));
  return ok_status();
}

TEST(Result, ValueAndError) {
  auto ok = half(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  auto bad = half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), EINVAL);
  EXPECT_EQ(bad.error().message(), "3 is odd");
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(Result, MacrosPropagateTheFirstError) {
  EXPECT_EQ(*quarter(8), 2);
  auto bad = quarter(6);  // 6/2 = 3 is odd
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "3 is odd");
  EXPECT_TRUE(check_even(2).ok());
  EXPECT_EQ(check_even(5).error().code(), EINVAL);
}

TEST(Result, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r(std::make_unique<int>(7));
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(Error, ContextAndErrno) {
  Error e = error_from_errno(ENOENT, "open /sys/x").with_context("reading PMU 'cpu'");
  EXPECT_EQ(e.code(), ENOENT);
  EXPECT_EQ(e.message(), "reading PMU 'cpu': open /sys/x: No such file or directory");
  EXPECT_EQ(errno_name(EACCES), "EACCES");
  EXPECT_EQ(errno_name(99999), "E99999");
}

}  // namespace
}  // namespace pp

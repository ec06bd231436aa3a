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

TEST(Error, TheKindDecidesTheExitStatusNotTheErrno) {
  EXPECT_EQ(Error(EINVAL, "syscall").kind(), ErrorKind::kRefused);
  EXPECT_EQ(Error(ENOENT, "syscall").kind(), ErrorKind::kRefused);
  EXPECT_EQ(usage_error("bad").kind(), ErrorKind::kUsage);
  EXPECT_EQ(usage_error("bad").code(), EINVAL);
  EXPECT_EQ(not_found_error("x").code(), ENOENT);
  EXPECT_EQ(name_taken_error("x").kind(), ErrorKind::kNameTaken);
  EXPECT_EQ(internal_error("x").kind(), ErrorKind::kInternal);
  Error e = errorf(ErrorKind::kOutput, ENOSPC, "writing %s", "perf.data").with_context("record");
  EXPECT_EQ(e.kind(), ErrorKind::kOutput) << "context keeps the kind";
  EXPECT_EQ(e.message(), "record: writing perf.data");
  EXPECT_EQ(e.with_kind(ErrorKind::kUsage).code(), ENOSPC) << "a new kind keeps the code";
}

TEST(Error, OneTableOfKindsNamesAndStatuses) {
  struct Row {
    ErrorKind kind;
    const char* name;
    int status;
  } rows[] = {
      {ErrorKind::kUsage, "usage", 1},          {ErrorKind::kRefused, "refused", 2},
      {ErrorKind::kNameTaken, "name-taken", 3}, {ErrorKind::kNotFound, "not-found", 4},
      {ErrorKind::kOutput, "output", 5},        {ErrorKind::kCommand, "command", 6},
      {ErrorKind::kInternal, "internal", 7},    {ErrorKind::kBrokerDown, "broker-down", 8},
      {ErrorKind::kConfig, "config", 9},
  };
  ASSERT_EQ(std::size(kErrorKinds), std::size(rows));
  for (const Row& r : rows) {
    EXPECT_EQ(kind_name(r.kind), r.name);
    EXPECT_EQ(exit_status_of(r.kind), r.status) << r.name;
    EXPECT_EQ(kind_from_name(r.name), r.kind);
    EXPECT_NE(exit_status_of(r.kind), 127) << "perf reads 127 as 'not a perf-command'";
  }
  EXPECT_FALSE(kind_from_name("nonsense"));
  EXPECT_EQ(errno_from_name("EEXIST"), EEXIST);
  EXPECT_EQ(errno_from_name(errno_name(EPROTO)), EPROTO);
  EXPECT_EQ(errno_from_name("ENOSUCH"), 0);
}

}  // namespace
}  // namespace pp

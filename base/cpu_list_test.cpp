#include "base/cpu_list.h"

#include <gtest/gtest.h>

namespace pp {
namespace {

TEST(CpuList, ParsesKernelNotation) {
  EXPECT_EQ(*parse_cpu_list("0-3,8\n"), (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(*parse_cpu_list("5"), (std::vector<int>{5}));
  EXPECT_EQ(*parse_cpu_list("3,1,1-2"), (std::vector<int>{1, 2, 3}));
}

TEST(CpuList, RejectsWithTheOffendingPart) {
  for (const char* bad : {"", "\n", "a", "1-", "-1", "3-1", "1,,2", "0x", "8192", "1-99999"}) {
    auto r = parse_cpu_list(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), EINVAL);
  }
  EXPECT_NE(parse_cpu_list("0-x").error().message().find("'x' is not a CPU number"),
            std::string::npos);
  EXPECT_NE(parse_cpu_list("3-1").error().message().find("runs backwards"), std::string::npos);
}

TEST(CpuList, FormatsShortest) {
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8}), "0-3,8");
  EXPECT_EQ(format_cpu_list({1, 3, 5}), "1,3,5");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(format_cpu_list(*parse_cpu_list("0-1,4-7,9")), "0-1,4-7,9");
}

}  // namespace
}  // namespace pp

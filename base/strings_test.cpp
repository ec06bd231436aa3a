#include "base/strings.h"

#include <cerrno>
#include <cstdint>
#include <gtest/gtest.h>

namespace pp {
namespace {

TEST(Strings, SplitKeepsEmptyFields) {
  auto parts = split("a,,b", ',');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0], "a");
  EXPECT_EQ(parts[1], "");
  EXPECT_EQ(parts[2], "b");
  EXPECT_EQ(split("", ',').size(), 1u);
}

TEST(Strings, CaseFoldingIsAsciiOnly) {
  EXPECT_EQ(ascii_lower("CLOCK_Monotonic-1"), "clock_monotonic-1");
  EXPECT_EQ(ascii_lower("\xc3\x89t\xc3\xa9"), "\xc3\x89t\xc3\xa9");  // UTF-8 bytes untouched
  EXPECT_TRUE(equal_ignoring_case("Processor Context Corrupt", "processor CONTEXT corrupt"));
  EXPECT_FALSE(equal_ignoring_case("mono", "monotonic"));
  EXPECT_FALSE(equal_ignoring_case("a[", "A{"));  // '[' and '{' differ by 0x20 but are not letters
  EXPECT_TRUE(equal_ignoring_case("", ""));
}

TEST(Strings, HexDigit) {
  EXPECT_EQ(hex_digit('0'), 0);
  EXPECT_EQ(hex_digit('9'), 9);
  EXPECT_EQ(hex_digit('a'), 10);
  EXPECT_EQ(hex_digit('F'), 15);
  EXPECT_EQ(hex_digit('g'), -1);
  EXPECT_EQ(hex_digit('x'), -1);
  EXPECT_EQ(hex_digit('\0'), -1);
}

TEST(Strings, ParseDurationMs) {
  EXPECT_EQ(*parse_duration_ms("500ms"), 500u);
  EXPECT_EQ(*parse_duration_ms("1s"), 1000u);
  EXPECT_EQ(*parse_duration_ms("90m"), 5'400'000u);
  EXPECT_EQ(*parse_duration_ms("24h"), 86'400'000u);
  EXPECT_EQ(*parse_duration_ms("7 d"), 604'800'000u);
  EXPECT_EQ(*parse_duration_ms(" 2w "), 1'209'600'000u);
  EXPECT_EQ(*parse_duration_ms("0h"), 0u) << "zero is a duration; a window refuses it";
  for (const char* bad : {"", "h", "7", "7x", "1.5h", "-1s", "+1s", "1hh", "0x10s", "1 0s"}) {
    auto d = parse_duration_ms(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.error().kind(), ErrorKind::kUsage) << bad;
    EXPECT_EQ(d.error().code(), EINVAL) << bad;
  }
  EXPECT_NE(parse_duration_ms("x").error().message().find("ms, s, m, h, d or w"),
            std::string::npos);
  for (const char* huge : {"9999999999999999999999d", "999999999999999999d", "31000000000w"}) {
    auto d = parse_duration_ms(huge);
    ASSERT_FALSE(d.ok()) << huge;
    EXPECT_EQ(d.error().code(), ERANGE) << huge;
  }
  EXPECT_EQ(*parse_duration_ms("18446744073709551615ms"), UINT64_MAX);
}

TEST(Strings, Trim) {
  EXPECT_EQ(trim("  x y\n"), "x y");
  EXPECT_EQ(trim("\n\t "), "");
}

struct U64Case {
  const char* text;
  bool ok;
  uint64_t value;
  int code;
};

class ParseU64 : public ::testing::TestWithParam<U64Case> {};

TEST_P(ParseU64, Cases) {
  const U64Case& c = GetParam();
  auto r = parse_u64(c.text, "value");
  ASSERT_EQ(r.ok(), c.ok) << c.text;
  if (c.ok)
    EXPECT_EQ(*r, c.value);
  else
    EXPECT_EQ(r.error().code(), c.code);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseU64,
    ::testing::Values(U64Case{"0", true, 0, 0}, U64Case{"106", true, 106, 0},
                      U64Case{"010", true, 10, 0}, U64Case{"0x6a", true, 0x6a, 0},
                      U64Case{"0XFF", true, 0xff, 0},
                      U64Case{"18446744073709551615", true, UINT64_MAX, 0},
                      U64Case{"0xffffffffffffffff", true, UINT64_MAX, 0},
                      U64Case{"18446744073709551616", false, 0, ERANGE},
                      U64Case{"0x10000000000000000", false, 0, ERANGE},
                      U64Case{"", false, 0, EINVAL}, U64Case{"0x", false, 0, EINVAL},
                      U64Case{"-1", false, 0, EINVAL}, U64Case{" 1", false, 0, EINVAL},
                      U64Case{"12a", false, 0, EINVAL}, U64Case{"0xg", false, 0, EINVAL}));

TEST(Strings, EditDistanceCountsSwapsAsOne) {
  EXPECT_EQ(edit_distance("list", "list"), 0u);
  EXPECT_EQ(edit_distance("lsit", "list"), 1u);
  EXPECT_EQ(edit_distance("lis", "list"), 1u);
  EXPECT_EQ(edit_distance("kill", "list"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

TEST(Strings, NearestWord) {
  std::vector<std::string> verbs = {"list", "create", "kill", "record", "daemon"};
  EXPECT_EQ(nearest_word("lsit", verbs), "list");
  EXPECT_EQ(nearest_word("craete", verbs), "create");
  EXPECT_EQ(nearest_word("rec", verbs), "record");
  EXPECT_EQ(nearest_word("frobnicate", verbs), "");
}

}  // namespace
}  // namespace pp

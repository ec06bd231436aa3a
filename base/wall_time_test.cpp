#include "base/wall_time.h"

#include <gtest/gtest.h>

namespace pp {
namespace {

constexpr uint64_t kSecond = 1000000000ULL;
constexpr uint64_t kDec3 = 1764720000ULL * kSecond;  // 2025-12-03T00:00:00Z

TEST(WallTime, FormatsUtcWithNineDigits) {
  EXPECT_EQ(format_wall_time(0), "1970-01-01T00:00:00.000000000Z");
  EXPECT_EQ(format_wall_time(kDec3 + 50700 * kSecond + 1), "2025-12-03T14:05:00.000000001Z");
  EXPECT_EQ(format_wall_time(951782400ULL * kSecond), "2000-02-29T00:00:00.000000000Z");
}

TEST(WallTime, ParsesIsoTimes) {
  struct Case {
    const char* text;
    uint64_t ns;
  } cases[] = {
      {"2025-12-03T14:05:00Z", kDec3 + 50700 * kSecond},
      {"2025-12-03T14:05:00", kDec3 + 50700 * kSecond},  // no zone: UTC
      {"2025-12-03T15:05:00+01:00", kDec3 + 50700 * kSecond},
      {"2025-12-03T09:35:00-04:30", kDec3 + 50700 * kSecond},
      {"2025-12-03T14:05:00.5Z", kDec3 + 50700 * kSecond + kSecond / 2},
      {"2025-12-03T14:05:00.123456789123Z", kDec3 + 50700 * kSecond + 123456789},
      {"1970-01-01T00:00:00Z", 0},
      {"2000-02-29T00:00:00Z", 951782400ULL * kSecond},
      {"2554-07-21T23:34:33.709551615Z", UINT64_MAX},
  };
  for (const Case& c : cases) {
    auto t = parse_wall_time(c.text);
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.error().message();
    EXPECT_EQ(*t, c.ns) << c.text;
  }
  // Printed and read back, a time is itself.
  for (uint64_t ns : {uint64_t(0), kDec3 + 123456789, uint64_t(4102444799999999999ULL)})
    EXPECT_EQ(parse_wall_time(format_wall_time(ns)).value(), ns) << ns;
}

TEST(WallTime, RefusesWhatIsNoTime) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"2025-12-03 14:05:00Z", "is not an ISO 8601 time such as 2026-12-03T14:05:00Z"},
      {"2025-12-03T14:05Z", "is not an ISO 8601 time"},
      {"2025-12-3T14:05:00Z", "is not an ISO 8601 time"},
      {"2025-12-03T 4:05:00Z", "is not an ISO 8601 time"},
      {"2025-12-03T14:05:00.Z", "is not an ISO 8601 time"},
      {"2025-12-03T14:05:00+1:00", "is not an ISO 8601 time"},
      {"2025-12-03T14:05:00+01:60", "is not an ISO 8601 time"},
      {"2025-12-03T14:05:00 Z", "is not an ISO 8601 time"},
      {"2025-02-29T00:00:00Z", "there is no day 2025-02-29"},
      {"2025-13-01T00:00:00Z", "there is no day 2025-13-01"},
      {"2025-12-03T24:00:00Z", "there is no time of day 24:00:00"},
      {"2025-12-03T23:59:60Z", "there is no time of day 23:59:60"},
      {"1969-12-31T23:59:59Z", "outside the times"},
      {"1970-01-01T00:30:00+01:00", "outside the times"},
      {"9999-12-31T00:00:00Z", "outside the times"},
  };
  for (const Case& c : cases) {
    auto t = parse_wall_time(c.text);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.error().kind(), ErrorKind::kUsage) << c.text;
    EXPECT_NE(t.error().message().find(c.message), std::string::npos)
        << c.text << ": " << t.error().message();
    EXPECT_NE(t.error().message().find(c.text), std::string::npos) << t.error().message();
  }
}

TEST(WallTime, ParsesDates) {
  EXPECT_EQ(parse_wall_date("2025-12-03").value(), kDec3);
  EXPECT_EQ(parse_wall_date("1970-01-01").value(), 0u);
  EXPECT_EQ(parse_wall_date("2024-02-29").value(), 1709164800ULL * kSecond);
  for (const char* bad : {"2025-02-29", "2025-00-10", "2025-1-10", "2025/12/03", "20251203"})
    EXPECT_FALSE(parse_wall_date(bad).ok()) << bad;
}

}  // namespace
}  // namespace pp

#include "base/wall_time.h"

#include <cstdio>
#include <ctime>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace pp {
namespace {

constexpr uint64_t kSecond = 1000000000ULL;
constexpr uint64_t kDec3 = 1764720000ULL * kSecond;  // 2025-12-03T00:00:00Z

TEST(WallTime, FormatsUtcWithNineDigits) {
  EXPECT_EQ(format_wall_time(0), "1970-01-01T00:00:00.000000000Z");
  EXPECT_EQ(format_wall_time(kDec3 + 50700 * kSecond + 1), "2025-12-03T14:05:00.000000001Z");
  EXPECT_EQ(format_wall_time(951782400ULL * kSecond), "2000-02-29T00:00:00.000000000Z");
}

// The text is gmtime's and strftime's (what format_wall_time() wrote
// before it did the calendar itself) at every kind of boundary across the
// whole range: days, months, leap days of 2000 and 2400, 2100 that has
// none, the last ns that fits in 64 bits, and a walk of odd strides.
TEST(WallTime, FormatsAsGmtimeDoes) {
  auto expected = [](uint64_t ns) {
    time_t secs = time_t(ns / kSecond);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[48];
    size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(buf + n, sizeof(buf) - n, ".%09lluZ",
                  static_cast<unsigned long long>(ns % kSecond));
    return std::string(buf);
  };
  std::vector<uint64_t> times = {0,
                                 kSecond - 1,
                                 86399 * kSecond + 999999999,
                                 86400 * kSecond,
                                 951782400ULL * kSecond - 1,   // 2000-02-28T23:59:59.999999999
                                 951868800ULL * kSecond,       // 2000-03-01
                                 4107542400ULL * kSecond - 1,  // 2100-02-28T23:59:59.999999999
                                 4107542400ULL * kSecond,      // 2100-03-01
                                 13574563200ULL * kSecond,     // 2400-02-29
                                 UINT64_MAX,
                                 UINT64_MAX - kSecond};
  for (uint64_t ns = 0; ns < UINT64_MAX - 7919ULL * 86400 * kSecond;
       ns += 7919ULL * 86400 * kSecond + 3600 * kSecond + 61 * kSecond + 123456789)
    times.push_back(ns);
  for (uint64_t ns : times)
    EXPECT_EQ(format_wall_time(ns), expected(ns)) << ns;
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

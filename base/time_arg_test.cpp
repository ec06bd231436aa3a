#include "base/time_arg.h"

#include <gtest/gtest.h>
#include <string>

namespace pp {
namespace {

constexpr uint64_t kSecond = 1000000000ULL;
constexpr uint64_t kHour = 3600 * kSecond;
constexpr uint64_t kDec3 = 1764720000ULL * kSecond;  // 2025-12-03T00:00:00Z
constexpr uint64_t kNow = kDec3 + 15 * kHour;        // 2025-12-03T15:00:00Z

struct Good {
  const char* text;
  TraceSeconds seconds;
  TimeBase base;
  uint64_t ns;
};

class TimeArgGood : public testing::TestWithParam<Good> {};

TEST_P(TimeArgGood, Reads) {
  const Good& c = GetParam();
  auto t = parse_time_arg(c.text, kNow, c.seconds);
  ASSERT_TRUE(t.ok()) << c.text << ": " << t.error().message();
  EXPECT_EQ(t->base, c.base) << c.text;
  EXPECT_EQ(t->ns, c.ns) << c.text;
}

constexpr auto kTrace = TraceSeconds::kAccepted;
constexpr auto kWallOnly = TraceSeconds::kRefused;
constexpr auto kWall = TimeBase::kWall;
constexpr auto kClock = TimeBase::kTraceClock;

// Every form means the same on both paths, but perf's seconds, which only
// records with a clock of their own have.
INSTANTIATE_TEST_SUITE_P(
    Cases, TimeArgGood,
    testing::Values(
        Good{"2025-12-03T10:00:00Z", kTrace, kWall, kDec3 + 10 * kHour},
        Good{"2025-12-03T10:00:00Z", kWallOnly, kWall, kDec3 + 10 * kHour},
        Good{"2025-12-03T11:00:00.25+01:00", kWallOnly, kWall, kDec3 + 10 * kHour + kSecond / 4},
        Good{"2025-12-03", kTrace, kWall, kDec3}, Good{"2025-12-03", kWallOnly, kWall, kDec3},
        Good{"90s", kTrace, kWall, kNow - 90 * kSecond},
        Good{"90s", kWallOnly, kWall, kNow - 90 * kSecond},
        Good{"500ms", kWallOnly, kWall, kNow - kSecond / 2},
        Good{"90m", kWallOnly, kWall, kNow - 90 * 60 * kSecond},
        Good{"24h", kTrace, kWall, kNow - 24 * kHour},
        Good{"7 d", kWallOnly, kWall, kNow - 7 * 24 * kHour},
        Good{"2w", kWallOnly, kWall, kNow - 14 * 24 * kHour}, Good{"0h", kWallOnly, kWall, kNow},
        // Before the epoch, or past 64 bits of ms: from the start.
        Good{"999999d", kWallOnly, kWall, 0}, Good{"999999999999999999999d", kTrace, kWall, 0},
        Good{"18970.883561", kTrace, kClock, 18970883561000ULL},
        Good{"90", kTrace, kClock, 90 * kSecond}, Good{"5.", kTrace, kClock, 5 * kSecond},
        Good{"0.000000001", kTrace, kClock, 1}));

struct Bad {
  const char* text;
  TraceSeconds seconds;
  const char* message;
};

class TimeArgBad : public testing::TestWithParam<Bad> {};

TEST_P(TimeArgBad, IsAUsageErrorNamingTheText) {
  const Bad& c = GetParam();
  auto t = parse_time_arg(c.text, kNow, c.seconds);
  ASSERT_FALSE(t.ok()) << c.text;
  EXPECT_EQ(t.error().kind(), ErrorKind::kUsage) << c.text;
  EXPECT_NE(t.error().message().find("'" + std::string(c.text) + "'"), std::string::npos)
      << t.error().message();
  EXPECT_NE(t.error().message().find(c.message), std::string::npos)
      << c.text << ": " << t.error().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TimeArgBad,
    testing::Values(
        Bad{"", kWallOnly,
            "is not a time: give an ISO 8601 time (2026-12-03T14:05:00Z), a date "
            "(2026-12-03, from 00:00 UTC), or a duration before now (90m, 24h, "
            "7d; units ms, s, m, h, d, w)"},
        Bad{"yesterday", kTrace,
            "a duration before now (90m, 24h, 7d; units ms, s, m, h, d, w), or seconds on the "
            "records' clock as the lines show them (18970.883561)"},
        Bad{"yesterday", kWallOnly, "or a duration before now"},
        Bad{"7", kWallOnly,
            "a number alone is seconds on a trace's clock, which this input "
            "does not have (a duration takes its unit: 7s, 7h, 7d)"},
        Bad{"18970.883561", kWallOnly, "a number alone is seconds on a trace's clock"},
        Bad{"d", kWallOnly, "is not a time"}, Bad{"7x", kTrace, "is not a time"},
        Bad{"-7d", kWallOnly, "is not a time"}, Bad{"1.5h", kTrace, "is not a time"},
        Bad{"5.x", kTrace, "is not a time"}, Bad{".5", kTrace, "is not a time"},
        Bad{"5.1234567891", kTrace, "at most nine digits after the point"},
        Bad{"99999999999", kTrace, "is not a time on the records' clock"},
        Bad{"2026-13-45", kWallOnly, "there is no day 2026-13-45"},
        Bad{"2026-12-03T10:00", kTrace, "is not an ISO 8601 time"},
        Bad{"2026-12-03 10:00:00", kWallOnly, "is not an ISO 8601 time"}));

}  // namespace
}  // namespace pp

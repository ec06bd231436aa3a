#include "sys/clock.h"

#include <time.h>

#include <gtest/gtest.h>

namespace pp::sys {
namespace {

// Every spelling perf's -k takes.
TEST(Clock, PerfsNamesShortNamesPrefixesAndNumbers) {
  struct {
    const char* text;
    int id;
  } cases[] = {
      {"monotonic", CLOCK_MONOTONIC},
      {"monotonic_raw", CLOCK_MONOTONIC_RAW},
      {"realtime", CLOCK_REALTIME},
      {"boottime", CLOCK_BOOTTIME},
      {"tai", CLOCK_TAI},
      {"mono", CLOCK_MONOTONIC},
      {"raw", CLOCK_MONOTONIC_RAW},
      {"real", CLOCK_REALTIME},
      {"boot", CLOCK_BOOTTIME},
      {"CLOCK_MONOTONIC", CLOCK_MONOTONIC},
      {"clock_boottime", CLOCK_BOOTTIME},
      {"Clock_Tai", CLOCK_TAI},
      {"MONOTONIC_RAW", CLOCK_MONOTONIC_RAW},
      {"1", CLOCK_MONOTONIC},
      {"7", CLOCK_BOOTTIME},
      {"0", CLOCK_REALTIME},
      {"11", CLOCK_TAI},
  };
  for (const auto& c : cases) {
    auto id = parse_clockid(c.text);
    ASSERT_TRUE(id.ok()) << c.text << ": " << id.error().message();
    EXPECT_EQ(*id, c.id) << c.text;
  }
}

TEST(Clock, AnUnknownClockNamesTheOnesThereAre) {
  for (const char* text : {"", "CLOCK_", "wall", "2", "-1", "monotonic ", "CLOCK_mono_raw"}) {
    auto id = parse_clockid(text);
    ASSERT_FALSE(id.ok()) << text;
    EXPECT_EQ(id.error().kind(), ErrorKind::kUsage) << text;
    EXPECT_NE(id.error().message().find("monotonic (1), monotonic_raw (4), realtime (0), "
                                        "boottime (7), tai (11)"),
              std::string::npos)
        << id.error().message();
  }
}

TEST(Clock, NamesAndNmiSafety) {
  EXPECT_EQ(clock_name(CLOCK_BOOTTIME), "boottime");
  EXPECT_EQ(clock_name(99), "99");
  EXPECT_TRUE(clock_is_nmi_safe(CLOCK_MONOTONIC));
  EXPECT_TRUE(clock_is_nmi_safe(CLOCK_MONOTONIC_RAW));
  EXPECT_FALSE(clock_is_nmi_safe(CLOCK_BOOTTIME));
  EXPECT_EQ(kDefaultClockId, CLOCK_MONOTONIC);
}

// The pair brackets the clock reading between two wall-clock reads: the
// wall time kept lies between a read before and one after the call, and
// the clock's reading between its own reads around it.
TEST(Clock, APairIsTakenTogether) {
  for (const ClockInfo& c : kClocks) {
    timespec w0, c0, w1, c1;
    clock_gettime(CLOCK_REALTIME, &w0);
    clock_gettime(c.id, &c0);
    auto pair = read_clock_pair(c.id);
    clock_gettime(c.id, &c1);
    clock_gettime(CLOCK_REALTIME, &w1);
    ASSERT_TRUE(pair.ok()) << c.name << ": " << pair.error().message();
    auto ns = [](const timespec& t) { return uint64_t(t.tv_sec) * 1000000000ULL + t.tv_nsec; };
    EXPECT_GE(pair->wall_ns, ns(w0)) << c.name;
    EXPECT_LE(pair->wall_ns, ns(w1)) << c.name;
    EXPECT_GE(pair->clock_ns, ns(c0)) << c.name;
    EXPECT_LE(pair->clock_ns, ns(c1)) << c.name;
    EXPECT_LT(pair->window_ns, 1000000u) << c.name << ": two clock reads over a millisecond apart";
    EXPECT_EQ(pair->clockid, c.id) << c.name;
  }
  auto res = clock_resolution_ns(CLOCK_MONOTONIC);
  ASSERT_TRUE(res.ok());
  EXPECT_GE(*res, 1u);
  EXPECT_FALSE(clock_resolution_ns(-12345).ok());
}

// A time moves between the clocks by the pair's offset; a wall-clock time
// before the clock's zero is its zero.
TEST(Clock, APairConvertsBothWays) {
  ClockPair pair{.clockid = 1, .wall_ns = 1764770700000000000ULL, .clock_ns = 1000000000000ULL};
  EXPECT_EQ(pair.to_wall(1001000000001ULL), 1764770701000000001ULL);
  EXPECT_EQ(pair.to_clock(1764770701000000001ULL), 1001000000001ULL);
  EXPECT_EQ(pair.to_clock(pair.wall_ns - pair.clock_ns), 0u) << "the clock's zero";
  EXPECT_EQ(pair.to_clock(pair.wall_ns - pair.clock_ns - 1), 0u) << "before it";
  EXPECT_EQ(pair.to_clock(0), 0u);
  EXPECT_EQ(pair.to_clock(pair.to_wall(5)), 5u);
}

}  // namespace
}  // namespace pp::sys

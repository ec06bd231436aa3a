#include "record/pace.h"

#include <gtest/gtest.h>
#include <vector>

namespace pp::record {
namespace {

constexpr int64_t kMs = 1000000;  // nanoseconds

TEST(ReadPacer, AQuietSharedBufferIsCheckedBeforeABurstCouldFillHalfOfIt) {
  // 64 MiB at 128 MiB/s: half of it in 250 ms, so the flush interval bounds.
  ReadPacer big({.max_ms = 250}, {{uint64_t(64) << 20, true}});
  EXPECT_EQ(big.timeout_ms(), 250);
  // 4 MiB: half of it in 15.6 ms.
  ReadPacer four({.max_ms = 250}, {{uint64_t(4) << 20, true}});
  EXPECT_EQ(four.timeout_ms(), 15);
  // 512 KiB: 2 ms, but an idle reader wakes at most every idle_floor_ms.
  ReadPacer small({.max_ms = 250, .idle_floor_ms = 10}, {{512 << 10, true}});
  EXPECT_EQ(small.timeout_ms(), 10);
}

TEST(ReadPacer, APrivateQuietBufferWaitsForItsWakeup) {
  ReadPacer pacer({.max_ms = 250}, {{256 << 10, false}});
  EXPECT_EQ(pacer.timeout_ms(), 250);
  std::vector<uint64_t> written = {0};
  pacer.observe(written, 0);
  pacer.observe(written, 100 * kMs);
  EXPECT_EQ(pacer.timeout_ms(), 250);
}

TEST(ReadPacer, ABufferBeingWrittenIsReadWhenAQuarterOfItIsNewAtTheRateSeen) {
  ReadPacer pacer({.max_ms = 250}, {{uint64_t(64) << 20, true}, {uint64_t(4) << 20, false}});
  std::vector<uint64_t> written = {0, 0};
  pacer.observe(written, 0);
  // The 4 MiB private buffer gets 10 MiB in 100 ms: 100 MiB/s, a quarter of
  // it (1 MiB) in 10 ms.
  written[1] = uint64_t(10) << 20;
  pacer.observe(written, 100 * kMs);
  EXPECT_EQ(pacer.timeout_ms(), 10);
  EXPECT_NEAR(pacer.rate(1), double(100 << 20), 1.0);
}

TEST(ReadPacer, AFasterWriterShortensTheSleepDownToTheMinimum) {
  ReadPacer pacer({.max_ms = 250, .min_ms = 1}, {{64 << 10, false}});
  std::vector<uint64_t> written = {0};
  pacer.observe(written, 0);
  written[0] = uint64_t(1) << 30;  // 1 GiB in 10 ms
  pacer.observe(written, 10 * kMs);
  EXPECT_EQ(pacer.timeout_ms(), 1);
}

TEST(ReadPacer, APauseHalvesTheRateAtEachPassInsteadOfForgettingIt) {
  ReadPacer pacer({.max_ms = 250}, {{uint64_t(4) << 20, false}});
  std::vector<uint64_t> written = {0};
  pacer.observe(written, 0);
  written[0] = uint64_t(10) << 20;
  pacer.observe(written, 100 * kMs);  // 100 MiB/s: 10 ms
  EXPECT_EQ(pacer.timeout_ms(), 10);
  pacer.observe(written, 110 * kMs);  // nothing new: 50 MiB/s
  EXPECT_EQ(pacer.timeout_ms(), 20);
  pacer.observe(written, 130 * kMs);  // 25 MiB/s
  EXPECT_EQ(pacer.timeout_ms(), 40);
  for (int i = 0; i < 100; i++)
    pacer.observe(written, (200 + i) * kMs);
  EXPECT_EQ(pacer.timeout_ms(), 250);  // forgotten at last: the flush interval
}

TEST(ReadPacer, TheFirstPassOnlySetsTheBaseline) {
  ReadPacer pacer({.max_ms = 250}, {{uint64_t(4) << 20, false}});
  std::vector<uint64_t> written = {uint64_t(1) << 40};  // a snapshot's history
  pacer.observe(written, 5 * kMs);
  EXPECT_EQ(pacer.timeout_ms(), 250);
  EXPECT_EQ(pacer.rate(0), 0);
}

TEST(ReadPacer, TheSleepStaysWithinItsBounds) {
  ReadPacer none({.max_ms = 250}, {});
  EXPECT_EQ(none.timeout_ms(), 250);
  ReadPacer inverted({.max_ms = 0, .min_ms = 5}, {{4096, true}});
  EXPECT_EQ(inverted.timeout_ms(), 5);
}

}  // namespace
}  // namespace pp::record

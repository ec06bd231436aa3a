#include "watch/offline_policy.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace pp::watch {
namespace {

constexpr uint64_t kHour = uint64_t{3600} * 1000;
constexpr uint64_t kT0 = uint64_t{1796000000} * 1000;  // a wall time, in ms

// The pages one error asks for.
std::vector<uint64_t> pages_of(OfflineDecider& d, uint64_t address, uint64_t wall_ms,
                               uint32_t count = 1, std::string row = "") {
  std::vector<uint64_t> out;
  for (const OfflineRequest& r : d.add({address, wall_ms, count, std::move(row)}))
    out.push_back(r.pfn);
  return out;
}

using Pages = std::vector<uint64_t>;

PagePolicy with(OfflinePolicyKind kind, uint64_t n, uint64_t window_ms) {
  PagePolicy p = page_policy_preset(kind);
  p.threshold = {n, window_ms};
  return p;
}

TEST(OfflinePolicy, PresetsAreThePeersDefaults) {
  EXPECT_EQ(page_policy_preset(OfflinePolicyKind::kWindow).threshold.count, 2u);
  EXPECT_EQ(page_policy_preset(OfflinePolicyKind::kWindow).threshold.window_ms, 24 * kHour);
  // mcelog.conf [page] memory-ce-threshold = 2 / 24h.
  EXPECT_EQ(page_policy_preset(OfflinePolicyKind::kMcelog).threshold.count, 2u);
  EXPECT_EQ(page_policy_preset(OfflinePolicyKind::kMcelog).threshold.window_ms, 24 * kHour);
  // rasdaemon: PAGE_CE_THRESHOLD=50, PAGE_CE_REFRESH_CYCLE=24h.
  EXPECT_EQ(page_policy_preset(OfflinePolicyKind::kRasdaemon).threshold.count, 50u);
  EXPECT_EQ(page_policy_preset(OfflinePolicyKind::kRasdaemon).threshold.window_ms, 24 * kHour);
  // cec.c: action_threshold 2, decay_interval 24 h, MAX_ELEMS 512.
  PagePolicy cec = page_policy_preset(OfflinePolicyKind::kKernelCec);
  EXPECT_EQ(cec.threshold.count, 2u);
  EXPECT_EQ(cec.threshold.window_ms, 24 * kHour);
  EXPECT_EQ(cec.max_pages, 512u);
}

TEST(OfflinePolicy, ParsesNamesAndRefusesOthers) {
  EXPECT_EQ(*parse_offline_policy("kernel-cec", "--offline-policy"), OfflinePolicyKind::kKernelCec);
  auto bad = parse_offline_policy("cec", "--offline-policy");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kUsage);
  EXPECT_NE(bad.error().message().find("kernel-cec"), std::string::npos);
  EXPECT_FALSE(check_page_policy(with(OfflinePolicyKind::kKernelCec, 1024, kHour), "x").ok());
  EXPECT_TRUE(check_page_policy(with(OfflinePolicyKind::kKernelCec, 1023, kHour), "x").ok());
  EXPECT_TRUE(check_page_policy(with(OfflinePolicyKind::kRasdaemon, 5000, kHour), "x").ok());
}

TEST(OfflinePolicy, WindowAsksAtTheSecondErrorWithin24h) {
  OfflineDecider d(page_policy_preset(OfflinePolicyKind::kWindow), std::nullopt);
  EXPECT_EQ(pages_of(d, 0x1234040, kT0), Pages{});
  std::vector<OfflineRequest> r = d.add({0x1234fff, kT0 + 23 * kHour, 1, ""});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].pfn, 0x1234u);
  EXPECT_EQ(r[0].errors, 2u);
  EXPECT_EQ(r[0].reason, "2 corrected errors within 24h (policy window, 2 in 24h)");
  // Asked for once: the third error asks for nothing.
  EXPECT_EQ(pages_of(d, 0x1234000, kT0 + 24 * kHour), Pages{});
  EXPECT_TRUE(d.done(0x1234));
}

TEST(OfflinePolicy, WindowForgetsErrorsOlderThanTheWindow) {
  OfflineDecider d(page_policy_preset(OfflinePolicyKind::kWindow), std::nullopt);
  EXPECT_EQ(pages_of(d, 0x5000, kT0), Pages{});
  EXPECT_EQ(pages_of(d, 0x5000, kT0 + 24 * kHour), Pages{});  // exactly 24 h: not within
  EXPECT_EQ(pages_of(d, 0x6000, kT0 + 24 * kHour), Pages{});  // another page
  EXPECT_EQ(pages_of(d, 0x5000, kT0 + 47 * kHour), Pages{0x5});
}

// As a trigger's threshold: a record that comes late (harvested after live
// ones) counts at its own time, and one EDAC report of N errors is N.
TEST(OfflinePolicy, WindowCountsALateErrorAtItsTime) {
  OfflineDecider d(with(OfflinePolicyKind::kWindow, 3, 24 * kHour), std::nullopt);
  EXPECT_EQ(pages_of(d, 0x5000, kT0 + 30 * kHour), Pages{});
  EXPECT_EQ(pages_of(d, 0x5000, kT0), Pages{});               // 30 h before the newest
  EXPECT_EQ(pages_of(d, 0x5000, kT0 + 10 * kHour), Pages{});  // 20 h before: 2 within
  EXPECT_EQ(pages_of(d, 0x5000, kT0 + 20 * kHour), Pages{0x5});
  std::vector<OfflineRequest> r = d.add({0x6000, kT0, 3, ""});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].reason, "3 corrected errors within 24h (policy window, 3 in 24h)");
}

TEST(OfflinePolicy, McelogsLeakyBucketStartsAtTheFirstError) {
  // 3 in 24h: errors at 0, 23 h and 25 h; at 25 h the bucket (started at
  // 0) is a window old: floor(25/24 * 3) = 3 drained, it restarts with 1.
  // At 26 h it holds 2: no page, where the sliding window would ask (three
  // errors within 3 h).
  OfflineDecider mcelog(with(OfflinePolicyKind::kMcelog, 3, 24 * kHour), std::nullopt);
  OfflineDecider window(with(OfflinePolicyKind::kWindow, 3, 24 * kHour), std::nullopt);
  for (uint64_t h : {0, 23, 25}) {
    EXPECT_EQ(pages_of(mcelog, 0x7000, kT0 + h * kHour), Pages{}) << h;
    EXPECT_EQ(pages_of(window, 0x7000, kT0 + h * kHour), Pages{}) << h;
  }
  EXPECT_EQ(pages_of(mcelog, 0x7000, kT0 + 26 * kHour), Pages{});
  EXPECT_EQ(pages_of(window, 0x7000, kT0 + 26 * kHour), Pages{0x7});
  // The bucket restarted at 25 h: its third error within 24 h of that overflows.
  EXPECT_EQ(pages_of(mcelog, 0x7000, kT0 + 48 * kHour), Pages{0x7});
}

TEST(OfflinePolicy, McelogsDefaultAsksAtTheSecondErrorOfTheBucket) {
  OfflineDecider d(page_policy_preset(OfflinePolicyKind::kMcelog), std::nullopt);
  EXPECT_EQ(pages_of(d, 0x9000, kT0), Pages{});
  EXPECT_EQ(pages_of(d, 0x9000, kT0 + 24 * kHour), Pages{});  // drained 2, then 1
  EXPECT_EQ(pages_of(d, 0x9000, kT0 + 24 * kHour + 1000), Pages{0x9});
}

TEST(OfflinePolicy, RasdaemonDrainsInProportionAndCountsEdacsErrorCount) {
  OfflineDecider d(page_policy_preset(OfflinePolicyKind::kRasdaemon), std::nullopt);
  EXPECT_EQ(pages_of(d, 0xa000, kT0, 40), Pages{});
  // 36 h later: floor(1.5 * 50) = 75 drained (to 0), then 10.
  EXPECT_EQ(pages_of(d, 0xa000, kT0 + 36 * kHour, 10), Pages{});
  EXPECT_EQ(pages_of(d, 0xa000, kT0 + 37 * kHour, 39), Pages{});  // 49
  std::vector<OfflineRequest> r = d.add({0xa000, kT0 + 38 * kHour, 1, ""});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].errors, 50u);
  EXPECT_NE(r[0].reason.find("policy rasdaemon"), std::string::npos);
  // A bucket half a window past its start is not drained: 12 h after a
  // start, 49 + 1 still overflows.
  OfflineDecider e(page_policy_preset(OfflinePolicyKind::kRasdaemon), std::nullopt);
  EXPECT_EQ(pages_of(e, 0xb000, kT0, 49), Pages{});
  EXPECT_EQ(pages_of(e, 0xb000, kT0 + 12 * kHour), Pages{0xb});
}

TEST(OfflinePolicy, KernelCecCountsNeverDecay) {
  OfflineDecider d(page_policy_preset(OfflinePolicyKind::kKernelCec), std::nullopt);
  EXPECT_EQ(pages_of(d, 0xc000, kT0), Pages{});
  // Thirty days later the count is still 1: the second error acts.
  std::vector<OfflineRequest> r = d.add({0xc000, kT0 + uint64_t{30} * 24 * kHour, 1, ""});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].reason, "2 corrected errors reached the action threshold 2 (policy kernel-cec)");
  EXPECT_EQ(d.pages(), 0u);  // the entry is freed
  // One error per report, whatever EDAC's count says.
  EXPECT_EQ(pages_of(d, 0xd000, kT0, 7), Pages{});
}

TEST(OfflinePolicy, KernelCecPoolEvictsTheOldestGenerationThenTheLowestPage) {
  OfflineDecider d(page_policy_preset(OfflinePolicyKind::kKernelCec), std::nullopt);
  // 512 pages, one error each: every 128 insertions age the pool, so pages
  // 1..256 end at generation 0, 257..384 at 1, 385..512 at 2.
  for (uint64_t pfn = 1; pfn <= 512; pfn++)
    ASSERT_EQ(pages_of(d, pfn << 12, kT0), Pages{});
  EXPECT_EQ(d.pages(), 512u);
  EXPECT_EQ(pages_of(d, uint64_t{1000} << 12, kT0), Pages{});  // evicts page 1
  EXPECT_EQ(d.pages(), 512u);
  EXPECT_EQ(d.evicted(), 1u);
  EXPECT_EQ(pages_of(d, uint64_t{1} << 12, kT0), Pages{});   // forgotten: count 1 again
  EXPECT_EQ(pages_of(d, uint64_t{3} << 12, kT0), Pages{3});  // page 2 went, 3 stayed
  EXPECT_EQ(pages_of(d, uint64_t{2} << 12, kT0), Pages{});
  EXPECT_EQ(pages_of(d, uint64_t{512} << 12, kT0), Pages{512});
}

TEST(OfflinePolicy, KernelCecDecayIntervalAgesEntries) {
  PagePolicy p = page_policy_preset(OfflinePolicyKind::kKernelCec);
  p.max_pages = 4;  // a small pool shows the order
  OfflineDecider d(p, std::nullopt);
  pages_of(d, 0x500000, kT0);
  pages_of(d, 0x600000, kT0);
  // A day later the pool decays once: 0x500 and 0x600 are older than the
  // pages entered now, whatever their numbers.
  pages_of(d, 0x100000, kT0 + 25 * kHour);
  pages_of(d, 0x200000, kT0 + 25 * kHour);
  pages_of(d, 0x900000, kT0 + 25 * kHour);  // a full pool: evicts 0x500
  EXPECT_EQ(pages_of(d, 0x100000, kT0 + 26 * kHour), Pages{0x100});
  EXPECT_EQ(pages_of(d, 0x600000, kT0 + 26 * kHour), Pages{0x600});
  EXPECT_EQ(pages_of(d, 0x500000, kT0 + 26 * kHour), Pages{});  // was evicted
}

TEST(OfflinePolicy, RowIsolationAsksForEveryPageOfTheRow) {
  PagePolicy p = page_policy_preset(OfflinePolicyKind::kWindow);
  p.threshold = {100, 24 * kHour};  // the page rule stays quiet
  OfflineDecider d(p, Threshold{3, kHour});
  const std::string row = "DIMM_A1 rank 0 bank 1 row 0x1d26";
  EXPECT_EQ(pages_of(d, 0x10000, kT0, 1, row), Pages{});
  EXPECT_EQ(pages_of(d, 0x20000, kT0 + 1000, 1, row), Pages{});
  EXPECT_EQ(pages_of(d, 0x30000, kT0 + 1000, 1, "DIMM_B1 rank 0 bank 1 row 0x1d26"), Pages{});
  std::vector<OfflineRequest> r = d.add({0x30000, kT0 + 2000, 1, row});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].pfn, 0x10u);
  EXPECT_EQ(r[1].pfn, 0x20u);
  EXPECT_EQ(r[2].pfn, 0x30u);
  EXPECT_TRUE(r[0].row);
  EXPECT_EQ(r[0].reason,
            "row DIMM_A1 rank 0 bank 1 row 0x1d26: 3 corrected errors within 1h (row threshold 3 "
            "in 1h)");
  // A page of the isolated row seen later is asked for at its first error.
  EXPECT_EQ(pages_of(d, 0x40000, kT0 + 5 * kHour, 1, row), Pages{0x40});
  EXPECT_EQ(pages_of(d, 0x10000, kT0 + 5 * kHour, 1, row), Pages{});
}

TEST(OfflinePolicy, RowIdNeedsARowAndADimm) {
  mce::MemoryLocation l;
  l.socket = 0;
  l.controller = 1;
  l.channel = 2;
  l.slot = 0;
  EXPECT_EQ(row_id(l), "");
  l.rank = 1;
  l.bank_group = 2;
  l.bank = 3;
  l.row = 0x1d26;
  EXPECT_EQ(row_id(l),
            "socket 0 controller 1 channel 2 slot 0 rank 1 bank group 2 bank 3 row 0x1d26");
  l.label = "CPU0_DIMM_A1";
  EXPECT_EQ(row_id(l), "CPU0_DIMM_A1 rank 1 bank group 2 bank 3 row 0x1d26");
}

TEST(OfflinePolicy, DurationText) {
  EXPECT_EQ(duration_text(24 * kHour), "24h");
  EXPECT_EQ(duration_text(48 * kHour), "2d");
  EXPECT_EQ(duration_text(uint64_t{14} * 24 * kHour), "2w");
  EXPECT_EQ(duration_text(kHour), "1h");
  EXPECT_EQ(duration_text(uint64_t{90} * 1000), "90s");
  EXPECT_EQ(duration_text(1500), "1500ms");
}

}  // namespace
}  // namespace pp::watch

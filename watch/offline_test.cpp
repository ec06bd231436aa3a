#include "watch/offline.h"

#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

#include "mce/decode.h"
#include "sys/testing/fake_page_offline.h"

namespace pp::watch {
namespace {

constexpr uint64_t kT0Ms = uint64_t{1796000000} * 1000;

// A corrected memory error as QEMU injects it: `mce 0 7 0x9c0000000000009f 0 ADDR 0x86`.
WatchRecord corrected(uint64_t addr, uint64_t wall_ms, const std::string& key,
                      uint64_t status = 0x9c0000000000009fULL) {
  WatchRecord r;
  r.event = "mce_record";
  r.tracepoint = "mce:mce_record";
  r.wall_ns = wall_ms * 1000000;
  r.cpu = 0;
  mce::MceRegisters regs;
  regs.status = status;
  regs.mcgstatus = 0;
  regs.addr = addr;
  regs.misc = 0x86;
  regs.bank = 7;
  regs.cpu = 0;
  regs.cpuvendor = 0;
  r.mce = mce::decode_mce(regs);
  r.key = key;
  return r;
}

WatchRecord mc_event(uint64_t addr, uint64_t wall_ms, uint32_t count, uint32_t type = 0) {
  WatchRecord r;
  r.event = "mc_event";
  r.tracepoint = "ras:mc_event";
  r.wall_ns = wall_ms * 1000000;
  r.fields = {{"error_type", type}, {"msg", "memory read error"},
              {"label", "DIMM_A1"}, {"error_count", count},
              {"mc_index", 0},      {"top_layer", 0},
              {"middle_layer", 1},  {"lower_layer", 0},
              {"address", addr},    {"grain_bits", 5},
              {"syndrome", 0},      {"driver_detail", ""}};
  r.key = "edac:" + std::to_string(wall_ms);
  return r;
}

struct Fixture {
  explicit Fixture(OfflineOptions o) {
    auto fake = std::make_unique<sys::testing::FakePageOffline>();
    kernel = fake.get();
    OfflinerSeams seams;
    seams.log = &log;
    seams.wall_ms = [this] { return int64_t(wall); };
    seams.monotonic_ms = [this] { return int64_t(mono); };
    auto made = Offliner::create(o, std::move(fake), seams);
    EXPECT_TRUE(made.ok()) << made.error().message();
    offliner = std::move(*made);
    offliner->observe([this](const OfflineAction& a) {
      actions.push_back(a);
      return ok_status();
    });
  }
  void feed(const WatchRecord& r) {
    RecordJson json(r);
    ASSERT_TRUE(offliner->take(r, json).ok());
  }
  void tick_at(uint64_t ms) {
    mono = ms;
    ASSERT_TRUE(offliner->tick(ms, false).ok());
  }
  std::vector<std::string> results() const {
    std::vector<std::string> out;
    for (const OfflineAction& a : actions)
      out.push_back(a.result);
    return out;
  }
  uint64_t wall = kT0Ms, mono = 1000;
  std::ostringstream log;
  sys::testing::FakePageOffline* kernel = nullptr;
  std::unique_ptr<Offliner> offliner;
  std::vector<OfflineAction> actions;
};

OfflineOptions soft() {
  OfflineOptions o;
  o.mode = OfflineMode::kSoft;
  return o;
}

using Results = std::vector<std::string>;

TEST(Offliner, SoftOfflinesAtTheSecondErrorAndNeverAgain) {
  Fixture f(soft());
  f.feed(corrected(0x1234040, kT0Ms, "a"));
  EXPECT_TRUE(f.actions.empty());
  f.feed(corrected(0x1234080, kT0Ms + 2000, "b"));
  ASSERT_EQ(f.results(), Results{"offlined"});
  const OfflineAction& a = f.actions[0];
  EXPECT_EQ(a.pfn, 0x1234u);
  EXPECT_EQ(a.action, "soft");
  EXPECT_EQ(a.policy, "window");
  EXPECT_EQ(a.attempt, 1u);
  EXPECT_EQ(a.error, 0);
  EXPECT_EQ(a.record_key, "b");
  EXPECT_EQ(a.wall_ns, kT0Ms * 1000000);
  ASSERT_EQ(f.kernel->writes().size(), 1u);
  EXPECT_EQ(f.kernel->writes()[0].address, 0x1234000u);
  EXPECT_EQ(f.kernel->writes()[0].kind, sys::PageOfflineKind::kSoft);
  f.feed(corrected(0x12340c0, kT0Ms + 4000, "c"));
  EXPECT_EQ(f.actions.size(), 1u);
  EXPECT_EQ(f.kernel->writes().size(), 1u);
  EXPECT_EQ(offline_action_json(a).dump(),
            R"j({"time":"2026-11-30T00:53:20.000000000Z","page":"0x1234","address":"0x1234000",)j"
            R"j("action":"soft","policy":"window","result":"offlined","errno":null,"attempt":1,)j"
            R"j("reason":"2 corrected errors within 24h (policy window, 2 in 24h)",)j"
            R"j("message":null,"record_key":"b","row":false})j");
}

TEST(Offliner, HardWritesTheHardFile) {
  OfflineOptions o = soft();
  o.mode = OfflineMode::kHard;
  Fixture f(o);
  f.feed(corrected(0x5000, kT0Ms, "a"));
  f.feed(corrected(0x5000, kT0Ms + 1, "b"));
  ASSERT_EQ(f.kernel->writes().size(), 1u);
  EXPECT_EQ(f.kernel->writes()[0].kind, sys::PageOfflineKind::kHard);
  EXPECT_EQ(f.actions[0].action, "hard");
}

TEST(Offliner, AccountTouchesNothing) {
  OfflineOptions o;  // account: the command line's default
  Fixture f(o);
  f.feed(corrected(0x5000, kT0Ms, "a"));
  f.feed(corrected(0x5000, kT0Ms + 1, "b"));
  EXPECT_EQ(f.results(), Results{"accounted"});
  EXPECT_EQ(f.actions[0].action, "account");
  EXPECT_TRUE(f.kernel->writes().empty());
}

TEST(Offliner, DryRunChecksButWritesNothing) {
  OfflineOptions o = soft();
  o.dry_run = true;
  Fixture f(o);
  f.kernel->poison(0x6);
  for (uint64_t page : {0x5, 0x6})
    for (int i = 0; i < 2; i++)
      f.feed(corrected(page << 12, kT0Ms + i, "k" + std::to_string(page) + std::to_string(i)));
  EXPECT_EQ(f.results(), (Results{"dry-run", "already-poisoned"}));
  EXPECT_TRUE(f.kernel->writes().empty());
}

TEST(Offliner, NeverOfflinesAPageTheKernelPoisoned) {
  Fixture f(soft());
  f.kernel->poison(0x5);
  f.feed(corrected(0x5000, kT0Ms, "a"));
  f.feed(corrected(0x5000, kT0Ms + 1, "b"));
  EXPECT_EQ(f.results(), Results{"already-poisoned"});
  EXPECT_TRUE(f.kernel->writes().empty());
}

TEST(Offliner, RespectsEnableSoftOffline) {
  Fixture f(soft());
  f.kernel->set_soft_offline_enabled(false);
  f.feed(corrected(0x5000, kT0Ms, "a"));
  f.feed(corrected(0x5000, kT0Ms + 1, "b"));
  EXPECT_EQ(f.results(), Results{"disabled"});
  EXPECT_NE(f.actions[0].message.find("vm.enable_soft_offline"), std::string::npos);
  EXPECT_TRUE(f.kernel->writes().empty());
  // Hard offlining does not ask it.
  OfflineOptions o = soft();
  o.mode = OfflineMode::kHard;
  Fixture g(o);
  g.kernel->set_soft_offline_enabled(false);
  g.feed(corrected(0x5000, kT0Ms, "a"));
  g.feed(corrected(0x5000, kT0Ms + 1, "b"));
  EXPECT_EQ(g.results(), Results{"offlined"});
}

TEST(Offliner, ARefusalIsTriedAgainWithBackOff) {
  Fixture f(soft());
  f.kernel->refuse({EBUSY, EAGAIN});
  f.feed(corrected(0x5000, kT0Ms, "a"));
  f.feed(corrected(0x5000, kT0Ms + 1, "b"));
  ASSERT_EQ(f.results(), Results{"retrying"});
  EXPECT_EQ(f.actions[0].error, EBUSY);
  EXPECT_EQ(f.offliner->pending(), 1u);
  f.tick_at(1000 + 4999);  // 5 s after the first try: not yet
  EXPECT_EQ(f.kernel->writes().size(), 1u);
  f.tick_at(1000 + 5000);
  ASSERT_EQ(f.results(), (Results{"retrying", "retrying"}));
  EXPECT_EQ(f.actions[1].error, EAGAIN);
  EXPECT_EQ(f.actions[1].attempt, 2u);
  f.tick_at(6000 + 9999);  // the delay doubled: 10 s
  EXPECT_EQ(f.kernel->writes().size(), 2u);
  f.tick_at(6000 + 10000);
  ASSERT_EQ(f.results(), (Results{"retrying", "retrying", "offlined"}));
  EXPECT_EQ(f.actions[2].attempt, 3u);
  EXPECT_EQ(f.offliner->pending(), 0u);
  EXPECT_EQ(f.kernel->writes().size(), 3u);
}

// SIGTERM or the end of --once: the retry is not made, and the history's
// last action on the page says so instead of "retrying".
TEST(Offliner, ARetryStillWaitingWhenWatchStopsIsAFailure) {
  Fixture f(soft());
  f.kernel->refuse({EBUSY});
  f.feed(corrected(0x5000, kT0Ms, "a"));
  f.feed(corrected(0x5000, kT0Ms + 1, "b"));
  ASSERT_EQ(f.results(), Results{"retrying"});
  ASSERT_TRUE(f.offliner->tick(1000 + 4999, true).ok());
  ASSERT_EQ(f.results(), (Results{"retrying", "failed"}));
  EXPECT_EQ(f.actions[1].attempt, 1u);
  EXPECT_EQ(f.actions[1].record_key, "b");
  EXPECT_NE(f.actions[1].message.find("watch stopped before try 2 of 5; not offlined"),
            std::string::npos)
      << f.actions[1].message;
  EXPECT_EQ(f.offliner->pending(), 0u);
  EXPECT_EQ(f.kernel->writes().size(), 1u);
  EXPECT_NE(f.log.str().find("page 0x5 soft failed: "), std::string::npos) << f.log.str();
}

TEST(Offliner, GivesUpAfterTheLastAttemptAndOnOtherErrors) {
  OfflineOptions o = soft();
  o.max_attempts = 2;
  Fixture f(o);
  f.kernel->refuse({EIO, EIO, EINVAL});
  f.feed(corrected(0x5000, kT0Ms, "a"));
  f.feed(corrected(0x5000, kT0Ms + 1, "b"));
  f.tick_at(1000 + 5000);
  EXPECT_EQ(f.results(), (Results{"retrying", "failed"}));
  EXPECT_EQ(f.actions[1].error, EIO);
  EXPECT_EQ(f.offliner->pending(), 0u);
  f.feed(corrected(0x7000, kT0Ms, "c"));
  f.feed(corrected(0x7000, kT0Ms + 1, "d"));
  EXPECT_EQ(f.results(), (Results{"retrying", "failed", "failed"}));
  EXPECT_EQ(f.actions[2].error, EINVAL);
  EXPECT_EQ(errno_name(f.actions[2].error), "EINVAL");
}

TEST(Offliner, TheCapStopsAnAvalanche) {
  OfflineOptions o = soft();
  o.max = {2, uint64_t{3600} * 1000};
  Fixture f(o);
  for (uint64_t page = 1; page <= 3; page++) {
    f.feed(corrected(page << 12, kT0Ms, "a" + std::to_string(page)));
    f.feed(corrected(page << 12, kT0Ms + 1, "b" + std::to_string(page)));
  }
  EXPECT_EQ(f.results(), (Results{"offlined", "offlined", "capped"}));
  EXPECT_EQ(f.kernel->writes().size(), 2u);
  EXPECT_NE(f.log.str().find("--offline-max"), std::string::npos);
  f.mono = 1000 + uint64_t{3600} * 1000;  // an hour later there is room again
  f.feed(corrected(0x9000, kT0Ms + 2, "c"));
  f.feed(corrected(0x9000, kT0Ms + 3, "d"));
  EXPECT_EQ(f.results().back(), "offlined");
}

TEST(Offliner, TakesOnlyThisBootsCorrectedMemoryErrors) {
  Fixture f(soft());
  // Uncorrected (UC set): not counted.
  f.feed(corrected(0x5000, kT0Ms, "a", 0xbc0000000000009fULL));
  f.feed(corrected(0x5000, kT0Ms + 1, "b", 0xbc0000000000009fULL));
  // No ADDRV: no page.
  f.feed(corrected(0x6000, kT0Ms, "c", 0x980000000000009fULL));
  f.feed(corrected(0x6000, kT0Ms + 1, "d", 0x980000000000009fULL));
  // A previous boot's (pstore).
  WatchRecord p1 = corrected(0x7000, kT0Ms, "e"), p2 = corrected(0x7000, kT0Ms + 1, "f");
  p1.origin = p2.origin = Origin::kPstore;
  f.feed(p1);
  f.feed(p2);
  // A previous boot's the kernel kept in ERST.
  WatchRecord e1 = corrected(0x7000, kT0Ms, "g"), e2 = corrected(0x7000, kT0Ms + 1, "h");
  e1.origin = e2.origin = Origin::kErst;
  f.feed(e1);
  f.feed(e2);
  // EDAC's uncorrected report.
  f.feed(mc_event(0x8000, kT0Ms, 5, 1));
  EXPECT_TRUE(f.actions.empty());
  // EDAC's corrected report counts its error_count.
  f.feed(mc_event(0xa000, kT0Ms, 2));
  EXPECT_EQ(f.results(), Results{"offlined"});
}

TEST(Offliner, AMachineCheckAndItsEdacReportAreOneError) {
  Fixture f(soft());
  f.feed(corrected(0x5040, kT0Ms, "a"));
  f.feed(mc_event(0x5080, kT0Ms + 1000, 1));  // the same error, reported again
  EXPECT_TRUE(f.actions.empty());
  f.feed(mc_event(0x5080, kT0Ms + 60000, 1));  // a new one
  EXPECT_EQ(f.results(), Results{"offlined"});
}

TEST(Offliner, OptionsAreChecked) {
  EXPECT_EQ(*parse_offline_mode("soft", "--offline-pages"), OfflineMode::kSoft);
  auto bad = parse_offline_mode("yes", "--offline-pages");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("soft, hard, account or off"), std::string::npos);
  OfflineOptions o;
  o.policy = OfflinePolicyKind::kKernelCec;
  o.page_threshold = Threshold{2000, 1000};
  EXPECT_FALSE(check_offline_options(o).ok());
  o.policy = OfflinePolicyKind::kRasdaemon;
  EXPECT_EQ(effective_page_policy(o).threshold.count, 2000u);
  o.page_threshold.reset();
  EXPECT_EQ(effective_page_policy(o).threshold.count, 50u);
}

}  // namespace
}  // namespace pp::watch

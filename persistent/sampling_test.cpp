#include "persistent/sampling.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace pp::persistent {
namespace {

ResolvedEvent tracepoint() {
  ResolvedEvent e;
  e.attr.attr.type = PERF_TYPE_TRACEPOINT;
  e.attr.attr.size = sys::kAttrSizeVer7;
  e.attr.attr.config = 316;
  e.tracepoint = "syscalls:sys_enter_getppid";
  e.pmu = "tracepoint";
  return e;
}

ResolvedEvent software() {
  ResolvedEvent e;
  e.attr.attr.type = PERF_TYPE_SOFTWARE;
  e.attr.attr.size = sys::kAttrSizeVer7;
  e.attr.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  e.attr.attr.exclude_guest = 1;
  e.pmu = "software";
  return e;
}

constexpr uint64_t kBaseSampleType = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_IDENTIFIER;

TEST(Sampling, TracepointSamplesEveryEventWithRaw) {
  sys::EventAttr a = sampling_attr(tracepoint(), Layout::kBackward);
  EXPECT_EQ(a.attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
  EXPECT_EQ(a.attr.config, 316u);
  EXPECT_EQ(a.attr.sample_period, 1u);
  EXPECT_EQ(a.attr.freq, 0u);
  EXPECT_EQ(a.attr.sample_type, kBaseSampleType | PERF_SAMPLE_RAW);
  EXPECT_EQ(a.attr.sample_id_all, 1u);
  EXPECT_EQ(a.attr.disabled, 0u);
  EXPECT_EQ(a.attr.inherit, 0u);
  EXPECT_EQ(a.attr.write_backward, 1u);
  EXPECT_EQ(a.attr.size, sys::kAttrSizeVer7);
}

TEST(Sampling, OtherEventsSampleAt4000HzUnlessTheStringChose) {
  sys::EventAttr a = sampling_attr(software(), Layout::kForward);
  EXPECT_EQ(a.attr.freq, 1u);
  EXPECT_EQ(a.attr.sample_freq, 4000u);
  EXPECT_EQ(a.attr.sample_type, kBaseSampleType);
  EXPECT_EQ(a.attr.write_backward, 0u);
  EXPECT_EQ(a.attr.exclude_guest, 1u) << "the parser's bits stay";

  ResolvedEvent period = software();
  period.attr.attr.sample_period = 10007;
  EXPECT_EQ(sampling_attr(period, Layout::kBackward).attr.sample_period, 10007u);
  EXPECT_EQ(sampling_attr(period, Layout::kBackward).attr.freq, 0u);

  ResolvedEvent freq = software();
  freq.attr.attr.freq = 1;
  freq.attr.attr.sample_freq = 99;
  EXPECT_EQ(sampling_attr(freq, Layout::kBackward).attr.sample_freq, 99u);

  ResolvedEvent config3 = software();
  config3.attr.attr.size = sys::kAttrSizeVer8;
  EXPECT_EQ(sampling_attr(config3, Layout::kBackward).attr.size, sys::kAttrSizeVer8);
}

TEST(Sampling, EnabledAndNotInheritedWhateverTheParserSaid) {
  ResolvedEvent e = tracepoint();
  e.attr.attr.disabled = 1;
  e.attr.attr.inherit = 1;
  sys::EventAttr a = sampling_attr(e, Layout::kBackward);
  EXPECT_EQ(a.attr.disabled, 0u);
  EXPECT_EQ(a.attr.inherit, 0u);
}

TEST(Sampling, ChooseCpus) {
  std::vector<int> online = {0, 1, 2, 3};
  EXPECT_EQ(*choose_cpus("", online, {}), online);
  EXPECT_EQ(*choose_cpus("", online, {1, 3, 5}), (std::vector<int>{1, 3}));
  EXPECT_EQ(*choose_cpus("2,0", online, {}), (std::vector<int>{0, 2}));
  auto offline = choose_cpus("0-4", online, {});
  ASSERT_FALSE(offline.ok());
  EXPECT_EQ(offline.error().code(), EINVAL);
  EXPECT_NE(offline.error().message().find("CPU 4 is not online (online: 0-3)"), std::string::npos);
  auto mask = choose_cpus("0", online, {1});
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(mask.error().message().find("cpumask (1)"), std::string::npos);
  auto none = choose_cpus("", {0, 1}, {4});
  ASSERT_FALSE(none.ok());
  auto junk = choose_cpus("x", online, {});
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.error().code(), EINVAL);
}

TEST(Sampling, OnlineCpusFromSysfs) {
  testing::TempDir sysfs;
  sysfs.write("devices/system/cpu/online", "0-1,4\n");
  auto cpus = online_cpus(sys::Tree(sysfs.path()));
  ASSERT_TRUE(cpus.ok());
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 4}));
  sysfs.write("devices/system/cpu/online", "garbage\n");
  auto bad = online_cpus(sys::Tree(sysfs.path()));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("devices/system/cpu/online"), std::string::npos);
}

TEST(Sampling, PagesArePowersOfTwo) {
  for (uint64_t ok : {1, 2, 64, 128, 65536})
    EXPECT_TRUE(validate_pages(ok).ok()) << ok;
  for (uint64_t bad : {0, 3, 100, 131072}) {
    Status s = validate_pages(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code(), EINVAL);
    EXPECT_NE(s.error().message().find("power of two"), std::string::npos);
  }
}

TEST(Sampling, KernelRefusalsAreExplainedAndNeverReadAsUsageOrNotFound) {
  testing::TempDir proc, sysfs;
  proc.write("sys/kernel/perf_event_paranoid", "2\n");
  proc.write("self/status", "Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000000\n");
  sys::ExplainEnv env{proc.path(), sysfs.path()};
  sys::FailedCall open{.call = sys::PerfCall::kOpen, .event = "cycles", .cpu = 1};
  Error inval = kernel_refusal(Error(EINVAL, "perf_event_open: Invalid argument"), open, env);
  // The kind says refusal; the kernel's errno stays as it was (no remap).
  EXPECT_EQ(inval.kind(), ErrorKind::kRefused);
  EXPECT_EQ(inval.code(), EINVAL);
  EXPECT_NE(inval.message().find("'cycles' on CPU 1"), std::string::npos) << inval.message();
  EXPECT_NE(inval.message().find("(EINVAL)"), std::string::npos) << inval.message();
  Error noent = kernel_refusal(Error(ENOENT, "x"), open, env);
  EXPECT_EQ(noent.kind(), ErrorKind::kRefused);
  EXPECT_EQ(noent.code(), ENOENT);
  Error acces = kernel_refusal(Error(EACCES, "x"), open, env);
  EXPECT_EQ(acces.kind(), ErrorKind::kRefused);
  EXPECT_EQ(acces.code(), EACCES);
  EXPECT_NE(acces.message().find("CAP_PERFMON"), std::string::npos) << acces.message();
  EXPECT_NE(acces.message().find("perf_event_paranoid is 2"), std::string::npos) << acces.message();
}

}  // namespace
}  // namespace pp::persistent

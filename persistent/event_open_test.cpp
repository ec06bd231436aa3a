#include "persistent/event_open.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace pp::persistent {
namespace {

TEST(EventOpen, KernelRefusalsAreExplainedAndNeverReadAsUsageOrNotFound) {
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

TEST(EventOpen, ReadersAreWokenAtAQuarterOfTheBufferUnlessTheAttrChoseAWakeup) {
  sys::EventAttr plain;
  sys::EventAttr woken = wakeup_watermark(plain, 128);
  EXPECT_EQ(woken.attr.watermark, 1u);
  EXPECT_EQ(woken.attr.wakeup_watermark, 128 * sys::page_size() / 4);

  sys::EventAttr by_events;
  by_events.attr.wakeup_events = 1;
  EXPECT_EQ(wakeup_watermark(by_events, 128).attr.watermark, 0u);
  EXPECT_EQ(wakeup_watermark(by_events, 128).attr.wakeup_events, 1u);

  sys::EventAttr by_bytes;
  by_bytes.attr.watermark = 1;
  by_bytes.attr.wakeup_watermark = 4096;
  EXPECT_EQ(wakeup_watermark(by_bytes, 128).attr.wakeup_watermark, 4096u);
}

}  // namespace
}  // namespace pp::persistent

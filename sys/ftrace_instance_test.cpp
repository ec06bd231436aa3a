#include "sys/ftrace_instance.h"

#include <cstdio>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace pp::sys {
namespace {

// A tracefs tree with one instance "bb" holding two enabled events and two
// CPUs' trace_pipe_raw as regular files (a read of a file ends at EOF where
// the kernel's ends at EAGAIN).
class FtraceInstanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("instances/bb/events/header_page", "page");
    dir_.write("instances/bb/events/header_event", "event");
    dir_.write("instances/bb/set_event", "sched:sched_switch\nsyscalls:sys_enter_getppid\n");
    dir_.write("instances/bb/events/sched/sched_switch/id", "372\n");
    dir_.write("instances/bb/events/sched/sched_switch/format", "name: sched_switch\nID: 372\n");
    dir_.write("instances/bb/events/syscalls/sys_enter_getppid/id", "305\n");
    dir_.write("instances/bb/events/syscalls/sys_enter_getppid/format", "name: x\nID: 305\n");
    dir_.write("instances/bb/trace_clock", "[local] global counter uptime perf mono\n");
    dir_.write("instances/bb/per_cpu/cpu0/trace_pipe_raw", std::string(8, 'a'));
    dir_.write("instances/bb/per_cpu/cpu10/trace_pipe_raw", std::string(12, 'b'));
    dir_.write("instances/bb/per_cpu/cpu2/trace_pipe_raw", "");
  }
  pp::testing::TempDir dir_;
  Tree tracefs_{dir_.path()};
};

TEST_F(FtraceInstanceTest, ReadsWhatTheBlackBoxNeeds) {
  auto inst = FtraceInstance::open(tracefs_, "bb");
  ASSERT_TRUE(inst.ok()) << inst.error().message();
  EXPECT_EQ(*inst->header_page(), "page");
  EXPECT_EQ(*inst->header_event(), "event");
  EXPECT_EQ(*inst->trace_clock(), "local");
  EXPECT_FALSE(inst->last_boot_info().has_value());
  auto events = inst->enabled_events();
  ASSERT_TRUE(events.ok()) << events.error().message();
  ASSERT_EQ(events->size(), 2U);
  EXPECT_EQ((*events)[0].system, "sched");
  EXPECT_EQ((*events)[0].id, 372U);
  EXPECT_EQ((*events)[1].name, "sys_enter_getppid");
  EXPECT_EQ((*events)[1].format, "name: x\nID: 305\n");
  EXPECT_EQ(*inst->cpus(), (std::vector<uint32_t>{0, 2, 10}));
  auto pages = inst->read_pages(10, 4, 1 << 20);
  ASSERT_TRUE(pages.ok()) << pages.error().message();
  EXPECT_EQ(pages->size(), 12U);
  EXPECT_EQ(inst->read_pages(2, 4, 1 << 20)->size(), 0U);
  EXPECT_EQ(inst->read_pages(10, 4, 8)->size(), 8U);  // the limit
  dir_.write("instances/bb/last_boot_info", "# Current\n");
  EXPECT_EQ(inst->last_boot_info().value_or(""), "# Current\n");
}

TEST_F(FtraceInstanceTest, RefusesWhatItCannotRead) {
  auto missing = FtraceInstance::open(tracefs_, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::kNotFound);
  EXPECT_NE(missing.error().message().find("no ftrace instance 'nope'"), std::string::npos);
  EXPECT_NE(missing.error().message().find("there are: bb"), std::string::npos)
      << missing.error().message();
  for (const char* bad : {"", "..", "a/b"}) {
    auto r = FtraceInstance::open(tracefs_, bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind(), ErrorKind::kUsage) << bad;
  }
  auto inst = FtraceInstance::open(tracefs_, "bb");
  ASSERT_TRUE(inst.ok());
  // A short read is a page cut by another reader.
  auto cut = inst->read_pages(10, 5, 1 << 20);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code(), EIO);
  EXPECT_NE(cut.error().message().find("gave 2 bytes, not a page of 5"), std::string::npos)
      << cut.error().message();
  EXPECT_FALSE(inst->read_pages(7, 4, 1 << 20).ok());
  dir_.write("instances/bb/set_event", "garbage\n");
  EXPECT_FALSE(inst->enabled_events().ok());
}

TEST_F(FtraceInstanceTest, ArmsByAppendingEventsAndWritesMarkers) {
  dir_.write("instances/bb/set_event", "");
  dir_.write("instances/bb/tracing_on", "0\n");
  dir_.write("instances/bb/trace_marker", "");
  dir_.mkdir("instances/bb/events/ras/mc_event");
  dir_.mkdir("instances/bb/events/ras/aer_event");
  dir_.write("instances/bb/events/ras/enable", "0\n");
  auto inst = FtraceInstance::open(Tree(dir_.path()), "bb");
  ASSERT_TRUE(inst.ok()) << inst.error().message();
  EXPECT_EQ(inst->system_events("ras"), (std::vector<std::string>{"aer_event", "mc_event"}))
      << "directories only, sorted";
  EXPECT_TRUE(inst->system_events("mce").empty());
  EXPECT_TRUE(inst->system_events("../bb").empty());
  ASSERT_TRUE(inst->enable_event("ras", "mc_event").ok());
  ASSERT_TRUE(inst->enable_event("ras", "aer_event").ok());
  ASSERT_TRUE(inst->set_tracing_on(true).ok());
  ASSERT_TRUE(inst->write_marker("hello").ok());
  ASSERT_TRUE(inst->write_marker("again").ok());
  Tree tree(dir_.path("instances/bb"));
  EXPECT_EQ(tree.read("set_event").value_or(""), "ras:mc_event\nras:aer_event\n");
  EXPECT_EQ(tree.read("tracing_on").value_or(""), "1\n");
  EXPECT_EQ(tree.read("trace_marker").value_or(""), "helloagain");
  // tracefs files are never created: a missing one is an error naming it.
  auto missing = FtraceInstance::open(Tree(dir_.path()), "bb");
  std::remove(dir_.path("instances/bb/tracing_on").c_str());
  Status s = missing->set_tracing_on(false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("instances/bb/tracing_on"), std::string::npos);
}

TEST(CpuStats, TheKernelsCountsAreRead) {
  // Linux 6.18's per_cpu/cpu0/stats of an instance that overwrote records.
  CpuStats s = parse_cpu_stats(
      "entries: 27\noverrun: 1200\ncommit overrun: 3\nbytes: 1840\n"
      "oldest event ts: 42594.266644\nnow ts: 42594.300418\ndropped events: 5\n"
      "read events: 0\n");
  EXPECT_EQ(s.entries, 27U);
  EXPECT_EQ(s.overrun, 1200U);
  EXPECT_EQ(s.commit_overrun, 3U);
  EXPECT_EQ(s.dropped_events, 5U);
  CpuStats junk = parse_cpu_stats("entries: lots\noverrun\n: 4\n");
  EXPECT_EQ(junk.entries, 0U);
  EXPECT_EQ(junk.overrun, 0U);
}

}  // namespace
}  // namespace pp::sys

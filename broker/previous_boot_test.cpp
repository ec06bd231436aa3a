#include "broker/previous_boot.h"

#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <string>
#include <vector>

#include "broker/config_file.h"
#include "ftrace/ring_page.h"
#include "ftrace/testing/page_builder.h"
#include "persistent/previous_boot.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::broker {
namespace {

using ftrace::testing::PageBuilder;
using ftrace::testing::sched_switch_6_18;

std::string fixture(const std::string& relative) {
  return pp::testing::read_fixture("tracefs-6.18/" + relative);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

constexpr char kCmdline[] =
    "BOOT_IMAGE=/vmlinuz root=/dev/vda memmap=12M$0x10000000 "
    "trace_instance=bb^traceoff@0x10000000:12M panic=1\n";
constexpr char kBootId[] = "6f0c4d0e-5b1a-4c8e-9a3e-2f1f0a6f7d11";

// tracefs with the boot-mapped instance "bb" holding a previous boot's
// pages on CPUs 0 and 1, as 6.12 shows it before any setting changes.
class BlackBoxUnit : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f :
         {"events/header_page", "events/header_event", "events/sched/sched_switch/format",
          "events/sched/sched_switch/id", "events/ftrace/print/format", "events/ftrace/print/id",
          "events/ras/mc_event/format", "events/ras/mc_event/id"}) {
      std::string text = fixture(f);
      ASSERT_FALSE(text.empty()) << f;
      dir_.write(std::string("tracefs/instances/bb/") + f, text);
    }
    dir_.write("tracefs/instances/bb/last_boot_info", "text delta:\t-268435456\n");
    dir_.write("tracefs/instances/bb/trace_clock", "[local] global counter\n");
    dir_.write("tracefs/instances/bb/set_event", "");
    dir_.write("tracefs/instances/bb/tracing_on", "0\n");
    dir_.write("tracefs/instances/bb/trace_marker", "");
    auto layout =
        ftrace::parse_ring_layout(fixture("events/header_page"), fixture("events/header_event"));
    ASSERT_TRUE(layout.ok());
    PageBuilder cpu0(*layout, 1000);
    cpu0.record(0, sched_switch_6_18(4242));
    PageBuilder cpu1(*layout, 2000);
    cpu1.record(0, sched_switch_6_18(17));
    pages0_ = cpu0.text();
    dir_.write("tracefs/instances/bb/per_cpu/cpu0/trace_pipe_raw", pages0_);
    dir_.write("tracefs/instances/bb/per_cpu/cpu1/trace_pipe_raw", cpu1.text());
    dir_.write("proc/cmdline", kCmdline);
    dir_.write("proc/sys/kernel/random/boot_id", std::string(kBootId) + "\n");
    dir_.write("proc/sys/kernel/osrelease", "6.12.118+deb12-amd64\n");
    config_.tracefs_root = dir_.path("tracefs");
    config_.proc_root = dir_.path("proc");
    config_.kept_dir = dir_.path("kept");
    config_.realtime_ns = [] { return uint64_t(1796285030123456789); };
    config_.unix_seconds = [this] { return now_++; };
    config_.log = [this](const std::string& line) { log_ += line + "\n"; };
  }

  // Starts a black box that finds no previous boot's buffer to keep: it
  // arms the instance all the same, and the kept directory stays empty.
  void expect_armed_and_nothing_kept() {
    auto box = BlackBox::start(config_);
    ASSERT_TRUE(box.ok()) << box.error().message();
    EXPECT_FALSE((*box)->report().held_previous);
    EXPECT_EQ((*box)->report().kept, "");
    EXPECT_TRUE((*box)->report().armed);
    auto kept = persistent::list_kept_boots(config_.kept_dir);
    ASSERT_TRUE(kept.ok()) << kept.error().message();
    EXPECT_TRUE(kept->empty());
  }

  std::string instance_file(const std::string& name) const {
    return read_file(dir_.path("tracefs/instances/bb/" + name));
  }

  pp::testing::TempDir dir_;
  BlackBoxConfig config_;
  std::string pages0_;
  std::string log_;
  int64_t now_ = 1796285031;
};

TEST_F(BlackBoxUnit, NoBootMappedInstanceOnTheCommandLineIsNoBlackBox) {
  config_.kernel_cmdline = "root=/dev/vda trace_instance=plain,sched:sched_switch";
  auto box = BlackBox::start(config_);
  ASSERT_TRUE(box.ok()) << box.error().message();
  EXPECT_EQ(*box, nullptr);
  EXPECT_EQ(instance_file("tracing_on"), "0\n") << "nothing touched";
}

TEST_F(BlackBoxUnit, KeepsThePreviousBootThenArmsAndMarks) {
  auto box = BlackBox::start(config_);
  ASSERT_TRUE(box.ok()) << box.error().message();
  ASSERT_NE(*box, nullptr);
  const BlackBoxReport& r = (*box)->report();
  EXPECT_TRUE(r.held_previous);
  EXPECT_EQ(r.keep_error, "");
  ASSERT_EQ(r.kept, dir_.path("kept/1796285031-" + std::string(kBootId)));
  EXPECT_EQ(r.kept_cpus, 2U);

  // The copy: a tracefs root of its own, the pages byte for byte, the
  // formats of the events its records name and ftrace/print's.
  auto kept = persistent::list_kept_boots(config_.kept_dir);
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 1U);
  EXPECT_EQ((*kept)[0].instance, "bb");
  EXPECT_EQ((*kept)[0].boot_id, kBootId);
  EXPECT_EQ((*kept)[0].kernel, "6.12.118+deb12-amd64");
  const std::string copy = r.kept + "/instances/bb/";
  EXPECT_EQ(read_file(copy + "per_cpu/cpu0/trace_pipe_raw"), pages0_);
  EXPECT_EQ(read_file(copy + "events/sched/sched_switch/format"),
            fixture("events/sched/sched_switch/format"));
  EXPECT_EQ(read_file(copy + "events/ftrace/print/id"), fixture("events/ftrace/print/id"));
  EXPECT_EQ(read_file(copy + "last_boot_info"), "text delta:\t-268435456\n");
  EXPECT_EQ(read_file(copy + "events/ras/mc_event/format"), "")
      << "no record names mc_event: its format is not copied";
  struct stat st {};
  ASSERT_EQ(::stat(config_.kept_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700U);
  ASSERT_EQ(::stat(r.kept.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0U) << "the copy is root's alone";

  // Armed: the RAS events this kernel has (no mce here), tracing on, a marker.
  EXPECT_TRUE(r.armed);
  EXPECT_EQ(instance_file("set_event"), "ras:mc_event\n");
  EXPECT_EQ(r.missing, std::vector<std::string>{"mce:mce_record"});
  EXPECT_EQ(instance_file("tracing_on"), "1\n");
  auto marker = persistent::parse_clock_marker(instance_file("trace_marker"));
  ASSERT_TRUE(marker.has_value()) << instance_file("trace_marker");
  EXPECT_EQ(marker->clock, "local");
  EXPECT_EQ(marker->realtime_ns, 1796285030123456789U);
  EXPECT_EQ(marker->boot_id, kBootId);
  EXPECT_NE(log_.find("kept the previous boot's buffer of ftrace instance 'bb'"), std::string::npos)
      << log_;
}

TEST_F(BlackBoxUnit, ARestartedBrokerDoesNotKeepTheSameBootTwice) {
  ASSERT_TRUE(BlackBox::start(config_).ok());
  // The fake instance still says "previous boot" (a restart in the same
  // boot, with last_boot_info unchanged): this boot's copy is there.
  auto again = BlackBox::start(config_);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->report().already_kept);
  EXPECT_EQ((*again)->report().kept, "");
  auto kept = persistent::list_kept_boots(config_.kept_dir);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->size(), 1U);
  EXPECT_TRUE((*again)->report().armed);
}

TEST_F(BlackBoxUnit, AnInstanceOfThisBootIsArmedAndNothingKept) {
  dir_.write("tracefs/instances/bb/last_boot_info", "# Current\n");
  expect_armed_and_nothing_kept();
}

TEST_F(BlackBoxUnit, AnEmptyBufferAfterAColdBootIsNotKept) {
  // 6.12 says "text delta" until a setting changes, also over zeroed memory.
  dir_.write("tracefs/instances/bb/per_cpu/cpu0/trace_pipe_raw", "");
  dir_.write("tracefs/instances/bb/per_cpu/cpu1/trace_pipe_raw", "");
  expect_armed_and_nothing_kept();
}

TEST_F(BlackBoxUnit, ACopyThatCannotBeWrittenLeavesTheInstanceUnarmed) {
  dir_.write("kept", "a file where the directory goes");
  auto box = BlackBox::start(config_);
  ASSERT_TRUE(box.ok());
  EXPECT_NE((*box)->report().keep_error, "");
  EXPECT_FALSE((*box)->report().armed);
  EXPECT_EQ(instance_file("tracing_on"), "0\n") << "arming would clear the previous boot's buffer";
  EXPECT_EQ(instance_file("set_event"), "");
  EXPECT_NE(log_.find("not armed (arming would clear it)"), std::string::npos) << log_;
}

TEST_F(BlackBoxUnit, TheOldestCopiesBeyondKeepGo) {
  config_.settings.keep = 2;
  for (const char* id : {"boot-a", "boot-b", "boot-c"}) {
    dir_.write("proc/sys/kernel/random/boot_id", std::string(id) + "\n");
    auto box = BlackBox::start(config_);
    ASSERT_TRUE(box.ok());
  }
  auto kept = persistent::list_kept_boots(config_.kept_dir);
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 2U);
  EXPECT_EQ((*kept)[0].boot_id, "boot-b");
  EXPECT_EQ((*kept)[1].boot_id, "boot-c");
}

TEST_F(BlackBoxUnit, ConfiguredEventsAreArmedAndMissingOnesNamed) {
  config_.settings.events = {"sched:sched_switch", "irq:irq_handler_entry"};
  auto box = BlackBox::start(config_);
  ASSERT_TRUE(box.ok());
  EXPECT_EQ(instance_file("set_event"), "ras:mc_event\nsched:sched_switch\n");
  EXPECT_EQ((*box)->report().missing,
            (std::vector<std::string>{"mce:mce_record", "irq:irq_handler_entry"}));
}

TEST_F(BlackBoxUnit, TheMarkerIsWrittenWhenDueOnly) {
  auto box = BlackBox::start(config_);
  ASSERT_TRUE(box.ok());
  dir_.write("tracefs/instances/bb/trace_marker", "");
  int wait = (*box)->ms_until_marker(0);
  EXPECT_GT(wait, 0);
  (*box)->tick(0);  // long before it is due
  EXPECT_EQ(instance_file("trace_marker"), "");
  (*box)->tick(int64_t(1) << 50);
  EXPECT_NE(instance_file("trace_marker").find(persistent::kMarkerTag), std::string::npos);
  EXPECT_EQ((*box)->ms_until_marker(int64_t(1) << 50), persistent::kMarkerIntervalS * 1000);
}

TEST(PreviousBootSettings, TheSectionIsReadAndTheEventParserSkipsIt) {
  constexpr char kText[] =
      "[mce_record]\n"
      "event = mce:mce_record\n"
      "[previous boot]\n"
      "events = sched:sched_switch, irq:irq_handler_entry\n"
      "keep = 3\n";
  auto settings = parse_previous_boot_settings(kText, "/etc/perf-persistent.conf");
  ASSERT_TRUE(settings.ok()) << settings.error().message();
  EXPECT_EQ(settings->events,
            (std::vector<std::string>{"sched:sched_switch", "irq:irq_handler_entry"}));
  EXPECT_EQ(settings->keep, 3U);
  auto events = parse_config(kText, "/etc/perf-persistent.conf");
  ASSERT_TRUE(events.ok()) << events.error().message();
  EXPECT_EQ(events->size(), 1U);
}

TEST(PreviousBootSettings, MistakesNameTheLine) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"[previous boot]\nevents = sched\n",
       "/c:2: 'sched' is no tracepoint; 'events' lists SYSTEM:EVENT names"},
      {"[previous boot]\nkeep = 0\n", "/c:2: 'keep' is the number of previous boots' copies"},
      {"[previous boot]\nkeep = 65\n", "/c:2: 'keep' is the number"},
      {"[previous boot]\nsize = 4\n", "/c:2: unknown key 'size' in [previous boot]"},
      {"[previous boot]\n[previous boot]\n", "/c:2: a second section [previous boot]"},
      {"[previous boot]\nevents = ../x:y\n", "/c:2: '../x:y' is no tracepoint"},
  };
  for (const Case& c : cases) {
    auto r = parse_previous_boot_settings(c.text, "/c");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().kind(), ErrorKind::kConfig) << c.text;
    EXPECT_NE(r.error().message().find(c.message), std::string::npos)
        << r.error().message() << " / " << c.text;
  }
  EXPECT_TRUE(parse_previous_boot_settings("[other]\nevent = a:b\n", "/c").ok());
}

}  // namespace
}  // namespace pp::broker

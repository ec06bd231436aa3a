#include "record/instance_record.h"

#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <string>
#include <vector>

#include "ftrace/ring_page.h"
#include "ftrace/testing/page_builder.h"
#include "report/perf_data_reader.h"
#include "sys/perf_abi_records.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::record {
namespace {

using ftrace::testing::PageBuilder;
using ftrace::testing::sched_switch_6_18;

std::string fixture(const std::string& relative) {
  return pp::testing::read_fixture("tracefs-6.18/" + relative);
}

// A tracefs tree holding instance "bb" with sched:sched_switch enabled and
// pages on CPUs 0 and 1 built as the kernel writes them.
class RecordInstanceUnit : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* f : {"events/header_page", "events/header_event",
                          "events/sched/sched_switch/format", "events/sched/sched_switch/id"}) {
      std::string text = fixture(f);
      ASSERT_FALSE(text.empty()) << f;
      dir_.write(std::string("instances/bb/") + f, text);
    }
    dir_.write("instances/bb/set_event", "sched:sched_switch\n");
    dir_.write("instances/bb/trace_clock", "local [global] counter\n");
    auto layout =
        ftrace::parse_ring_layout(fixture("events/header_page"), fixture("events/header_event"));
    ASSERT_TRUE(layout.ok());
    PageBuilder cpu0(*layout, 1000);
    cpu0.record(0, sched_switch_6_18(4242));  // at 1000
    cpu0.record(50, sched_switch_6_18(17));   // at 1050
    PageBuilder cpu1(*layout, 1020);
    cpu1.record(0, sched_switch_6_18(99));  // at 1020
    cpu1.missed(7);
    dir_.write("instances/bb/per_cpu/cpu0/trace_pipe_raw", cpu0.text());
    dir_.write("instances/bb/per_cpu/cpu1/trace_pipe_raw", cpu1.text());
    request_.instance = "bb";
    request_.output = dir_.path("bb.data");
    request_.tracefs_root = dir_.path();
    request_.kept_dir = dir_.path("kept");  // none: never the host's
  }

  pp::testing::TempDir dir_;
  InstanceRequest request_;
};

TEST_F(RecordInstanceUnit, WritesTracepointSamplesInTimeOrderWithTheirCpuAndPid) {
  auto result = record_instance(request_);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->samples, 3U);
  EXPECT_EQ(result->cpus, 2U);
  EXPECT_EQ(result->events, 1U);
  EXPECT_EQ(result->clock, "global");
  EXPECT_EQ(result->missed_events, 7U);
  EXPECT_EQ(result->pages_after_loss, 1U);
  EXPECT_FALSE(result->previous_boot);
  EXPECT_NE(instance_summary(*result).find("lost 7 events"), std::string::npos)
      << instance_summary(*result);

  auto file = report::PerfDataReader::read_file(request_.output);
  ASSERT_TRUE(file.ok()) << file.error().message();
  ASSERT_EQ(file->events().size(), 1U);
  const perf_event_attr& attr = file->events()[0].attr.attr;
  EXPECT_EQ(attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
  EXPECT_EQ(attr.config, 372U);
  EXPECT_EQ(attr.sample_type & PERF_SAMPLE_IP, 0U);
  EXPECT_EQ(file->events()[0].name, "sched:sched_switch");
  auto tracing = file->tracing_data();
  ASSERT_TRUE(tracing.ok()) << tracing.error().message();
  ASSERT_EQ(tracing->systems.size(), 1U);
  EXPECT_EQ(tracing->systems[0].name, "sched");

  std::vector<std::tuple<uint64_t, uint32_t, uint32_t>> samples;  // time, cpu, pid
  uint64_t lost = 0;
  Status s = file->for_each_record([&](const report::PerfDataRecord& r) -> Status {
    if (r.type == PERF_RECORD_LOST) {
      uint64_t n;
      std::memcpy(&n, r.bytes.data() + 16, 8);  // header, id, lost
      lost += n;
    }
    if (r.type != PERF_RECORD_SAMPLE)
      return ok_status();
    PP_ASSIGN_OR_RETURN(sys::Sample sample, file->sample(r));
    EXPECT_EQ(sample.pid, sample.tid);
    EXPECT_GE(sample.raw.size(), 64U);
    samples.emplace_back(sample.time, sample.cpu, sample.pid);
    return ok_status();
  });
  ASSERT_TRUE(s.ok()) << s.error().message();
  using T = std::tuple<uint64_t, uint32_t, uint32_t>;
  EXPECT_EQ(samples, (std::vector<T>{{1000, 0, 4242}, {1020, 1, 99}, {1050, 0, 17}}));
  EXPECT_EQ(lost, 7U);
}

TEST_F(RecordInstanceUnit, APreviousBootNamesNoTask) {
  dir_.write("instances/bb/last_boot_info", "ffffffffa0000000\t[kernel]\n");
  auto result = record_instance(request_);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_TRUE(result->previous_boot);
  EXPECT_EQ(instance_summary_json(*result)["previous_boot"], true);
  auto file = report::PerfDataReader::read_file(request_.output);
  ASSERT_TRUE(file.ok());
  int comms = 0;
  ASSERT_TRUE(file->for_each_record([&](const report::PerfDataRecord& r) -> Status {
                    comms += r.type == PERF_RECORD_COMM;
                    return ok_status();
                  })
                  .ok());
  EXPECT_EQ(comms, 0);
}

TEST_F(RecordInstanceUnit, ABrokenPageIsNamedAndTheRecordsBeforeItKept) {
  std::string page(4096, '\0');
  uint64_t commit = 99999;  // more than the page holds
  std::memcpy(page.data() + 8, &commit, 8);
  dir_.write("instances/bb/per_cpu/cpu1/trace_pipe_raw", page);
  auto result = record_instance(request_);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message().find("CPU 1, page 0, byte 8: commit says"), std::string::npos)
      << result.error().message();
  auto file = report::PerfDataReader::read_file(request_.output);
  ASSERT_TRUE(file.ok()) << file.error().message();
  int samples = 0;
  ASSERT_TRUE(file->for_each_record([&](const report::PerfDataRecord& r) -> Status {
                    samples += r.type == PERF_RECORD_SAMPLE;
                    return ok_status();
                  })
                  .ok());
  EXPECT_EQ(samples, 2);  // CPU 0's
}

TEST_F(RecordInstanceUnit, EventsDisabledSinceAreFoundByTheirIds) {
  dir_.write("instances/bb/set_event", "");
  auto result = record_instance(request_);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->samples, 3U);
  EXPECT_EQ(result->events, 1U);
}

TEST_F(RecordInstanceUnit, RecordsOfAnEventWithoutFormatAreLeftOutAndCounted) {
  auto layout =
      ftrace::parse_ring_layout(fixture("events/header_page"), fixture("events/header_event"));
  ASSERT_TRUE(layout.ok());
  PageBuilder b(*layout, 5000);
  std::vector<uint8_t> unknown = sched_switch_6_18(1);
  uint16_t id = 9999;
  std::memcpy(unknown.data(), &id, 2);
  b.record(0, unknown);
  b.record(1, unknown);
  b.record(1, sched_switch_6_18(2));
  const std::vector<uint8_t>& page = b.bytes();
  dir_.write("instances/bb/per_cpu/cpu1/trace_pipe_raw", std::string(page.begin(), page.end()));
  auto result = record_instance(request_);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->samples, 3U);  // CPU 0's two and this one
  EXPECT_EQ(result->unknown_records, 2U);
  EXPECT_NE(instance_summary(*result).find("2 records of events whose format"), std::string::npos);
}

TEST_F(RecordInstanceUnit, NoEventAndNoRecordIsAUsageError) {
  dir_.write("instances/bb/set_event", "");
  dir_.write("instances/bb/per_cpu/cpu0/trace_pipe_raw", "");
  dir_.write("instances/bb/per_cpu/cpu1/trace_pipe_raw", "");
  auto result = record_instance(request_);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind(), ErrorKind::kUsage);
  EXPECT_NE(result.error().message().find("has no enabled event"), std::string::npos);
}

TEST_F(RecordInstanceUnit, PreviousBootReadsTheBootMappedInstanceOfTheCommandLine) {
  dir_.write("instances/bb/last_boot_info", "ffffffffa0000000\t[kernel]\n");
  request_.instance.clear();
  request_.previous_boot = true;
  request_.kernel_cmdline =
      "root=/dev/vda1 memmap=12M$0x10000000 trace_instance=bb^traceoff@0x10000000:12M\n";
  auto result = record_instance(request_);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->instance, "bb");
  EXPECT_TRUE(result->previous_boot);
  EXPECT_EQ(result->samples, 3U);
}

TEST_F(RecordInstanceUnit, PreviousBootRefusesWhatIsNoPreviousBoot) {
  request_.instance.clear();
  request_.previous_boot = true;
  struct Case {
    const char* cmdline;
    const char* last_boot_info;  // nullptr: none
    ErrorKind kind;
    const char* message;
  };
  const Case cases[] = {
      {"root=/dev/vda1 trace_instance=bb,sched:sched_switch", "x\t[kernel]\n", ErrorKind::kNotFound,
       "names no boot-mapped ftrace instance"},
      {"trace_instance=bb^traceoff@0x10000000:12M", "# Current\n", ErrorKind::kNotFound,
       "its last_boot_info says '# Current'"},
      {"trace_instance=bb^traceoff@0x10000000:12M", nullptr, ErrorKind::kNotFound,
       "it has no last_boot_info"},
      {"trace_instance=bb@a trace_instance=cc@b", "x\t[kernel]\n", ErrorKind::kUsage,
       "several boot-mapped instances (bb, cc); choose one with --instance NAME"},
  };
  for (const Case& c : cases) {
    request_.kernel_cmdline = c.cmdline;
    if (c.last_boot_info)
      dir_.write("instances/bb/last_boot_info", c.last_boot_info);
    else
      std::remove(dir_.path("instances/bb/last_boot_info").c_str());
    auto result = record_instance(request_);
    ASSERT_FALSE(result.ok()) << c.cmdline;
    EXPECT_EQ(result.error().kind(), c.kind) << c.cmdline;
    EXPECT_NE(result.error().message().find(c.message), std::string::npos)
        << result.error().message();
  }
}

// A print record (ftrace/print of the 6.18 fixture: id 5, ip at 8, buf at 16).
std::vector<uint8_t> print_record(const std::string& text) {
  std::vector<uint8_t> r(16 + text.size() + 1, 0);
  r.resize((r.size() + 3) / 4 * 4, 0);
  uint16_t id = 5;
  std::memcpy(r.data(), &id, 2);
  std::memcpy(r.data() + 16, text.data(), text.size());
  return r;
}

TEST_F(RecordInstanceUnit, PreviousBootReadsTheBrokersCopyWithWallClockFromItsMarkers) {
  // The copy the broker kept (persistent/previous_boot.h): a tracefs root of
  // its own; the live instance is this boot's by now.
  dir_.write("instances/bb/last_boot_info", "# Current\n");
  const std::string copy = "kept/1796285031-6f0c/";
  for (const char* f :
       {"events/header_page", "events/header_event", "events/sched/sched_switch/format",
        "events/sched/sched_switch/id", "events/ftrace/print/format", "events/ftrace/print/id"})
    dir_.write(copy + "instances/bb/" + f, fixture(f));
  dir_.write(copy + "instances/bb/last_boot_info", "text delta:\t0\n");
  dir_.write(copy + "instances/bb/trace_clock", "[local]\n");
  dir_.write(copy + "instances/bb/set_event", "");
  dir_.write(copy + "kept.json",
             R"({"version": 1, "instance": "bb", "boot_id": "6f0c", "kept_at": 1796285031})");
  auto layout =
      ftrace::parse_ring_layout(fixture("events/header_page"), fixture("events/header_event"));
  ASSERT_TRUE(layout.ok());
  PageBuilder cpu0(*layout, 900);
  cpu0.record(0, sched_switch_6_18(1));  // at 900: before any marker
  cpu0.record(100, print_record("perf-persistent clock-marker clock=local "
                                "realtime_ns=1796285000000000000 boot_id=aaaa\n"));  // at 1000
  cpu0.record(500, sched_switch_6_18(2));                                            // at 1500
  PageBuilder cpu1(*layout, 2000);
  cpu1.record(0, print_record("perf-persistent clock-marker clock=local "
                              "realtime_ns=1796285010000000000 boot_id=aaaa\n"));  // at 2000
  cpu1.record(7, sched_switch_6_18(3));                                            // at 2007
  dir_.write(copy + "instances/bb/per_cpu/cpu0/trace_pipe_raw", cpu0.text());
  dir_.write(copy + "instances/bb/per_cpu/cpu1/trace_pipe_raw", cpu1.text());
  request_.instance.clear();
  request_.previous_boot = true;
  request_.kernel_cmdline = "root=/dev/vda1";  // the copy needs no command line
  auto result = record_instance(request_);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->kept, dir_.path("kept/1796285031-6f0c"));
  EXPECT_TRUE(result->previous_boot);
  EXPECT_EQ(result->samples, 5U) << "the markers are samples too (ftrace:print)";
  EXPECT_EQ(result->markers, 2U);
  EXPECT_EQ(result->unmarked_records, 1U);
  ASSERT_TRUE(result->first_wall_ns && result->last_wall_ns);
  EXPECT_EQ(*result->first_wall_ns, 1796285000000000000U);
  EXPECT_EQ(*result->last_wall_ns, 1796285010000000007U) << "from the last marker before it";
  json j = instance_summary_json(*result);
  EXPECT_EQ(j["wall_clock"]["markers"], 2);
  EXPECT_EQ(j["wall_clock"]["boot_id"], "aaaa");
  EXPECT_EQ(j["wall_clock"]["last"], "2026-12-03T08:03:30.000000007Z");
  EXPECT_EQ(j["kept"], dir_.path("kept/1796285031-6f0c"));
  EXPECT_NE(instance_summary(*result).find("perf script -F +tod"), std::string::npos);

  // Reading the copy does not consume it; the perf.data carries the clock
  // data of the last marker (perf script -F tod).
  auto again = record_instance(request_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->samples, 5U);
  auto file = report::PerfDataReader::read_file(request_.output);
  ASSERT_TRUE(file.ok()) << file.error().message();
  ASSERT_FALSE(file->events().empty());
  EXPECT_TRUE(file->events()[0].attr.attr.use_clockid);
  EXPECT_TRUE(file->has_feature(report::kFeatureClockData));
}

TEST_F(RecordInstanceUnit, TheKernelsStatsCountersAreSummedOverTheCpus) {
  dir_.write("instances/bb/per_cpu/cpu0/stats",
             "entries: 2\noverrun: 10\ncommit overrun: 1\n"
             "dropped events: 0\n");
  dir_.write("instances/bb/per_cpu/cpu1/stats",
             "entries: 1\noverrun: 5\ncommit overrun: 0\n"
             "dropped events: 4\n");
  auto result = record_instance(request_);
  ASSERT_TRUE(result.ok()) << result.error().message();
  EXPECT_EQ(result->overrun, 16U);
  EXPECT_EQ(result->dropped_events, 4U);
  json j = instance_summary_json(*result);
  EXPECT_EQ(j["lost"]["overrun"], 16);
  EXPECT_EQ(j["lost"]["dropped_events"], 4);
  EXPECT_NE(instance_summary(*result).find("16 records overwritten before a read, 4 not written"),
            std::string::npos)
      << instance_summary(*result);
  // Without stats files (a kept copy): null, not 0.
  std::remove(dir_.path("instances/bb/per_cpu/cpu0/stats").c_str());
  std::remove(dir_.path("instances/bb/per_cpu/cpu1/stats").c_str());
  auto none = record_instance(request_);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(instance_summary_json(*none)["lost"]["overrun"].is_null());
}

}  // namespace
}  // namespace pp::record

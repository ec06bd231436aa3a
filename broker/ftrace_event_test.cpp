#include "broker/ftrace_event.h"

#include <linux/perf_event.h>
#include <poll.h>
#include <sys/stat.h>
#include <time.h>

#include <fstream>
#include <gtest/gtest.h>
#include <iterator>

#include "ftrace/testing/page_builder.h"
#include "sys/perf_abi_records.h"
#include "sys/perf_abi_sample.h"
#include "sys/ring_reader.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::broker {
namespace {

std::string fixture(const std::string& relative) {
  return pp::testing::read_fixture(relative);
}

TEST(FtraceEventHelpers, CpumaskIsHexWordsOf32CpusHighestFirst) {
  EXPECT_EQ(cpumask_text({0, 1}), "3");
  EXPECT_EQ(cpumask_text({0}), "1");
  EXPECT_EQ(cpumask_text({4, 5}), "30");
  EXPECT_EQ(cpumask_text({32}), "1,00000000");
  EXPECT_EQ(cpumask_text({0, 33, 70}), "40,00000002,00000001");
}

TEST(FtraceEventHelpers, ClocksMapToTraceClocksAndRealtimeIsRefused) {
  EXPECT_EQ(*trace_clock_for(CLOCK_MONOTONIC), "mono");
  EXPECT_EQ(*trace_clock_for(CLOCK_MONOTONIC_RAW), "mono_raw");
  EXPECT_EQ(*trace_clock_for(CLOCK_BOOTTIME), "boot");
  EXPECT_EQ(*trace_clock_for(CLOCK_TAI), "tai");
  auto realtime = trace_clock_for(CLOCK_REALTIME);
  ASSERT_FALSE(realtime.ok());
  EXPECT_EQ(realtime.error().kind(), ErrorKind::kUsage);
  EXPECT_NE(realtime.error().message().find("-k monotonic"), std::string::npos);
}

// A fake instance in a temp dir, as a previous broker left it: regular files
// for the settings, the 6.18 header files, and a trace_pipe_raw holding the
// pages the test writes (read a page at a time, then end of file).
class FakeInstance : public ::testing::Test {
 protected:
  static constexpr uint16_t kId = 305;

  void SetUp() override {
    spec_.instance = "perf-persistent.gp";
    spec_.tracepoint = "syscalls:sys_enter_getppid";
    spec_.tracepoint_id = kId;
    spec_.cpus = {0};
    spec_.buffer_kb = 64;
    spec_.clockid = CLOCK_MONOTONIC;
    spec_.event_id = 7;
    std::string d = "instances/perf-persistent.gp/";
    dir_.write(d + "tracing_on", "1\n");
    dir_.write(d + "trace_clock", "local global counter uptime perf [mono] mono_raw boot\n");
    dir_.write(d + "buffer_size_kb", "64\n");
    dir_.write(d + "tracing_cpumask", "1\n");
    dir_.write(d + "options/overwrite", "1\n");
    dir_.write(d + "buffer_percent", "25\n");
    dir_.write(d + "set_event", "syscalls:sys_enter_getppid\n");
    std::string ev = d + "events/syscalls/sys_enter_getppid/";
    dir_.write(ev + "filter", "none\n");
    dir_.write(ev + "enable", "1\n");
    dir_.write(ev + "id", "305\n");
    dir_.write(ev + "format", fixture("tracefs-6.18/events/syscalls/sys_enter_getppid/format"));
    dir_.write(d + "events/header_page", fixture("tracefs-6.18/events/header_page"));
    dir_.write(d + "events/header_event", fixture("tracefs-6.18/events/header_event"));
    ::chmod(dir_.path(d).c_str(), kInstanceMode);  // as the broker made it
    auto layout = ftrace::parse_ring_layout(fixture("tracefs-6.18/events/header_page"),
                                            fixture("tracefs-6.18/events/header_event"));
    ASSERT_TRUE(layout.ok()) << layout.error().message();
    layout_ = *layout;
  }

  // A getppid record: common_type, flags, preempt count, common_pid, nr.
  static std::vector<uint8_t> getppid_record(int32_t pid) {
    std::vector<uint8_t> r(16, 0);
    uint16_t type = kId;
    std::memcpy(r.data(), &type, 2);
    std::memcpy(r.data() + 4, &pid, 4);
    int32_t nr = 110;
    std::memcpy(r.data() + 8, &nr, 4);
    return r;
  }

  void write_pages(const std::vector<std::vector<uint8_t>>& pages) {
    std::string bytes;
    for (const auto& p : pages)
      bytes.append(reinterpret_cast<const char*>(p.data()), p.size());
    dir_.write("instances/perf-persistent.gp/per_cpu/cpu0/trace_pipe_raw", bytes);
  }

  // A reader's view of `event`'s ring of CPU 0: read from its oldest record.
  static Result<sys::RingReader> oldest_reader(const FtraceEvent& event) {
    const sys::SharedRing* ring = event.ring(0);
    if (!ring)
      return Error(ENOENT, "the event has no ring for CPU 0");
    return sys::RingReader::create(
        {ring->memory().data(), ring->memory().size()},
        {.layout = sys::RingLayout::kBackward, .start = sys::RingStart::kOldest, .settle_us = 0});
  }

  std::string setting(const std::string& file) {
    return sys::Tree(dir_.path("instances/perf-persistent.gp")).read(file).value_or("?");
  }

  pp::testing::TempDir dir_;
  FtraceSpec spec_;
  ftrace::RingLayout layout_;
};

TEST_F(FakeInstance, DrainRepublishesEachRecordAsPerfRecordsTracepointSampleAndLossesAsLost) {
  ftrace::testing::PageBuilder first(layout_, 1'000'000);
  first.record(0, getppid_record(42));
  first.record(10, getppid_record(43));
  ftrace::testing::PageBuilder second(layout_, 2'000'000);
  second.missed(5);
  second.record(0, getppid_record(44));
  write_pages({first.bytes(), second.bytes()});

  std::vector<std::string> changed;
  auto event = FtraceEvent::adopt(sys::Tree(dir_.path("")), spec_, &changed);
  ASSERT_TRUE(event.ok()) << event.error().message();
  EXPECT_TRUE(changed.empty()) << changed.front();
  auto drained = (*event)->drain();
  ASSERT_TRUE(drained.ok()) << drained.error().message();
  EXPECT_EQ(drained->records, 3u);
  EXPECT_EQ(drained->pages, 2u);
  EXPECT_EQ(drained->lost, 5u);
  EXPECT_EQ((*event)->published(0), 3u);

  auto reader = oldest_reader(**event);
  ASSERT_TRUE(reader.ok()) << reader.error().message();
  const sys::RingBatch& batch = reader->read();
  ASSERT_EQ(batch.size(), 4u);
  const perf_event_attr& attr = (*event)->attr().attr;
  EXPECT_EQ(attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
  EXPECT_EQ(attr.config, kId);
  EXPECT_EQ(attr.sample_type & PERF_SAMPLE_IP, 0u) << "ftrace records no IP";
  std::vector<uint32_t> pids;
  std::vector<uint64_t> times;
  uint64_t lost = 0;
  for (std::span<const uint8_t> record : batch) {
    perf_event_header header = sys::record_header_at(record.data());
    if (header.type == PERF_RECORD_LOST) {
      EXPECT_EQ(sys::u64_at(record.data() + 8), (*event)->sample_id(0));
      lost += sys::u64_at(record.data() + 16);
      continue;
    }
    ASSERT_EQ(header.type, uint32_t(PERF_RECORD_SAMPLE));
    auto sample = sys::decode_sample(attr, record);
    ASSERT_TRUE(sample.ok()) << sample.error().message();
    EXPECT_EQ(sample->identifier, (*event)->sample_id(0));
    EXPECT_EQ(sample->cpu, 0u);
    EXPECT_EQ(sample->period, 1u);
    EXPECT_EQ(sample->pid, sample->tid);
    ASSERT_GE(sample->raw.size(), 16u);
    uint16_t type;
    std::memcpy(&type, sample->raw.data(), 2);
    EXPECT_EQ(type, kId) << "RAW is the whole ftrace record";
    pids.push_back(sample->pid);
    times.push_back(sample->time);
  }
  EXPECT_EQ(pids, (std::vector<uint32_t>{42, 43, 44}));
  EXPECT_EQ(times, (std::vector<uint64_t>{1'000'000, 1'000'010, 2'000'000}));
  EXPECT_EQ(lost, 5u);
  EXPECT_GE((*event)->sample_id(0), kSharedRingIdBase);
}

// Every loss the kernel knows reaches the readers once: a count stored
// after a page, at least one for a page flagged without room for its
// count, and the "commit overrun" of the CPU's stats (drops no page
// flags) since the broker took the instance, not before.
TEST_F(FakeInstance, LossesAreThePagesCountsAndTheStatsCommitOverrunSinceTheTake) {
  const std::string stats = "instances/perf-persistent.gp/per_cpu/cpu0/stats";
  dir_.write(stats, "entries: 3\noverrun: 50\ncommit overrun: 3\n");
  ftrace::testing::PageBuilder stored(layout_, 1'000'000);
  stored.missed(5);
  stored.record(0, getppid_record(42));
  ftrace::testing::PageBuilder flagged(layout_, 2'000'000);
  flagged.missed(std::nullopt);
  flagged.record(0, getppid_record(43));
  ftrace::testing::PageBuilder another(layout_, 3'000'000);
  another.missed(std::nullopt);
  another.record(0, getppid_record(44));
  write_pages({stored.bytes(), flagged.bytes(), another.bytes()});
  auto event = FtraceEvent::adopt(sys::Tree(dir_.path("")), spec_, nullptr);
  ASSERT_TRUE(event.ok()) << event.error().message();
  dir_.write(stats, "entries: 3\noverrun: 57\ncommit overrun: 10\n");
  auto drained = (*event)->drain();
  ASSERT_TRUE(drained.ok()) << drained.error().message();
  EXPECT_EQ(drained->records, 3u);
  EXPECT_EQ(drained->lost, 5u + 1 + 1 + 7) << "stored, two flagged, commit overrun 3 to 10";

  auto again = (*event)->drain();
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->lost, 0u) << "nothing counted twice";
  // Read where pages came only; a buffer reset starts the kernel's count
  // again.
  dir_.write(stats, "entries: 0\noverrun: 0\ncommit overrun: 2\n");
  auto idle = (*event)->drain();
  ASSERT_TRUE(idle.ok()) << idle.error().message();
  EXPECT_EQ(idle->lost, 0u) << "no page, no stats read";
  ftrace::testing::PageBuilder later(layout_, 4'000'000);
  later.record(0, getppid_record(45));
  {
    std::ofstream out(dir_.path("instances/perf-persistent.gp/per_cpu/cpu0/trace_pipe_raw"),
                      std::ios::binary | std::ios::app);
    out.write(reinterpret_cast<const char*>(later.bytes().data()),
              std::streamsize(later.bytes().size()));
  }
  auto reset = (*event)->drain();
  ASSERT_TRUE(reset.ok()) << reset.error().message();
  EXPECT_EQ(reset->records, 1u);
  EXPECT_EQ(reset->lost, 2u);

  // What a reader of the ring sees: the same total as PERF_RECORD_LOST.
  auto reader = oldest_reader(**event);
  ASSERT_TRUE(reader.ok()) << reader.error().message();
  uint64_t lost = 0;
  for (std::span<const uint8_t> record : reader->read())
    if (sys::record_header_at(record.data()).type == PERF_RECORD_LOST)
      lost += sys::u64_at(record.data() + 16);
  EXPECT_EQ(lost, 16u);
}

TEST_F(FakeInstance, AdoptPutsBackWhatChangedWhileNoBrokerRanAndCheckUndoesForeignChanges) {
  write_pages({});
  dir_.write("instances/perf-persistent.gp/tracing_on", "0\n");
  dir_.write("instances/perf-persistent.gp/buffer_size_kb", "65\n");  // the kernel's rounding
  std::vector<std::string> changed;
  auto event = FtraceEvent::adopt(sys::Tree(dir_.path("")), spec_, &changed);
  ASSERT_TRUE(event.ok()) << event.error().message();
  ASSERT_EQ(changed.size(), 1u) << "a rounded buffer size is no change";
  EXPECT_EQ(changed[0], "tracing_on was '0', set to '1' again");
  EXPECT_EQ(setting("tracing_on"), "1\n");
  EXPECT_TRUE((*event)->check().empty());

  dir_.write("instances/perf-persistent.gp/events/syscalls/sys_enter_getppid/filter",
             "common_pid == 1\n");
  dir_.write("instances/perf-persistent.gp/tracing_cpumask", "2\n");
  std::vector<std::string> found = (*event)->check();
  ASSERT_EQ(found.size(), 2u);
  EXPECT_NE(found[0].find("tracing_cpumask was '2'"), std::string::npos) << found[0];
  EXPECT_NE(found[1].find("filter was 'common_pid == 1'"), std::string::npos) << found[1];
  EXPECT_EQ(setting("tracing_cpumask"), "1\n");
  EXPECT_EQ(setting("events/syscalls/sys_enter_getppid/filter"), "0\n");
}

// A reader polls the hangup pipe in place of its ring: nothing while the
// event lives, POLLHUP once the broker's event is gone (destroyed, as at
// the broker's exit) or removed (killed).
TEST_F(FakeInstance, TheHangupPipeHangsUpWhenTheEventIsGoneOrRemoved) {
  auto poll_now = [](int fd) {
    pollfd p{fd, POLLIN, 0};
    EXPECT_GE(::poll(&p, 1, 0), 0);
    return p.revents;
  };
  write_pages({});
  auto event = FtraceEvent::adopt(sys::Tree(dir_.path("")), spec_, nullptr);
  ASSERT_TRUE(event.ok()) << event.error().message();
  auto held = (*event)->hangup_fd();
  ASSERT_TRUE(held.ok()) << held.error().message();
  EXPECT_EQ(poll_now(held->get()), 0) << "the event lives";
  event->reset();
  EXPECT_TRUE(poll_now(held->get()) & POLLHUP) << "the broker's event gone";

  auto again = FtraceEvent::adopt(sys::Tree(dir_.path("")), spec_, nullptr);
  ASSERT_TRUE(again.ok()) << again.error().message();
  auto before = (*again)->hangup_fd();
  ASSERT_TRUE(before.ok()) << before.error().message();
  EXPECT_EQ(poll_now(before->get()), 0) << "adopted anew";
  (void)(*again)->remove();  // rmdir of the fake instance fails: not the point
  EXPECT_TRUE(poll_now(before->get()) & POLLHUP) << "killed";
  EXPECT_FALSE((*again)->hangup_fd().ok()) << "a removed event hands out no pipe";
}

TEST_F(FakeInstance, AnInstanceThatIsGoneIsNotFound) {
  spec_.instance = "perf-persistent.other";
  auto event = FtraceEvent::adopt(sys::Tree(dir_.path("")), spec_, nullptr);
  ASSERT_FALSE(event.ok());
  EXPECT_EQ(event.error().kind(), ErrorKind::kNotFound);
}

}  // namespace
}  // namespace pp::broker

// The ring reader on this machine's kernel: syscalls:sys_enter_getppid
// opened on every CPU, mapped read-only (so the kernel runs the buffer in
// overwrite mode), in both layouts; a child pinned to CPU 0 makes exactly N
// getppid calls.
#include <sched.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <gtest/gtest.h>

#include "base/cpu_list.h"
#include "sys/kernel.h"
#include "sys/ring_reader.h"
#include "sys/tree.h"
#include "tests/kernel/kernel_env.h"

namespace pp::sys {
namespace {

using testing::GetppidCaller;

constexpr uint64_t kSampleType =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
// header, identifier, pid/tid, time, cpu/res, then u32 size + 20 raw bytes:
// the tracepoint's struct syscall_trace_enter (common fields, int nr, padded
// to the args[] that sys_enter_getppid has none of), aligned so that the
// record stays u64-sized: 64 bytes.
constexpr size_t kSampleSize = 64;
constexpr size_t kPidOffset = 16;
constexpr size_t kRawOffset = 40;

std::vector<int> online_cpus() {
  auto text = Tree(kDefaultSysfsRoot).read("devices/system/cpu/online");
  if (!text.ok())
    return {0};
  auto cpus = parse_cpu_list(*text);
  return cpus.ok() ? *cpus : std::vector<int>{0};
}

EventAttr getppid_attr(long id, bool backward) {
  EventAttr attr;
  attr.attr.type = PERF_TYPE_TRACEPOINT;
  attr.attr.size = kAttrSizeVer7;
  attr.attr.config = uint64_t(id);
  attr.attr.sample_period = 1;
  attr.attr.sample_type = kSampleType;
  attr.attr.wakeup_events = 1;
  attr.attr.write_backward = backward;
  return attr;
}

struct CpuRing {
  int cpu = 0;
  Fd fd;
  Mapping map;
};

// One read-only buffer of `pages` data pages per online CPU.
std::vector<CpuRing> open_rings(const EventAttr& attr, size_t pages) {
  std::vector<CpuRing> rings;
  for (int cpu : online_cpus()) {
    auto fd = real_kernel().perf_event_open(attr, -1, cpu, -1, 0);
    EXPECT_TRUE(fd.ok()) << "CPU " << cpu << ": " << fd.error().message();
    if (!fd.ok())
      return {};
    auto map = real_kernel().mmap(fd->get(), (1 + pages) * page_size(), PROT_READ);
    EXPECT_TRUE(map.ok()) << "CPU " << cpu << ": " << map.error().message();
    if (!map.ok())
      return {};
    rings.push_back({cpu, std::move(fd).value(), std::move(map).value()});
  }
  return rings;
}

RingReader reader_for(const CpuRing& ring, const EventAttr& attr, RingStart start) {
  auto reader = RingReader::create(
      {ring.map.data(), ring.map.size()},
      {.layout = attr.attr.write_backward ? RingLayout::kBackward : RingLayout::kForward,
       .start = start,
       .attr = attr});
  EXPECT_TRUE(reader.ok()) << reader.error().message();
  return std::move(reader).value();
}

struct Tally {
  uint64_t records = 0;
  uint64_t child = 0;  // samples with the child's pid
  uint64_t child_on_0 = 0;
  uint64_t malformed = 0;  // records not laid out as the attr says
};

void tally(const RingBatch& batch, const EventAttr& attr, pid_t child, int cpu, Tally& t) {
  for (std::span<const uint8_t> record : batch) {
    ++t.records;
    if (!record_matches_attr(record, attr.attr) || record.size() != kSampleSize) {
      ++t.malformed;
      continue;
    }
    uint32_t pid;
    int32_t nr;
    std::memcpy(&pid, record.data() + kPidOffset, sizeof(pid));
    std::memcpy(&nr, record.data() + kRawOffset + 4 + 8, sizeof(nr));
    if (nr != SYS_getppid)
      ++t.malformed;
    if (pid == uint32_t(child)) {
      ++t.child;
      t.child_on_0 += cpu == 0;
    }
  }
}

class RealRing : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    std::string why;
    PP_SKIP_UNLESS(testing::perf_allowed(&why), why);
    id_ = testing::tracepoint_id("syscalls", "sys_enter_getppid");
    PP_SKIP_UNLESS(id_ >= 0, "no syscalls:sys_enter_getppid in tracefs");
  }
  EventAttr attr() const { return getppid_attr(id_, GetParam()); }
  long id_ = -1;
};

INSTANTIATE_TEST_SUITE_P(Sys, RealRing, ::testing::Values(false, true), [](const auto& param) {
  return std::string(param.param ? "Backward" : "Forward");
});

// Exactly 1000 samples for 1000 syscalls, read from a
// read-only mapping; the reader writes nothing into it.
TEST_P(RealRing, ReaderYieldsExactlyTheChildsCalls) {
  constexpr long kCalls = 1000;
  EventAttr event = attr();
  std::vector<CpuRing> rings = open_rings(event, 32);  // 128 KiB: 2048 samples
  ASSERT_FALSE(rings.empty());
  std::vector<RingReader> readers;
  for (const CpuRing& ring : rings)
    readers.push_back(reader_for(ring, event, RingStart::kNow));
  GetppidCaller child(kCalls);
  ASSERT_GT(child.pid(), 0);
  child.go();
  ASSERT_TRUE(child.wait());
  Tally t;
  for (size_t i = 0; i < rings.size(); ++i) {
    tally(readers[i].read(), event, child.pid(), rings[i].cpu, t);
    EXPECT_EQ(readers[i].stats().lapped_bytes + readers[i].stats().overrun_bytes, 0u);
    EXPECT_EQ(readers[i].stats().corrupt_bytes, 0u);
  }
  EXPECT_EQ(t.child, uint64_t(kCalls));
  EXPECT_EQ(t.child_on_0, uint64_t(kCalls)) << "the child was pinned to CPU 0";
  EXPECT_EQ(t.malformed, 0u);
}

// A second reader on a dup'd fd maps the same buffer and keeps its own
// position: both see all N, and reading with one takes nothing from the other.
TEST_P(RealRing, ASecondReaderOnADupdFdSeesTheSameCalls) {
  constexpr long kCalls = 500;
  EventAttr event = attr();
  std::vector<CpuRing> rings = open_rings(event, 16);
  ASSERT_FALSE(rings.empty());
  ASSERT_EQ(rings[0].cpu, 0);
  Fd dup(::dup(rings[0].fd.get()));
  ASSERT_TRUE(dup.valid());
  auto second_map = real_kernel().mmap(dup.get(), rings[0].map.size(), PROT_READ);
  ASSERT_TRUE(second_map.ok()) << second_map.error().message();
  CpuRing second{0, Fd(), std::move(second_map).value()};
  RingReader first_reader = reader_for(rings[0], event, RingStart::kNow);
  RingReader second_reader = reader_for(second, event, RingStart::kNow);
  GetppidCaller child(kCalls);
  child.go();
  ASSERT_TRUE(child.wait());
  Tally first, other;
  tally(first_reader.read(), event, child.pid(), 0, first);
  EXPECT_TRUE(first_reader.read().empty());
  tally(second_reader.read(), event, child.pid(), 0, other);
  EXPECT_EQ(first.child, uint64_t(kCalls));
  EXPECT_EQ(other.child, uint64_t(kCalls));
  EXPECT_EQ(first.records, other.records);
}

// The flight recorder: calls made with no reader running, then a snapshot.
// A buffer too small for them keeps the newest and counts the rest: all
// samples are 64 bytes, so the count of lost records is exact.
TEST_P(RealRing, SnapshotOfASmallBufferCountsWhatWasLost) {
  constexpr long kCalls = 1000;
  EventAttr event = attr();
  std::vector<CpuRing> rings = open_rings(event, 1);  // 4 KiB: 64 samples
  ASSERT_FALSE(rings.empty());
  ASSERT_EQ(rings[0].cpu, 0);
  GetppidCaller child(kCalls);
  child.go();
  ASSERT_TRUE(child.wait());
  RingReader reader = reader_for(rings[0], event, RingStart::kOldest);
  const RingBatch& batch = reader.read();
  // Both writers start at 0; the reader stops where data_head was.
  uint64_t written = event.attr.write_backward ? 0 - reader.position() : reader.position();
  Tally t;
  tally(batch, event, child.pid(), 0, t);
  EXPECT_EQ(t.malformed, 0u);
  EXPECT_GE(written, uint64_t(kCalls) * kSampleSize);
  EXPECT_EQ(batch.bytes + batch.lost.bytes, written);
  EXPECT_EQ(t.records + batch.lost.records, written / kSampleSize);
  EXPECT_LT(t.child, uint64_t(kCalls));
  EXPECT_GE(t.records, page_size() / kSampleSize - 2) << "all but what the lap and slack cut";
  EXPECT_GE(batch.lost.records, uint64_t(kCalls) - page_size() / kSampleSize);
}

// Reading while the child runs flat out into a one-page buffer: the writer
// laps the reader and overwrites what it copies, over and over. Every record
// that comes out is whole, and what comes out plus what is counted lost is
// exactly what was written.
TEST_P(RealRing, AReaderOutrunByTheWriterNeverEmitsATornRecord) {
  constexpr long kCalls = 100000;
  EventAttr event = attr();
  std::vector<CpuRing> rings = open_rings(event, 1);
  ASSERT_FALSE(rings.empty());
  ASSERT_EQ(rings[0].cpu, 0);
  RingReader reader = reader_for(rings[0], event, RingStart::kNow);
  const auto* page = reinterpret_cast<const perf_event_mmap_page*>(rings[0].map.data());
  uint64_t start = load_data_head(page);
  GetppidCaller child(kCalls);
  child.go();
  Tally t;
  uint64_t lost_bytes = 0, bytes = 0;
  bool finished = false;
  while (!finished) {
    finished = child.done();
    const RingBatch& batch = reader.read();
    tally(batch, event, child.pid(), 0, t);
    bytes += batch.bytes;
    lost_bytes += batch.lost.bytes;
  }
  uint64_t end = reader.position();
  uint64_t written = event.attr.write_backward ? start - end : end - start;
  EXPECT_EQ(t.malformed, 0u) << "a torn or misparsed record came out";
  EXPECT_EQ(reader.stats().corrupt_bytes, 0u);
  EXPECT_EQ(bytes + lost_bytes, written);
  EXPECT_EQ(lost_bytes % kSampleSize, 0u) << "losses fall on record boundaries";
  EXPECT_LE(t.child, uint64_t(kCalls));
  EXPECT_GT(t.records, 0u);
  RecordProperty("emitted", std::to_string(t.records));
  RecordProperty("lost_bytes", std::to_string(lost_bytes));
}

}  // namespace
}  // namespace pp::sys

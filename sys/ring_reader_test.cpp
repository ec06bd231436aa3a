// The ring reader on buffers built in memory by RingWriter (the kernel's side
// of the ring, as ring_buffer.c writes it), in both layouts and start modes,
// with the writer lapping the reader, moving during the copy, or caught in
// the middle of a record; and on the fake kernel's mapped buffers.
#include "sys/ring_reader.h"

#include <sys/mman.h>

#include <cstring>
#include <gtest/gtest.h>
#include <map>

#include "sys/ring_writer.h"
#include "sys/testing/fake_kernel.h"

namespace pp::sys {
namespace {

constexpr size_t kControl = 4096;

// A record whose every byte after the header is a function of its sequence
// number, so a torn or misaligned record cannot pass for a real one.
std::vector<uint8_t> make_record(uint64_t seq, size_t size, uint32_t type = PERF_RECORD_SAMPLE) {
  std::vector<uint8_t> out(size);
  perf_event_header header{type, PERF_RECORD_MISC_KERNEL, uint16_t(size)};
  std::memcpy(out.data(), &header, sizeof(header));
  if (size >= 16)
    std::memcpy(out.data() + 8, &seq, sizeof(seq));
  for (size_t i = 16; i < size; ++i)
    out[i] = uint8_t(seq * 31 + i * 7 + 1);
  return out;
}

uint64_t seq_of(std::span<const uint8_t> record) {
  uint64_t seq;
  std::memcpy(&seq, record.data() + 8, sizeof(seq));
  return seq;
}

// A control page and a data area in memory, written as the kernel would,
// remembering every record so reads can be checked byte for byte.
class MemoryRing {
 public:
  MemoryRing(size_t data_size, RingLayout layout)
      : memory_((kControl + data_size) / sizeof(uint64_t)),
        writer_({reinterpret_cast<uint8_t*>(memory_.data()), kControl + data_size}, kControl,
                data_size, layout, true) {}

  std::span<const uint8_t> mapping() const {
    return {reinterpret_cast<const uint8_t*>(memory_.data()), memory_.size() * sizeof(uint64_t)};
  }
  RingWriter& writer() { return writer_; }

  uint64_t write(size_t size) {
    uint64_t seq = next_++;
    written_[seq] = make_record(seq, size);
    EXPECT_TRUE(writer_.write(written_[seq]));
    return seq;
  }
  void write_n(size_t n, size_t size) {
    for (size_t i = 0; i < n; ++i)
      write(size);
  }
  void write_raw(const std::vector<uint8_t>& record) { EXPECT_TRUE(writer_.write(record)); }
  uint64_t next_seq() const { return next_; }

  // Every record is one this ring wrote, whole; returns their sequence numbers.
  std::vector<uint64_t> check(const RingBatch& batch) const {
    std::vector<uint64_t> seqs;
    for (std::span<const uint8_t> record : batch) {
      uint64_t seq = seq_of(record);
      auto it = written_.find(seq);
      EXPECT_NE(it, written_.end()) << "a record no one wrote, seq " << seq;
      if (it == written_.end())
        continue;
      EXPECT_EQ(record.size(), it->second.size()) << "seq " << seq;
      EXPECT_TRUE(std::equal(record.begin(), record.end(), it->second.begin(), it->second.end()))
          << "seq " << seq << " was torn";
      seqs.push_back(seq);
    }
    return seqs;
  }

 private:
  std::vector<uint64_t> memory_;
  RingWriter writer_;
  std::map<uint64_t, std::vector<uint8_t>> written_;
  uint64_t next_ = 0;
};

std::vector<uint64_t> range(uint64_t from, uint64_t to) {
  std::vector<uint64_t> out;
  for (uint64_t i = from; i < to; ++i)
    out.push_back(i);
  return out;
}

RingReader make_reader(const MemoryRing& ring, RingLayout layout, RingStart start,
                       uint32_t settle_us = 0) {
  auto reader = RingReader::create(ring.mapping(),
                                   {.layout = layout, .start = start, .settle_us = settle_us});
  EXPECT_TRUE(reader.ok()) << reader.error().message();
  return std::move(reader).value();
}

class BothLayouts : public ::testing::TestWithParam<RingLayout> {};

INSTANTIATE_TEST_SUITE_P(RingReader, BothLayouts,
                         ::testing::Values(RingLayout::kForward, RingLayout::kBackward),
                         [](const auto& param) {
                           return std::string(ring_layout_name(param.param));
                         });

TEST_P(BothLayouts, FollowReadsOnlyNewRecordsOldestFirst) {
  MemoryRing ring(4096, GetParam());
  ring.write_n(3, 32);
  RingReader reader = make_reader(ring, GetParam(), RingStart::kNow);
  EXPECT_FALSE(reader.has_new_data());
  EXPECT_TRUE(reader.read().empty());
  ring.write_n(5, 40);
  EXPECT_TRUE(reader.has_new_data());
  const RingBatch& batch = reader.read();
  EXPECT_EQ(ring.check(batch), range(3, 8));
  EXPECT_EQ(batch.lost.bytes, 0u);
  EXPECT_EQ(batch.bytes, 200u);
  ring.write_n(2, 24);
  EXPECT_EQ(ring.check(reader.read()), range(8, 10));
  EXPECT_TRUE(reader.read().empty());
  EXPECT_EQ(reader.stats().records, 7u);
  EXPECT_EQ(reader.stats().samples, 7u);
  EXPECT_EQ(reader.stats().lapped_bytes + reader.stats().overrun_bytes, 0u);
  EXPECT_EQ(reader.stats().resyncs, 0u);
}

TEST_P(BothLayouts, OldestReadsEverythingTheBufferHolds) {
  MemoryRing ring(4096, GetParam());
  ring.write_n(10, 48);
  RingReader reader = make_reader(ring, GetParam(), RingStart::kOldest);
  EXPECT_EQ(ring.check(reader.read()), range(0, 10));
  ring.write_n(1, 48);
  EXPECT_EQ(ring.check(reader.read()), range(10, 11)) << "then it follows";
}

// Records of 40 bytes in a 256-byte ring straddle its end every few writes;
// a reader keeping up gets every one whole.
TEST_P(BothLayouts, RecordsWrappingTheEndComeOutWhole) {
  MemoryRing ring(256, GetParam());
  RingReader reader = make_reader(ring, GetParam(), RingStart::kNow);
  std::vector<uint64_t> seen;
  for (int round = 0; round < 50; ++round) {
    ring.write_n(1 + round % 5, 40);
    for (uint64_t seq : ring.check(reader.read()))
      seen.push_back(seq);
  }
  EXPECT_EQ(seen, range(0, ring.next_seq()));
  EXPECT_EQ(reader.stats().lapped_bytes + reader.stats().overrun_bytes, 0u);
}

// The writer laps the reader: the newest records that fit come out, the
// rest is counted in bytes and (all records being 40 bytes) exactly in records.
TEST_P(BothLayouts, LappedReaderGetsTheNewestAndCountsTheRest) {
  MemoryRing ring(256, GetParam());
  RingReader reader = make_reader(ring, GetParam(), RingStart::kNow);
  ring.write_n(2, 40);
  EXPECT_EQ(ring.check(reader.read()).size(), 2u);  // learn the record size
  ring.write_n(20, 40);                             // 800 bytes into 256
  const RingBatch& batch = reader.read();
  std::vector<uint64_t> seqs = ring.check(batch);
  ASSERT_FALSE(seqs.empty());
  EXPECT_EQ(seqs.back(), 21u) << "the newest record is never lost";
  EXPECT_EQ(seqs, range(seqs.front(), 22)) << "a run without holes";
  EXPECT_GE(seqs.size(), 5u) << "256 bytes hold 6 records of 40, one maybe cut by the lap";
  EXPECT_EQ(batch.lost.bytes + batch.bytes, 800u);
  EXPECT_EQ(batch.lost.records, 20 - seqs.size());
  EXPECT_EQ(reader.stats().lost_records, batch.lost.records);
  EXPECT_EQ(reader.stats().lapped_bytes, 800u - 256);
  if (GetParam() == RingLayout::kForward) {
    EXPECT_EQ(reader.stats().resyncs, 1u);
  }
  ring.write_n(1, 40);
  EXPECT_EQ(ring.check(reader.read()), range(22, 23)) << "and then it follows again";
}

// Another holder maps the buffer writable and scribbles data_head (far ahead,
// then behind): the reader counts each as a corrupt head, reports no loss for
// it, and reads the records written after the kernel put the head back.
TEST_P(BothLayouts, ScribbledHeadIsCorruptionNotLoss) {
  MemoryRing ring(4096, GetParam());
  RingReader reader = make_reader(ring, GetParam(), RingStart::kNow);
  ring.write_n(4, 40);
  EXPECT_EQ(ring.check(reader.read()), range(0, 4));
  uint64_t real = ring.writer().head();
  perf_event_mmap_page* page = ring.writer().page();
  for (uint64_t bad : std::initializer_list<uint64_t>{
           real + 0x3e88000000000000ull, real - 0x3e88000000000000ull,
           GetParam() == RingLayout::kForward ? real - 64 : real + 64}) {
    store_data_head(page, bad);
    const RingBatch& batch = reader.read();
    EXPECT_LE(batch.lost.bytes, ring.writer().data_size()) << std::hex << bad;
    store_data_head(page, real);  // the kernel's next record rewrites it
    const RingBatch& back = reader.read();
    EXPECT_LE(back.lost.bytes, ring.writer().data_size()) << std::hex << bad;
  }
  EXPECT_GE(reader.stats().corrupt_heads, 3u);
  EXPECT_LE(reader.stats().lapped_bytes + reader.stats().overrun_bytes,
            6 * ring.writer().data_size())
      << "never an absurd loss";
  // Resynchronised: what the kernel writes next comes out whole.
  (void)reader.read();
  ring.write_n(3, 40);
  std::vector<uint64_t> after = ring.check(reader.read());
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after.back(), ring.next_seq() - 1);
}

// A real lap of a few buffers is still a loss, not corruption.
TEST_P(BothLayouts, ALapOfSomeBuffersIsStillALoss) {
  MemoryRing ring(256, GetParam());
  RingReader reader = make_reader(ring, GetParam(), RingStart::kNow);
  ring.write_n(2, 40);
  (void)reader.read();
  ring.write_n(40, 40);  // 1600 bytes: about six buffers
  const RingBatch& batch = reader.read();
  EXPECT_EQ(batch.lost.bytes + batch.bytes, 1600u);
  EXPECT_EQ(reader.stats().corrupt_heads, 0u);
}

// A reader starved for a second (a loaded machine, SIGSTOP) finds the writer
// hundreds of buffers on: a real lap, counted as lost to the byte. The same
// jump within a microsecond is more than any CPU writes: corruption.
TEST_P(BothLayouts, AReaderStarvedForASecondCountsTheWholeLapAsLost) {
  for (int64_t pause_ns : {int64_t(1'000'000'000), int64_t(1'000)}) {
    SCOPED_TRACE(pause_ns);
    MemoryRing ring(256, GetParam());
    RingReader reader = make_reader(ring, GetParam(), RingStart::kNow);
    int64_t now = 5'000'000'000;
    reader.set_test_hooks({.now_ns = [&] { return now; }});
    ring.write_n(2, 40);
    (void)reader.read();
    ring.write_n(1000, 40);  // 40,000 bytes: 156 buffers, more than kMaxLapBuffers
    now += pause_ns;
    const RingBatch& batch = reader.read();
    if (pause_ns >= 1'000'000) {
      EXPECT_EQ(batch.lost.bytes + batch.bytes, 40000u);
      EXPECT_EQ(reader.stats().corrupt_heads, 0u);
    } else {
      EXPECT_EQ(reader.stats().corrupt_heads, 1u);
      EXPECT_LE(batch.lost.bytes, ring.writer().data_size()) << "never an absurd loss";
    }
    ring.write_n(3, 40);
    std::vector<uint64_t> after = ring.check(reader.read());
    ASSERT_EQ(after.size(), 3u);
    EXPECT_EQ(after.back(), ring.next_seq() - 1);
  }
}

// The flight recorder: a snapshot of a buffer lapped many times over.
TEST_P(BothLayouts, SnapshotOfALappedBufferHoldsTheNewestRecords) {
  MemoryRing ring(1024, GetParam());
  for (int i = 0; i < 100; ++i)
    ring.write(24 + 8 * (i % 4));  // 24, 32, 40, 48 bytes
  RingReader reader = make_reader(ring, GetParam(), RingStart::kOldest, 1000);
  const RingBatch& batch = reader.read();
  std::vector<uint64_t> seqs = ring.check(batch);
  ASSERT_FALSE(seqs.empty());
  EXPECT_EQ(seqs, range(seqs.front(), 100));
  EXPECT_GT(batch.bytes, 1024u - 48 - 48) << "at most a record cut by the lap, one before it";
  EXPECT_EQ(batch.lost.bytes + batch.bytes, ring.writer().written());
}

// The writer moves on while the reader copies: what it overwrote in the
// meantime must not come out.
TEST_P(BothLayouts, RecordsOverwrittenDuringTheCopyAreDropped) {
  for (int extra : {1, 3, 6, 7, 20}) {
    MemoryRing ring(256, GetParam());
    RingReader reader = make_reader(ring, GetParam(), RingStart::kNow);
    ring.write_n(6, 40);  // 240 of 256 bytes: nothing lapped yet
    reader.set_test_hooks({.after_copy = [&] { ring.write_n(extra, 40); }});
    const RingBatch& batch = reader.read();
    std::vector<uint64_t> seqs = ring.check(batch);
    SCOPED_TRACE(::testing::Message() << extra << " records written during the copy");
    if (!seqs.empty()) {
      EXPECT_EQ(seqs.back(), 5u) << "the batch ends where data_head was";
      EXPECT_EQ(seqs, range(seqs.front(), 6));
    }
    EXPECT_EQ(batch.bytes + batch.lost.bytes, 240u);
    EXPECT_GE(reader.stats().overrun_bytes, std::min(240u, 40u * extra - 16));
    reader.set_test_hooks({});
    std::vector<uint64_t> next = ring.check(reader.read());
    ASSERT_FALSE(next.empty());
    EXPECT_EQ(next.back(), 5u + extra);
  }
}

// A record the kernel is still writing (data_head not yet moved) may already
// cover the oldest bytes: the slack keeps them out.
TEST_P(BothLayouts, ARecordInProgressNeverTearsTheOldest) {
  MemoryRing ring(512, GetParam());
  ring.write_n(12, 40);  // 480 bytes
  RingReader reader = make_reader(ring, GetParam(), RingStart::kOldest);
  // 48 bytes staged: 16 past the 32 free ones, into the oldest record.
  reader.set_test_hooks({.after_copy = [&] { ring.writer().stage(make_record(99, 48)); }});
  std::vector<uint64_t> seqs = ring.check(reader.read());
  ASSERT_FALSE(seqs.empty());
  EXPECT_GT(seqs.front(), 0u) << "record 0 may be torn and must not come out";
  EXPECT_EQ(seqs.back(), 11u);
}

// A quiet flight recorder loses nothing to the slack: the reader waits for
// a write in progress instead, and sees it publish.
TEST_P(BothLayouts, SettlingKeepsTheOldestOfAQuietBuffer) {
  for (bool write_in_progress : {false, true}) {
    MemoryRing ring(512, GetParam());
    ring.write_n(12, 40);
    auto reader = RingReader::create(
        ring.mapping(), {.layout = GetParam(), .start = RingStart::kOldest, .settle_us = 1000});
    ASSERT_TRUE(reader.ok());
    if (write_in_progress) {
      reader->set_test_hooks({.after_copy = [&] { ring.writer().stage(make_record(99, 48)); },
                              .settle = [&] { ring.writer().publish(); }});
    } else {
      reader->set_test_hooks({.settle = [] {}});
    }
    std::vector<uint64_t> seqs = ring.check(reader->read());
    if (write_in_progress) {
      ASSERT_FALSE(seqs.empty());
      EXPECT_EQ(seqs.front(), 1u) << "record 0 was overwritten once the write published";
      EXPECT_EQ(seqs.back(), 11u);
    } else {
      EXPECT_EQ(seqs, range(0, 12));
    }
  }
}

TEST_P(BothLayouts, KernelLossRecordsAreEmittedAndSummed) {
  MemoryRing ring(4096, GetParam());
  RingReader reader = make_reader(ring, GetParam(), RingStart::kNow);
  auto lost = make_record(0, 24, PERF_RECORD_LOST);
  uint64_t lost_count = 7;
  std::memcpy(lost.data() + 16, &lost_count, sizeof(lost_count));
  auto lost_samples = make_record(0, 16, PERF_RECORD_LOST_SAMPLES);
  uint64_t lost_samples_count = 3;
  std::memcpy(lost_samples.data() + 8, &lost_samples_count, sizeof(lost_samples_count));
  ring.write(32);
  ring.write_raw(lost);
  ring.write_raw(lost_samples);
  ring.write(32);
  const RingBatch& batch = reader.read();
  ASSERT_EQ(batch.size(), 4u);
  EXPECT_EQ(batch[1].size(), 24u);
  EXPECT_EQ(batch[2].size(), 16u);
  EXPECT_EQ(reader.stats().kernel_lost, 7u);
  EXPECT_EQ(reader.stats().kernel_lost_samples, 3u);
  EXPECT_EQ(reader.stats().samples, 2u);
}

// Damage where every boundary is known: a zero-size header, a record longer
// than what was published, garbage. The reader skips to data_head, counts
// the bytes, and carries on with what follows.
TEST_P(BothLayouts, BrokenHeadersAreSkippedToTheHead) {
  struct Damage {
    const char* what;
    uint16_t size;
  } damages[] = {{"zero-size header", 0}, {"size past the head", 200}, {"size below a header", 4}};
  for (const Damage& damage : damages) {
    SCOPED_TRACE(damage.what);
    MemoryRing ring(4096, GetParam());
    RingReader reader = make_reader(ring, GetParam(), RingStart::kNow);
    ring.write(32);
    std::vector<uint8_t> bad = make_record(1000, 32);
    perf_event_header header{PERF_RECORD_SAMPLE, 0, damage.size};
    std::memcpy(bad.data(), &header, sizeof(header));
    ring.write_raw(bad);
    ring.write(32);
    const RingBatch& batch = reader.read();
    std::vector<uint64_t> seqs = ring.check(batch);
    // Forward reads the chain oldest first and stops at the damage; backward
    // reads newest first.
    EXPECT_EQ(seqs, GetParam() == RingLayout::kForward ? std::vector<uint64_t>{0}
                                                       : std::vector<uint64_t>{1});
    EXPECT_EQ(reader.stats().corrupt_bytes, 64u);
    EXPECT_EQ(batch.lost.bytes, 0u) << "damage is not loss";
    ring.write(32);
    EXPECT_EQ(ring.check(reader.read()), std::vector<uint64_t>{2});
  }
}

// Resynchronising in a lapped forward buffer whose payloads hold words that
// look like record headers chaining to real boundaries: the reader must
// start at a real boundary, whatever it loses to get there.
TEST(RingReader, ResyncIsNotFooledByHeadersInsidePayloads) {
  for (uint16_t fake_size : {8, 16, 24, 32, 40}) {
    MemoryRing ring(512, RingLayout::kForward);
    RingReader reader = make_reader(ring, RingLayout::kForward, RingStart::kOldest);
    for (uint64_t seq = 0; seq < 40; ++seq) {
      // 56-byte records; a "header" at offset 16 whose size reaches the
      // next record (fake_size 40) or lands elsewhere inside this one.
      std::vector<uint8_t> record = make_record(seq, 56);
      perf_event_header fake{PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, fake_size};
      std::memcpy(record.data() + 16, &fake, sizeof(fake));
      if (fake_size < 40) {
        perf_event_header inner{PERF_RECORD_SWITCH, 0, uint16_t(40 - fake_size)};
        std::memcpy(record.data() + 16 + fake_size, &inner, sizeof(inner));
      }
      ring.write_raw(record);
    }
    const RingBatch& batch = reader.read();
    uint64_t expected = 39;
    for (size_t i = batch.size(); i-- > 0;) {
      std::span<const uint8_t> record = batch[i];
      ASSERT_EQ(record.size(), 56u) << "fake size " << fake_size << ": a record from a false start";
      EXPECT_EQ(seq_of(record), expected--);
    }
    EXPECT_GE(batch.size(), 7u) << "512 bytes hold 9 records of 56";
    EXPECT_EQ(reader.stats().resyncs, 1u);
  }
}

// A tracepoint sample as the kernel writes it for sample_type TID|RAW: 32
// bytes. Raw bytes 4..11 (record bytes 24..31) are the tracepoint's own
// fields, which user space may control - here they hold a fake header that
// chains to the next record.
std::vector<uint8_t> crafted_sample(uint32_t pid, bool fake_header) {
  std::vector<uint8_t> out(32, 0);
  perf_event_header header{PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL, 32};
  std::memcpy(out.data(), &header, sizeof(header));
  std::memcpy(out.data() + 8, &pid, sizeof(pid));
  std::memcpy(out.data() + 12, &pid, sizeof(pid));
  uint32_t raw_size = 12;
  uint16_t common_type = 305;
  std::memcpy(out.data() + 16, &raw_size, sizeof(raw_size));
  std::memcpy(out.data() + 20, &common_type, sizeof(common_type));
  if (fake_header) {
    perf_event_header fake{PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 8};
    std::memcpy(out.data() + 24, &fake, sizeof(fake));
  }
  return out;
}

// The one place a false start can hide is the record the lap cut: its
// header is gone. Given the event's attr, the reader checks each record's
// exact layout and a fake header there no longer passes.
TEST(RingReader, KnowingTheAttrRejectsAFakeStartInTheCutRecord) {
  EventAttr attr;
  attr.attr.type = PERF_TYPE_TRACEPOINT;
  attr.attr.config = 305;
  attr.attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_RAW;
  for (bool know_attr : {false, true}) {
    MemoryRing ring(512, RingLayout::kForward);
    for (uint32_t pid = 1; pid <= 40; ++pid)
      ring.write_raw(crafted_sample(pid, true));
    RingReaderOptions options{.layout = RingLayout::kForward,
                              .start = RingStart::kOldest,
                              .inflight_slack = 16,  // the window starts 16 bytes into a record
                              .settle_us = 0};
    if (know_attr)
      options.attr = attr;
    auto reader = RingReader::create(ring.mapping(), options);
    ASSERT_TRUE(reader.ok());
    const RingBatch& batch = reader->read();
    ASSERT_FALSE(batch.empty());
    if (know_attr) {
      EXPECT_EQ(batch.size(), 15u) << "512 bytes hold 16 records; the cut one is lost";
      for (std::span<const uint8_t> record : batch)
        EXPECT_TRUE(record_matches_attr(record, attr.attr));
      uint32_t pid;
      std::memcpy(&pid, batch[0].data() + 8, sizeof(pid));
      EXPECT_EQ(pid, 26u);
    } else {
      // Documented limit: without the attr, a fake header in the cut record
      // that chains on is taken for a record.
      EXPECT_EQ(batch[0].size(), 8u);
      EXPECT_EQ(batch.size(), 16u);
    }
  }
}

TEST(RingReader, RecordMatchesAttrChecksEverySampleField) {
  EventAttr attr;
  attr.attr.type = PERF_TYPE_TRACEPOINT;
  attr.attr.config = 305;
  attr.attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_RAW;
  EXPECT_TRUE(record_matches_attr(crafted_sample(1, false), attr.attr));
  attr.attr.config = 306;
  EXPECT_FALSE(record_matches_attr(crafted_sample(1, false), attr.attr)) << "common_type";
  attr.attr.config = 305;
  attr.attr.sample_type |= PERF_SAMPLE_TIME;
  EXPECT_FALSE(record_matches_attr(crafted_sample(1, false), attr.attr)) << "size";

  // Everything the fake kernel writes matches the attr it writes for.
  testing::FakeKernel kernel;
  attr.attr.size = kAttrSizeVer7;
  attr.attr.sample_period = 1;
  attr.attr.sample_type =
      PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
      PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU |
      PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_RAW |
      PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
      PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION | PERF_SAMPLE_REGS_INTR |
      PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP | PERF_SAMPLE_DATA_PAGE_SIZE |
      PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_AUX;
  attr.attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED;
  attr.attr.sample_id_all = 1;
  auto fd = kernel.perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok());
  auto map = kernel.mmap(fd->get(), 2 * page_size(), PROT_READ);
  ASSERT_TRUE(map.ok());
  auto reader = RingReader::create({map->data(), map->size()},
                                   {.layout = RingLayout::kForward, .start = RingStart::kOldest});
  ASSERT_TRUE(reader.ok());
  for (size_t chain = 0; chain < 3; ++chain) {
    std::vector<uint8_t> raw(3 + chain * 5, 0);
    uint16_t common_type = 305;
    std::memcpy(raw.data(), &common_type, sizeof(common_type));
    kernel.emit(0, {PERF_TYPE_TRACEPOINT, 305},
                {.pid = 5, .callchain = std::vector<uint64_t>(chain, 0xffff), .raw = raw});
  }
  kernel.emit_lost(0, {PERF_TYPE_TRACEPOINT, 305}, 1);
  const RingBatch& batch = reader->read();
  ASSERT_EQ(batch.size(), 4u);
  for (std::span<const uint8_t> record : batch)
    EXPECT_TRUE(record_matches_attr(record, attr.attr)) << "record of " << record.size();
}

// Nothing in the window chains to data_head: everything is lost, nothing
// is made up.
TEST(RingReader, ResyncWithoutAChainEmitsNothing) {
  MemoryRing ring(256, RingLayout::kForward);
  RingReader reader = make_reader(ring, RingLayout::kForward, RingStart::kNow);
  for (int i = 0; i < 20; ++i)
    ring.write_raw(make_record(0, 40, 200));  // type 200: no kernel record has it
  const RingBatch& batch = reader.read();
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(batch.lost.bytes, 800u);
  EXPECT_EQ(batch.lost.records, 1u) << "no size known: at least one";
}

TEST(RingReader, WrongLayoutIsNoticed) {
  MemoryRing ring(256, RingLayout::kBackward);
  RingReader reader = make_reader(ring, RingLayout::kForward, RingStart::kNow);
  ring.write_n(2, 32);
  EXPECT_TRUE(reader.read().empty());
  EXPECT_EQ(reader.stats().head_regressions, 1u);
}

TEST(RingReader, TwoReadersOnOneBufferAreIndependent) {
  MemoryRing ring(1024, RingLayout::kBackward);
  RingReader a = make_reader(ring, RingLayout::kBackward, RingStart::kNow);
  ring.write_n(3, 32);
  RingReader b = make_reader(ring, RingLayout::kBackward, RingStart::kOldest);
  ring.write_n(2, 32);
  EXPECT_EQ(ring.check(a.read()), range(0, 5));
  EXPECT_EQ(ring.check(b.read()), range(0, 5));
  ring.write_n(1, 32);
  EXPECT_EQ(ring.check(b.read()), range(5, 6));
  EXPECT_EQ(ring.check(a.read()), range(5, 6));
}

TEST(RingReader, RefusesWhatIsNotAPerfBuffer) {
  std::vector<uint64_t> memory((kControl + 4096) / 8);
  auto* page = reinterpret_cast<perf_event_mmap_page*>(memory.data());
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(memory.data()),
                                 memory.size() * 8);
  struct Case {
    const char* what;
    uint64_t offset, size;
    size_t length;
  } cases[] = {
      {"too small for a control page", 0, 0, 64},
      {"not a power of two", kControl, 3000, bytes.size()},
      {"past the mapping", kControl, 8192, bytes.size()},
      {"overlapping the control page", 64, 4096, bytes.size()},
      {"a control page alone", 0, 0, kControl},
  };
  for (const Case& c : cases) {
    page->data_offset = c.offset;
    page->data_size = c.size;
    auto reader = RingReader::create(bytes.first(c.length), {.page_size = kControl});
    ASSERT_FALSE(reader.ok()) << c.what;
    EXPECT_EQ(reader.error().code(), EINVAL);
  }
  page->data_offset = 0;
  page->data_size = 0;  // before Linux 4.1: one page, then data
  auto old = RingReader::create(bytes, {.page_size = kControl});
  ASSERT_TRUE(old.ok()) << old.error().message();
  EXPECT_EQ(old->data_size(), 4096u);
}

// The fake kernel's persistent buffers: the reader maps them read-only (a
// write would fault), reads samples in both layouts, and two readers of one
// event each get every sample.
TEST(RingReader, ReadsTheFakeKernelsPersistentBuffers) {
  for (bool backward : {false, true}) {
    testing::FakeKernel kernel({.persistent_buffer_pages = 2});
    EventAttr attr;
    attr.attr.type = PERF_TYPE_TRACEPOINT;
    attr.attr.size = kAttrSizeVer7;
    attr.attr.config = 305;
    attr.attr.sample_period = 1;
    attr.attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_RAW;
    attr.attr.write_backward = backward;
    auto creator = kernel.perf_event_open(attr, -1, 0, -1, 0);
    ASSERT_TRUE(creator.ok());
    auto id = kernel.ioctl(creator->get(), kIocDetach, 0);
    ASSERT_TRUE(id.ok());
    creator->reset();
    kernel.emit(0, {PERF_TYPE_TRACEPOINT, 305}, {.pid = 1, .tid = 1});  // before anyone reads

    EventAttr open;
    open.attr.type = kernel.persistent_type();
    open.attr.size = kAttrSizeVer7;
    open.attr.config = uint64_t(*id);
    RingLayout layout = backward ? RingLayout::kBackward : RingLayout::kForward;
    std::vector<Fd> fds;
    std::vector<Mapping> maps;
    std::vector<RingReader> readers;
    for (RingStart start : {RingStart::kOldest, RingStart::kNow}) {
      auto fd = kernel.perf_event_open(open, -1, 0, -1, 0);
      ASSERT_TRUE(fd.ok());
      auto map = kernel.mmap(fd->get(), 3 * page_size(), PROT_READ);
      ASSERT_TRUE(map.ok()) << map.error().message();
      auto reader =
          RingReader::create({map->data(), map->size()}, {.layout = layout, .start = start});
      ASSERT_TRUE(reader.ok());
      fds.push_back(std::move(fd).value());
      maps.push_back(std::move(map).value());
      readers.push_back(std::move(reader).value());
    }
    for (uint32_t pid = 100; pid < 110; ++pid)
      kernel.emit(0, {PERF_TYPE_TRACEPOINT, 305}, {.pid = pid, .tid = pid, .raw = {1, 2, 3, 4}});
    for (size_t r = 0; r < readers.size(); ++r) {
      std::vector<uint32_t> pids;
      for (std::span<const uint8_t> record : readers[r].read()) {
        uint32_t pid;
        std::memcpy(&pid, record.data() + 8, sizeof(pid));
        pids.push_back(pid);
      }
      std::vector<uint32_t> expected;
      if (r == 0)
        expected.push_back(1);  // the snapshot reader also gets what came before
      for (uint32_t pid = 100; pid < 110; ++pid)
        expected.push_back(pid);
      EXPECT_EQ(pids, expected) << (backward ? "backward" : "forward") << " reader " << r;
    }
  }
}

}  // namespace
}  // namespace pp::sys

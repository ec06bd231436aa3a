// Reads a perf ring buffer mapped read-only, in overwrite mode: the buffer of
// a persistent event (forward-written by the seed's kernel) or of an event
// the broker holds (backward-written, attr.write_backward). See sys/ring.h
// for the layout.
//
// Many readers may share one buffer. Each keeps its own position, never
// writes data_tail (the mapping is read-only) and never pauses the buffer
// (PERF_EVENT_IOC_PAUSE_OUTPUT would stop the event for every reader), so
// the writer may overwrite records before, or while, a reader copies them.
// The reader copes:
//
//   - read() takes data_head (acquire), copies everything new into its own
//     memory in one go (records that wrap around the end come out whole),
//     then re-reads data_head: bytes the writer may have reached during the
//     copy are dropped and counted, never emitted half-overwritten.
//   - What the writer lapped before the reader got there is counted too, in
//     bytes and (estimated from the average record size) records, so a
//     caller can write PERF_RECORD_LOST for it; PERF_RECORD_LOST and
//     PERF_RECORD_LOST_SAMPLES from the kernel are emitted like any record
//     and summed in stats().
//   - data_head is trusted no further than a writer could move it: a head
//     that moved against the layout, or further since the last read than
//     max_step() allows (kMaxLapBuffers buffers, or kMaxWriteBytesPerSecond
//     for the time since the last read, whichever is more), was written by
//     someone else (a writable mapping of the control page); the reader
//     resynchronises there and counts it in stats().corrupt_heads, never as
//     a loss. A reader that was stopped or starved for a while is lapped
//     for real, and counts all it missed as lost.
//   - Backward layout: data_head always points at the newest record, so
//     every record boundary is known. Forward layout: once the writer has
//     lapped the reader the boundary at the tail is lost; the reader then
//     resynchronises: it follows the chain of record headers from every
//     8-byte-aligned candidate start and takes the earliest whose chain
//     lands exactly on data_head (a known boundary), each header on it
//     plausible for a kernel record - and, when the options name the
//     event's attr, each record exactly the size its sample_type makes it,
//     with the tracepoint's common_type at the head of its raw data. A
//     false start can win only inside the record the lap cut (any later one
//     loses to the true boundary before it), and only if its bytes chain,
//     plausible header after plausible header, onto a true boundary; given
//     the attr, that takes forging whole records of the event's exact
//     layout. What lies before the start is counted as lost.
//   - Records come out oldest first, as complete perf_event_header-prefixed
//     spans into the reader's copy, valid until the next read(). No
//     allocation per record or per read: the copy and offset buffers are
//     sized once, from the buffer's size.
//
//   PP_ASSIGN_OR_RETURN(Mapping map, kernel.mmap(fd, (1 + pages) * page_size(), PROT_READ));
//   PP_ASSIGN_OR_RETURN(RingReader reader,
//       RingReader::create({map.data(), map.size()}, {.layout = RingLayout::kBackward}));
//   const RingBatch& batch = reader.read();
//   if (batch.lost.bytes) write_lost_record(batch.lost.records);
//   for (std::span<const uint8_t> record : batch) write(record);
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/result.h"
#include "sys/perf_abi_records.h"
#include "sys/perf_attr.h"
#include "sys/ring.h"

namespace pp::sys {

enum class RingStart {
  kNow,  // follow: only records written from now on
  // snapshot: everything the buffer still holds, then what follows. The
  // first batch's loss is everything the writer overwrote since the buffer
  // was created (what a flight recorder too small for its history lost).
  kOldest,
};

// Bytes at the tail of a full buffer that a record the writer is still
// writing (not yet published in data_head) may already have overwritten.
// The kernel writes a record with preemption off, and only interrupts
// nested in that write can add more, so one or two records' worth; capped
// at an eighth of the buffer.
inline constexpr size_t kDefaultInflightSlack = 4096;

struct RingReaderOptions {
  RingLayout layout = RingLayout::kBackward;
  RingStart start = RingStart::kNow;
  size_t inflight_slack = kDefaultInflightSlack;
  // The first read() of a snapshot (kOldest) reader, when its copy reaches
  // into the slack and the writer did not move during the copy (a quiet
  // flight recorder), waits this long and re-reads data_head instead of
  // dropping the slack: the kernel writes a record with preemption off, so a
  // write in progress at copy time has published well before. If nothing
  // was published, nothing was in progress and the whole buffer is good.
  // Follow reads never wait. 0: always drop the slack.
  uint32_t settle_us = 1000;
  // For kernels before 4.1, whose control page lacks data_offset and
  // data_size: the data starts one page in. 0: the system's page size.
  size_t page_size = 0;
  // The attr of the event writing the buffer, when known (forward layout):
  // resynchronising then accepts only records laid out as it writes them
  // (see record_matches_attr() in sys/ring.h).
  std::optional<EventAttr> attr{};
};

// What the writer overwrote before the reader could copy it.
struct RingLoss {
  uint64_t bytes = 0;  // at most kMaxLapBuffers buffers (see corrupt_heads)
  // Records in those bytes: bytes over the average size of the records this
  // reader has seen, at least 1 when any byte was lost.
  uint64_t records = 0;
};

struct RingStats {
  uint64_t reads = 0;                // read() calls that found new data
  uint64_t records = 0;              // records emitted
  uint64_t samples = 0;              // of which PERF_RECORD_SAMPLE
  uint64_t bytes = 0;                // bytes emitted
  uint64_t kernel_lost = 0;          // sum of PERF_RECORD_LOST.lost in the stream
  uint64_t kernel_lost_samples = 0;  // sum of PERF_RECORD_LOST_SAMPLES.lost
  uint64_t lapped_bytes = 0;         // overwritten before the reader began copying
  uint64_t overrun_bytes = 0;        // overwritten (or possibly) while it copied
  uint64_t lost_records = 0;         // estimated records in lapped and overrun bytes
  uint64_t corrupt_bytes = 0;        // skipped: headers that cannot start a record
  uint64_t resyncs = 0;              // searches for a record boundary (forward layout)
  uint64_t head_regressions = 0;     // data_head moved against the layout: wrong layout?
  // data_head values no writer publishes: moved against the layout, or
  // further than kMaxLapBuffers buffers at once (another process scribbled
  // on a writable mapping of the control page). The reader resynchronises
  // at the new head; nothing is counted as lost for the jump.
  uint64_t corrupt_heads = 0;
};

// A data_head that moved more than this many buffers since the previous
// read(), and faster than kMaxWriteBytesPerSecond over the time between the
// two reads, is corruption, not a writer that lapped the reader. The rate is
// above what one CPU can write into its buffer (memory bandwidth), so a
// reader descheduled for a long time on a loaded machine, or stopped with
// SIGSTOP, is lapped for real and counts what it missed as lost; a head
// scribbled to an absurd value is still found.
// The first read of a snapshot (RingStart::kOldest) allows 1 TiB: all a
// buffer may have seen since it was created.
inline constexpr uint64_t kMaxLapBuffers = 64;
inline constexpr uint64_t kMaxWriteBytesPerSecond = uint64_t(16) << 30;
inline constexpr uint64_t kMaxSnapshotBytes = uint64_t(1) << 40;

// The records of one read(), oldest first.
class RingBatch {
 public:
  class Iterator {
   public:
    using value_type = std::span<const uint8_t>;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    Iterator(const uint8_t* data, const uint32_t* offset) : data_(data), offset_(offset) {}
    std::span<const uint8_t> operator*() const;
    Iterator& operator++() {
      ++offset_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator old = *this;
      ++offset_;
      return old;
    }
    bool operator==(const Iterator& other) const { return offset_ == other.offset_; }

   private:
    const uint8_t* data_ = nullptr;
    const uint32_t* offset_ = nullptr;
  };

  Iterator begin() const { return {data_, offsets_}; }
  Iterator end() const { return {data_, offsets_ + count_}; }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  std::span<const uint8_t> operator[](size_t index) const {
    return *Iterator(data_, offsets_ + index);
  }

  RingLoss lost;       // overwritten between the previous batch and this one
  uint64_t bytes = 0;  // of the records in this batch

 private:
  friend class RingReader;
  const uint8_t* data_ = nullptr;
  const uint32_t* offsets_ = nullptr;
  size_t count_ = 0;
};

class RingReader {
 public:
  // `mapping` is the whole mapped buffer, control page first; it must
  // outlive the reader. EINVAL when its geometry is not a perf buffer's.
  static Result<RingReader> create(std::span<const uint8_t> mapping,
                                   const RingReaderOptions& options = {});

  RingReader(RingReader&&) noexcept = default;
  RingReader& operator=(RingReader&&) noexcept = default;
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;

  // The records published since the last read(), oldest first, and what was
  // lost before them. The batch and its spans stay valid until the next
  // read(). Never blocks (but see RingReaderOptions::settle_us).
  const RingBatch& read();

  // Whether data_head moved since the last read(): a cheap test before read().
  bool has_new_data() const;

  // How full the buffer is, 0 to 1: the bytes the writer has written since
  // the buffer was created, up to its size (after that it overwrites).
  double fill() const;

  const RingStats& stats() const { return stats_; }
  RingLayout layout() const { return options_.layout; }
  size_t data_size() const { return data_size_; }
  // The writer position up to which this reader has consumed.
  uint64_t position() const { return position_; }

  // For tests, to act out a writer that moves at the worst moments:
  // `after_copy` runs after a batch is copied and before data_head is
  // re-read; `settle`, when set, runs instead of the settle_us sleep;
  // `now_ns`, when set, is the clock max_step() measures time with
  // (nanoseconds; CLOCK_MONOTONIC otherwise).
  struct TestHooks {
    std::function<void()> after_copy{};
    std::function<void()> settle{};
    std::function<int64_t()> now_ns{};
  };
  void set_test_hooks(TestHooks hooks) {
    hooks_ = std::move(hooks);
    if (hooks_.now_ns)
      last_read_ns_ = hooks_.now_ns();
  }

 private:
  RingReader() = default;

  // The furthest data_head may move between the previous read and `now_ns`
  // before it is corruption.
  uint64_t max_step(int64_t now_ns) const;
  int64_t now_ns() const;
  void copy_out(uint64_t from, size_t length);
  bool quiet_after_settling(uint64_t head);
  void read_forward(uint64_t head, uint64_t max_step);
  void read_backward(uint64_t head, uint64_t max_step);
  // Walks records in scratch_[begin, end); returns where the walk stopped.
  RecordWalk walk(size_t begin, size_t end);
  size_t resync(size_t begin, size_t end);
  void account_loss(uint64_t lapped, uint64_t overrun);
  void finish_batch();

  const perf_event_mmap_page* page_ = nullptr;
  const uint8_t* data_ = nullptr;
  size_t data_size_ = 0;
  size_t slack_ = 0;
  RingReaderOptions options_;
  uint64_t position_ = 0;  // forward: next byte to read; backward: the head we read up to
  bool first_read_ = true;
  int64_t last_read_ns_ = 0;  // when the head was last seen at position_

  std::unique_ptr<uint8_t[]> scratch_;  // the batch's bytes, linear (data_size_)
  std::vector<uint32_t> offsets_;       // record starts in scratch_
  std::vector<uint32_t> next_;          // resync: candidate -> next candidate on its chain
  RingBatch batch_;
  RingStats stats_;
  TestHooks hooks_;
};

}  // namespace pp::sys

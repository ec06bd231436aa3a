#include "sys/ring_reader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <thread>

#include "sys/clock.h"
#include "sys/kernel.h"
#include "sys/perf_abi_records.h"

namespace pp::sys {

namespace {

// Positions are u64 and never wrap in practice, but a backward writer starts
// at 0 and goes down, so distances are always taken modulo 2^64 and treated
// as negative when they exceed 2^63.
bool is_negative(uint64_t distance) {
  return distance > (std::numeric_limits<uint64_t>::max() >> 1);
}

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
constexpr uint32_t kLandsOnHead = kNone - 1;

}  // namespace

std::span<const uint8_t> RingBatch::Iterator::operator*() const {
  const uint8_t* at = data_ + *offset_;
  return {at, record_header_at(at).size};
}

Result<RingReader> RingReader::create(std::span<const uint8_t> mapping,
                                      const RingReaderOptions& options) {
  size_t page = options.page_size ? options.page_size : sys::page_size();
  PP_ASSIGN_OR_RETURN(RingGeometry geometry, ring_geometry(mapping, page));
  if (geometry.data_size > (size_t(1) << 31))
    return errorf(EINVAL, "perf buffer of %zu bytes is larger than the reader handles (2 GiB)",
                  geometry.data_size);
  RingReader reader;
  reader.page_ = reinterpret_cast<const perf_event_mmap_page*>(mapping.data());
  reader.data_ = mapping.data() + geometry.data_offset;
  reader.data_size_ = geometry.data_size;
  reader.options_ = options;
  reader.slack_ = std::min(options.inflight_slack, geometry.data_size / 8);
  // Not zero-filled: only copied bytes are read, and a large buffer's pages
  // are touched only as far as its batches reach.
  reader.scratch_ = std::make_unique_for_overwrite<uint8_t[]>(geometry.data_size);
  reader.offsets_.reserve(geometry.data_size / sizeof(perf_event_header));
  // Both writers start at 0: the oldest position there can be.
  reader.position_ = options.start == RingStart::kOldest ? 0 : load_data_head(reader.page_);
  reader.last_read_ns_ = reader.now_ns();
  return reader;
}

int64_t RingReader::now_ns() const {
  if (hooks_.now_ns)
    return hooks_.now_ns();
  return monotonic_ns();
}

uint64_t RingReader::max_step(int64_t now_ns) const {
  // A snapshot's first read may find everything since the buffer was made.
  if (first_read_ && options_.start == RingStart::kOldest)
    return kMaxSnapshotBytes;
  uint64_t laps = kMaxLapBuffers * data_size_;
  int64_t elapsed = now_ns - last_read_ns_;
  if (elapsed <= 0)
    return laps;
  double by_time = double(kMaxWriteBytesPerSecond) * double(elapsed) / 1e9;
  if (by_time >= double(kMaxSnapshotBytes))
    return kMaxSnapshotBytes;
  return std::max(laps, uint64_t(by_time));
}

bool RingReader::has_new_data() const {
  return load_data_head(page_) != position_;
}

double RingReader::fill() const {
  uint64_t head = load_data_head(page_);
  uint64_t written = options_.layout == RingLayout::kBackward ? uint64_t(0) - head : head;
  return written >= data_size_ ? 1.0 : double(written) / double(data_size_);
}

void RingReader::copy_out(uint64_t from, size_t length) {
  size_t offset = size_t(from & (data_size_ - 1));
  size_t first = std::min(length, data_size_ - offset);
  std::memcpy(scratch_.get(), data_ + offset, first);
  std::memcpy(scratch_.get() + first, data_, length - first);
  if (hooks_.after_copy)
    hooks_.after_copy();
  // The copy's loads complete before data_head is read again, so a writer
  // that reached the copied bytes shows in that second read.
  std::atomic_thread_fence(std::memory_order_acquire);
}

bool RingReader::quiet_after_settling(uint64_t head) {
  if (!first_read_ || options_.start != RingStart::kOldest || options_.settle_us == 0)
    return false;
  if (hooks_.settle)
    hooks_.settle();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(options_.settle_us));
  return load_data_head(page_) == head;
}

const RingBatch& RingReader::read() {
  batch_ = RingBatch();
  offsets_.clear();
  int64_t now = now_ns();
  uint64_t head = load_data_head(page_);
  if (head != position_) {
    ++stats_.reads;
    if (options_.layout == RingLayout::kForward)
      read_forward(head, max_step(now));
    else
      read_backward(head, max_step(now));
  }
  last_read_ns_ = now;
  first_read_ = false;
  finish_batch();
  return batch_;
}

// Forward: records occupy [position_, head); the oldest bytes are the ones
// the writer overwrites first.
void RingReader::read_forward(uint64_t head, uint64_t max_step) {
  uint64_t available = head - position_;
  if (is_negative(available)) {
    ++stats_.head_regressions;
    ++stats_.corrupt_heads;
    position_ = head;
    return;
  }
  if (available > max_step) {  // a scribbled head: start over there
    ++stats_.corrupt_heads;
    position_ = head - data_size_;
    available = data_size_;
  }
  // What the writer lapped before we came: gone, and with it the boundary.
  uint64_t start = available > data_size_ ? head - data_size_ : position_;
  uint64_t lapped = start - position_;
  size_t length = size_t(head - start);
  copy_out(start, length);
  uint64_t after = load_data_head(page_);
  // The first byte still intact when the writer has published `writer` and
  // may have `slack` more in progress.
  auto intact_from = [&](uint64_t writer, size_t slack) {
    uint64_t reach = writer + slack;
    return std::max(start, reach > data_size_ ? reach - data_size_ : 0);
  };
  uint64_t valid = intact_from(after, slack_);
  if (valid > start && after == head && quiet_after_settling(after))
    valid = intact_from(after, 0);  // nothing was in progress
  position_ = head;
  if (valid >= head) {
    account_loss(lapped, head - start);
    return;
  }
  if (lapped == 0 && valid == start) {
    // Every boundary is known from position_ on; anything that breaks the
    // chain before head is garbage.
    stats_.corrupt_bytes += length - walk(0, length).offset;
    account_loss(0, 0);
    return;
  }
  ++stats_.resyncs;
  size_t begin = size_t(valid - start);
  size_t first = resync(begin, length);
  if (first < length)
    walk(first, length);  // lands exactly on head: resync() chose a start whose chain does
  account_loss(lapped, first);
}

// Backward: records occupy [head, position_), newest first; the oldest bytes
// (nearest position_) are the ones the writer overwrites first.
void RingReader::read_backward(uint64_t head, uint64_t max_step) {
  uint64_t available = position_ - head;
  if (is_negative(available)) {
    ++stats_.head_regressions;
    ++stats_.corrupt_heads;
    position_ = head;
    return;
  }
  if (available > max_step) {  // a scribbled head: start over there
    ++stats_.corrupt_heads;
    position_ = head + data_size_;
    available = data_size_;
  }
  uint64_t lapped = available > data_size_ ? available - data_size_ : 0;
  size_t length = size_t(available - lapped);
  copy_out(head, length);
  uint64_t after = load_data_head(page_);
  // The writer has moved down `head - writer` bytes since `head`; they alias
  // the top of the window, and a record in progress may cover `slack` more.
  auto intact_up_to = [&](uint64_t writer, size_t slack) -> size_t {
    uint64_t written = head - writer;
    if (is_negative(written) || written + slack >= data_size_)
      return 0;
    return size_t(std::min<uint64_t>(data_size_ - written - slack, length));
  };
  size_t valid = intact_up_to(after, slack_);
  if (valid < length && after == head && quiet_after_settling(after))
    valid = intact_up_to(after, 0);  // nothing was in progress
  position_ = head;
  RecordWalk walked = walk(0, valid);
  size_t stop = walked.offset;
  size_t corrupt = 0;
  if (stop < valid) {
    // The window ends at a known boundary only when nothing was lapped or
    // cut off; otherwise the last record may run into overwritten bytes.
    bool known_end = lapped == 0 && valid == length;
    if (known_end || walked.problem == RecordProblem::kTooSmall)
      corrupt = valid - stop;
  }
  stats_.corrupt_bytes += corrupt;
  account_loss(lapped, length - stop - corrupt);
  std::reverse(offsets_.begin(), offsets_.end());
}

// Appends the records chained from `begin` that end by `end` (whole records:
// see sys/perf_abi_records.h). Returns where the chain stopped (an offset
// into scratch_) and why.
RecordWalk RingReader::walk(size_t begin, size_t end) {
  RecordWalk stop = walk_records({scratch_.get() + begin, end - begin},
                                 [&](const perf_event_header&, size_t offset) {
                                   offsets_.push_back(uint32_t(begin + offset));
                                   return true;
                                 });
  stop.offset += begin;
  return stop;
}

// Finds the earliest offset in scratch_[begin, end) from which a chain of
// plausible records lands exactly on `end`. Candidates are 8-byte aligned in
// writer positions (records are u64 multiples and positions start at 0), so
// `end` minus each candidate is a multiple of 8. Returns `end` when there is
// none.
size_t RingReader::resync(size_t begin, size_t end) {
  constexpr size_t kAlign = sizeof(uint64_t);
  size_t first = begin + ((end - begin) % kAlign);
  if (end - first < sizeof(perf_event_header))
    return end;
  size_t count = (end - first) / kAlign;
  next_.assign(count, kNone);
  const uint8_t* bytes = scratch_.get();
  const perf_event_attr* attr = options_.attr ? &options_.attr->attr : nullptr;
  // next_[i]: kLandsOnHead when the record at candidate i ends exactly at
  // `end`, the candidate it ends at when that one's chain lands, else
  // kNone. Later candidates first, so a chain's rest is known when needed:
  // one pass, whatever the number of chains.
  size_t earliest = end;
  for (size_t i = count; i-- > 0;) {
    size_t at = first + i * kAlign;
    perf_event_header header = record_header_at(bytes + at);
    if (header.size > end - at || !plausible_record_header(header))
      continue;
    if (attr && !record_matches_attr({bytes + at, header.size}, *attr))
      continue;
    size_t to = at + header.size;
    if (to == end)
      next_[i] = kLandsOnHead;
    else if (next_[(to - first) / kAlign] != kNone)
      next_[i] = uint32_t((to - first) / kAlign);
    if (next_[i] != kNone)
      earliest = at;
  }
  return earliest;
}

void RingReader::account_loss(uint64_t lapped, uint64_t overrun) {
  stats_.lapped_bytes += lapped;
  stats_.overrun_bytes += overrun;
  batch_.lost.bytes += lapped + overrun;
}

void RingReader::finish_batch() {
  const uint8_t* bytes = scratch_.get();
  uint64_t batch_bytes = 0;
  for (uint32_t offset : offsets_) {
    perf_event_header header = record_header_at(bytes + offset);
    batch_bytes += header.size;
    if (header.type == PERF_RECORD_SAMPLE) {
      ++stats_.samples;
    } else if (header.type == PERF_RECORD_LOST && header.size >= 24) {
      stats_.kernel_lost += u64_at(bytes + offset + 16);  // { header; u64 id; u64 lost; }
    } else if (header.type == PERF_RECORD_LOST_SAMPLES && header.size >= 16) {
      stats_.kernel_lost_samples += u64_at(bytes + offset + 8);  // { header; u64 lost; }
    }
  }
  stats_.records += offsets_.size();
  stats_.bytes += batch_bytes;
  if (batch_.lost.bytes) {
    uint64_t average = stats_.records ? stats_.bytes / stats_.records : 0;
    uint64_t records = average ? (batch_.lost.bytes + average / 2) / average : 0;
    batch_.lost.records = std::max<uint64_t>(records, 1);
    stats_.lost_records += batch_.lost.records;
  }
  batch_.bytes = batch_bytes;
  batch_.data_ = bytes;
  batch_.offsets_ = offsets_.data();
  batch_.count_ = offsets_.size();
}

}  // namespace pp::sys

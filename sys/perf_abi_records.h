// Walking perf records: a byte range holding records back to back, each
// starting with its header,
//
//   struct perf_event_header { u32 type; u16 misc; u16 size; }   size counts the header
//
// as perf.data's data section, a pipe stream, a batch handed to the
// perf.data writer and a ring buffer's copied window all hold them. The
// bounds checks are written once here: a record is whole when at least a
// header's bytes are left, its size is at least the header and it fits in
// what is left. The perf.data reader and writer and the ring reader walk
// with this (the ring reader keeps its own wrap handling and
// resynchronisation; see sys/ring_reader.h).
//
//   RecordWalk end = walk_records(bytes, [&](const perf_event_header& h, size_t offset) {
//     ...;           // bytes.subspan(offset, h.size) is the whole record
//     return true;   // false stops the walk there
//   });
//   if (end.problem != RecordProblem::kNone) ...  // the record at end.offset is not whole
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace pp::sys {

// The header at `at` (records need not be aligned in a perf.data file).
inline perf_event_header record_header_at(const uint8_t* at) {
  perf_event_header header;
  std::memcpy(&header, at, sizeof(header));
  return header;
}

// A u64 at `at`, unaligned.
inline uint64_t u64_at(const uint8_t* at) {
  uint64_t value;
  std::memcpy(&value, at, sizeof(value));
  return value;
}

// Why the record at the front of a range is not whole.
enum class RecordProblem {
  kNone,      // it is whole
  kCutOff,    // fewer bytes than a header are left
  kTooSmall,  // its size is less than the header (0 included: a walk would never end)
  kTooLarge,  // its size runs past the end of the range
};

// Checks the record at the front of `left` and fills `header` (when at
// least a header's bytes are there).
inline RecordProblem check_record(std::span<const uint8_t> left, perf_event_header& header) {
  if (left.size() < sizeof(perf_event_header))
    return RecordProblem::kCutOff;
  header = record_header_at(left.data());
  if (header.size < sizeof(perf_event_header))
    return RecordProblem::kTooSmall;
  if (header.size > left.size())
    return RecordProblem::kTooLarge;
  return RecordProblem::kNone;
}

// Where a walk stopped: at the end of the range (kNone, offset ==
// bytes.size()), where the visitor asked to stop (kNone), or at a record
// that is not whole (its offset, its header when one was readable).
struct RecordWalk {
  size_t offset = 0;
  RecordProblem problem = RecordProblem::kNone;
  perf_event_header header{};
  size_t records = 0;  // records visited
};

// Calls `visit(header, offset)` for each whole record from the start of
// `bytes`, in order, until the range ends, a record is not whole or visit
// returns false.
template <typename Visit>
RecordWalk walk_records(std::span<const uint8_t> bytes, Visit&& visit) {
  RecordWalk walk;
  while (walk.offset < bytes.size()) {
    walk.problem = check_record(bytes.subspan(walk.offset), walk.header);
    if (walk.problem != RecordProblem::kNone)
      return walk;
    if (!visit(static_cast<const perf_event_header&>(walk.header), walk.offset))
      return walk;
    walk.offset += walk.header.size;
    walk.records++;
  }
  return walk;
}

}  // namespace pp::sys

// The perf ring buffer as both sides see it: a control page
// (struct perf_event_mmap_page) followed by a power-of-two data area, shared
// by the kernel (the writer) and any number of readers.
//
//   offset 0            struct perf_event_mmap_page
//     +1024             u64 data_head    the writer's published position
//     +1032             u64 data_tail    the reader's position (writable maps only)
//     +1040             u64 data_offset  where the data area starts (usually one page)
//     +1048             u64 data_size    its size, a power of two
//   offset data_offset  data_size bytes of records, addressed modulo data_size
//
// Positions are u64 byte counts that never wrap in practice. A forward writer
// starts at 0 and moves data_head up: records occupy [old head, new head). A
// backward writer (attr.write_backward) starts at 0 and moves data_head down
// (so it wraps below 0 at once): each record occupies [new head, old head),
// its bytes still in ascending order, and data_head always points at the
// newest record's header.
//
// Shared by the ring reader (sys/ring_reader.h), the fake kernel's writer
// (sys/ring_writer.h: the fake kernel, the broker's shared rings) and their
// tests.
#pragma once

#include <linux/perf_event.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "base/result.h"

namespace pp::sys {

// Which way the writer moves through the buffer.
enum class RingLayout {
  kForward,   // the default, and what the seed's persistent buffers use
  kBackward,  // attr.write_backward (Linux 4.7+), what the broker creates
};

const char* ring_layout_name(RingLayout layout);  // "forward", "backward"

// Where the data area lies in a mapping.
struct RingGeometry {
  size_t data_offset = 0;
  size_t data_size = 0;  // a power of two
};

// Reads data_offset and data_size from the control page (Linux 4.1+ fills
// them in); when they are 0, the data starts at `page_size` and fills the
// rest of the mapping. EINVAL when the mapping is too small for a control
// page, the data area is not a power of two of at least 64 bytes, or it does
// not fit in the mapping.
Result<RingGeometry> ring_geometry(std::span<const uint8_t> mapping, size_t page_size);

// data_head with acquire semantics: everything the writer stored before it
// published this head is visible once the load returns (perf's
// ring_buffer_read_head).
inline uint64_t load_data_head(const perf_event_mmap_page* page) {
  return __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
}

// Publishes data_head with release semantics (the writer's side).
inline void store_data_head(perf_event_mmap_page* page, uint64_t head) {
  __atomic_store_n(&page->data_head, head, __ATOMIC_RELEASE);
}

// Record header checks used to find record boundaries.
//
// plausible_record_header() is strict, for resynchronising inside bytes
// whose boundaries are unknown: a kernel record type (1..63; user types
// start at 64 and never appear in a kernel ring), size a multiple of 8 and
// at least the type's fixed part, misc using only the cpumode values 0..5
// and bits 12-15.
bool plausible_record_header(const perf_event_header& header);

// The smallest size a kernel record of `type` can have (its fixed fields),
// 8 for types this build does not know.
size_t min_record_size(uint32_t type);

// Whether `record` (header included, header.size bytes) is laid out as the
// event with `attr` writes it. A PERF_RECORD_SAMPLE must have exactly the
// size its sample_type fields add up to (callchain, raw, branch stack,
// registers, user stack and aux sizes read from the record itself), and a
// tracepoint's raw data must begin with the tracepoint's common_type; other
// records must hold at least their fixed part and the sample_id trailer when
// attr.sample_id_all. Used to resynchronise with certainty when the reader
// knows which event writes the buffer.
bool record_matches_attr(std::span<const uint8_t> record, const perf_event_attr& attr);

// What the writer put in a buffer between two of its data_head positions,
// counted by walking the record headers in place (no copy, so a cheap check
// for the broker's guard): PERF_RECORD_SAMPLEs, the samples
// PERF_RECORD_LOST says were dropped, and PERF_RECORD_THROTTLEs. `from` is
// the earlier head and `to` the later one; both are record boundaries. At
// most the newest data_size less 4 KiB can still be walked (the writer
// overwrote the rest, and may be overwriting the far end as it goes):
// `walked` says how many bytes were, of `moved`. The walk stops at the first header no kernel would
// write (the writer lapped the walk, or someone scribbled): `complete` is then false.
struct RingTally {
  uint64_t samples = 0;
  uint64_t lost = 0;       // the sum of PERF_RECORD_LOST's counts
  uint64_t throttles = 0;  // PERF_RECORD_THROTTLE records
  uint64_t moved = 0;      // bytes between the two heads
  uint64_t walked = 0;     // bytes of records counted
  bool complete = false;   // walked == moved, every header plausible
};
RingTally tally_records(std::span<const uint8_t> mapping, const RingGeometry& geometry,
                        RingLayout layout, uint64_t from, uint64_t to);

}  // namespace pp::sys

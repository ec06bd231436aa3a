#include "sys/ring.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "sys/perf_abi_sample.h"

namespace pp::sys {

const char* ring_layout_name(RingLayout layout) {
  return layout == RingLayout::kBackward ? "backward" : "forward";
}

Result<RingGeometry> ring_geometry(std::span<const uint8_t> mapping, size_t page_size) {
  constexpr size_t kControlBytes = offsetof(perf_event_mmap_page, data_size) + sizeof(uint64_t);
  if (mapping.size() < kControlBytes)
    return errorf(EINVAL, "perf buffer mapping of %zu bytes is smaller than its control page",
                  mapping.size());
  const auto* page = reinterpret_cast<const perf_event_mmap_page*>(mapping.data());
  RingGeometry geometry;
  geometry.data_offset = size_t(__atomic_load_n(&page->data_offset, __ATOMIC_RELAXED));
  geometry.data_size = size_t(__atomic_load_n(&page->data_size, __ATOMIC_RELAXED));
  if (geometry.data_size == 0) {
    // Kernels before 4.1: one control page, then the rest of the mapping.
    if (mapping.size() <= page_size)
      return errorf(EINVAL,
                    "perf buffer mapping of %zu bytes has no data pages (map 1 + 2^n pages)",
                    mapping.size());
    geometry.data_offset = page_size;
    geometry.data_size = mapping.size() - page_size;
  }
  size_t size = geometry.data_size;
  if (size < 64 || (size & (size - 1)) != 0)
    return errorf(EINVAL, "perf buffer data size %zu is not a power of two of at least 64 bytes",
                  size);
  if (geometry.data_offset < kControlBytes || geometry.data_offset > mapping.size() ||
      mapping.size() - geometry.data_offset < size)
    return errorf(EINVAL,
                  "perf buffer data area (offset %zu, %zu bytes) does not fit in the %zu-byte "
                  "mapping",
                  geometry.data_offset, size, mapping.size());
  return geometry;
}

size_t min_record_size(uint32_t type) {
  // The fixed fields of each kernel record, header included; variable parts
  // (file names, comm, read values) count as at least one u64.
  switch (type) {
    case PERF_RECORD_MMAP:
      return 48;
    case PERF_RECORD_LOST:
      return 24;
    case PERF_RECORD_COMM:
      return 24;
    case PERF_RECORD_EXIT:
    case PERF_RECORD_FORK:
    case PERF_RECORD_THROTTLE:
    case PERF_RECORD_UNTHROTTLE:
      return 32;
    case PERF_RECORD_READ:
      return 24;
    case PERF_RECORD_SAMPLE:
      return 8;
    case PERF_RECORD_MMAP2:
      return 80;
    case PERF_RECORD_AUX:
      return 32;
    case PERF_RECORD_ITRACE_START:
    case PERF_RECORD_LOST_SAMPLES:
      return 16;
    case PERF_RECORD_SWITCH:
      return 8;
    case PERF_RECORD_SWITCH_CPU_WIDE:
      return 16;
    case PERF_RECORD_NAMESPACES:
      return 24;
    case PERF_RECORD_KSYMBOL:
      return 32;
    case PERF_RECORD_BPF_EVENT:
    case PERF_RECORD_CGROUP:
    case PERF_RECORD_TEXT_POKE:
      return 24;
    case PERF_RECORD_AUX_OUTPUT_HW_ID:
      return 16;
    default:
      return 8;
  }
}

bool plausible_record_header(const perf_event_header& header) {
  constexpr uint32_t kFirstUserType = 64;     // PERF_RECORD_USER_TYPE_START in perf
  constexpr uint16_t kReservedMisc = 0x0ff8;  // bits 3..11: unused by any kernel so far
  if (header.type == 0 || header.type >= kFirstUserType)
    return false;
  if ((header.misc & kReservedMisc) != 0 || (header.misc & PERF_RECORD_MISC_CPUMODE_MASK) > 5)
    return false;
  return header.size % 8 == 0 && header.size >= min_record_size(header.type);
}

namespace {

// The sample's fields, laid out as sys/perf_abi_sample.h says, end exactly
// at the record's end; RAW is padded as the kernel pads it and a
// tracepoint's raw data starts with its common fields, common_type first.
bool sample_matches(std::span<const uint8_t> record, const perf_event_attr& attr) {
  Sample sample;
  if (sample_fields_end(attr, record, &sample) != record.size())
    return false;
  if (!(attr.sample_type & PERF_SAMPLE_RAW))
    return true;
  if ((sample.raw.size() + sizeof(uint32_t)) % 8 != 0)
    return false;
  uint16_t common_type;
  if (attr.type == PERF_TYPE_TRACEPOINT && sample.raw.size() >= sizeof(common_type)) {
    std::memcpy(&common_type, sample.raw.data(), sizeof(common_type));
    if (common_type != uint16_t(attr.config))
      return false;
  }
  return true;
}

}  // namespace

bool record_matches_attr(std::span<const uint8_t> record, const perf_event_attr& attr) {
  if (record.size() < sizeof(perf_event_header))
    return false;
  perf_event_header header;
  std::memcpy(&header, record.data(), sizeof(header));
  if (header.size != record.size() || !plausible_record_header(header))
    return false;
  if (header.type != PERF_RECORD_SAMPLE)
    return record.size() >= min_record_size(header.type) + sample_id_size(attr);
  return sample_matches(record, attr);
}

RingTally tally_records(std::span<const uint8_t> mapping, const RingGeometry& geometry,
                        RingLayout layout, uint64_t from, uint64_t to) {
  RingTally tally;
  bool backward = layout == RingLayout::kBackward;
  tally.moved = backward ? from - to : to - from;
  size_t size = geometry.data_size;
  if (tally.moved == 0) {
    tally.complete = true;
    return tally;
  }
  const uint8_t* data = mapping.data() + geometry.data_offset;
  uint64_t mask = size - 1;
  // Backward: the newest record is at `to` and older ones follow it, up to
  // `from`; the writer's next records overwrite the far end first. Forward:
  // `from` is a boundary only while the writer has not lapped it.
  // What a record being written may already have overwritten at the far end.
  constexpr uint64_t kSlack = 4096;
  uint64_t limit = size > kSlack * 2 ? size - kSlack : size / 2;
  if (!backward && tally.moved > limit)
    return tally;  // the boundary at `from` is overwritten: nothing to walk from
  uint64_t budget = std::min<uint64_t>(tally.moved, limit);
  uint64_t at = backward ? to : from;
  while (tally.walked < budget) {
    perf_event_header header;
    uint8_t bytes[sizeof(header)];
    for (size_t i = 0; i < sizeof(header); i++)
      bytes[i] = __atomic_load_n(data + ((at + i) & mask), __ATOMIC_RELAXED);
    std::memcpy(&header, bytes, sizeof(header));
    if (!plausible_record_header(header) || tally.walked + header.size > tally.moved)
      return tally;
    if (header.type == PERF_RECORD_SAMPLE) {
      tally.samples++;
    } else if (header.type == PERF_RECORD_LOST) {
      uint64_t lost = 0;  // { header; u64 id; u64 lost; }
      uint8_t word[8];
      for (size_t i = 0; i < 8; i++)
        word[i] = __atomic_load_n(data + ((at + 16 + i) & mask), __ATOMIC_RELAXED);
      std::memcpy(&lost, word, sizeof(lost));
      tally.lost += lost;
    } else if (header.type == PERF_RECORD_THROTTLE) {
      tally.throttles++;
    }
    at += header.size;
    tally.walked += header.size;
  }
  tally.complete = tally.walked == tally.moved;
  return tally;
}

}  // namespace pp::sys

#include "sys/ring.h"

#include <bit>
#include <cstddef>
#include <cstring>

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

// Reads the record as perf_output_sample() wrote it, field by field.
class SampleCursor {
 public:
  explicit SampleCursor(std::span<const uint8_t> record) : record_(record) {}

  bool skip(uint64_t bytes) {
    if (bytes > record_.size() - at_)
      return false;
    at_ += size_t(bytes);
    return true;
  }
  bool u64(uint64_t& value) {
    if (record_.size() - at_ < sizeof(value))
      return false;
    std::memcpy(&value, record_.data() + at_, sizeof(value));
    at_ += sizeof(value);
    return true;
  }
  bool u32(uint32_t& value) {
    if (record_.size() - at_ < sizeof(value))
      return false;
    std::memcpy(&value, record_.data() + at_, sizeof(value));
    at_ += sizeof(value);
    return true;
  }
  size_t at() const { return at_; }
  const uint8_t* here() const { return record_.data() + at_; }
  bool done() const { return at_ == record_.size(); }

 private:
  std::span<const uint8_t> record_;
  size_t at_ = sizeof(perf_event_header);
};

size_t sample_id_size(const perf_event_attr& attr) {
  constexpr uint64_t kTrailer = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
                                PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
  return attr.sample_id_all ? size_t(std::popcount(attr.sample_type & kTrailer)) * 8 : 0;
}

bool read_values(SampleCursor& cursor, uint64_t format) {
  // { value, [enabled], [running], [id], [lost] } or, for a group,
  // { nr, [enabled], [running], { value, [id], [lost] } [nr] }
  uint64_t per_value =
      8 + ((format & PERF_FORMAT_ID) ? 8 : 0) + ((format & PERF_FORMAT_LOST) ? 8 : 0);
  uint64_t times = ((format & PERF_FORMAT_TOTAL_TIME_ENABLED) ? 8 : 0) +
                   ((format & PERF_FORMAT_TOTAL_TIME_RUNNING) ? 8 : 0);
  if (!(format & PERF_FORMAT_GROUP))
    return cursor.skip(per_value + times);
  uint64_t nr;
  if (!cursor.u64(nr) || nr > 0xffff)
    return false;
  return cursor.skip(times + nr * per_value);
}

bool registers(SampleCursor& cursor, uint64_t mask) {
  uint64_t abi;
  if (!cursor.u64(abi))
    return false;
  return abi == PERF_SAMPLE_REGS_ABI_NONE || cursor.skip(uint64_t(std::popcount(mask)) * 8);
}

bool sample_matches(SampleCursor& cursor, const perf_event_attr& attr) {
  uint64_t type = attr.sample_type;
  constexpr uint64_t kFixedHead = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                  PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
                                  PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
  if (!cursor.skip(uint64_t(std::popcount(type & kFixedHead)) * 8))
    return false;
  if ((type & PERF_SAMPLE_READ) && !read_values(cursor, attr.read_format))
    return false;
  uint64_t nr;
  if (type & PERF_SAMPLE_CALLCHAIN) {
    if (!cursor.u64(nr) || nr > 0xffff || !cursor.skip(nr * 8))
      return false;
  }
  if (type & PERF_SAMPLE_RAW) {
    uint32_t size;
    if (!cursor.u32(size) || (size + 4) % 8 != 0)
      return false;
    const uint8_t* raw = cursor.here();
    if (!cursor.skip(size))
      return false;
    // A tracepoint's raw data starts with its common fields, common_type first.
    uint16_t common_type;
    if (attr.type == PERF_TYPE_TRACEPOINT && size >= sizeof(common_type)) {
      std::memcpy(&common_type, raw, sizeof(common_type));
      if (common_type != uint16_t(attr.config))
        return false;
    }
  }
  if (type & PERF_SAMPLE_BRANCH_STACK) {
    if (!cursor.u64(nr) || nr > 0xffff)
      return false;
    if ((attr.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX) && !cursor.skip(8))
      return false;
    if (!cursor.skip(nr * 24))
      return false;
  }
  if ((type & PERF_SAMPLE_REGS_USER) && !registers(cursor, attr.sample_regs_user))
    return false;
  if (type & PERF_SAMPLE_STACK_USER) {
    uint64_t size;
    if (!cursor.u64(size) || (size && !cursor.skip(size + 8)))
      return false;
  }
  constexpr uint64_t kFixedMiddle = PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT;
  if ((type & kFixedMiddle) && !cursor.skip(8))
    return false;
  if (!cursor.skip(
          uint64_t(std::popcount(type & (PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION))) * 8))
    return false;
  if ((type & PERF_SAMPLE_REGS_INTR) && !registers(cursor, attr.sample_regs_intr))
    return false;
  constexpr uint64_t kFixedTail = PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP |
                                  PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE;
  if (!cursor.skip(uint64_t(std::popcount(type & kFixedTail)) * 8))
    return false;
  if (type & PERF_SAMPLE_AUX) {
    uint64_t size;
    if (!cursor.u64(size) || !cursor.skip(size))
      return false;
  }
  return cursor.done();
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
  SampleCursor cursor(record);
  return sample_matches(cursor, attr);
}

}  // namespace pp::sys

// libFuzzer target: arbitrary buffer bytes, control-page fields and
// data_head values, moved between reads and in the middle of them, must
// never crash the ring reader or make it read outside the buffer, and every
// record it emits must be whole: a header whose size is the span's, inside
// the batch.
//
// Input: a fixed 16-byte prefix, then the data area's bytes.
//   [0]      bit 0 backward, bit 1 snapshot, bit 2 use an attr,
//            bit 3 take data_offset/data_size from the input, bits 4-6 data
//            size 64 << n
//   [1]      inflight slack in 8-byte units
//   [2..3]   the attr's sample_type, low 16 bits (with bit 2)
//   [4..7]   data_size for bit 3 (data_offset is then [8..9] * 8)
//   [8..15]  the first data_head; later heads come from the data bytes
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sys/ring_reader.h"

namespace {

constexpr size_t kControl = 4096;

uint64_t take_u64(const uint8_t* data, size_t size, size_t& at) {
  uint64_t value = 0;
  if (size >= 8 && at + 8 <= size) {
    std::memcpy(&value, data + at, sizeof(value));
    at += 8;
  } else {
    at = size;
  }
  return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pp::sys;
  if (size < 16)
    return 0;
  uint8_t flags = data[0];
  size_t data_size = size_t(64) << ((flags >> 4) & 7);
  std::vector<uint64_t> memory((kControl + data_size) / 8 + 1);
  auto* bytes = reinterpret_cast<uint8_t*>(memory.data());
  auto* page = reinterpret_cast<perf_event_mmap_page*>(bytes);
  page->data_offset = kControl;
  page->data_size = data_size;
  if (flags & 8) {
    uint32_t fuzzed_size;
    uint16_t fuzzed_offset;
    std::memcpy(&fuzzed_size, data + 4, sizeof(fuzzed_size));
    std::memcpy(&fuzzed_offset, data + 8, sizeof(fuzzed_offset));
    page->data_size = fuzzed_size;
    page->data_offset = uint64_t(fuzzed_offset) * 8;
  }
  size_t payload = std::min(size - 16, data_size);
  std::memcpy(bytes + kControl, data + 16, payload);
  uint64_t head;
  std::memcpy(&head, data + 8, sizeof(head));

  RingReaderOptions options;
  options.layout = (flags & 1) ? RingLayout::kBackward : RingLayout::kForward;
  options.start = (flags & 2) ? RingStart::kOldest : RingStart::kNow;
  options.inflight_slack = size_t(data[1]) * 8;
  options.settle_us = 0;
  options.page_size = kControl;
  if (flags & 4) {
    EventAttr attr;
    attr.attr.type = PERF_TYPE_TRACEPOINT;
    attr.attr.config = data[3];
    attr.attr.sample_type = uint64_t(data[2]) | (uint64_t(data[3]) << 8);
    attr.attr.read_format = data[2] & 0x1f;
    attr.attr.sample_id_all = data[3] & 1;
    options.attr = attr;
  }
  std::span<const uint8_t> mapping(bytes, kControl + data_size);
  page->data_head = 0;
  auto reader = RingReader::create(mapping, options);
  if (!reader.ok())
    return 0;

  // Later heads: u64s taken from the input, moved before each read and,
  // every other time, during it.
  size_t at = 16;
  int step = 0;
  reader->set_test_hooks({.after_copy = [&] {
    if (step % 2)
      page->data_head = take_u64(data, size, at);
  }});
  page->data_head = head;
  for (step = 0; step < 8; ++step) {
    const RingBatch& batch = reader->read();
    uint64_t total = 0;
    for (std::span<const uint8_t> record : batch) {
      perf_event_header header;
      if (record.size() < sizeof(header))
        std::abort();
      std::memcpy(&header, record.data(), sizeof(header));
      if (header.size != record.size())
        std::abort();
      total += record.size();
    }
    if (total != batch.bytes || total > reader->data_size())
      std::abort();
    page->data_head = take_u64(data, size, at);
  }
  return 0;
}

// The kernel's side of a perf ring buffer: writes records into memory laid
// out as in sys/ring.h, the way kernel/events/ring_buffer.c does. The
// broker's ftrace backend republishes an instance's records with it into
// the shared rings its readers map (sys/shared_ring.h); the fake kernel, the
// ring reader's tests, its fuzzer and benchmarks write with it too.
//
//   std::vector<uint64_t> memory(...);   // control page + data area
//   RingWriter writer(as_bytes(memory), 4096, 256, RingLayout::kBackward, true);
//   writer.write(record_bytes);          // copies, then publishes data_head
//
// In overwrite mode (a buffer mapped read-only: what the seed's persistent
// events and the broker use) the writer never looks at data_tail and never
// stops: old records are overwritten. Otherwise (a writable mapping) a record
// that does not fit between data_head and the reader's data_tail is dropped
// and counted, as the kernel counts rb->lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "sys/ring.h"

namespace pp::sys {

class RingWriter {
 public:
  RingWriter() = default;
  // `mapping` holds the control page at 0 and `data_size` bytes (a power of
  // two, at least 64) at `data_offset`. Fills in data_offset and data_size,
  // resets data_head and data_tail to 0.
  RingWriter(std::span<uint8_t> mapping, size_t data_offset, size_t data_size, RingLayout layout,
             bool overwrite);

  // Copies one record (header included; its size is the span's) into the
  // buffer and publishes the new data_head. False when the buffer is not in
  // overwrite mode and has no room: the record is dropped and lost() grows.
  bool write(std::span<const uint8_t> record);

  // Two steps, to act out a writer caught mid-record: stage() copies the
  // bytes (overwriting what was there) but leaves data_head where it was, as
  // the kernel does until perf_output_end(); publish() then stores the head.
  bool stage(std::span<const uint8_t> record);
  void publish();

  uint64_t head() const { return published_; }   // the last published data_head
  uint64_t written() const { return written_; }  // bytes written since creation
  uint64_t lost() const { return lost_; }        // records dropped for want of room
  size_t data_size() const { return data_size_; }
  RingLayout layout() const { return layout_; }
  perf_event_mmap_page* page() const { return page_; }

  // Raw access to the data area, for tests that plant garbage.
  std::span<uint8_t> data() const { return {data_, data_size_}; }

 private:
  bool has_room(size_t size) const;
  void copy_in(uint64_t position, std::span<const uint8_t> bytes);

  perf_event_mmap_page* page_ = nullptr;
  uint8_t* data_ = nullptr;
  size_t data_size_ = 0;
  RingLayout layout_ = RingLayout::kForward;
  bool overwrite_ = true;
  uint64_t reserved_ = 0;   // the writer's private head (rb->head)
  uint64_t published_ = 0;  // what data_head says
  uint64_t written_ = 0;
  uint64_t lost_ = 0;
};

}  // namespace pp::sys

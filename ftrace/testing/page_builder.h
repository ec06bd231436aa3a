// Builds ftrace ring-buffer pages as the kernel writes them
// (kernel/trace/ring_buffer.c: rb_update_event(), rb_add_time_stamp(),
// rb_event_discard(), ring_buffer_read_page()), for tests of the page
// reader and of what reads an instance: a page's timestamp, its events one
// by one, its loss flags; then bytes() gives the whole page.
//
//   PageBuilder b(layout, /*timestamp=*/1000);
//   b.record(/*delta=*/5, {7, 0, 1, 2});   // event id 7 at 1005
//   b.missed(42);                          // 42 events lost before this page
//   write(fd, b.bytes().data(), b.bytes().size());
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ftrace/ring_page.h"

namespace pp::ftrace::testing {

class PageBuilder {
 public:
  PageBuilder(const RingLayout& layout, uint64_t timestamp);

  // A record of 4..112 bytes (a multiple of 4): type_len = size / 4.
  void record(uint32_t delta, const std::vector<uint8_t>& payload);
  // A record in the long form (type_len 0, a u32 length), its first two
  // bytes set to `event_id`; any size from 2 on, padded to 4.
  void big_record(uint32_t delta, std::vector<uint8_t> payload, uint16_t event_id);
  // A discarded record: padding with a non-zero delta whose array word says
  // `size` (at least 4), the bytes after the header, itself included.
  void padding(uint32_t delta, uint32_t size);
  // The null padding that ends a page's data (type padding, delta 0).
  void end_padding();
  void time_extend(uint64_t delta);
  void time_stamp(uint64_t absolute);
  // Any event header (type_len, delta) and its u32 array word.
  void raw_event(uint32_t type_len, uint32_t delta, uint32_t array);
  // Flags the page as following a loss; with a count, stores it after the
  // data as the kernel does when there is room.
  void missed(std::optional<uint64_t> count);

  // Overrides for broken pages: the commit's length and flag bits.
  void set_length(uint32_t length) { length_override_ = length; }
  void set_flags(uint32_t flags) { flags_ = flags; }

  // The page, layout.page_size() bytes; text() the same as a string, as a
  // fake trace_pipe_raw file is written.
  const std::vector<uint8_t>& bytes();
  std::string text() {
    const std::vector<uint8_t>& b = bytes();
    return {b.begin(), b.end()};
  }
  uint32_t length() const { return uint32_t(data_.size()); }

 private:
  void header(uint32_t type_len, uint32_t delta);
  void u32(uint32_t value);

  RingLayout layout_;
  uint64_t timestamp_;
  std::vector<uint8_t> data_;
  std::optional<uint64_t> stored_count_;
  std::optional<uint32_t> length_override_;
  uint32_t flags_ = 0;
  std::vector<uint8_t> page_;
};

// A sched:sched_switch payload of the tests/fixtures/tracefs-6.18 format
// (64 bytes, common_type 372 at 0, common_pid at 4), zero otherwise.
std::vector<uint8_t> sched_switch_6_18(int32_t pid);

}  // namespace pp::ftrace::testing

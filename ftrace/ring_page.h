// ftrace's binary ring-buffer pages, as a tracefs instance's
// per_cpu/cpuN/trace_pipe_raw hands them out, parsed from bytes. Pure: no
// file access (sys/ reads the pages and the header files).
//
// The layout comes from the kernel's own description of it, never from
// constants where the kernel says it (kernel/trace/ring_buffer.c,
// ring_buffer_print_page_header() and ring_buffer_print_entry_header()):
//
//   events/header_page:
//   	field: u64 timestamp;	offset:0;	size:8;	signed:0;
//   	field: local_t commit;	offset:8;	size:8;	signed:1;
//   	field: int overwrite;	offset:8;	size:1;	signed:1;
//   	field: char data;	offset:16;	size:4080;	signed:0;
//
//   events/header_event:
//   	# compressed entry header
//   		type_len    :    5 bits
//   		time_delta  :   27 bits
//   		array       :   32 bits
//
//   		padding     : type == 29
//   		time_extend : type == 30
//   		time_stamp : type == 31
//   		data max type_len  == 28
//
// A page: the u64 timestamp of its first event, the commit word (its low
// bits the length of the data; bit 31 set when events were lost before this
// page, bit 30 when their count is stored as a long just after the data),
// then the events. An event: a u32 header (type_len, time_delta), then
//   type_len 1..28        a record of type_len * 4 bytes
//   type_len 0            a u32 length (of itself and the record), the record
//   padding (29)          delta 0: the rest of the page is empty;
//                         else a u32 length (of the bytes after the
//                         header, itself included): a discarded record,
//                         its delta counted unless it is 1 (the mark
//                         the kernel writes for a zero delta)
//   time_extend (30)      a u32: (array << 27 | delta) added to the clock
//   time_stamp (31)       a u32: (array << 27 | delta) the absolute time (59
//                         bits; the top bits come from the running clock)
// A record begins with the tracepoint's common fields, the event id
// (common_type, u16) first.
//
//   PP_ASSIGN_OR_RETURN(RingLayout layout, parse_ring_layout(header_page, header_event));
//   RingRead read;
//   PP_RETURN_IF_ERROR(read_ring_pages(pages, layout, /*cpu=*/2, read));
//   for (const RingRecord& r : read.records) ...  // r.payload points into `pages`
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp::ftrace {

// Where a page's parts are, from events/header_page; and the event header's
// type codes, from events/header_event.
struct RingLayout {
  uint32_t timestamp_offset = 0;
  uint32_t timestamp_size = 0;  // 8
  uint32_t commit_offset = 0;
  uint32_t commit_size = 0;  // sizeof(long): also the size of a stored missed count
  uint32_t data_offset = 0;
  uint32_t data_size = 0;  // the page is data_offset + data_size bytes
  uint32_t type_len_bits = 0;
  uint32_t time_delta_bits = 0;
  uint32_t padding_type = 0;
  uint32_t time_extend_type = 0;
  uint32_t time_stamp_type = 0;
  uint32_t data_max_type_len = 0;

  uint32_t page_size() const { return data_offset + data_size; }
};

// The layout the two header files describe; EINVAL naming the file, the
// line and what was wrong when a field is missing, out of the page, of a
// size this reader does not know, or the event header is not the
// 5-bit/27-bit form with types 29, 30 and 31. Pure.
Result<RingLayout> parse_ring_layout(std::string_view header_page, std::string_view header_event);

// One record: the trace clock's time (the instance's trace_clock, in its
// units: nanoseconds for local, global, mono...), the CPU it was read
// from, the event id (the record's first u16, common_type) and the whole
// record (common fields included, up to the kernel's 4-byte alignment).
struct RingRecord {
  uint64_t timestamp = 0;
  uint32_t cpu = 0;
  uint16_t event_id = 0;
  std::span<const uint8_t> payload;  // into the pages given to read_ring_pages()
};

// What read_ring_pages() appends to, across calls.
struct RingRead {
  std::vector<RingRecord> records;
  uint64_t pages = 0;
  // Events the kernel dropped (overwritten or not written) before a page,
  // summed where the kernel stored the count after the page's data.
  uint64_t missed_events = 0;
  // Pages the kernel flagged as following a loss; a loss whose count was not
  // stored (no room after the data) counts here only.
  uint64_t pages_after_loss = 0;
  // Of those, the pages whose count the kernel could not store: at least
  // one event lost before each, how many more no page says.
  uint64_t losses_uncounted = 0;
};

// Parses `pages` (whole pages of layout.page_size() bytes, as read from
// trace_pipe_raw) read from `cpu`, appending their records to `out` in the
// order written (time order within a CPU). On a page that breaks the rules
// (length past the page, an event running past the data, a record too short
// for its event id, a partial trailing page), EINVAL naming the page, the
// byte offset in `pages` and what was wrong; `out` then holds the records of
// the pages before it. Never reads outside `pages`. Pure.
Status read_ring_pages(std::span<const uint8_t> pages, const RingLayout& layout, uint32_t cpu,
                       RingRead& out);

}  // namespace pp::ftrace

// HEADER_TRACING_DATA: what perf needs to decode tracepoint samples, built
// from a tracefs tree (a parameter: the live /sys/kernel/tracing, or a
// checked-in snapshot such as shared/fixtures/tracefs-debian-6.1), and
// parsed back.
//
// The layout (perf's trace-event-info / trace-event-read), host byte order:
//
//   17 08 44 "tracing"            3 magic bytes, then the tag (no NUL)
//   "0.6" 00                      version, NUL-terminated
//   u8 big_endian, u8 sizeof(long), u32 page_size
//   "header_page" 00  u64 size  <events/header_page>
//   "header_event" 00 u64 size  <events/header_event>
//   u32 nr_ftrace                 then per ftrace-system event:
//                                 u64 size <events/ftrace/NAME/format>
//   u32 nr_systems                then per system:
//     "SYSTEM" 00  u32 nr_events  then per event: u64 size <format>
//   u32 size <kallsyms>           written empty (perf resolves symbols itself)
//   u32 size <printk_formats>
//   u64 size <saved_cmdlines>     (version 0.6 and later)
//
// Each format file must carry the id the attr was opened with:
//
//   name: sys_enter_getppid
//   ID: 305
//   format:
//   	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
//   ...
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "report/bytes.h"
#include "sys/tree.h"

namespace pp::report {

// A tracepoint as tracefs names it: events/<system>/<name>/.
struct Tracepoint {
  std::string system;
  std::string name;
  uint64_t id = 0;  // events/<system>/<name>/id

  bool operator==(const Tracepoint&) const = default;
};

// Finds the tracepoint whose id file holds `id`. `hint` ("sys:name", as an
// event is usually named) is tried first; without it, or when it does not
// match, every events/*/*/id is read. ENOENT names the tracefs root.
Result<Tracepoint> find_tracepoint(const sys::Tree& tracefs, uint64_t id, std::string_view hint);

// The "ID: <n>" line of a format file, or EINVAL.
Result<uint64_t> format_id(std::string_view format);

// Builds HEADER_TRACING_DATA for `tracepoints` (in the order given;
// grouped by system, systems in order of first appearance; duplicates
// written once). Each format's ID line must equal the tracepoint's id.
// `page_size` is the recording host's page size. A missing printk_formats
// or saved_cmdlines (snapshots have neither) is written as empty.
Result<Bytes> build_tracing_data(const sys::Tree& tracefs, std::span<const Tracepoint> tracepoints,
                                 uint32_t page_size);

// HEADER_TRACING_DATA parsed back.
struct TracingData {
  struct System {
    std::string name;
    std::vector<std::string> formats;
  };
  std::string version;
  bool big_endian = false;
  uint8_t long_size = 0;
  uint32_t page_size = 0;
  std::string header_page;
  std::string header_event;
  std::vector<std::string> ftrace_formats;
  std::vector<System> systems;
  std::string kallsyms;
  std::string printk_formats;
  std::string saved_cmdlines;
  size_t size = 0;  // bytes consumed from the input

  // "system:name" of every event format, in file order.
  std::vector<std::string> event_names() const;
};

// Parses tracing data at the start of `data` (trailing bytes, such as the
// padding after it, are left unread). Rejects anything malformed.
Result<TracingData> parse_tracing_data(std::span<const uint8_t> data);

}  // namespace pp::report

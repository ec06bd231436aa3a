// Where a tracepoint's format file puts common_pid, the thread that wrote a
// record: every ftrace record begins with the common fields
// (include/linux/trace_events.h, struct trace_entry), and the format says
// where each one is:
//
//   	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
//   	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
//   	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
//   	field:int common_pid;	offset:4;	size:4;	signed:1;
//
// Pure: text in, an offset out.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace pp::ftrace {

struct PidField {
  uint32_t offset = 4;  // struct trace_entry's, when the format does not say
  uint32_t size = 4;
};

// Where a field lies in a record, as its format line says.
struct FieldPlace {
  uint32_t offset = 0;
  uint32_t size = 0;
};

// The field declared as `declarator` (the words between its type and ';':
// "common_pid", "buf[]") in a whole format file; nothing when the file has
// no such line or its offset or size is no number.
std::optional<FieldPlace> find_field(std::string_view format, std::string_view declarator);

// common_pid's offset and size from a whole format file; the defaults when
// the file has no such line or an odd one (a size other than 4).
PidField common_pid_field(std::string_view format);

// The pid a record holds at `field`, or -1 when the record is too short.
int32_t record_pid(std::span<const uint8_t> record, const PidField& field);

}  // namespace pp::ftrace

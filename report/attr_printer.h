// Prints a struct perf_event_attr the way `perf stat -vv` (perf 6.1) prints
// the attr it is about to open, reads such a print back, and gives the same
// fields as JSON.
//
// The text block, byte for byte as perf 6.1 writes it ("  %-32s %s" per
// non-zero field, in perf's field order, with perf's names):
//
//   ------------------------------------------------------------
//   perf_event_attr:
//     type                             1
//     size                             128
//     config                           0x1
//     sample_type                      IP|TID|TIME|PERIOD
//     read_format                      TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING
//     exclude_kernel                   1
//     exclude_guest                    1
//     bp_type                          3
//     { bp_addr, config1 }             0x1000
//     { bp_len, config2 }              0x4
//   ------------------------------------------------------------
//
// Formats: config, config1/bp_addr, config2/bp_len, sample_regs_user and
// sample_regs_intr in hex ("0x1a2"); clockid signed decimal; sample_type,
// read_format and branch_sample_type as perf's `|`-joined flag names; every
// other field unsigned decimal.
//
// Where perf 6.1 would lose information, this printer says more, and only
// then (a field perf 6.1 prints is never printed differently):
//   - `config3` (u64 word 16; perf 6.3 added it) is printed in hex after
//     sig_data, as newer perf does;
//   - bits of word 5, 13 and 14 that perf 6.1's struct calls __reserved_1,
//     __reserved_2 and __reserved_3 are printed under those names, in hex,
//     after sigtrap, sample_max_stack and aux_sample_size (an attr<index>
//     format may set them);
//   - flag bits perf has no name for are appended in hex: "IP|0x2000000".
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "parse/parse_events.h"
#include "sys/perf_attr.h"

namespace pp::report {

// How a field's value is written.
enum class AttrFormat {
  kUnsigned,          // "%llu"
  kHex,               // "%#llx"
  kSigned,            // "%lld" (clockid)
  kSampleType,        // PERF_SAMPLE_* names joined by '|'
  kReadFormat,        // PERF_FORMAT_* names
  kBranchSampleType,  // PERF_SAMPLE_BRANCH_* names
};

// One printed field of the attr. Bit fields and 32-bit fields are read and
// written through the struct's own members, so the layout is the compiler's,
// whatever the host's endianness.
struct AttrField {
  std::string_view text_name;  // as perf prints it: "{ bp_addr, config1 }"
  std::string_view json_name;  // the key in attr_json(): "config1"
  AttrFormat format;
  uint64_t (*get)(const sys::EventAttr&);
  void (*set)(sys::EventAttr&, uint64_t);
  bool in_perf_6_1;  // false for config3 and the reserved bits
};

// Every field, in the order the text block prints them.
std::span<const AttrField> attr_fields();

// The field named `text_name` (as printed), or nullptr.
const AttrField* find_attr_field(std::string_view text_name);

// The largest value a field holds: 1 for a 1-bit flag, 3 for precise_ip,
// 0xffffffff for a u32, ...
uint64_t attr_field_max(const AttrField& field);

// perf's flag names for one value, in perf's order, '|'-joined; bits without
// a name are appended as one hex number. "" for 0.
std::string sample_type_names(uint64_t sample_type);
std::string read_format_names(uint64_t read_format);
std::string branch_sample_type_names(uint64_t branch_sample_type);

// One field's value as the text block writes it.
std::string format_attr_value(const AttrField& field, uint64_t value);

// The field lines only ("  %-32s %s\n" for each non-zero field).
void print_attr_fields(std::ostream& out, const sys::EventAttr& attr);

// The whole block: dashes, "perf_event_attr:", the field lines, dashes.
void print_attr_block(std::ostream& out, const sys::EventAttr& attr);
std::string attr_block(const sys::EventAttr& attr);

inline constexpr std::string_view kAttrBlockRule =
    "------------------------------------------------------------";
inline constexpr std::string_view kAttrBlockHeader = "perf_event_attr:";

// Reads one field line of a block, "  exclude_kernel                   1",
// into `attr` (the field is set to the value; other fields are untouched).
// EINVAL names the line for an unknown field, a value that does not parse
// or a flag name perf does not print; ERANGE for a value wider than the field.
Status read_attr_line(std::string_view line, sys::EventAttr* attr);

// Reads the field lines of one block (what print_attr_fields writes, or the
// lines between "perf_event_attr:" and the closing dashes of perf's output).
// A field that is not printed is zero.
Result<sys::EventAttr> read_attr_fields(std::string_view text);

// The attr as JSON. Every field is present, zero or not, under its C name
// (json_name above), counts as JSON numbers, registers and bit masks (the
// "%#llx" fields: config words, sample_regs_*; and sample_type, read_format,
// branch_sample_type) as "0x..." strings; the unions are split:
//   "sample_period" / "sample_freq"       (by the freq bit; the other is 0)
//   "wakeup_events" / "wakeup_watermark"  (by the watermark bit)
//   "config1" and "config2" are bp_addr and bp_len for breakpoints
// plus "sample_type_names", "read_format_names" and
// "branch_sample_type_names" (arrays of perf's flag names, unnamed bits as
// "0x..." strings), and "words": the 17 u64 words of the struct as "0x..."
// strings, word 16 being config3. Documentation/perf-persistent-attr.txt has the schema.
nlohmann::ordered_json attr_json(const sys::EventAttr& attr);

// What `perf persistent attr` prints for each event: its attr block, then one
// line with its name, its group leader (an event outside any group leads
// itself), the group's name when it has one, its PMU, and what lives beside
// the attr (terms applied at open, modifiers S, P, W):
//
//   event 1: task-clock:u, group leader 0 (cpu-clock:u), group mygrp, pmu software
//   event 2: cpu-clock/call-graph=fp/, group leader 2 (itself), pmu software, terms call-graph=fp
void print_events(std::ostream& out, std::span<const parse::EventSpec> events);

// {"events": [...]}: per event, in order,
//   "index", "name", "leader" (index), "group" (name or null), "pmu",
//   "tracepoint" (or null), "cpus" ([] = all), "text", "unit", "scale",
//   "per_pkg", "snapshot", "uncore", "sample_read", "precise_max",
//   "weak_group", "terms" (only the terms written, by their perf names),
//   "attr" (attr_json()).
nlohmann::ordered_json events_json(std::span<const parse::EventSpec> events);

}  // namespace pp::report

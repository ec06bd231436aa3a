// The perf_event_attr's fields as perf names and prints them, written once:
// the field table (perf's names, perf_event_attr__fprintf's order, hex or
// decimal or flag names), the flag names of sample_type, read_format and
// branch_sample_type, and the renderer and reader of `perf stat -vv`'s
// attr block. `perf persistent attr`, its JSON (report/attr_printer.h), the
// fake kernel's call log and the differential test against perf all read
// this table.
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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sys/perf_attr.h"

namespace pp::sys {

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
  std::string_view json_name;  // its C name, the key in attr --json: "config1"
  AttrFormat format;
  uint64_t (*get)(const EventAttr&);
  void (*set)(EventAttr&, uint64_t);
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

// One named bit of sample_type, read_format or branch_sample_type.
struct AttrFlagName {
  uint64_t bit;
  std::string_view name;
};

// perf 6.1's names for a flag field's bits, in perf's order (which is not
// always bit order); empty for a format that is not a flag field.
std::span<const AttrFlagName> attr_flag_names(AttrFormat format);

// The names of the bits set in `value`, in perf's order, then the bits
// without a name as one hex number ("0x2000000").
std::vector<std::string> attr_flag_list(AttrFormat format, uint64_t value);

// The name of one bit (PERF_SAMPLE_IP is "IP"), "" when perf has none.
std::string_view attr_flag_name(AttrFormat format, uint64_t bit);

// The name of the 1-bit flag at `bit` of word 5 (bit 0 is "disabled", 23
// "mmap2"), "" for precise_ip's bits and the reserved ones.
std::string_view attr_word5_flag_name(unsigned bit);

// One field's value as the text block writes it.
std::string format_attr_value(const AttrField& field, uint64_t value);

// The field lines only ("  %-32s %s\n" for each non-zero field).
void print_attr_fields(std::ostream& out, const EventAttr& attr);

// The whole block: dashes, "perf_event_attr:", the field lines, dashes.
void print_attr_block(std::ostream& out, const EventAttr& attr);
std::string attr_block(const EventAttr& attr);

inline constexpr std::string_view kAttrBlockRule =
    "------------------------------------------------------------";
inline constexpr std::string_view kAttrBlockHeader = "perf_event_attr:";

// Reads one field line of a block, "  exclude_kernel                   1",
// into `attr` (the field is set to the value; other fields are untouched).
// EINVAL names the line for an unknown field, a value that does not parse
// or a flag name perf does not print; ERANGE for a value wider than the field.
Status read_attr_line(std::string_view line, EventAttr* attr);

// Reads the field lines of one block (what print_attr_fields writes, or the
// lines between "perf_event_attr:" and the closing dashes of perf's output).
// A field that is not printed is zero.
Result<EventAttr> read_attr_fields(std::string_view text);

}  // namespace pp::sys

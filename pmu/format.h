// PMU format files: <sysfs>/bus/event_source/devices/<pmu>/format/<name>.
//
// A format file holds one line naming a u64 word of struct perf_event_attr
// and the bits of that word a term's value is written into:
//
//   config:0-7          event=0x3c writes 0x3c into bits 0-7 of attr.config
//   config1:0,2,4-6     bits 0, 2, 4, 5 and 6 of attr.config1
//   config2:8,18,48,58
//   config3:0-15        attr.config3 (kernel 6.3+; the attr grows to 136 bytes)
//   attr5:23            bit 23 of u64 word 5 (the flags), the seed patch set's
//                       `persistent` flag; any word 0-16, see sys/perf_attr.h
//
// A value is scattered low bit first into the listed bits taken in ascending
// order, whatever order the file lists them in, as perf does for config.
// Parsing is pure; reading the file is sys::Tree's job.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace pp::pmu {

// The u64 word indexes of the named targets (see sys/perf_attr.h).
inline constexpr unsigned kConfigWord = 1;
inline constexpr unsigned kConfig1Word = 7;
inline constexpr unsigned kConfig2Word = 8;
inline constexpr unsigned kConfig3Word = 16;

// The largest attr<index> accepted by the syntax; whether the word may be
// written is checked where the format is used (word 0 is the tool's own, and
// words past the attr size perf-persistent sends do not exist).
inline constexpr unsigned kMaxFormatWordSyntax = 9999;

struct Format {
  std::string target;  // as written: "config", "config1", "config3", "attr5"
  unsigned word = 0;   // u64 index into perf_event_attr (config = 1, attr5 = 5)
  uint64_t bits = 0;   // the bit positions, as a mask; never 0
};

// Parses the contents of a format file ("config:0-7\n"). Surrounding white
// space is ignored. Errors are EINVAL and say what is wrong with the text,
// e.g. "'config:8-3': range 8-3 is reversed"; the caller adds the path.
Result<Format> parse_format(std::string_view text);

// The largest value the bits hold: 2^popcount(bits) - 1.
uint64_t format_max_value(uint64_t bits);

// Scatters `value` into `*word` at `bits`, low bit first, ORing it in (perf
// never clears bits a format does not set). Bits of `value` past the format's
// width are ignored; check against format_max_value() first.
void format_scatter(uint64_t bits, uint64_t value, uint64_t* word);

// The bits back in sysfs notation: 0x800000000000000f -> "0-3,63".
std::string format_bits_string(uint64_t bits);

// "config:0-7", "attr5:23": the format as sysfs spells it.
std::string format_string(const Format& format);

}  // namespace pp::pmu

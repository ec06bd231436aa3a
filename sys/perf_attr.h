// struct perf_event_attr, seen both as the kernel's named fields and as the
// u64 words that sysfs `attr<index>:<bits>` formats address (see the seed
// patch set, 08/12):
//
//   word 0 type+size   1 config         2 sample_period/freq  3 sample_type
//        4 read_format 5 flags          6 wakeup_events+bp_type
//        7 config1     8 config2        9 branch_sample_type
//       10 sample_regs_user            11 sample_stack_user+clockid
//       12 sample_regs_intr            13 aux_watermark+sample_max_stack
//       14 aux_sample_size             15 sig_data   16 config3
//
// Debian 12's <linux/perf_event.h> (6.1) stops at sig_data (128 bytes,
// PERF_ATTR_SIZE_VER7); config3 came in 6.3 (136 bytes, VER8). EventAttr
// holds all 17 words whatever the installed header says.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <string_view>

namespace pp::sys {

inline constexpr unsigned kAttrWords = 17;
inline constexpr uint32_t kAttrSizeVer7 = 128;  // what perf 6.1 sends
inline constexpr uint32_t kAttrSizeVer8 = 136;  // with config3
inline constexpr unsigned kConfig3Word = 16;

static_assert(sizeof(perf_event_attr) <= kAttrWords * sizeof(uint64_t),
              "perf_event_attr grew past config3: extend EventAttr");

union EventAttr {
  perf_event_attr attr;
  uint64_t words[kAttrWords];

  EventAttr() { std::memset(this, 0, sizeof(*this)); }

  uint64_t& config3() { return words[kConfig3Word]; }
  uint64_t config3() const { return words[kConfig3Word]; }
};

static_assert(sizeof(EventAttr) == kAttrWords * sizeof(uint64_t));

inline bool operator==(const EventAttr& a, const EventAttr& b) {
  return std::memcmp(a.words, b.words, sizeof(a.words)) == 0;
}

// The name of a type the kernel defines (PERF_TYPE_HARDWARE is "hardware",
// and so on to "breakpoint"), as perf's PMU names them; "" for a dynamic
// PMU's type, which only sysfs can name.
inline std::string_view builtin_type_name(uint64_t type) {
  switch (type) {
    case PERF_TYPE_HARDWARE:
      return "hardware";
    case PERF_TYPE_SOFTWARE:
      return "software";
    case PERF_TYPE_TRACEPOINT:
      return "tracepoint";
    case PERF_TYPE_HW_CACHE:
      return "hw_cache";
    case PERF_TYPE_RAW:
      return "raw";
    case PERF_TYPE_BREAKPOINT:
      return "breakpoint";
    default:
      return "";
  }
}

}  // namespace pp::sys

// A tracepoint record that did not come from a perf event (an ftrace
// instance's: the broker's ftrace backend, record --instance and
// --previous-boot) as the sample perf record writes for a tracepoint, so
// that readers, perf script and perf report take it as one:
//
//   PERF_RECORD_SAMPLE, misc KERNEL, sample_type
//   IDENTIFIER|TID|TIME|CPU|PERIOD|RAW (sample_id_all):
//     u64 identifier   the caller's sample id
//     u32 pid, tid     the record's common_pid (ftrace keeps the thread)
//     u64 time         the record's time
//     u32 cpu, res     the CPU whose buffer held it
//     u64 period       1
//     u32 size, raw    the whole record, padded as the kernel pads RAW
//
// No IP: ftrace records none.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <span>
#include <vector>

#include "sys/perf_attr.h"

namespace pp::sys {

inline constexpr uint64_t kTracepointSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID |
                                                  PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                                                  PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;

// The attr of such samples for tracepoint `tracepoint_id` (its
// events/SYS/EVENT/id): type TRACEPOINT, period 1, kTracepointSampleType,
// sample_id_all. A caller that writes them into a ring sets the ring's
// fields (write_backward, use_clockid) itself.
EventAttr tracepoint_sample_attr(uint64_t tracepoint_id);

struct TracepointSample {
  uint64_t identifier = 0;
  uint32_t pid = 0;  // pid and tid
  uint64_t time = 0;
  uint32_t cpu = 0;
  std::span<const uint8_t> record;  // the whole tracepoint record, unpadded
};

// Appends the sample to `out`, the record copied once and padded in place
// (nothing allocated once `out` has room). False, with nothing appended,
// when the record is too large for a perf record (a u16 size).
bool append_tracepoint_sample(const TracepointSample& sample, std::vector<uint8_t>& out);

}  // namespace pp::sys

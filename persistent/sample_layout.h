// What a persistent event's records hold, and what a reader adds to them.
//
// The always-on cost of an event is paid per record, in the kernel, while
// nobody reads: every sample_type field costs 0.04 to 0.10 us per event
// (bench/always_on.bench: IP 0.057, CPU 0.039, PERIOD 0.050, IDENTIFIER
// 0.046). A persistent tracepoint event is therefore created lean:
//
//   sample_type IP|TID|TIME|RAW (PERIOD too when it samples by frequency)
//
// and leaves out what a reader knows without the kernel's help: the CPU
// (the per-CPU buffer a record came from), the period (sample_period: 1 for
// a tracepoint) and the sample id (the buffer's PERF_EVENT_IOC_ID). The
// instruction pointer stays: no reader can know it, and perf report's
// default view (comm, dso, symbol) names the kernel function it is in. Readers that write perf.data
// complete each record to the full layout (completed_attr()) with sys::relayout_record(), so perf
// script and perf report see what perf record would have written; readers that decode for
// themselves (top, report -e, watch) take the CPU and the event from the buffer.
//
// Events created before this keep their full sample_type: every reader looks
// at the event's own attr, so both layouts occur.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>

#include "sys/perf_abi_sample.h"
#include "sys/perf_attr.h"

namespace pp::persistent {

// sample_type of a persistent tracepoint event as created now.
inline constexpr uint64_t kLeanTracepointSampleType =
    PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;

// The fields a reader supplies for a lean event.
inline constexpr uint64_t kReaderSuppliedSampleType =
    PERF_SAMPLE_IP | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_IDENTIFIER;

// Whether records of `attr` lack fields a reader supplies: a tracepoint event
// whose records carry TID, TIME and RAW but not all of IP, CPU, PERIOD and
// IDENTIFIER (a PERIOD is only left out when sample_period is fixed). The
// seed kernel's own boot events (sample_type RAW, no TID or TIME) are not.
bool is_lean(const sys::EventAttr& attr);

// The attr the records of `attr` have once a reader completed them: a lean
// event's with kReaderSuppliedSampleType added; any other unchanged.
sys::EventAttr completed_attr(const sys::EventAttr& attr);

}  // namespace pp::persistent

// How many samples a buffer holds, for events-losing: the size of one
// sample of an event, and the size of a tracepoint's raw record from its
// format file.
#pragma once

#include <cstdint>
#include <string_view>

#include "sys/perf_attr.h"

namespace pp::check {

// The bytes one sample of `attr` takes in the ring buffer: a
// PERF_RECORD_SAMPLE laid out by sys/perf_abi_sample's table (the one the
// fake kernel and the perf.data writer use), every field of sample_type
// present, variable ones at their least (an empty callchain and branch
// stack, no registers, user stack or aux data; no read block, so an event
// with PERF_SAMPLE_READ takes more), and PERF_SAMPLE_RAW holding
// `raw_bytes` padded as the kernel pads it.
// `raw_bytes` is the tracepoint's record size (tracepoint_raw_bytes()), 0
// when unknown (then 64).
uint64_t estimated_sample_bytes(const sys::EventAttr& attr, uint64_t raw_bytes);

// The size of a tracepoint's raw record from its format file's field lines
// (the largest offset + size); 0 when there is none:
//
//   field:unsigned short common_type;	offset:0;	size:2;	signed:0;
//   field:u64 status;	offset:24;	size:8;	signed:0;
uint64_t tracepoint_raw_bytes(std::string_view format);

}  // namespace pp::check

// Where the fields of a record sit, from an attr's sample_type: the
// sample_id trailer that every non-sample record carries when
// attr.sample_id_all is set, and the fields of a PERF_RECORD_SAMPLE.
//
// The sample_id trailer, in this order, each field present only when its
// bit is in sample_type:
//
//   u32 pid, tid    PERF_SAMPLE_TID
//   u64 time        PERF_SAMPLE_TIME
//   u64 id          PERF_SAMPLE_ID
//   u64 stream_id   PERF_SAMPLE_STREAM_ID
//   u32 cpu, res    PERF_SAMPLE_CPU
//   u64 id          PERF_SAMPLE_IDENTIFIER
//
// A PERF_RECORD_SAMPLE, after its 8-byte header: IDENTIFIER, IP, TID, TIME,
// ADDR, ID, STREAM_ID, CPU (u32 cpu, u32 res), PERIOD, READ, CALLCHAIN
// (u64 nr, nr ips), RAW (u32 size, size bytes), then fields this parser
// does not decode (branch stack, registers, user stack, ...).
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include "base/result.h"
#include "report/bytes.h"

namespace pp::report {

// The sample_id trailer's values. Fields absent from the sample_type are
// neither written nor read.
struct SampleId {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
};

// Bytes of the sample_id trailer for `sample_type` (0 when sample_id_all is
// not set: pass 0 then).
size_t id_trailer_size(uint64_t sample_type);

// Appends the trailer. ID and IDENTIFIER both take `value.id`.
void write_id_trailer(uint64_t sample_type, const SampleId& value, ByteWriter& out);

// Reads the trailer at the end of a non-sample record (whole record,
// header included).
Result<SampleId> read_id_trailer(uint64_t sample_type, std::span<const uint8_t> record);

// The sample_type bits of the trailer; two attrs whose trailers differ
// cannot share one perf.data (perf refuses: "non matching sample_id_all").
inline uint64_t id_trailer_bits(uint64_t sample_type) {
  return sample_type & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
                        PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER);
}

// Byte offset of the u64 time in a PERF_RECORD_SAMPLE (header included), or
// nothing when the sample_type has no PERF_SAMPLE_TIME.
std::optional<size_t> sample_time_offset(uint64_t sample_type);

// A decoded PERF_RECORD_SAMPLE. Fields whose bit is absent stay 0 / empty.
struct Sample {
  uint64_t identifier = 0;
  uint64_t ip = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t time = 0;
  uint64_t addr = 0;
  uint64_t id = 0;
  uint64_t stream_id = 0;
  uint32_t cpu = 0;
  uint64_t period = 0;
  std::span<const uint8_t> read;       // the read_format block, undecoded
  std::span<const uint8_t> callchain;  // nr u64 ips; records need not be 8-aligned
  std::span<const uint8_t> raw;        // PERF_SAMPLE_RAW payload (size bytes)

  size_t callchain_depth() const { return callchain.size() / sizeof(uint64_t); }
  uint64_t callchain_ip(size_t i) const {
    uint64_t value;
    std::memcpy(&value, callchain.data() + i * sizeof(uint64_t), sizeof(value));
    return value;
  }
};

// Decodes a PERF_RECORD_SAMPLE (whole record, header included) as written
// by an event with `attr`. Fails on a record too short for its sample_type.
// The spans in the result point into `record`.
Result<Sample> parse_sample(const perf_event_attr& attr, std::span<const uint8_t> record);

}  // namespace pp::report

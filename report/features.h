// The feature sections of perf.data (file mode: after the data; pipe mode:
// inside HEADER_FEATURE records), encoded as perf 6.1 reads them, and
// decoded back. Host byte order. "string" is perf's padded string (see
// report/bytes.h): u32 len (a multiple of 64, NUL included), then len bytes.
//
//   HOSTNAME, OSRELEASE, VERSION, ARCH, CPUDESC, CPUID   string
//   NRCPUS        u32 nr_cpus_available, u32 nr_cpus_online
//   TOTAL_MEM     u64 kB
//   CMDLINE       u32 nr, nr strings
//   EVENT_DESC    u32 nr_events, u32 attr_size, then per event:
//                 attr (attr_size bytes), u32 nr_ids, string name,
//                 u64 ids[nr_ids]
//   PMU_MAPPINGS  u32 nr, then per PMU: u32 type, string name
//   SAMPLE_TIME   u64 first_sample_time, u64 last_sample_time
//   CLOCKID       u64 clock resolution in ns
//   CLOCK_DATA    u32 version (1), u32 clockid, u64 wall-clock ns,
//                 u64 clockid ns (a pair of readings taken together)
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "report/bytes.h"
#include "report/host_info.h"
#include "report/perf_data_format.h"
#include "sys/clock.h"
#include "sys/perf_attr.h"

namespace pp::report {

// One event of a perf.data file: its attr (attr.size bytes of it are
// written), the name perf shows ("syscalls:sys_enter_getppid"), and the
// kernel's sample ids of its instances (one per CPU; PERF_EVENT_IOC_ID).
struct EventDesc {
  sys::EventAttr attr;
  std::string name;
  std::vector<uint64_t> ids;
};

Bytes encode_string_feature(std::string_view value);
Bytes encode_nr_cpus(uint32_t available, uint32_t online);
Bytes encode_total_mem(uint64_t kb);
Bytes encode_cmdline(std::span<const std::string> argv);
// Every attr is written with `attr_size` bytes (its attr.size must equal it).
Bytes encode_event_desc(std::span<const EventDesc> events, uint32_t attr_size);
Bytes encode_pmu_mappings(std::span<const std::pair<uint32_t, std::string>> pmus);
Bytes encode_sample_time(uint64_t first, uint64_t last);
Bytes encode_clockid(uint64_t resolution_ns);
// CLOCK_DATA of `pair`: its clockid, wall_ns and clock_ns (window_ns is not kept).
Bytes encode_clock_data(const sys::ClockPair& pair);

// The features a recording writes, by feature bit (ordered: file mode lays
// the sections out in bit order).
using FeatureMap = std::map<int, Bytes>;

// Every host feature `host` has a value for (an empty string or a zero count
// leaves its feature out), plus EVENT_DESC. Tracing data, sample time and
// clock features are the writer's.
FeatureMap host_features(const HostInfo& host, std::span<const EventDesc> events,
                         uint32_t attr_size);

// What a pipe stream starts with: the pipe header, an ATTR record per
// event (attr_size bytes of attr, then its ids), a FEATURE record per
// feature that fits in a record, the FEATURE record that ends them
// (HEADER_LAST_FEATURE), TRACING_DATA with its data, and the build-ids as
// BUILD_ID records. Sample time is left out: a pipe never goes back to it.
Bytes encode_pipe_header(std::span<const EventDesc> events, uint32_t attr_size,
                         const FeatureMap& features);

// Decoding, for the reader and the tests. Each fails on a short or
// malformed section.
Result<std::string> decode_string_feature(std::span<const uint8_t> section);
Result<std::pair<uint32_t, uint32_t>> decode_nr_cpus(std::span<const uint8_t> section);
Result<uint64_t> decode_u64_feature(std::span<const uint8_t> section, const char* what);
Result<std::vector<std::string>> decode_cmdline(std::span<const uint8_t> section);
Result<std::vector<EventDesc>> decode_event_desc(std::span<const uint8_t> section);
Result<std::pair<uint64_t, uint64_t>> decode_sample_time(std::span<const uint8_t> section);
// CLOCK_DATA (perf 5.10+); window_ns is 0: the file does not say it.
Result<sys::ClockPair> decode_clock_data(std::span<const uint8_t> section);

}  // namespace pp::report

// perf.data of tracepoint records made up from a seed, for tests that need
// a whole trace without a kernel: report's byte-for-byte goldens, the
// decoder's comparison with libtraceevent, the benchmarks of the decoder.
// The same options give the same bytes on every run and every host.
//
// What it holds, laid out as `perf record -a` lays a trace out:
// - one attr per tracepoint of `tracepoints` (sample_type IDENTIFIER, IP,
//   TID, TIME, CPU, PERIOD, RAW; sample_id_all), one sample id per CPU;
// - samples of those events on `cpus` CPUs, each CPU's in time order, the
//   CPUs' runs interleaved in chunks as rings are drained (so the file is not
//   in time order, and some times are equal across CPUs), with a
//   FINISHED_ROUND after each pass;
// - every field filled from its format: integers of every size (small
//   values, all ones, the sign bit), pointers, char[N] strings (empty,
//   full without a NUL, quotes, backslashes, control bytes, UTF-8 and bytes
//   that are not UTF-8), __data_loc strings and arrays;
// - COMM records (a thread renamed half way, as exec does) and FORK records
//   for most threads; some threads have none (shown as ":TID"), and the idle
//   task (tid 0) appears.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "report/bytes.h"
#include "report/trace_decoder.h"
#include "report/tracing_data.h"
#include "sys/clock.h"

namespace pp::report::testing {

struct SyntheticTraceOptions {
  uint64_t seed = 1;
  size_t samples = 500;
  uint32_t cpus = 4;
  std::string tracefs_root;             // a tracefs tree: tests/fixtures/tracefs-*
  std::vector<Tracepoint> tracepoints;  // the events, by system and name (id read from tracefs)
  std::optional<sys::ClockPair> clock;  // set: the events use_clockid, with this CLOCK_DATA
};

// The whole file, in memory.
Result<Bytes> synthetic_trace(const SyntheticTraceOptions& options);

// One record of `event` made up from `seed` as the trace's are (every field
// from its format; __data_loc data after the fixed part, NUL-terminated),
// common_pid `pid`.
Bytes synthetic_payload(uint64_t seed, const TraceEvent& event, int32_t pid);

// Every tracepoint of tests/fixtures/tracefs-6.18 (system, name; ids 0).
std::vector<Tracepoint> fixture_6_18_tracepoints();

}  // namespace pp::report::testing

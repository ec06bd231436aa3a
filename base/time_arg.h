// The one grammar of a TIME given to --since and --until, wherever records
// are chosen by time (report of a perf.data file, of live buffers, of
// watch's history):
//
//   2026-12-03T14:05:00Z, 2026-12-03T15:05:00.5+01:00   an ISO 8601 time (parse_wall_time)
//   2026-12-03                                          a date: that day's 00:00:00 UTC
//   90s, 30m, 24h, 7d, 2w, 500ms                        a duration before now (parse_duration_ms)
//   18970.883561, 5                                     perf's seconds.fraction on the
//                                                       records' own clock, as report's
//                                                       lines show it; only where records
//                                                       have one (a trace)
//
// A bare number is seconds on the records' clock, never a duration: "90" is
// 90 s after that clock's zero (the boot, for the default clock), "90s" is
// 90 s before now. Pure: "now" comes from the caller; turning a wall-clock
// time into the records' clock is the caller's (sys::ClockPair::to_clock).
#pragma once

#include <cstdint>
#include <string_view>

#include "base/result.h"

namespace pp {

// Which clock a TIME is on.
enum class TimeBase {
  kWall,        // ns since the epoch (UTC): an ISO time, a date, a duration before now
  kTraceClock,  // ns on the records' clock: perf's seconds.fraction
};

struct TimeArg {
  TimeBase base = TimeBase::kWall;
  uint64_t ns = 0;
};

// Whether perf's seconds.fraction is a TIME where it is read.
enum class TraceSeconds {
  kRefused,   // the records carry wall-clock times only (watch's history)
  kAccepted,  // the records carry their clock's times (perf.data, live buffers)
};

// Reads a TIME; a duration counts back from `now_wall_ns` (one further back
// than the epoch, or too long for 64 bits, is the epoch: from the start).
// A usage error names the text and the forms that `seconds` allows.
Result<TimeArg> parse_time_arg(std::string_view text, uint64_t now_wall_ns, TraceSeconds seconds);

}  // namespace pp

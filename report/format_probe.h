// Every format of one tracing-data section parsed by libtraceevent once in
// a throwaway child (sys/isolated.h) before the decoder's own handle parses
// any of them, so that the decoder's libtraceevent parses only what parsed
// cleanly: no format can crash or hang the reader, nor take one of the
// parser's error paths there (libtraceevent 1.7 leaks a token on many).
//
// report/format_bounds.h stays the first line: it refuses, with a reason
// the user can read, the crafted formats whose shape is known. This catches
// the long tail (libtraceevent folding "a % b" to a division by 0 where no
// token says so, a loop, a stack overflow past the nesting bound) that
// would take a second copy of libtraceevent's parser to refuse.
//
// One child parses the formats in order, on its copy of the caller's
// handle (the same plugins, long size and byte order as the real parse
// will have), and reports one outcome per parse through the pipe:
//
//   'y'                 parsed, no error
//   'n' <code>          libtraceevent returned an error (code: the
//                       tep_errno's distance from __TEP_ERRNO__START, one
//                       byte, 0 when out of range)
//
// When the child dies (a signal, its CPU time out, the wall-clock limit),
// the parse it had not reported is the one it died on: marked kDied, and a
// new child takes up from the next parse. One fork per file when nothing
// dies.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sys/isolated.h"

struct tep_handle;

namespace pp::report {

// One format as the decoder would have libtraceevent parse it: whole, and
// else with its print format emptied (its fields still decode, raw).
struct FormatToProbe {
  std::string_view system;       // the system tep_parse_format() is given
  std::string_view whole;        // "" when not to be parsed whole (refused before parsing)
  std::string_view fields_only;  // "" when there is none to parse
};

enum class ProbeOutcome {
  kNotTried,  // not asked for, or the probe stopped before it
  kParsed,    // libtraceevent parsed it with no error
  kFailed,    // libtraceevent returned an error (and may have leaked)
  kDied,      // the child died, or ran out of time, parsing it
};

struct FormatProbeResult {
  ProbeOutcome whole = ProbeOutcome::kNotTried;
  ProbeOutcome fields_only = ProbeOutcome::kNotTried;
  int error = 0;      // the tep_errno of a kFailed (fields_only's when tried, else whole's)
  std::string death;  // on a kDied, describe_death() of how the child ended
};

struct FormatProbe {
  std::vector<FormatProbeResult> results;  // one per format, in order
  // Set when the probe gave up before the end (too many children died or
  // ran out of time): why, to be said once; the formats after the last it
  // tried are kNotTried.
  std::string stopped;
};

// Limits of one file's probe. Each child has kProbeCpuSeconds of CPU time
// (a real file's 2,300 formats take a small fraction of it, see
// format_probe.cpp) and kProbeWallLimit of wall time; the probe stops after
// kMaxProbeDeaths children died or kMaxProbeSlowChildren ran out of time.
inline constexpr unsigned kProbeCpuSeconds = 2;
inline constexpr std::chrono::milliseconds kProbeWallLimit{10'000};
inline constexpr int kMaxProbeDeaths = 32;
inline constexpr int kMaxProbeSlowChildren = 2;

// Parses, in a child forked from the caller, on its copy of `tep`, each
// format in order: `whole` when it is not empty, then `fields_only` when it
// is not empty and `whole` was not parsed. Errors: only when no child could
// be forked at all (sys::run_isolated()); the caller then decides.
Result<FormatProbe> probe_formats(tep_handle* tep, std::span<const FormatToProbe> formats);

// The text of a kDied, with the parse it refers to: "libtraceevent crashed
// (SIGFPE) parsing it", "libtraceevent did not finish parsing it within 2 s
// of CPU time".
std::string describe_death(const sys::IsolatedEnd& end, const sys::IsolatedLimits& limits);

}  // namespace pp::report

// Wall-clock time as text: the one form every printer shows (report's
// lines, watch's records, notices, journal fields, top's header) and the
// forms a user may type back. Pure: ns since the epoch (UTC) in and out, no
// time zone of the host.
//
//   format_wall_time(1764770701000000001)         -> "2025-12-03T14:05:01.000000001Z"
//   parse_wall_time("2025-12-03T15:05:01+01:00")  -> 1764770701000000000
//   parse_wall_date("2025-12-03")                 -> 1764720000000000000 (00:00:00 UTC)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace pp {

// "2026-12-03T14:05:00.123456789Z": UTC, always nine digits of fraction.
std::string format_wall_time(uint64_t wall_ns);
// The same 30 characters appended to `out` (a record's JSON text writes
// them in place: no string of their own). None is one JSON escapes.
void append_wall_time(std::string& out, uint64_t wall_ns);

// An ISO 8601 time, "YYYY-MM-DDTHH:MM:SS", then an optional fraction
// (".5", ".123456789"; digits past the ninth are dropped), then "Z", an
// offset "+HH:MM" or "-HH:MM", or nothing (UTC), to ns since the epoch. A
// usage error names the text and the form, or says the day does not exist
// (2026-02-30) or the time lies outside 1970 to 2554 (what ns since the epoch
// can hold in 64 bits).
Result<uint64_t> parse_wall_time(std::string_view text);

// A date alone, "YYYY-MM-DD": that day's 00:00:00 UTC, with the errors of
// parse_wall_time().
Result<uint64_t> parse_wall_date(std::string_view text);

}  // namespace pp

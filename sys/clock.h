// The clocks a perf event can stamp its records with (attr.use_clockid and
// attr.clockid), by the names perf's -k/--clockid takes, and the paired
// readings perf.data's HEADER_CLOCK_DATA needs to turn those stamps into
// wall-clock time (`perf script -F tod`).
//
//   parse_clockid("monotonic")        -> CLOCK_MONOTONIC (1)
//   parse_clockid("CLOCK_BOOTTIME")   -> 7   (a "CLOCK_" prefix, any case)
//   parse_clockid("raw")              -> 4   (perf's short names: mono, raw,
//                                            real, boot)
//   parse_clockid("11")               -> CLOCK_TAI (a number the kernel takes)
//
// The kernel takes these five for perf events. It takes realtime, boottime
// and tai only for events that never sample in NMI context (software
// events); tracepoints and hardware events refuse them with EINVAL, since
// only monotonic and monotonic_raw can be read safely there.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace pp::sys {

// The clocks, as perf names them, in perf's order.
struct ClockInfo {
  int id;
  std::string_view name;
  bool nmi_safe;  // every event may use it (monotonic, monotonic_raw)
};
inline constexpr ClockInfo kClocks[] = {
    {1, "monotonic", true}, {4, "monotonic_raw", true}, {0, "realtime", false},
    {7, "boottime", false}, {11, "tai", false},
};

// The clock of persistent events created without -k: CLOCK_MONOTONIC, the
// one clock every kind of event takes, and one that NTP slews at the rate of
// the wall clock (see perf-persistent-create(1)).
inline constexpr int kDefaultClockId = 1;

// A -k value: perf's names and short names, with or without "CLOCK_", in
// any case, or the number of one of the clocks above. EINVAL (a usage error)
// names the clocks there are.
Result<int> parse_clockid(std::string_view text);

// "monotonic", or the number for a clock without a name here.
std::string clock_name(int clockid);

// Whether every kind of event can use `clockid` (it is NMI-safe).
bool clock_is_nmi_safe(int clockid);

// A reading of a clock paired with one of CLOCK_REALTIME at the same
// instant: how a record's time on that clock becomes wall-clock time. The
// one type for it: what read_clock_pair() reads, what perf.data's
// HEADER_CLOCK_DATA holds (report/ encodes and decodes it), what report,
// record, top and watch convert times with.
struct ClockPair {
  int clockid = 0;
  uint64_t wall_ns = 0;    // CLOCK_REALTIME, ns since the epoch
  uint64_t clock_ns = 0;   // `clockid` at the same instant
  uint64_t window_ns = 0;  // how far apart the two realtime reads were (0: not known)

  // A time on `clockid` as wall-clock time.
  uint64_t to_wall(uint64_t time) const { return wall_ns + (time - clock_ns); }
  // A wall-clock time on `clockid`; one before that clock's zero is 0.
  uint64_t to_clock(uint64_t wall) const {
    if (wall < wall_ns - std::min(wall_ns, clock_ns))
      return 0;
    return wall - wall_ns + clock_ns;
  }
};

// `clockid` and CLOCK_REALTIME read together: CLOCK_REALTIME is read before
// and after the clock, a few times, and the pair with the narrowest window
// is kept, with the wall time at its middle.
Result<ClockPair> read_clock_pair(int clockid);

// clock_getres(clockid) in ns: HEADER_CLOCKID.
Result<uint64_t> clock_resolution_ns(int clockid);

// CLOCK_MONOTONIC now, in ns and in ms: the clock every interval, timeout
// and rate in the program is measured with (never steps with the wall clock).
int64_t monotonic_ns();
inline int64_t monotonic_ms() {
  return monotonic_ns() / 1'000'000;
}

// CLOCK_REALTIME now, ns since the epoch: when something happened, for
// people and files (never for intervals: it steps).
uint64_t realtime_ns();

}  // namespace pp::sys

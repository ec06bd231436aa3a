// The previous boot's trace buffer, as the broker keeps it: what the broker
// writes (broker/previous_boot.h) and what record --previous-boot, watch and
// check read.
//
// A boot-mapped ftrace instance (trace_instance=NAME^traceoff@ADDR:SIZE on
// the kernel command line, Linux 6.12+) holds the previous boot's records
// until one of its settings changes. The broker copies it at start, once
// per boot, into the kept directory (default kDefaultKeptDir, 0700):
//
//   previous-boot/
//     1796285031-6f0c4d0e-5b1a-4c8e-9a3e-2f1f0a6f7d11/   KEPT_AT-BOOT_ID (unix s, this boot's id)
//       kept.json                                      {"instance": "boot_mapped", ...} (below)
//       instances/NAME/                                the instance as tracefs showed it:
//         last_boot_info, trace_clock, set_event (empty),
//         events/header_page, events/header_event,
//         events/SYS/EVENT/{id,format}                 every event its records name, and
//         ftrace/print per_cpu/cpuN/trace_pipe_raw                  the raw pages read from the
//         kernel's file
//
// so that the kept directory is a tracefs root sys::FtraceInstance opens as
// it opens the live one. kept.json:
//
//   {"version": 1, "instance": "boot_mapped", "boot_id": "<the boot that kept it>",
//    "kept_at": 1796285031, "kernel": "6.12.118+deb12-amd64", "cpus": 2, "bytes": 90112}
//
// While the instance is armed, the broker writes a clock marker into it
// (its trace_marker) at arming and every kMarkerIntervalS seconds:
//
//   perf-persistent clock-marker clock=local realtime_ns=1796285030123456789 boot_id=6f0c...
//
// A reader maps a record's trace-clock time to wall-clock time from the last
// marker at or before it: realtime_ns + (time - the marker's time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp::persistent {

inline constexpr const char* kDefaultKeptDir = "/var/lib/perf-persistent/previous-boot";
inline constexpr const char* kKeptFile = "kept.json";
inline constexpr int kMarkerIntervalS = 10;
inline constexpr const char* kMarkerTag = "perf-persistent clock-marker";
// What to add to the kernel command line for a boot-mapped instance, as
// messages and --help say it: a fixed address 16 MiB below the top of RAM
// and more survives a reset (firmware overwrites the top; reserve_mem= lands
// there), and ^traceoff keeps tracing in the next boot off its buffer.
inline constexpr const char* kBootMappedCmdline =
    "memmap=12M$0x10000000 trace_instance=boot_mapped^traceoff@0x10000000:12M";

// One kept copy.
struct KeptBoot {
  std::string path;      // the copy's directory: a tracefs root
  std::string instance;  // instances/NAME under it
  std::string boot_id;   // the boot that kept it (the next one after the recorded boot)
  int64_t kept_at = 0;   // unix seconds
  std::string kernel;    // uname -r of the boot that kept it
  uint32_t cpus = 0;
  uint64_t bytes = 0;  // of pages
};

// The kept copies under `dir`, oldest first; none (not an error) when `dir`
// does not exist. A directory without a readable kept.json (a copy cut short)
// is left out.
Result<std::vector<KeptBoot>> list_kept_boots(const std::string& dir);

// The copy boot `boot_id` kept of `instance` among `copies`; null when there
// is none (or `boot_id` is empty: an unknown boot kept nothing of this one).
// The broker keeps one per boot; check reports it.
const KeptBoot* kept_by_boot(const std::vector<KeptBoot>& copies, std::string_view boot_id,
                             std::string_view instance);

// kept.json of `boot`.
std::string kept_boot_json(const KeptBoot& boot);
// A kept.json; EINVAL naming `path` when it is not one. Pure.
Result<KeptBoot> parse_kept_boot(std::string_view text, const std::string& path);

// The directory name of a copy kept at `kept_at` by boot `boot_id`.
std::string kept_dir_name(int64_t kept_at, std::string_view boot_id);

struct ClockMarker {
  std::string clock;  // the instance's trace_clock when written
  uint64_t realtime_ns = 0;
  std::string boot_id;
};

// Trace-clock times to wall-clock times, from the markers of one buffer.
class MarkerClock {
 public:
  // A marker the buffer holds at trace-clock `time`, in any order.
  void add(uint64_t time, ClockMarker marker);
  // From the last marker at or before `time`: its realtime_ns + (time - its
  // time); nothing before the first marker.
  std::optional<uint64_t> wall_ns(uint64_t time) const;
  size_t size() const { return markers_.size(); }
  // The newest marker and its time; null when there is none.
  const ClockMarker* last() const { return markers_.empty() ? nullptr : &markers_.back().second; }
  uint64_t last_time() const { return markers_.empty() ? 0 : markers_.back().first; }

 private:
  std::vector<std::pair<uint64_t, ClockMarker>> markers_;  // by time
};

// The text written to trace_marker (no newline).
std::string clock_marker_text(const ClockMarker& marker);
// The marker in `text` (a trace_marker record's buffer: the text, maybe a
// newline and NULs after it); nothing when it holds none. Pure.
std::optional<ClockMarker> parse_clock_marker(std::string_view text);

}  // namespace pp::persistent

// The black box: the broker's side of a boot-mapped ftrace instance
// (trace_instance=NAME^traceoff@0x10000000:12M on the kernel command line,
// Linux 6.12+; Documentation/perf-persistent-daemon.txt, THE PREVIOUS
// BOOT'S BUFFER).
//
// At start, before anything changes a setting of the instance:
//  1. keep: when its last_boot_info says it holds the previous boot's
//     buffer and no copy was kept in this boot yet, its raw per-CPU pages,
//     header files, the formats of the events its records name (and
//     ftrace/print's) and last_boot_info are copied into the kept directory
//     (persistent/previous_boot.h: KEPT_AT-BOOT_ID/, 0700), written under a
//     dot name and renamed whole; the oldest copies beyond `keep` go. Once per
//     boot: a restarted broker finds its boot's copy and does not read the
//     (by then re-armed) buffer over it.
//  2. arm: enables mce:mce_record, every ras:* event the kernel has and the
//     config file's extra events, then tracing_on 1. Not when step 1
//     failed: enabling an event clears the buffer, and the previous boot's
//     records would be gone with no copy (the log says why and what to do).
//  3. mark: writes a clock marker (persistent/previous_boot.h) at arming and
//     every kMarkerIntervalS seconds, so the next boot maps the trace clock
//     to wall-clock time.
//
// The broker's config file may hold one section for it (a section name with
// a space is never an event's):
//
//   [previous boot]
//   events = sched:sched_process_exit, irq_vectors:local_timer_entry   # more events to arm
//   keep = 8                                                           # copies kept (1-64)
//
//   PP_ASSIGN_OR_RETURN(auto box, BlackBox::start(config));  // null: no boot-mapped instance
//   ... box->ms_until_marker(now_ms) as a poll timeout; box->tick(now_ms) after each wakeup
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "persistent/previous_boot.h"
#include "sys/ftrace_instance.h"
#include "sys/tree.h"

namespace pp::broker {

inline constexpr const char* kPreviousBootSection = "previous boot";
inline constexpr size_t kDefaultKeptCopies = 8;
inline constexpr size_t kMaxKeptCopies = 64;

// The [previous boot] section.
struct PreviousBootSettings {
  std::vector<std::string> events;  // "SYSTEM:EVENT", beside the RAS defaults
  size_t keep = kDefaultKeptCopies;
};

// The section of a broker config file (its defaults when absent); an error
// of kind kConfig naming `path` and the line. Pure.
Result<PreviousBootSettings> parse_previous_boot_settings(std::string_view text,
                                                          std::string_view path);

struct BlackBoxConfig {
  std::string tracefs_root;  // "" = sys::default_tracefs_root()
  std::string proc_root = sys::kDefaultProcRoot;
  std::string kept_dir = persistent::kDefaultKeptDir;
  PreviousBootSettings settings;
  // The kernel command line; proc_root's cmdline when absent.
  std::optional<std::string> kernel_cmdline;
  std::function<uint64_t()> realtime_ns;        // CLOCK_REALTIME when empty
  std::function<int64_t()> unix_seconds;        // the system clock when empty
  std::function<void(const std::string&)> log;  // one line per step; none when empty
  size_t max_bytes_per_cpu = size_t(256) << 20;
};

// What start() did, for the log and the tests.
struct BlackBoxReport {
  std::string instance;
  bool held_previous = false;  // last_boot_info said the previous boot's
  bool already_kept = false;   // a copy of this boot was there
  std::string kept;            // the copy's directory, when this start kept one
  std::string keep_error;      // why keeping failed ("" when it did not)
  uint64_t kept_bytes = 0;
  uint32_t kept_cpus = 0;
  bool armed = false;
  std::vector<std::string> enabled;  // "mce:mce_record", ...
  std::vector<std::string> missing;  // asked for, absent from this kernel
  std::vector<std::string> pruned;   // older copies removed
};

class BlackBox {
 public:
  // Null when the command line names no boot-mapped instance. An error only
  // when the command line cannot be read; every other failure (no such
  // instance in tracefs, a copy that could not be written, an event that
  // would not enable) is logged and in report().
  static Result<std::unique_ptr<BlackBox>> start(BlackBoxConfig config);

  const BlackBoxReport& report() const { return report_; }
  // One line: "kept the previous boot's buffer of ftrace instance 'bb' (2 CPUs,
  // 88 KiB) in DIR; armed: mce:mce_record, ras:mc_event".
  std::string summary() const;

  // Where later lines go (the daemon's log, once it is open).
  void set_log(std::function<void(const std::string&)> log) { config_.log = std::move(log); }

  // Milliseconds until the next marker is due (-1: none, not armed).
  int ms_until_marker(int64_t now_ms) const;
  // Writes the marker when it is due. A failed write is logged once until
  // one succeeds again.
  void tick(int64_t now_ms);
  // Writes a marker now (at arming; the tests).
  Status write_marker();

 private:
  explicit BlackBox(BlackBoxConfig config) : config_(std::move(config)) {}
  void log(const std::string& line) const;
  Status keep(const sys::FtraceInstance& instance);
  void arm(const sys::FtraceInstance& instance);

  BlackBoxConfig config_;
  BlackBoxReport report_;
  std::optional<sys::FtraceInstance> instance_;
  std::string boot_id_;
  std::string clock_;
  int64_t next_marker_ms_ = -1;
  bool marker_failing_ = false;
};

}  // namespace pp::broker

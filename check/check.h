// `perf persistent check`: every reason this host could miss machine checks
// or samples, each a Finding with what to do, reported as monitoring plugins
// report (Nagios, Icinga): OK, WARNING, CRITICAL or UNKNOWN, the worst one
// deciding the exit status (0, 1, 2, 3).
//
//   CheckInputs in;                      // the real roots by default
//   in.backend = backend.get();          // the broker's (or kernel's) answers
//   CheckReport report = run_checks(in);
//   print_check_text(std::cout, report, /*verbose=*/false);
//   return report.exit_status();
//
// Everything it reads comes through the roots and the Backend in CheckInputs,
// so each cause can be laid out in a fake tree; nothing here calls the kernel.
// Each finding's id is stable (scripts and monitoring rules key on it);
// Documentation/perf-persistent-check.txt lists them with their severities.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "check/findings.h"
#include "check/sample_size.h"
#include "persistent/backend.h"
#include "persistent/previous_boot.h"

namespace pp::check {

// What watch's files say about it (cmd/check reads them with
// watch/liveness.h; check/ knows neither SQLite nor watch's config).
// check/watch_rules.cpp judges them: watch-not-alive, metrics-stale.
struct WatchFacts {
  std::string config;  // watch's config file read; "" when there is none
  std::string db;      // the history it names; "" when it keeps none
  bool db_exists = false;
  std::string db_error;  // the history cannot be read: why
  bool heartbeat_table = false;
  bool heartbeat = false;  // the row below was read
  int64_t pid = 0;
  uint64_t beat_ns = 0, started_ns = 0, stopped_ns = 0, interval_s = 0;
  std::optional<uint64_t> machine_checks;  // in the history (the perfdata's errors=)
  std::string prometheus;                  // the metrics file; "" when none is written
  uint64_t prometheus_interval_ms = 0;
  std::optional<uint64_t> prometheus_mtime_ns;
  std::string prometheus_error;
  std::optional<bool> watch_up;
};

// A heartbeat or a metrics file older than this many of its intervals is
// stale (one missed write may be a slow disk; three are a dead writer).
inline constexpr uint64_t kStaleIntervals = 3;
// ... and never sooner than this, in seconds: a short metrics interval
// must not make a busy host's scheduling delay look like a dead watch.
inline constexpr uint64_t kMinStaleSeconds = 60;

struct CheckInputs {
  std::string sysfs_root = sys::kDefaultSysfsRoot;
  std::string proc_root = sys::kDefaultProcRoot;
  std::string tracefs_root = sys::kDefaultTracefsRoot;
  std::string debugfs_root = "/sys/kernel/debug";
  std::string etc_root = "/etc";  // where systemd keeps enabled units (systemd/system/*.wants/)
  std::string run_root = "/run";  // systemd runs the host when <run>/systemd/system exists
  std::string run_dir;            // "" means default_run_dir()
  // The previous boots' buffers the broker kept (persistent/previous_boot.h).
  std::string kept_dir = persistent::kDefaultKeptDir;
  // The machine (uname -m); "" means <proc>/sys/kernel/arch.
  std::string machine;
  // What holds the events; asked list(verbose = true). May be null: then no
  // event is known, and the broker's answers are UNKNOWN.
  persistent::Backend* backend = nullptr;
  int64_t now = 0;  // unix seconds, for the rates of events-losing and watch's ages
  WatchFacts watch;
};

// The roots under `root` (a mounted image, or a test's fake tree):
// <root>/sys, <root>/proc, <root>/sys/kernel/tracing, <root>/sys/kernel/debug,
// <root>/etc, <root>/run; the run directory stays as given.
CheckInputs check_inputs_under(const std::string& root);

// The environment variable that makes `check` read its roots under a
// directory (check_inputs_under()); for checking an image, and for tests.
inline constexpr const char* kCheckRootEnv = "PERF_PERSISTENT_CHECK_ROOT";

// The real roots (tracefs where sys::default_tracefs_root() finds it), or
// those under $PERF_PERSISTENT_CHECK_ROOT when it is set and not empty.
CheckInputs check_inputs_from_env();

// A buffer that holds less history than this at the rate it sees is too
// small (events-losing).
inline constexpr int64_t kMinHistorySeconds = 3600;
// A restart that lost an event's samples is a WARNING for less than this long.
inline constexpr int64_t kBuffersLostWindowSeconds = int64_t{24} * 3600;
// The share of a limit past which fd-limit and mlock-limit warn, in percent.
inline constexpr uint64_t kLimitWarnPercent = 80;

CheckReport run_checks(const CheckInputs& inputs);

}  // namespace pp::check

// What `perf persistent check` asks about watch, read without changing
// anything: the config file the service runs with, the heartbeat row its
// history holds (watch/history.h, heartbeat), the machine checks that
// history counts, and the metrics file's age and its watch_up line.
//
//   PP_ASSIGN_OR_RETURN(WatchLiveness w,
//                       read_watch_liveness("/etc/perf-persistent-watch.conf", false));
//   if (w.heartbeat && now_ns - w.heartbeat->beat_ns > 3 * w.heartbeat->interval_s * 1e9) ...
//
// cmd/check hands these facts to check/ (which knows nothing of SQLite or
// of watch's config); check/watch_rules.cpp judges them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace pp::watch {

// The history's heartbeat row, as the watcher wrote it last.
struct HeartbeatRow {
  int64_t pid = 0;
  std::string boot_id;
  uint64_t started_ns = 0;  // when that watcher opened the file
  uint64_t beat_ns = 0;     // its last beat
  uint64_t interval_s = 0;  // how often it beats
  uint64_t stopped_ns = 0;  // when it stopped cleanly; 0 while it runs (or died)
};

struct WatchLiveness {
  std::string config;                     // the config file read; "" when there was none
  std::vector<std::string> check_ignore;  // its [check] ignore
  std::string db;                         // the history it names (or the default); "" none is kept
  bool db_exists = false;
  std::string db_error;                   // the history exists but cannot be read: why
  bool heartbeat_table = false;           // a beating watcher opened it at least once
  std::optional<HeartbeatRow> heartbeat;  // nullopt: no row
  // Machine checks the history holds, those retention deleted included
  // (seen_keys); nullopt when it cannot be counted.
  std::optional<uint64_t> machine_checks;
  std::string prometheus;  // the metrics file; "" none is written
  uint64_t prometheus_interval_ms = 0;
  std::optional<uint64_t> prometheus_mtime_ns;  // nullopt: it cannot be read
  std::string prometheus_error;                 // why not
  std::optional<bool> watch_up;                 // its perf_persistent_watch_up line
};

// Reads the config file at `config` (when `required` is false, a missing
// file means watch's defaults: its default history, no metrics file), then
// what it names. Errors: the config file cannot be read (when required, or
// when it exists) or does not parse (kind kConfig, naming the file and line).
// What the history or the metrics file lack is a fact, not an error.
Result<WatchLiveness> read_watch_liveness(const std::string& config, bool required);

}  // namespace pp::watch

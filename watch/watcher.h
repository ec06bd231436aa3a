// `perf persistent watch`: the long-running reader that keeps what
// persistent events record. It attaches read-only to the persistent events
// it is given (by default persistent/mce_record/), exactly as record does
// (record/'s engine: the events are never paused or changed, other readers
// see no difference), decodes every record (report/'s libtraceevent decoder
// and machine-check decoder), and hands each to its sinks:
//
//   harvest (kmsg, pstore) --+
//                            +--> WatchRecord --> history (SQLite)   watch/history.h
//   buffers --drain--decode--+                --> triggers            watch/trigger.h
//                                             --> Prometheus file     watch/prometheus.h
//                                             --> journal, --ndjson   watch/journal.h, ndjson.h
//
// It never runs inside the broker: it is one more reader, with the
// broker's trust boundary left as small as it was.
//
// Nothing is fed twice: a machine check's identity is its registers
// (watch/harvest.h mce_key), so the same error seen in the kernel log and
// in the buffer is one record; and with a history, a restart resumes each
// buffer after the newest record it stored. Every record a buffer lost
// before it was read is counted and fed as a LostNotice.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "base/result.h"
#include "persistent/backend.h"
#include "pmu/model.h"
#include "watch/harvest.h"
#include "watch/history.h"
#include "watch/offline.h"
#include "watch/trigger.h"

namespace pp::watch {

inline constexpr const char* kDefaultHistory = "/var/lib/perf-persistent/history.db";
inline constexpr const char* kDefaultEvent = "persistent/mce_record/";

// Journal entries: none, machine checks and losses, or every record.
enum class JournalMode { kOff, kMachineChecks, kEvery };

struct WatchOptions {
  std::vector<std::string> events;  // -e; empty: kDefaultEvent, waited for when absent
  // The events came from the command line (-e): a mistake in them stops
  // watch at start. The config file's and the default are waited for, as is
  // any event the broker lists as unavailable (optional, and this host
  // cannot make it).
  bool events_named = false;
  std::string cpus;                  // -C
  std::string db = kDefaultHistory;  // "" keeps no history (--no-db)
  HistoryOptions history;
  std::string prometheus;  // the .prom file; "" writes none
  uint64_t prometheus_interval_ms = 15000;
  bool ndjson = false;  // every record on `out`, one JSON object per line
  JournalMode journal = JournalMode::kOff;
  std::vector<TriggerRule> triggers;
  size_t max_children = 4;
  bool harvest = true;
  HarvestOptions harvest_options;
  // Page offlining (watch/offline.h); mode account by default.
  OfflineOptions offline;
  bool once = false;         // harvest, read what the buffers hold, store it, exit
  uint64_t duration_ms = 0;  // stop after this long (0: until SIGINT or SIGTERM)
  // The config file's [check] ignore: the findings `perf persistent
  // check` reports acknowledged on this host (watch itself reads nothing
  // of it).
  std::vector<std::string> check_ignore;
  pmu::Roots roots;
  persistent::BackendOptions backend;
  // What SIGHUP calls for the new options (the config file read again, the
  // command line over it); null: SIGHUP changes nothing.
  std::function<Result<WatchOptions>()> reload;
};

// Runs until SIGINT or SIGTERM (or --once, --duration); SIGHUP reloads
// (options.reload). Errors
// before watching starts (a bad option, event, rule; a history or metrics
// file that cannot be opened) are returned; so is one that stops it (the
// history cannot be written, --ndjson's reader went away). Progress and
// outcomes go to `log`, one line each.
Status run_watch(const WatchOptions& options, std::ostream& out, std::ostream& log);

}  // namespace pp::watch

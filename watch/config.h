// watch's options: the command line's and its config file's
// (default /etc/perf-persistent-watch.conf, read by the service), made into
// one WatchOptions. The command line wins over the file, option by option;
// triggers add up.
//
//   # /etc/perf-persistent-watch.conf
//   [watch]
//   event = persistent/mce_record/   # repeatable; default persistent/mce_record/
//   db = /var/lib/perf-persistent/history.db   # "none" keeps no history
//   retention-days = 180
//   retention-size = 256M
//   prometheus = /var/lib/prometheus/node-exporter/perf-persistent.prom
//   prometheus-interval = 15
//   journal = yes                    # no, yes (machine checks and losses), all
//   harvest = yes
//   max-children = 4
//   offline-pages = soft             # off, account (the default), soft, hard
//   offline-policy = window          # window, mcelog, rasdaemon, kernel-cec
//   page-threshold = 2 in 24h        # default: the policy's
//   row-threshold = 4 in 24h         # default none (no row isolation)
//   offline-max = 32 per 24h         # or none
//   offline-dry-run = no
//
//   [trigger uncorrected]            # one section per rule, named
//   match = severity >= ucna
//   threshold = 1 in 1s              # optional: N in DURATION
//   key = cpu,bank                   # optional: the threshold's buckets
//   exec = /usr/local/sbin/page-oncall
//   timeout = 30                     # seconds
//   rate-limit = 10 per 1h
//   on = records                     # or lost
//
//   [check]                          # perf persistent check's, read by it alone
//   ignore = other-consumer, broker-not-under-systemd   # acknowledged findings
//
// The file is INI as base/ini.h reads it: '#' starts a comment (a whole
// line, or after a space). Errors are of kind kConfig and name the file, the
// line and what is wrong.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "watch/watcher.h"

namespace pp::watch {

// What the command line gave; an empty string or nullopt: not given.
struct WatchArgs {
  std::string config;  // --config FILE
  std::vector<std::string> events;
  std::string cpus;
  std::string db;  // --db FILE
  bool no_db = false;
  std::string retention_days, retention_size;
  std::string prometheus, prometheus_interval;
  bool ndjson = false;
  std::string journal;  // --journal=MODE ("" with journal_given: yes)
  bool journal_given = false;
  // One trigger from the command line.
  std::string exec, match, threshold, key, timeout, rate_limit;
  bool on_lost = false;
  std::string max_children;
  // Page offlining (watch/offline.h).
  std::string offline_pages, offline_policy, page_threshold, row_threshold, offline_max;
  bool offline_dry_run = false;
  bool no_harvest = false;
  std::string kmsg, pstore;  // --kmsg PATH, --pstore DIR ("": the defaults)
  bool no_kmsg = false, no_pstore = false;
  // --previous-boot-dir DIR (the broker's kept trace buffers; "": the
  // default), --no-previous-boot.
  std::string previous_boot_dir;
  bool no_previous_boot = false;
  bool once = false;
  std::string duration;
  std::string run_dir;
};

// The config file's text into `options` (pure; `path` names it in errors).
Status parse_watch_config(std::string_view text, std::string_view path, WatchOptions& options);

// The file (when args.config names one), then the command line.
// `backend` comes from the caller (the run directory's handling is cmd/'s).
Result<WatchOptions> watch_options(const WatchArgs& args,
                                   const persistent::BackendOptions& backend);

// "256M", "1G", "4096" (bytes; K, M, G, T are powers of 1024).
Result<uint64_t> parse_size(std::string_view text, std::string_view what);
// Seconds, with a fraction or not ("15", "0.5"), into milliseconds.
Result<uint64_t> parse_seconds_ms(std::string_view text, std::string_view what);

}  // namespace pp::watch

#include <iostream>

#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"
#include "watch/config.h"
#include "watch/watcher.h"

namespace pp::cmd {

int cmd_watch(int argc, const char** argv) {
  watch::WatchArgs args;
  OptionParser opts({"perf persistent watch [-e persistent/NAME/ ...] [<options>]",
                     "perf persistent watch --config /etc/perf-persistent-watch.conf"});
  opts.values('e', "event", "event", &args.events,
              "keep persistent/NAME/'s records (repeatable; default persistent/mce_record/)")
      .value('C', "cpu", "cpus", &args.cpus, "only these CPUs' buffers (e.g. 0-3,8)")
      .value(0, "config", "file", &args.config,
             "read the options and triggers from FILE first (the command line wins)")
      .value(0, "db", "file", &args.db,
             "the history (SQLite; default /var/lib/perf-persistent/history.db)")
      .flag(0, "no-db", &args.no_db, "keep no history")
      .value(0, "retention-days", "days", &args.retention_days,
             "forget records older than this (default 180; 0 keeps them)")
      .value(0, "retention-size", "size", &args.retention_size,
             "keep the history under this size (default 256M; 0: no limit)")
      .value(0, "prometheus", "file", &args.prometheus,
             "write metrics for node_exporter's textfile collector into FILE (.prom)")
      .value(0, "prometheus-interval", "secs", &args.prometheus_interval,
             "rewrite the metrics file every this many seconds (default 15)")
      .flag(0, "ndjson", &args.ndjson, "print every record as one JSON object per line")
      .optional_value("journal", "mode", &args.journal, &args.journal_given,
                      "send machine checks and losses to the journal (=all: every record; "
                      "=no: none)")
      .value(0, "exec", "cmd", &args.exec, "a trigger: run CMD (sh -c) when records match")
      .value(0, "match", "expr", &args.match,
             "the trigger's records (e.g. 'severity >= ucna', 'bank == 7')")
      .value(0, "threshold", "n in time", &args.threshold,
             "run only when N match within the time, per key (e.g. '10 in 24h')")
      .value(0, "key", "fields", &args.key,
             "the threshold counts per these fields (e.g. cpu,bank; page; addr/30)")
      .value(0, "timeout", "secs", &args.timeout, "kill the command after this (default 30)")
      .value(0, "rate-limit", "n per time", &args.rate_limit,
             "run the command at most N times in the time (e.g. '10 per 1h')")
      .flag(0, "on-lost", &args.on_lost, "the trigger is on samples lost, not on records")
      .value(0, "max-children", "n", &args.max_children,
             "commands running at once, at most (default 4)")
      .value(0, "offline-pages", "mode", &args.offline_pages,
             "take pages with repeated corrected errors out of use: soft, hard, account "
             "(record only; the default) or off")
      .value(0, "offline-policy", "policy", &args.offline_policy,
             "when a page goes: window (default), mcelog, rasdaemon or kernel-cec")
      .value(0, "page-threshold", "n in time", &args.page_threshold,
             "corrected errors of one 4 KiB page that offline it (default: the policy's, "
             "'2 in 24h')")
      .value(0, "row-threshold", "n in time", &args.row_threshold,
             "errors of one DRAM row that offline every page seen in it (default none)")
      .value(0, "offline-max", "n per time", &args.offline_max,
             "offline at most N pages in the time (default '32 per 24h'; none: no cap)")
      .flag(0, "offline-dry-run", &args.offline_dry_run,
            "decide and record which pages would go, but offline none")
      .flag(0, "no-harvest", &args.no_harvest,
            "do not read machine checks from the kernel log and pstore at start")
      .value(0, "kmsg", "path", &args.kmsg, "the kernel log to harvest (default /dev/kmsg)")
      .flag(0, "no-kmsg", &args.no_kmsg, "do not harvest this boot's kernel log")
      .value(0, "pstore", "dir", &args.pstore, "the pstore to harvest (default /sys/fs/pstore)")
      .flag(0, "no-pstore", &args.no_pstore, "do not harvest a previous boot's pstore")
      .value(0, "previous-boot-dir", "dir", &args.previous_boot_dir,
             "the previous boots' trace buffers the broker kept, to harvest (default "
             "/var/lib/perf-persistent/previous-boot)")
      .flag(0, "no-previous-boot", &args.no_previous_boot,
            "do not harvest the previous boots' trace buffers")
      .flag(0, "once", &args.once, "harvest, keep what the buffers hold, and exit")
      .value(0, "duration", "secs", &args.duration, "stop after this many seconds")
      .value(0, "run-dir", "dir", &args.run_dir, kRunDirHelp);
  auto parsed = opts.parse(argc, argv);
  if (!parsed.ok())
    return report_usage_error("watch", parsed.error(), opts, false);
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  auto options = watch::watch_options(args, backend_options(args.run_dir, false));
  if (!options.ok()) {
    if (options.error().kind() == ErrorKind::kUsage)
      return report_usage_error("watch", options.error(), opts, false);
    return report_error("watch", options.error(), false);
  }
  std::ios::sync_with_stdio(false);
  Status status = watch::run_watch(*options, std::cout, std::cerr);
  if (!status.ok())
    return report_error("watch", status.error(), false);
  return kExitOk;
}

}  // namespace pp::cmd

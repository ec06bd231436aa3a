#include "check/check.h"

#include <ctime>
#include <iostream>

#include "base/json.h"
#include "base/options.h"
#include "base/strings.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"
#include "watch/liveness.h"

namespace pp::cmd {
namespace {

// watch/'s reading, in check/'s terms (check/ does not depend on watch/).
check::WatchFacts check_watch_facts(const watch::WatchLiveness& w) {
  check::WatchFacts f;
  f.config = w.config;
  f.db = w.db;
  f.db_exists = w.db_exists;
  f.db_error = w.db_error;
  f.heartbeat_table = w.heartbeat_table;
  if (w.heartbeat) {
    f.heartbeat = true;
    f.pid = w.heartbeat->pid;
    f.beat_ns = w.heartbeat->beat_ns;
    f.started_ns = w.heartbeat->started_ns;
    f.stopped_ns = w.heartbeat->stopped_ns;
    f.interval_s = w.heartbeat->interval_s;
  }
  f.machine_checks = w.machine_checks;
  f.prometheus = w.prometheus;
  f.prometheus_interval_ms = w.prometheus_interval_ms;
  f.prometheus_mtime_ns = w.prometheus_mtime_ns;
  f.prometheus_error = w.prometheus_error;
  f.watch_up = w.watch_up;
  return f;
}

}  // namespace

// A monitoring plugin: its statuses are the plugin codes 0-3
// (persistent/check.h), a bad option included (3, UNKNOWN).
int cmd_check(int argc, const char** argv) {
  bool json = false;
  int verbose = 0;
  std::string run_dir, ignore, config;
  OptionParser opts({"perf persistent check [<options>]"});
  opts.flag('j', "json", &json, "print JSON (schema in perf-persistent-check(1))")
      .counter('v', "verbose", &verbose, "list the checks that passed as well")
      .value(0, "ignore", "ids", &ignore,
             "acknowledge these findings (comma list of ids): reported OK, marked acknowledged")
      .value(0, "config", "file", &config,
             "watch's config file: its history, metrics file and [check] ignore (default "
             "/etc/perf-persistent-watch.conf)")
      .value(0, "run-dir", "dir", &run_dir, kRunDirHelp);
  auto parsed = opts.parse(argc, argv);
  if (!parsed.ok()) {
    opts.salvage(argc, argv, "json");
    if (json) {
      std::cout << dump_json(check::check_error_json(parsed.error())) << '\n';
    } else {
      check::print_check_error_text(std::cout, parsed.error());
      std::cerr << opts.usage();
    }
    return int(check::CheckStatus::kUnknown);
  }
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  auto fail = [&](const Error& e) {
    if (json)
      std::cout << dump_json(check::check_error_json(e)) << '\n';
    else
      check::print_check_error_text(std::cout, e);
    return int(check::CheckStatus::kUnknown);
  };
  check::CheckInputs inputs = check::check_inputs_from_env();
  const std::string watch_config =
      config.empty() ? inputs.etc_root + "/perf-persistent-watch.conf" : config;
  auto liveness = watch::read_watch_liveness(watch_config, !config.empty());
  if (!liveness.ok())
    return fail(liveness.error());
  inputs.watch = check_watch_facts(*liveness);
  inputs.run_dir = run_dir.empty() ? persistent::default_run_dir() : run_dir;
  persistent::BackendOptions options = backend_options(inputs.run_dir, false);
  options.sysfs_root = inputs.sysfs_root;
  options.proc_root = inputs.proc_root;
  options.tracefs_root = inputs.tracefs_root;
  auto backend = persistent::make_backend(options);
  inputs.backend = backend.get();
  inputs.now = int64_t(::time(nullptr));
  check::CheckReport report = check::run_checks(inputs);
  std::vector<std::string> ids;
  for (std::string_view id : split(ignore, ','))
    if (!trim(id).empty())
      ids.emplace_back(trim(id));
  if (Status acked =
          check::acknowledge(report, liveness->check_ignore, watch_config + " [check] ignore");
      !acked.ok())
    return fail(acked.error());
  if (Status acked = check::acknowledge(report, ids); !acked.ok())
    return fail(acked.error());
  if (json)
    std::cout << dump_json(check::check_json(report), 2) << '\n';
  else
    check::print_check_text(std::cout, report, verbose > 0);
  return report.exit_status();
}

}  // namespace pp::cmd

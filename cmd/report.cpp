#include <csignal>
#include <iostream>

#include "base/cpu_list.h"
#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"
#include "record/live_report.h"
#include "report/trace_report.h"
#include "watch/db_report.h"
#include "watch/watcher.h"

namespace pp::cmd {

int cmd_report(int argc, const char** argv) {
  report::ReportOptions options;
  std::string input;  // "": perf.data
  std::vector<std::string> events;
  std::string cpus, sort, severity, run_dir, db;
  bool db_given = false, faults = false, actions = false;
  int verbose = 0;
  std::string sort_help = "order by these keys (";
  for (std::string_view key : report::sort_keys())
    sort_help += std::string(key) + (key == report::sort_keys().back() ? ")" : ",");
  OptionParser opts({"perf persistent report [-i FILE] [<options>]",
                     "perf persistent report -e persistent/NAME/ [<options>]",
                     "perf persistent report --db [FILE] [<options>]"},
                    OptionParser::Positionals::kInterleaved);
  opts.value('i', "input", "file", &input, "input file name (default perf.data)")
      .values('e', "event", "event", &events,
              "report what persistent/NAME/'s buffers hold now, with no file")
      .optional_value("db", "file", &db, &db_given,
                      "report watch's history (default /var/lib/perf-persistent/history.db)")
      .flag('j', "json", &options.json, "print one JSON object per record")
      .flag(0, "summary", &options.summary,
            "print counts per event and CPU (and per MCE bank, severity, class) instead")
      .flag(0, "faults", &faults,
            "with --db: memory errors grouped into faults (cell, row, column, bank, ...) by DIMM")
      .flag(0, "actions", &actions,
            "with --db: watch's page offlining actions (page, reason, policy, result)")
      .value('s', "sort", "keys", &sort, sort_help)
      .flag(0, "mce", &options.mce_only, "only machine checks (mce:mce_record), decoded")
      .value('C', "cpu", "cpus", &cpus, "only records of these CPUs (e.g. 0-3,8)")
      .value(0, "severity", "list", &severity,
             "only machine checks of these severities (e.g. fatal,srar,uncorrected)")
      .value(0, "since", "time", &options.since,
             "only records at or after TIME (ISO 8601, a date, a duration before now such as "
             "24h, or seconds as shown)")
      .value(0, "until", "time", &options.until, "only records at or before TIME")
      .value(0, "run-dir", "dir", &run_dir, kRunDirHelp)
      .counter('v', "verbose", &verbose,
               "with --db: show the kernel-log line each harvested record was read from");
  auto parsed = opts.parse(argc, argv);
  if (!parsed.ok())
    opts.salvage(argc, argv, "json");
  bool json = options.json;
  if (!parsed.ok())
    return report_usage_error("report", parsed.error(), opts, json);
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  // `--db FILE` as well as `--db=FILE`: the history is the one positional.
  size_t db_args = db_given && db.empty() && !parsed->args.empty() ? 1 : 0;
  if (db_args)
    db = parsed->args.front();
  if (parsed->args.size() > db_args)
    return report_usage_error(
        "report",
        usage_error("unexpected argument '" + parsed->args[db_args] +
                    "': the input is -i FILE (perf.data) or --db [FILE] (watch's history)"),
        opts, json);
  if (!sort.empty()) {
    auto keys = report::parse_sort_keys(sort);
    if (!keys.ok())
      return report_usage_error("report", keys.error(), opts, json);
    options.sort = std::move(*keys);
  }
  if (!cpus.empty()) {
    auto list = parse_cpu_list(cpus);
    if (!list.ok())
      return report_usage_error("report", list.error(), opts, json);
    options.cpus = std::move(*list);
  }
  if (!severity.empty()) {
    auto list = report::parse_severity_list(severity);
    if (!list.ok())
      return report_usage_error("report", list.error(), opts, json);
    options.severities = std::move(*list);
  }

  std::ios::sync_with_stdio(false);
  // A reader that stops early (`| head`) ends report quietly with 0, not a
  // death by SIGPIPE that perf's dispatcher calls a failure to run us.
  ::signal(SIGPIPE, SIG_IGN);
  Result<report::ReportStats> stats = report::ReportStats{};
  if (faults && !db_given)
    return report_usage_error(
        "report", usage_error("--faults reads watch's history: give --db [FILE] with it"), opts,
        json);
  if (actions && !db_given)
    return report_usage_error(
        "report", usage_error("--actions reads watch's history: give --db [FILE] with it"), opts,
        json);
  if (actions && (faults || options.summary))
    return report_usage_error(
        "report",
        usage_error("--actions, --faults and --summary are three views: give one of them"), opts,
        json);
  if (faults && options.summary)
    return report_usage_error("report",
                              usage_error("--faults and --summary are two views: give one of them"),
                              opts, json);
  if (db_given) {
    if (!input.empty())
      return report_usage_error(
          "report", usage_error("-i and --db each name the input: give one of them"), opts, json);
    if (!sort.empty())
      return report_usage_error(
          "report", usage_error("--sort does not apply to --db: its records come in time order"),
          opts, json);
    watch::DbReportOptions d;
    d.json = options.json;
    d.summary = options.summary;
    d.faults = faults;
    d.actions = actions;
    d.mce_only = options.mce_only;
    d.verbose = verbose > 0;
    d.since = options.since;
    d.until = options.until;
    d.severities = options.severities;
    d.cpus = options.cpus;
    d.events = events;
    stats = watch::report_db(db.empty() ? watch::kDefaultHistory : db, d, std::cout, std::cerr);
  } else if (!events.empty()) {
    record::LiveReportRequest request;
    request.events = events;
    request.cpus = cpus;
    request.backend = backend_options(run_dir, false);
    request.roots.broker_run_dir = request.backend.run_dir;
    stats = record::live_report(request, options, std::cout, std::cerr);
  } else {
    stats = report::report_file(input.empty() ? "perf.data" : input, options, std::cout, std::cerr);
  }
  if (!stats.ok() && reader_went_away(stats.error()))
    return kExitOk;  // `report | head`: quiet, as perf script is
  if (!stats.ok())
    return report_error("report", stats.error(), json);
  if (std::optional<Error> error = report::final_error(*stats))
    return report_error("report", *error, json);
  return kExitOk;
}

}  // namespace pp::cmd

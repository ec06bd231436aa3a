#include "check/check.h"

#include <ctime>
#include <iostream>

#include "base/json.h"
#include "base/options.h"
#include "base/strings.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"

namespace pp::cmd {

// A monitoring plugin: its statuses are the plugin codes 0-3
// (persistent/check.h), a bad option included (3, UNKNOWN).
int cmd_check(int argc, const char** argv) {
  bool json = false;
  int verbose = 0;
  std::string run_dir, ignore;
  OptionParser opts({"perf persistent check [<options>]"});
  opts.flag('j', "json", &json, "print JSON (schema in perf-persistent-check(1))")
      .counter('v', "verbose", &verbose, "list the checks that passed as well")
      .value(0, "ignore", "ids", &ignore,
             "acknowledge these findings (comma list of ids): reported OK, marked acknowledged")
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
  check::CheckInputs inputs = check::check_inputs_from_env();
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
  if (Status acked = check::acknowledge(report, ids); !acked.ok()) {
    if (json)
      std::cout << dump_json(check::check_error_json(acked.error())) << '\n';
    else
      check::print_check_error_text(std::cout, acked.error());
    return int(check::CheckStatus::kUnknown);
  }
  if (json)
    std::cout << dump_json(check::check_json(report), 2) << '\n';
  else
    check::print_check_text(std::cout, report, verbose > 0);
  return report.exit_status();
}

}  // namespace pp::cmd

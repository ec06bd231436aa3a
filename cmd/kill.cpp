#include <iostream>

#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"
#include "persistent/list_printer.h"

namespace pp::cmd {

int cmd_kill(int argc, const char** argv) {
  bool json = false, all = false;
  std::string run_dir;
  OptionParser opts(
      {"perf persistent kill [<options>] ID|NAME...", "perf persistent kill [<options>] --all"},
      OptionParser::Positionals::kInterleaved);
  opts.flag('a', "all", &all, "kill every persistent event")
      .flag('j', "json", &json, "print JSON (schema in perf-persistent-kill(1))")
      .value(0, "run-dir", "dir", &run_dir, kRunDirHelp);
  auto parsed = opts.parse(argc, argv);
  if (parsed.ok() && !parsed->help && parsed->args.empty() && !all)
    parsed = usage_error("name the events to kill (ID or NAME), or give --all");
  if (parsed.ok() && all && !parsed->args.empty())
    parsed = usage_error("give either --all or events to kill, not both");
  if (!parsed.ok()) {
    opts.salvage(argc, argv, "json");
    return report_usage_error("kill", parsed.error(), opts, json);
  }
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  auto backend = persistent::make_backend(backend_options(run_dir, false));
  auto report = persistent::kill_events(*backend, parsed->args, all);
  if (!report.ok())
    return report_error("kill", report.error(), json);

  if (json) {
    persistent::print_kill_json(std::cout, *report);
    return report->exit_status();
  }
  for (const auto& event : report->killed) {
    std::cout << "killed ";
    persistent::print_event_line(std::cout, event);
  }
  for (const auto& [reference, error] : report->failed)
    std::cerr << "perf persistent kill: " << error.message() << "\n";
  return report->exit_status();
}

}  // namespace pp::cmd

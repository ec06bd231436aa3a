#include <ctime>
#include <iostream>

#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"
#include "persistent/list_printer.h"

namespace pp::cmd {

int cmd_list(int argc, const char** argv) {
  bool json = false;
  int verbose = 0;
  std::string run_dir;
  OptionParser opts({"perf persistent list [<options>]"});
  opts.flag('j', "json", &json, "print JSON (schema in perf-persistent-list(1))")
      .counter('v', "verbose", &verbose, "add per-CPU counts and the number of readers")
      .value(0, "run-dir", "dir", &run_dir, kRunDirHelp);
  auto parsed = opts.parse(argc, argv);
  if (!parsed.ok()) {
    opts.salvage(argc, argv, "json");
    return report_usage_error("list", parsed.error(), opts, json);
  }
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  auto backend = persistent::make_backend(backend_options(run_dir, false));
  std::string note;
  auto events = backend->list(verbose > 0, &note);
  if (!events.ok() && events.error().kind() == ErrorKind::kBrokerDown) {
    // What the registry holds, shown as down, and the broker's state.
    std::vector<persistent::EventInfo> down = backend->down_events();
    if (json) {
      persistent::print_list_json(std::cout, down, verbose > 0, &events.error());
    } else {
      persistent::print_list_text(std::cout, std::cerr, down, verbose > 0,
                                  int64_t(::time(nullptr)));
      std::cerr << "perf persistent list: " << events.error().message() << "\n";
    }
    return exit_status_of(ErrorKind::kBrokerDown);
  }
  if (!events.ok())
    return report_error("list", events.error(), json);
  if (json)
    persistent::print_list_json(std::cout, *events, verbose > 0);
  else
    persistent::print_list_text(std::cout, std::cerr, *events, verbose > 0,
                                int64_t(::time(nullptr)));
  if (!note.empty())
    std::cerr << "perf persistent list: " << note << "\n";
  return kExitOk;
}

}  // namespace pp::cmd

#include "broker/daemon.h"

#include <iostream>

#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"

namespace pp::cmd {

int cmd_daemon(int argc, const char** argv) {
  broker::DaemonOptions options;
  bool reload = false;
  OptionParser opts({"perf persistent daemon [<options>]"});
  opts.flag('f', "foreground", &options.foreground,
            "stay in the foreground, logging to stderr (for systemd)")
      .value(0, "run-dir", "dir", &options.run_dir, kRunDirHelp)
      .value(0, "config", "file", &options.config_file,
             "events to create at start and at reload (default /etc/perf-persistent.conf, if "
             "present, for the default run directory; none for another)")
      .flag(0, "reload", &reload,
            "ask the running broker to re-read its config file, and print what changed")
      .flag(0, "replace", &options.replace,
            "take the running broker's events over (their buffers too), then let it exit")
      .flag(0, "keeper", &options.keeper,
            "run the keeper, which holds the buffers mapped across broker restarts");
  auto parsed = opts.parse(argc, argv);
  if (parsed.ok() && int(reload) + int(options.replace) + int(options.keeper) > 1)
    parsed = usage_error("--reload, --replace and --keeper exclude each other");
  if (!parsed.ok())
    return report_usage_error("daemon", parsed.error(), opts, false);
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  if (reload) {
    auto reply = broker::request_reload(options.run_dir);
    if (!reply.ok())
      return report_error("daemon", reply.error(), false);
    broker::print_reload_report(std::cout, *reply);
    return kExitOk;
  }
  options.config_given = !options.config_file.empty();
  Status status = broker::run_daemon(options, std::cerr);
  if (!status.ok())
    return report_error("daemon", status.error(), false);
  return kExitOk;
}

}  // namespace pp::cmd

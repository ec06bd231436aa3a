#include "persistent/daemon.h"

#include <iostream>

#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"

namespace pp::cmd {

int cmd_daemon(int argc, const char** argv) {
  persistent::DaemonOptions options;
  OptionParser opts({"perf persistent daemon [<options>]"});
  opts.flag('f', "foreground", &options.foreground,
            "stay in the foreground, logging to stderr (for systemd)")
      .value(0, "run-dir", "dir", &options.run_dir, kRunDirHelp)
      .value(0, "config", "file", &options.config_file,
             "events to create at start (default /etc/perf-persistent.conf, if present)");
  auto parsed = opts.parse(argc, argv);
  if (!parsed.ok())
    return report_usage_error("daemon", parsed.error(), opts, false);
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  options.config_given = !options.config_file.empty();
  Status status = persistent::run_daemon(options, std::cerr);
  if (!status.ok())
    return report_error("daemon", status.error(), false);
  return kExitOk;
}

}  // namespace pp::cmd

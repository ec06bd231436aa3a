#include "broker/daemon.h"

#include <iostream>

#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"

namespace pp::cmd {

// `daemon --status` when no broker runs: LSB's "program is not running",
// as `systemctl status` exits.
constexpr int kExitDaemonNotRunning = 3;
// How long `daemon --stop` waits for the broker to go.
constexpr uint64_t kStopTimeoutMs = 10000;

int cmd_daemon(int argc, const char** argv) {
  broker::DaemonOptions options;
  bool reload = false, stop = false, status_query = false;
  OptionParser opts({"perf persistent daemon [<options>]"});
  opts.flag('f', "foreground", &options.foreground,
            "stay in the foreground, logging to stderr (for systemd)")
      .value(0, "run-dir", "dir", &options.run_dir, kRunDirHelp)
      .value(0, "config", "file", &options.config_file,
             "events to create at start and at reload (default /etc/perf-persistent.conf, if "
             "present, for the default run directory; none for another)")
      .flag(0, "reload", &reload,
            "ask the running broker to re-read its config file, and print what changed")
      .flag(0, "stop", &stop,
            "stop the running broker (SIGTERM) and wait until it has gone; 0 when none ran")
      .flag(0, "status", &status_query,
            "say whether a broker runs: exit 0 when it does, 3 when not")
      .flag(0, "replace", &options.replace,
            "take the running broker's events over (their buffers too), then let it exit")
      .flag(0, "keeper", &options.keeper,
            "run the keeper, which holds the buffers mapped across broker restarts");
  auto parsed = opts.parse(argc, argv);
  if (parsed.ok() &&
      int(reload) + int(options.replace) + int(options.keeper) + int(stop) + int(status_query) > 1)
    parsed = usage_error("--reload, --replace, --keeper, --stop and --status exclude each other");
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
  if (status_query) {
    auto pid = broker::broker_status(options.run_dir);
    if (!pid.ok())
      return report_error("daemon", pid.error(), false);
    std::string dir = options.run_dir.empty() ? persistent::default_run_dir() : options.run_dir;
    if (*pid == 0) {
      std::cout << "no broker runs for " << dir << '\n';
      return kExitDaemonNotRunning;
    }
    std::cout << "the broker runs for " << dir << ", pid " << *pid << '\n';
    return kExitOk;
  }
  if (stop) {
    auto pid = broker::stop_broker(options.run_dir, kStopTimeoutMs);
    if (!pid.ok())
      return report_error("daemon", pid.error(), false);
    std::string dir = options.run_dir.empty() ? persistent::default_run_dir() : options.run_dir;
    if (*pid == 0)
      std::cout << "no broker ran for " << dir << '\n';
    else
      std::cout << "stopped the broker of " << dir << " (pid " << *pid << ")\n";
    return kExitOk;
  }
  options.config_given = !options.config_file.empty();
  Status status = broker::run_daemon(options, std::cerr);
  if (!status.ok())
    return report_error("daemon", status.error(), false);
  return kExitOk;
}

}  // namespace pp::cmd

// `perf persistent daemon`: the broker as a process. Checks that it may hold
// perf events for others (root or CAP_PERFMON), detaches unless told to stay
// in the foreground (the starter returns once the broker listens, so `create`
// can start one and use it at once), raises its fd limit, starts the Broker
// and serves until SIGTERM or SIGINT; SIGHUP reloads the config file.
// Under systemd it notifies and uses the fd store (persistent/broker.h).
//
// The same verb runs the broker's helpers: `--replace` takes over from a
// running broker (persistent/handover.h), `--keeper` is the keeper
// (persistent/keeper.h), `--reload` asks the running broker to reload.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ostream>
#include <string>

#include "base/json.h"
#include "base/result.h"

namespace pp::broker {

struct DaemonOptions {
  std::string run_dir;        // "" means default_run_dir()
  std::string config_file;    // "" means default_config_file(run_dir), which may be missing
  bool config_given = false;  // --config was given: a missing file is an error
  bool foreground = false;
  bool replace = false;  // take the running broker's events over, then let it exit
  bool keeper = false;   // run the keeper instead of a broker
};

// The config file a broker of `run_dir` reads when --config is not given:
// kDefaultConfigFile for the system's run directory (/run/perf-persistent),
// "" (none) for any other. A private broker (a test's, a benchmark's, one a
// user starts with --run-dir to try something) never picks up the events
// the host keeps from boot.
std::string default_config_file(const std::string& run_dir);

// `options` with a relative --run-dir and --config made absolute against
// the current directory: run_daemon() does it before detaching (the
// detached broker runs in /), so `daemon --config ./x.conf` reads the
// file it names.
Result<DaemonOptions> absolute_paths(DaemonOptions options);

// Runs the broker (or the keeper) until a signal stops it. Messages (the
// start line, then one per change) go to `log`: stderr in the foreground,
// <run-dir>/broker.log (keeper.log for the keeper) when detached. Errors
// before it serves are returned (and, when detaching, make the starter exit
// with their status).
Status run_daemon(const DaemonOptions& options, std::ostream& log);

// `daemon --reload`: asks the broker of `run_dir` to reload its config file
// (the reload request): its report (Broker::ReloadReport::to_json()), or the
// error (kind config when the file is bad: nothing changed; broker-down).
Result<json> request_reload(const std::string& run_dir);

// `daemon --status`: the pid of the broker serving `run_dir` ("" the
// default), the holder of its broker.lock, or 0 when none runs.
Result<pid_t> broker_status(const std::string& run_dir);

// `daemon --stop`: SIGTERM to the broker serving `run_dir`, then waits up
// to `timeout_ms` for it to release its lock (its events stop with it, or
// stay in systemd's fd store). The pid stopped, or 0 when none ran (not an
// error, as `systemctl stop` of a stopped unit). Refused (2) when it may
// not be signalled (EPERM: another user's) or is still running then.
Result<pid_t> stop_broker(const std::string& run_dir, uint64_t timeout_ms);

// The report, for a person: "reloaded /etc/perf-persistent.conf: 1 created,
// 2 unchanged", then one line per failed event.
void print_reload_report(std::ostream& out, const json& reply);

}  // namespace pp::broker

// `perf persistent daemon`: the broker as a process. Checks that it may hold
// perf events for others (root or CAP_PERFMON), detaches unless told to stay
// in the foreground (the starter returns once the broker listens, so `create`
// can start one and use it at once), raises its fd limit, starts the Broker
// and serves until SIGTERM or SIGINT.
#pragma once

#include <ostream>
#include <string>

#include "base/result.h"

namespace pp::persistent {

struct DaemonOptions {
  std::string run_dir;        // "" means default_run_dir()
  std::string config_file;    // "" means kDefaultConfigFile, which may be missing
  bool config_given = false;  // --config was given: a missing file is an error
  bool foreground = false;
};

// Runs the broker until a signal stops it. Messages (the start line, then
// one per change) go to `log`: stderr in the foreground, <run-dir>/broker.log
// when detached. Errors before the broker listens are returned (and, when
// detaching, make the starter exit non-zero).
Status run_daemon(const DaemonOptions& options, std::ostream& log);

}  // namespace pp::persistent

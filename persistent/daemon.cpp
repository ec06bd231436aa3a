#include "persistent/daemon.h"

#include <signal.h>
#include <unistd.h>

#include "persistent/backend.h"
#include "persistent/broker.h"
#include "persistent/config_file.h"
#include "persistent/parser_resolver.h"
#include "sys/dir_watch.h"
#include "sys/log_file.h"
#include "sys/process.h"

namespace pp::persistent {

Status run_daemon(const DaemonOptions& options, std::ostream& log) {
  std::string run_dir = options.run_dir.empty() ? default_run_dir() : options.run_dir;
  auto self = sys::read_process_status(sys::Tree(sys::kDefaultProcRoot), ::getpid());
  if (!self.ok())
    return self.error();
  if (!self->may_use_persistent_events())
    return errorf(EACCES,
                  "the broker holds perf events for every user, so it must run as root or with "
                  "CAP_PERFMON (this is uid %u without it)",
                  unsigned(self->effective_uid));

  std::optional<sys::Detached> detached;
  if (!options.foreground) {
    PP_ASSIGN_OR_RETURN(sys::Detached d, sys::Detached::detach());
    detached.emplace(std::move(d));
  }
  // Blocked before anything else starts, so they only arrive through the fd.
  PP_ASSIGN_OR_RETURN(sys::SignalFd signals, sys::SignalFd::open({SIGTERM, SIGINT, SIGHUP}));
  ::signal(SIGPIPE, SIG_IGN);
  sys::raise_fd_limit();

  auto resolver = make_parser_resolver(sys::kDefaultSysfsRoot, "");
  BrokerConfig config;
  config.run_dir = run_dir;
  config.config_file = options.config_file.empty() ? kDefaultConfigFile : options.config_file;
  config.config_required = options.config_given;
  config.kernel = &sys::real_kernel();
  config.resolver = resolver.get();
  config.log = &log;
  if (detached) {
    // broker.log is bounded: full, it becomes broker.log.1 (persistent/limits.h).
    std::string log_path = RunDir(run_dir).log();
    PP_ASSIGN_OR_RETURN(config.log_limits.initial_bytes,
                        sys::rotate_log_if_over(log_path, config.log_limits.max_bytes));
    config.log_limits.rotate = [log_path] { return sys::rotate_log(log_path); };
  }
  PP_ASSIGN_OR_RETURN(auto broker, Broker::start(config));
  std::string started = "serving " + broker->run_dir().socket() + " (pid " +
                        std::to_string(::getpid()) + "); " + broker->start_summary();
  if (detached) {
    // From here on the starter is gone and stderr is the log file.
    PP_RETURN_IF_ERROR(detached->ready(broker->run_dir().log()));
  }
  log << "perf persistent daemon: " << started << std::endl;
  // The run directory going away (or its socket or lock) ends the broker: a
  // client can no longer find it, so the next create would start a second
  // broker beside it, and its events would be out of every command's reach.
  const RunDir& dir = broker->run_dir();
  PP_ASSIGN_OR_RETURN(sys::DirWatch watch,
                      sys::DirWatch::open(dir.root(), {"broker.sock", "broker.lock"}));
  PP_ASSIGN_OR_RETURN(sys::FdUnion wake, sys::FdUnion::open({signals.fd(), watch.fd()}));
  for (;;) {
    PP_RETURN_IF_ERROR(broker->serve(wake.fd()));
    PP_ASSIGN_OR_RETURN(std::string gone, watch.read());
    if (!gone.empty()) {
      log << "perf persistent daemon: " << gone << "; stopping, and closing its "
          << broker->event_count()
          << " event(s) with it, since no command can reach them any more; start a broker "
             "again ('perf persistent daemon --run-dir DIR') to use persistent events"
          << std::endl;
      return ok_status();
    }
    auto signal = signals.read();
    if (!signal.ok() && signal.error().code() == EAGAIN)
      continue;  // a change in the run directory that does not matter
    if (signal.ok() && *signal == SIGHUP) {
      log << "perf persistent daemon: SIGHUP ignored (the registry lives in state.json; "
             "restart the daemon to re-read the config file)"
          << std::endl;
      continue;
    }
    log << "perf persistent daemon: stopping on signal "
        << (signal.ok() ? std::to_string(*signal) : "?") << "; the registry stays in "
        << broker->run_dir().state() << std::endl;
    return ok_status();
  }
}

}  // namespace pp::persistent

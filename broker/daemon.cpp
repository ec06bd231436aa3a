#include "broker/daemon.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "broker/broker.h"
#include "broker/config_file.h"
#include "broker/handover.h"
#include "broker/keeper.h"
#include "broker/previous_boot.h"
#include "persistent/backend.h"
#include "persistent/broker_client.h"
#include "persistent/parser_resolver.h"
#include "sys/absolute_path.h"
#include "sys/clock.h"
#include "sys/dir_watch.h"
#include "sys/log_file.h"
#include "sys/process.h"
#include "sys/systemd.h"

namespace pp::broker {
namespace {

Status run_keeper(const std::string& run_dir, bool foreground, std::ostream& log) {
  std::optional<sys::Detached> detached;
  if (!foreground) {
    PP_ASSIGN_OR_RETURN(sys::Detached d, sys::Detached::detach());
    detached.emplace(std::move(d));
  }
  PP_ASSIGN_OR_RETURN(sys::SignalFd signals, sys::SignalFd::open({SIGTERM, SIGINT, SIGHUP}));
  ::signal(SIGPIPE, SIG_IGN);
  sys::raise_fd_limit();
  PP_ASSIGN_OR_RETURN(auto keeper, Keeper::start({.run_dir = run_dir, .log = &log}));
  if (detached)
    PP_RETURN_IF_ERROR(detached->ready(persistent::RunDir(run_dir).root() + "/keeper.log"));
  log << "perf persistent keeper: watching " << persistent::RunDir(run_dir).pmu() << "/events (pid "
      << ::getpid() << ")" << std::endl;
  for (;;) {
    PP_RETURN_IF_ERROR(keeper->run(signals.fd()));
    auto signal = signals.read();
    if (signal.ok() && *signal == SIGHUP) {
      (void)keeper->sync();
      continue;
    }
    log << "perf persistent keeper: stopping; releasing " << keeper->kept_buffers()
        << " buffer mapping(s) of " << keeper->kept_events() << " event(s)" << std::endl;
    return ok_status();
  }
}

}  // namespace

Result<json> request_reload(const std::string& run_dir) {
  persistent::RunDir dir(run_dir.empty() ? persistent::default_run_dir() : run_dir);
  PP_ASSIGN_OR_RETURN(persistent::BrokerConnection connection,
                      persistent::BrokerConnection::connect(dir, 120000));
  persistent::Request request;
  request.op = persistent::Op::kReload;
  return connection.call(request);
}

namespace {

// The pid in <run-dir>/broker.lock while a broker holds it, 0 when none does
// (no file, or nobody locks it).
Result<pid_t> lock_holder(const persistent::RunDir& dir) {
  auto holder = sys::LockFile::holder(dir.lock());
  if (!holder.ok() && holder.error().code() == ENOENT)
    return pid_t(0);
  return holder;
}

}  // namespace

Result<pid_t> broker_status(const std::string& run_dir) {
  return lock_holder(persistent::RunDir(run_dir.empty() ? persistent::default_run_dir() : run_dir));
}

Result<pid_t> stop_broker(const std::string& run_dir, uint64_t timeout_ms) {
  persistent::RunDir dir(run_dir.empty() ? persistent::default_run_dir() : run_dir);
  PP_ASSIGN_OR_RETURN(pid_t pid, lock_holder(dir));
  if (pid == 0)
    return pid;
  PP_RETURN_IF_ERROR(sys::send_signal(pid, SIGTERM));
  for (uint64_t waited = 0;; waited += 50) {
    PP_ASSIGN_OR_RETURN(pid_t now, lock_holder(dir));
    if (now != pid)
      return pid;
    if (waited >= timeout_ms)
      return Error(ErrorKind::kRefused, ETIMEDOUT,
                   "the broker (pid " + std::to_string(pid) + ") of " + dir.root() +
                       " still runs " + std::to_string(timeout_ms / 1000) +
                       " s after SIGTERM; see " + dir.log() + ", or stop it with kill -KILL " +
                       std::to_string(pid));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void print_reload_report(std::ostream& out, const json& reply) {
  const json& r = reply.value("reload", json::object());
  std::string parts;
  auto part = [&](const char* key, const char* what) {
    size_t n = r.contains(key) ? r[key].size() : 0;
    if (n)
      parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  part("created", "created");
  part("killed", "killed");
  part("recreated", "re-created (changed)");
  part("retried", "created after failing before");
  part("failed", "failed");
  part("unavailable", "unavailable (optional)");
  part("left_alone", "left alone (made by create)");
  part("unchanged", "unchanged");
  out << "reloaded " << reply.value("config_file", std::string("the config file")) << ": "
      << (parts.empty() ? "no config events" : parts) << "\n";
  for (const char* key : {"created", "killed", "recreated", "retried"})
    if (r.contains(key))
      for (const json& name : r[key])
        out << "  " << key << " " << name.get<std::string>() << "\n";
  for (const char* key : {"failed", "unavailable"})
    if (r.contains(key))
      for (const json& f : r[key])
        out << "  " << key << " " << f.value("name", "") << ": " << f.value("error", "") << "\n";
}

std::string default_config_file(const std::string& run_dir) {
  return persistent::RunDir(run_dir).root() == persistent::RunDir(persistent::kDefaultRunDir).root()
             ? kDefaultConfigFile
             : "";
}

Result<DaemonOptions> absolute_paths(DaemonOptions options) {
  PP_ASSIGN_OR_RETURN(options.run_dir, sys::absolute_path(options.run_dir));
  PP_ASSIGN_OR_RETURN(options.config_file, sys::absolute_path(options.config_file));
  return options;
}

Status run_daemon(const DaemonOptions& given, std::ostream& log) {
  // Before detaching, which changes to /.
  PP_ASSIGN_OR_RETURN(const DaemonOptions options, absolute_paths(given));
  PP_ASSIGN_OR_RETURN(std::string run_dir,  // $PERF_PERSISTENT_RUN_DIR may be relative too
                      sys::absolute_path(options.run_dir.empty() ? persistent::default_run_dir()
                                                                 : options.run_dir));
  auto self = sys::read_process_status(sys::Tree(sys::kDefaultProcRoot), ::getpid());
  if (!self.ok())
    return self.error();
  if (!self->may_use_persistent_events())
    return errorf(EACCES,
                  "the broker holds perf events for every user, so it must run as root or with "
                  "CAP_PERFMON (this is uid %u without it)",
                  unsigned(self->effective_uid));
  if (options.keeper)
    return run_keeper(run_dir, options.foreground, log);

  std::optional<sys::Detached> detached;
  if (!options.foreground) {
    PP_ASSIGN_OR_RETURN(sys::Detached d, sys::Detached::detach());
    detached.emplace(std::move(d));
  }
  // Blocked before anything else starts, so they only arrive through the fd.
  PP_ASSIGN_OR_RETURN(sys::SignalFd signals, sys::SignalFd::open({SIGTERM, SIGINT, SIGHUP}));
  ::signal(SIGPIPE, SIG_IGN);
  sys::raise_fd_limit();

  auto resolver = persistent::make_parser_resolver(sys::kDefaultSysfsRoot, "");
  BrokerConfig config;
  config.run_dir = run_dir;
  config.config_file =
      options.config_file.empty() ? default_config_file(run_dir) : options.config_file;
  config.config_required = options.config_given;
  config.kernel = &sys::real_kernel();
  config.resolver = resolver.get();
  config.log = &log;
  config.systemd = &sys::real_systemd();
  if (detached) {
    // broker.log is bounded: full, it becomes broker.log.1 (persistent/limits.h).
    std::string log_path = persistent::RunDir(run_dir).log();
    PP_ASSIGN_OR_RETURN(config.log_limits.initial_bytes,
                        sys::rotate_log_if_over(log_path, config.log_limits.max_bytes));
    config.log_limits.rotate = [log_path] { return sys::rotate_log(log_path); };
  }
  // --replace: the running broker's events, every buffer mapped here
  // before it goes; then it releases the run directory to this one.
  std::optional<Handover> handover;
  if (options.replace) {
    auto received = Handover::receive(persistent::RunDir(run_dir), sys::real_kernel());
    if (received.ok()) {
      handover.emplace(std::move(*received));
      PP_ASSIGN_OR_RETURN(int old_pid, handover->finish());
      log << "perf persistent daemon: took " << handover->events
          << " buffer(s) over from the broker (pid " << old_pid
          << "), which exits once this one holds the run directory" << std::endl;
      config.handed_over = &handover->fds;
      // A broker from before handover-listener handed its socket with the
      // events' fds; a newer one hands it once this one holds the lock.
      bool has_listener =
          std::any_of(handover->fds.begin(), handover->fds.end(),
                      [](const sys::NamedFd& f) { return f.name == kListenerFdName; });
      if (!has_listener)
        config.take_listener = [&handover] { return handover->take_listener(); };
      config.lock_wait_ms = 10000;
    } else if (received.error().kind() == ErrorKind::kBrokerDown) {
      log << "perf persistent daemon: --replace: no broker runs for " << run_dir
          << "; starting a new one" << std::endl;
    } else {
      return received.error().with_context("taking over from the running broker");
    }
  }
  PP_ASSIGN_OR_RETURN(auto broker, Broker::start(config));
  if (handover)
    handover->mappings.clear();  // the broker maps the same buffers now
  std::string started = "serving " + broker->run_dir().socket() + " (pid " +
                        std::to_string(::getpid()) + "); " + broker->start_summary();
  // The black box (broker/previous_boot.h): the system's broker only, as
  // for the config file's events. Before the starter is released, so that
  // once `daemon` returns the previous boot's buffer is kept; its lines go
  // to the log after the start line. Later lines go straight to the log.
  std::unique_ptr<BlackBox> black_box;
  std::vector<std::string> box_lines;
  if (run_dir == persistent::kDefaultRunDir) {
    BlackBoxConfig box;
    if (!config.config_file.empty()) {
      if (auto text = read_config_file(config.config_file); text.ok()) {
        auto settings = parse_previous_boot_settings(*text, config.config_file);
        if (settings.ok())
          box.settings = std::move(*settings);
        else
          box_lines.push_back(settings.error().message() + "; the black box uses its defaults");
      }
    }
    box.log = [&box_lines](const std::string& line) { box_lines.push_back(line); };
    auto started_box = BlackBox::start(std::move(box));
    if (started_box.ok())
      black_box = std::move(*started_box);
    else
      box_lines.push_back("black box: " + started_box.error().message());
  }
  if (detached) {
    // From here on the starter is gone and stderr is the log file.
    PP_RETURN_IF_ERROR(detached->ready(broker->run_dir().log()));
  }
  log << "perf persistent daemon: " << started << std::endl;
  for (const std::string& line : box_lines)
    log << "perf persistent daemon: " << line << std::endl;
  if (black_box)
    black_box->set_log([&log](const std::string& line) {
      log << "perf persistent daemon: " << line << std::endl;
    });
  // The run directory going away (or its socket or lock) ends the broker: a
  // client can no longer find it, so the next create would start a second
  // broker beside it, and its events would be out of every command's reach.
  const persistent::RunDir& dir = broker->run_dir();
  PP_ASSIGN_OR_RETURN(sys::DirWatch watch,
                      sys::DirWatch::open(dir.root(), {"broker.sock", "broker.lock"}));
  PP_ASSIGN_OR_RETURN(sys::FdUnion wake, sys::FdUnion::open({signals.fd(), watch.fd()}));
  for (;;) {
    bool go_on = true;
    while (go_on) {
      int timeout = black_box ? black_box->ms_until_marker(sys::monotonic_ms()) : -1;
      PP_ASSIGN_OR_RETURN(go_on, broker->serve_once(wake.fd(), timeout));
      if (black_box)
        black_box->tick(sys::monotonic_ms());
    }
    if (broker->handed_over()) {
      log << "perf persistent daemon: handed every event over to the new broker; exiting"
          << std::endl;
      return ok_status();
    }
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
      (void)broker->reload();  // it logs what it did, or why nothing changed
      continue;
    }
    log << "perf persistent daemon: stopping on signal "
        << (signal.ok() ? std::to_string(*signal) : "?") << "; the registry stays in "
        << broker->run_dir().state() << std::endl;
    return ok_status();
  }
}

}  // namespace pp::broker

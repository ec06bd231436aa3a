// Running a shell command in the background, for watch's triggers: `/bin/sh
// -c COMMAND` in a process group of its own, its standard input a byte string
// the caller gives, polled for its exit without blocking, killed as a group.
//
//   SpawnRequest request;
//   request.command = "logger -t mce \"$PERF_PERSISTENT_SEVERITY\"";
//   request.env = {{"PERF_PERSISTENT_SEVERITY", "fatal"}};
//   request.stdin_data = "{\"severity\":\"fatal\"}\n";
//   PP_ASSIGN_OR_RETURN(std::unique_ptr<Process> p, spawn_shell(request));
//   ... every second:
//   PP_ASSIGN_OR_RETURN(std::optional<ExitStatus> done, p->poll());  // nullopt: running
//   ... too long: p->kill_group(SIGTERM); later p->kill_group(SIGKILL);
//
// What the command gets:
// - standard input: stdin_data from a memfd (an anonymous file in memory),
//   positioned at 0: the command reads it at its own pace, or never; the
//   caller writes it before the command starts and never blocks on it;
// - standard output and standard error: the caller's standard error (the
//   caller's standard output may carry data, --ndjson, that no command may
//   write into);
// - no other descriptor of the caller's (a watcher holds perf event fds);
// - the caller's environment, with `env` added (a name already there is
//   replaced);
// - its own process group (its pid is the group's id), an empty signal mask
//   and the default action for the signals a caller may have blocked or
//   ignored (SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT, SIGUSR1/2).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"

namespace pp::sys {

struct SpawnRequest {
  std::string command;                                   // run with /bin/sh -c
  std::vector<std::pair<std::string, std::string>> env;  // NAME, value
  std::string stdin_data;
};

// How a process ended.
struct ExitStatus {
  int code = 0;          // the exit status, when signal is 0
  int signal = 0;        // the signal that ended it, or 0
  bool unknown = false;  // reaped elsewhere (the caller ignores SIGCHLD)

  bool success() const { return !unknown && signal == 0 && code == 0; }
  // "exited with status 0", "killed by SIGTERM", "exited (status unknown)".
  std::string describe() const;
};

// "SIGTERM", or "signal 64" for one without a name.
std::string signal_name(int signal);

// A started process. The real one (spawn_shell) kills its group with
// SIGKILL and reaps it when destroyed before it was reaped; tests implement
// it to fake commands.
class Process {
 public:
  virtual ~Process() = default;
  virtual pid_t pid() const = 0;
  // Reaps the process if it has exited, without blocking: its status, or
  // nullopt while it runs. After a status, every call returns it again.
  virtual Result<std::optional<ExitStatus>> poll() = 0;
  // Sends `signal` to the process group (the shell and whatever it
  // started). Nothing once the process is reaped: its id may then be reused.
  virtual Status kill_group(int signal) = 0;
};

// Starts `/bin/sh -c request.command` as described at the top. Errors name
// the command: "cannot run '/bin/sh -c ...': ...".
Result<std::unique_ptr<Process>> spawn_shell(const SpawnRequest& request);

}  // namespace pp::sys

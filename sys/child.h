// A command this program starts and watches: the one a recording runs
// (`perf persistent record -- COMMAND ARGS`), started after the readers are
// attached, and watch's trigger commands (`/bin/sh -c EXEC`, in a process
// group of their own, polled without blocking, killed as a group). Watched
// through a pidfd that polls readable when it exits, and reaped exactly once.
//
//   PP_ASSIGN_OR_RETURN(Child child, Child::spawn({"sleep", "10"}));
//   pollfd fds[] = {{child.pidfd(), POLLIN, 0}, ...};
//   ... when fds[0] is readable: PP_ASSIGN_OR_RETURN(int status, child.wait());
//
//   SpawnOptions o{.stdout_to_stderr = true, .stdin_data = "{\"severity\":\"fatal\"}\n",
//                  .env = {{"PERF_PERSISTENT_SEVERITY", "fatal"}}, .own_process_group = true,
//                  .close_other_fds = true, .default_signals = true};
//   PP_ASSIGN_OR_RETURN(Child c, Child::spawn({"/bin/sh", "-c", "logger ..."}, o));
//   ... every second:
//   PP_ASSIGN_OR_RETURN(std::optional<ExitStatus> done, c.try_wait());  // nullopt: running
//   ... too long: c.kill_group(SIGTERM); later c.kill_group(SIGKILL);
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "sys/fd.h"

namespace pp::sys {

struct SpawnOptions {
  // Send the command's standard output to standard error: when the caller's
  // standard output carries data (perf's pipe mode, -o -), the command must
  // not write into it.
  bool stdout_to_stderr = false;
  // The command's standard input: these bytes from an anonymous file in
  // memory (a memfd), positioned at 0, written before the command starts:
  // the command reads them at its own pace, or never, and the caller never
  // blocks on it. nullopt: the caller's standard input.
  std::optional<std::string> stdin_data = std::nullopt;
  // Added to the caller's environment; a name already there is replaced.
  std::vector<std::pair<std::string, std::string>> env = {};
  // The command leads a process group of its own (its pid is the group's
  // id), so that kill_group() reaches whatever it starts.
  bool own_process_group = false;
  // Close every descriptor above 2 the caller did not mark close-on-exec
  // (a watcher holds perf event fds).
  bool close_other_fds = false;
  // Also give SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 their default action,
  // whatever the caller ignores.
  bool default_signals = false;
  // Open a pidfd (pidfd(), Linux 5.3+) for a caller that polls for the
  // exit among its other fds; spawn() fails without one. A caller that
  // asks try_wait() on its own schedule goes without, on any kernel.
  bool pidfd = true;
};

// How a process ended.
struct ExitStatus {
  int code = 0;          // the exit status, when signal is 0
  int signal = 0;        // the signal that ended it, or 0
  bool unknown = false;  // reaped elsewhere (the caller ignores SIGCHLD)

  bool success() const { return !unknown && signal == 0 && code == 0; }
  // "exited with status 0", "killed by SIGTERM", "exited (status unknown:
  // SIGCHLD is ignored)".
  std::string describe() const;
};

// "SIGTERM", or "signal 64" for one without a name.
std::string signal_name(int signal);

class Child {
 public:
  // Forks and execs argv (argv[0] looked up in PATH), with every signal
  // unblocked and default dispositions for SIGINT, SIGTERM, SIGPIPE and
  // SIGCHLD, whatever the caller had blocked (a SignalFd blocks them). When
  // the exec fails the child exits 127 and spawn() returns its errno:
  // "cannot run 'nosuchcmd': No such file or directory".
  static Result<Child> spawn(const std::vector<std::string>& argv,
                             const SpawnOptions& options = {});

  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // A child still running when its Child goes is sent SIGTERM and reaped.
  ~Child();

  pid_t pid() const { return pid_; }
  // Readable (POLLIN) once the child has exited; -1 when spawned without.
  int pidfd() const { return pidfd_.get(); }
  // Whether wait() has collected the child (a child that exited stays
  // unreaped, a zombie, until then).
  bool reaped() const { return pid_ <= 0 || reaped_; }
  // Whether the child has exited, reaped or not (it stays unreaped).
  bool exited() const;

  // Waits for the child: its exit status, or 128 + the signal that ended it.
  Result<int> wait();
  // Reaps the child if it has exited, without blocking: how it ended, or
  // nullopt while it runs. After a status (or a wait()), every call returns
  // it again.
  Result<std::optional<ExitStatus>> try_wait();
  // Sends `signal` to a child that has not been reaped.
  Status kill(int signal);
  // Sends `signal` to the child's process group (the child and whatever it
  // started; spawned with own_process_group). Nothing once the child is
  // reaped: its id may then be reused.
  Status kill_group(int signal);

 private:
  Child(pid_t pid, Fd pidfd) : pid_(pid), pidfd_(std::move(pidfd)) {}
  void stop();               // SIGTERM and reap, when still running
  void set_status(int raw);  // from waitpid

  pid_t pid_ = -1;
  Fd pidfd_;
  bool reaped_ = false;
  ExitStatus exit_;
};

}  // namespace pp::sys

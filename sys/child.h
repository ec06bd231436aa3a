// The command a recording runs (`perf persistent record -- COMMAND ARGS`):
// started after the readers are attached, watched through a pidfd that polls
// readable when it exits, and reaped exactly once.
//
//   PP_ASSIGN_OR_RETURN(Child child, Child::spawn({"sleep", "10"}));
//   pollfd fds[] = {{child.pidfd(), POLLIN, 0}, ...};
//   ... when fds[0] is readable: PP_ASSIGN_OR_RETURN(int status, child.wait());
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "sys/fd.h"

namespace pp::sys {

struct SpawnOptions {
  // Send the command's standard output to standard error: when the caller's
  // standard output carries data (perf's pipe mode, -o -), the command must
  // not write into it.
  bool stdout_to_stderr = false;
};

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
  // Readable (POLLIN) once the child has exited.
  int pidfd() const { return pidfd_.get(); }
  // Whether wait() has collected the child (a child that exited stays
  // unreaped, a zombie, until then).
  bool reaped() const { return pid_ <= 0 || reaped_; }
  // Whether the child has exited, reaped or not: its pidfd polls readable.
  bool exited() const;

  // Waits for the child: its exit status, or 128 + the signal that ended it.
  Result<int> wait();
  // Sends `signal` to a child that has not been reaped.
  Status kill(int signal);

 private:
  Child(pid_t pid, Fd pidfd) : pid_(pid), pidfd_(std::move(pidfd)) {}
  void stop();  // SIGTERM and reap, when still running

  pid_t pid_ = -1;
  Fd pidfd_;
  bool reaped_ = false;
  int status_ = 0;
};

}  // namespace pp::sys

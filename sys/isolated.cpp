#include "sys/isolated.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "sys/fd.h"

namespace pp::sys {
namespace {

// The signals a crash or a CPU limit raises: in the child each kills it,
// with no handler in between (a sanitizer's would print a report and exit
// 1; the caller's might not expect to run in a fork).
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS,  SIGFPE, SIGILL,
                                 SIGABRT, SIGTRAP, SIGSYS, SIGXCPU};

// Writes all of `bytes` to `fd`; the child leaves when it cannot (the
// caller has gone, or closed its end).
void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      ::_exit(125);
    bytes.remove_prefix(size_t(n));
  }
}

[[noreturn]] void run_child(pid_t parent, int report_fd, const IsolatedLimits& limits,
                            const std::function<void(const IsolatedReport&)>& work) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent)  // the caller died before the request
    ::_exit(125);
  ::prctl(PR_SET_DUMPABLE, 0);  // a crash here leaves no core file, and no coredump log
  sigset_t fatal;
  sigemptyset(&fatal);
  for (int sig : kFatalSignals) {
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    ::sigaction(sig, &action, nullptr);
    sigaddset(&fatal, sig);
  }
  ::sigprocmask(SIG_UNBLOCK, &fatal, nullptr);
  rlimit cpu{limits.cpu_seconds, limits.cpu_seconds + 1};
  ::setrlimit(RLIMIT_CPU, &cpu);
  const IsolatedReport report = [report_fd](std::string_view bytes) {
    write_all(report_fd, bytes);
  };
  work(report);
  ::_exit(0);
}

// How process `pid` ended, waiting for it.
ExitStatus reap(pid_t pid) {
  ExitStatus status;
  int raw = 0;
  pid_t got;
  do {
    got = ::waitpid(pid, &raw, 0);
  } while (got < 0 && errno == EINTR);
  if (got != pid) {
    status.unknown = true;  // ECHILD: the caller ignores SIGCHLD
  } else if (WIFSIGNALED(raw)) {
    status.signal = WTERMSIG(raw);
  } else {
    status.code = WEXITSTATUS(raw);
  }
  return status;
}

}  // namespace

std::string IsolatedEnd::describe(const IsolatedLimits& limits) const {
  if (timed_out)
    return "did not finish within " + std::to_string(limits.wall.count()) + " ms";
  if (overflowed)
    return "reported more than " + std::to_string(limits.max_output) + " bytes";
  if (out_of_cpu())
    return "ran out of its " + std::to_string(limits.cpu_seconds) + " s of CPU time";
  return status.describe();
}

Result<IsolatedRun> run_isolated(const IsolatedLimits& limits,
                                 const std::function<void(const IsolatedReport&)>& work,
                                 std::string_view what) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) < 0)
    return error_from_errno(errno, "cannot make a pipe for a child to " + std::string(what));
  Fd read_end(ends[0]), write_end(ends[1]);
  pid_t parent = ::getpid();
  auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0)
    return error_from_errno(errno, "cannot fork a child to " + std::string(what));
  if (pid == 0) {
    read_end.release();
    run_child(parent, write_end.get(), limits, work);
  }
  write_end.reset();

  IsolatedRun run;
  char buffer[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        limits.wall - (std::chrono::steady_clock::now() - start));
    if (left.count() <= 0) {
      run.end.timed_out = true;
      break;
    }
    pollfd p{read_end.get(), POLLIN, 0};
    int ready = ::poll(&p, 1, int(std::min<int64_t>(left.count(), 1 << 30)));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready < 0) {  // cannot happen with one valid fd; do not wait blind
      run.end.timed_out = true;
      break;
    }
    if (ready == 0)
      continue;  // the deadline is checked above
    ssize_t n = ::read(read_end.get(), buffer, sizeof(buffer));
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0)
      break;  // the child has ended (or closed its end: it leaves at once)
    if (run.output.size() + size_t(n) > limits.max_output) {
      run.end.overflowed = true;
      break;
    }
    run.output.append(buffer, size_t(n));
  }
  if (run.end.timed_out || run.end.overflowed)
    ::kill(pid, SIGKILL);
  run.end.status = reap(pid);
  return run;
}

}  // namespace pp::sys

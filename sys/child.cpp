#include "sys/child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

namespace pp::sys {

Result<Child> Child::spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty())
    return Error(EINVAL, "no command to run");
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  // The child writes its exec errno here; a successful exec closes it.
  int report[2];
  if (::pipe2(report, O_CLOEXEC) < 0)
    return error_from_errno(errno, "cannot create a pipe to start '" + argv[0] + "'");
  Fd report_read(report[0]), report_write(report[1]);

  pid_t pid = ::fork();
  if (pid < 0)
    return error_from_errno(errno, "cannot fork to run '" + argv[0] + "'");
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD})
      ::signal(sig, SIG_DFL);
    if (options.stdout_to_stderr)
      ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::execvp(args[0], args.data());
    int err = errno;
    ssize_t ignored = ::write(report[1], &err, sizeof(err));
    (void)ignored;
    ::_exit(127);
  }
  report_write.reset();
  int err = 0;
  ssize_t n;
  do {
    n = ::read(report_read.get(), &err, sizeof(err));
  } while (n < 0 && errno == EINTR);
  if (n == sizeof(err)) {
    ::waitpid(pid, nullptr, 0);
    return error_from_errno(err, "cannot run '" + argv[0] + "'");
  }
  long pidfd = ::syscall(SYS_pidfd_open, pid, 0);
  if (pidfd < 0) {
    int open_err = errno;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return error_from_errno(open_err, "cannot watch '" + argv[0] + "' (pidfd_open; Linux 5.3+)");
  }
  return Child(pid, Fd(int(pidfd)));
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      pidfd_(std::move(other.pidfd_)),
      reaped_(std::exchange(other.reaped_, false)),
      status_(other.status_) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    stop();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    reaped_ = std::exchange(other.reaped_, false);
    status_ = other.status_;
  }
  return *this;
}

Child::~Child() {
  stop();
}

void Child::stop() {
  if (!reaped()) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    reaped_ = true;
  }
}

bool Child::exited() const {
  if (reaped())
    return true;
  pollfd p = {pidfd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

Result<int> Child::wait() {
  if (pid_ <= 0)
    return Error(ECHILD, "no command was started");
  if (reaped_)
    return status_;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR)
      return error_from_errno(errno, "waiting for pid " + std::to_string(pid_));
  }
  reaped_ = true;
  status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return status_;
}

Status Child::kill(int signal) {
  if (reaped())
    return ok_status();
  if (::kill(pid_, signal) < 0 && errno != ESRCH)
    return error_from_errno(errno, "cannot signal pid " + std::to_string(pid_));
  return ok_status();
}

}  // namespace pp::sys

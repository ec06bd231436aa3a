#include "sys/child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string_view>

extern char** environ;

namespace pp::sys {
namespace {

// The caller's environment with `extra` added; a name in `extra` replaces
// the caller's variable of that name.
std::vector<std::string> environment_with(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [n, v] : extra)
      if (n == name)
        replaced = true;
    if (!replaced)
      env.emplace_back(entry);
  }
  for (const auto& [n, v] : extra) {
    env.push_back(n);
    env.back().append("=").append(v);
  }
  return env;
}

// An anonymous in-memory file holding `data`, read from its start.
Result<Fd> memory_file(const std::string& data, const std::string& label) {
  int fd = ::memfd_create("perf-persistent-stdin", MFD_CLOEXEC);
  if (fd < 0)
    return error_from_errno(errno,
                            "cannot make the standard input of " + label + " (memfd_create)");
  Fd file(fd);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(file.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return error_from_errno(n < 0 ? errno : EIO, "cannot write the standard input of " + label);
    done += size_t(n);
  }
  if (::lseek(file.get(), 0, SEEK_SET) < 0)
    return error_from_errno(errno, "cannot rewind the standard input of " + label);
  return file;
}

// Closes the descriptors from `first` to `last` (in a forked child: no
// allocation, no locks).
void close_fds(int first, int last) {
  if (first > last)
    return;
  if (::syscall(SYS_close_range, unsigned(first), unsigned(last), 0u) == 0)
    return;
  for (int fd = first; fd <= last; fd++)  // Linux before 5.9
    ::close(fd);
}

}  // namespace

std::string ExitStatus::describe() const {
  if (unknown)
    return "exited (status unknown: SIGCHLD is ignored)";
  if (signal)
    return "killed by " + signal_name(signal);
  return "exited with status " + std::to_string(code);
}

std::string signal_name(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  if (abbrev)
    return std::string("SIG") + abbrev;
  return "signal " + std::to_string(signal);
}

Result<Child> Child::spawn(const std::vector<std::string>& argv, const SpawnOptions& options) {
  if (argv.empty())
    return Error(EINVAL, "no command to run");
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::string label = "'" + argv[0] + "'";

  Fd input;
  if (options.stdin_data) {
    PP_ASSIGN_OR_RETURN(input, memory_file(*options.stdin_data, label));
  }
  std::vector<std::string> env;
  std::vector<char*> envp;
  if (!options.env.empty()) {
    env = environment_with(options.env);
    envp.reserve(env.size() + 1);
    for (std::string& e : env)
      envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  long max_fd = options.close_other_fds ? ::sysconf(_SC_OPEN_MAX) : 0;
  if (max_fd <= 0 || max_fd > 1 << 20)
    max_fd = 1 << 20;

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
    if (options.default_signals)
      for (int sig : {SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2})
        ::signal(sig, SIG_DFL);
    if (options.own_process_group)
      ::setpgid(0, 0);
    if (input.get() == STDIN_FILENO)
      ::fcntl(STDIN_FILENO, F_SETFD, 0);  // dup2 to itself keeps close-on-exec
    else if (input)
      ::dup2(input.get(), STDIN_FILENO);
    if (options.stdout_to_stderr)
      ::dup2(STDERR_FILENO, STDOUT_FILENO);
    if (options.close_other_fds) {
      // All but the pipe that reports a failed exec (close-on-exec).
      close_fds(3, report[1] - 1);
      close_fds(report[1] + 1, int(max_fd));
    }
    if (envp.empty())
      ::execvp(args[0], args.data());
    else
      ::execvpe(args[0], args.data(), envp.data());
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
    return error_from_errno(err, "cannot run " + label);
  }
  if (!options.pidfd)
    return Child(pid, Fd());
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
      exit_(other.exit_) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    stop();
    pid_ = std::exchange(other.pid_, -1);
    pidfd_ = std::move(other.pidfd_);
    reaped_ = std::exchange(other.reaped_, false);
    exit_ = other.exit_;
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
  if (pidfd_.valid()) {
    pollfd p = {pidfd_.get(), POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }
  siginfo_t info = {};
  return ::waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0;
}

Result<int> Child::wait() {
  if (pid_ <= 0)
    return Error(ECHILD, "no command was started");
  if (reaped_ && exit_.unknown)
    return Error(ECHILD, "pid " + std::to_string(pid_) + " " + exit_.describe());
  if (!reaped_) {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0) {
      if (errno != EINTR)
        return error_from_errno(errno, "waiting for pid " + std::to_string(pid_));
    }
    set_status(status);
  }
  return exit_.signal ? 128 + exit_.signal : exit_.code;
}

void Child::set_status(int raw) {
  reaped_ = true;
  exit_ = {};
  if (WIFSIGNALED(raw))
    exit_.signal = WTERMSIG(raw);
  else
    exit_.code = WEXITSTATUS(raw);
}

Result<std::optional<ExitStatus>> Child::try_wait() {
  if (pid_ <= 0)
    return Error(ECHILD, "no command was started");
  if (reaped_)
    return std::optional<ExitStatus>(exit_);
  int raw = 0;
  pid_t got;
  do {
    got = ::waitpid(pid_, &raw, WNOHANG);
  } while (got < 0 && errno == EINTR);
  if (got == 0)
    return std::optional<ExitStatus>();
  if (got < 0) {
    if (errno != ECHILD)
      return error_from_errno(errno, "waiting for pid " + std::to_string(pid_));
    reaped_ = true;  // SIGCHLD ignored: the kernel reaped it
    exit_ = {};
    exit_.unknown = true;
    return std::optional<ExitStatus>(exit_);
  }
  set_status(raw);
  return std::optional<ExitStatus>(exit_);
}

Status Child::kill(int signal) {
  if (reaped())
    return ok_status();
  if (::kill(pid_, signal) < 0 && errno != ESRCH)
    return error_from_errno(errno, "cannot signal pid " + std::to_string(pid_));
  return ok_status();
}

Status Child::kill_group(int signal) {
  if (reaped())
    return ok_status();
  if (::kill(-pid_, signal) < 0 && errno != ESRCH)
    return error_from_errno(errno, "cannot send " + signal_name(signal) +
                                       " to the process group of pid " + std::to_string(pid_));
  return ok_status();
}

}  // namespace pp::sys

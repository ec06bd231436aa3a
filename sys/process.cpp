#include "sys/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/strings.h"

extern char** environ;

namespace pp::sys {

Result<ProcessStatus> parse_process_status(std::string_view text) {
  ProcessStatus status;
  bool have_uid = false, have_caps = false;
  for (std::string_view line : split(text, '\n')) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      continue;
    std::string_view key = line.substr(0, colon);
    std::string_view value = trim(line.substr(colon + 1));
    if (key == "Uid") {
      std::vector<uint64_t> ids;
      for (std::string_view field : split(value, '\t')) {
        field = trim(field);
        if (field.empty())
          continue;
        auto id = parse_u64(field, "uid");
        if (!id.ok())
          return Error(EINVAL,
                       "bad Uid line in a process status file: '" + std::string(line) + "'");
        ids.push_back(*id);
      }
      if (ids.size() < 2)
        return Error(EINVAL, "bad Uid line in a process status file: '" + std::string(line) + "'");
      status.real_uid = uid_t(ids[0]);
      status.effective_uid = uid_t(ids[1]);
      status.saved_uid = uid_t(ids.size() > 2 ? ids[2] : ids[1]);
      have_uid = true;
    } else if (key == "CapEff") {
      auto caps = parse_u64("0x" + std::string(value), "capability mask");
      if (!caps.ok())
        return Error(EINVAL,
                     "bad CapEff line in a process status file: '" + std::string(line) + "'");
      status.cap_effective = *caps;
      have_caps = true;
    }
  }
  if (!have_uid || !have_caps)
    return Error(EINVAL, std::string("a process status file without a ") +
                             (have_uid ? "CapEff" : "Uid") + " line");
  return status;
}

Result<ProcessStatus> read_process_status(const Tree& proc, pid_t pid) {
  std::string relative = std::to_string(pid) + "/status";
  auto text = proc.read(relative);
  if (!text.ok()) {
    if (text.error().code() == ENOENT)
      return errorf(ESRCH, "process %d is gone (no %s)", int(pid), proc.path(relative).c_str());
    return text.error();
  }
  auto status = parse_process_status(*text);
  if (!status.ok())
    return status.error().with_context(proc.path(relative));
  return status;
}

namespace {

// A uid map's lines with their runs of blanks made one:
// "0 65534 1", lines joined by "; ".
std::string normalised_map(std::string_view text) {
  std::string out;
  for (std::string_view line : split(text, '\n')) {
    std::string fields;
    for (std::string_view field : split(line, ' ')) {
      field = trim(field);
      if (!field.empty())
        fields += (fields.empty() ? "" : " ") + std::string(field);
    }
    if (!fields.empty())
      out += (out.empty() ? "" : "; ") + fields;
  }
  return out;
}

}  // namespace

Result<std::string> user_namespace_difference(const Tree& proc, pid_t pid) {
  auto own_map = proc.read("self/uid_map", 64 << 10);
  if (!own_map.ok())
    return own_map.error().code() == ENOENT ? std::string() : Result<std::string>(own_map.error());
  std::string relative = std::to_string(pid) + "/uid_map";
  auto map = proc.read(relative, 64 << 10);
  if (!map.ok()) {
    if (map.error().code() == ENOENT)
      return errorf(ESRCH, "process %d is gone (no %s)", int(pid), proc.path(relative).c_str());
    return map.error();
  }
  std::string mine = normalised_map(*own_map), theirs = normalised_map(*map);
  if (theirs != mine)
    return "its uid map is '" + theirs + "', not '" + mine +
           "': it runs in another user namespace, whose capabilities open no perf event";
  // Only a process that may write the parent's whole map can make a child
  // namespace with the same one; the link tells, where ptrace rules let the
  // caller read it (EACCES for a process it could not trace: then the map
  // alone decides).
  auto own_ns = proc.read_link("self/ns/user");
  auto ns = proc.read_link(std::to_string(pid) + "/ns/user");
  if (own_ns.ok() && ns.ok() && *own_ns != *ns)
    return "its user namespace is " + *ns + ", not " + *own_ns +
           ", whose capabilities open no perf event";
  return std::string();
}

bool is_perf_comm(std::string_view comm) {
  return comm == "perf" || starts_with(comm, "perf_");
}

bool end_with_perf_parent(const Tree& proc) {
  const pid_t parent = ::getppid();
  if (parent <= 1)
    return false;
  //   /proc/<ppid>/comm: "perf\n"
  auto comm = proc.read(std::to_string(parent) + "/comm", 64);
  if (!comm.ok() || !is_perf_comm(trim(*comm)))
    return false;
  if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
    return false;
  // perf died between getppid() and the request: the kernel will not send
  // the signal for a death that came before it.
  if (::getppid() != parent)
    ::kill(::getpid(), SIGTERM);
  return true;
}

Result<std::string> executable_path(const Tree& proc, pid_t pid) {
  auto link = proc.read_link(std::to_string(pid) + "/exe");
  if (!link.ok()) {
    if (link.error().code() == ENOENT)
      return errorf(ESRCH, "process %d is gone", int(pid));
    return link.error();
  }
  constexpr std::string_view kDeleted = " (deleted)";
  std::string path = std::move(*link);
  if (path.size() > kDeleted.size() && path.ends_with(kDeleted))
    path.resize(path.size() - kDeleted.size());
  return path;
}

Result<std::string> random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  for (size_t got = 0; got < bytes;) {
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return error_from_errno(errno, "getrandom");
    got += size_t(n);
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

Result<std::string> self_executable() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n < 0)
    return error_from_errno(errno, "cannot read /proc/self/exe to find this program");
  return std::string(buf, size_t(n));
}

Result<int> run_and_wait(const std::vector<std::string>& argv) {
  if (argv.empty())
    return Error(EINVAL, "run_and_wait: no program");
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::string path = std::string("PATH=") + kDaemonPath, lang = "LANG=C";
  char* env[] = {path.data(), lang.data(), nullptr};
  pid_t pid;
  int err = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), env);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0)
    return error_from_errno(err, "cannot run " + argv[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return error_from_errno(errno, "waitpid");
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void raise_fd_limit() {
  rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

bool process_exists(pid_t pid) {
  return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM);
}

namespace {

// Waits for `pid` and exits as it did; with `zero_is_failure` (the daemon
// itself, which exits 0 only after it has said ready) an exit 0 becomes 1.
[[noreturn]] void exit_as(pid_t pid, bool zero_is_failure) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status))
    ::_exit(2);
  ::_exit(WEXITSTATUS(status) == 0 && zero_is_failure ? 1 : WEXITSTATUS(status));
}

// Closes every descriptor from 3 up except `keep`.
void close_inherited(int keep) {
  if (keep > 3)
    ::close_range(3, unsigned(keep) - 1, 0);
  ::close_range(unsigned(keep) + 1, ~0U, 0);
}

}  // namespace

Result<Detached> Detached::detach() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return error_from_errno(errno, "pipe");
  Fd read_end(fds[0]), write_end(fds[1]);
  pid_t child = ::fork();
  if (child < 0)
    return error_from_errno(errno, "fork");
  if (child > 0) {
    // The starter: exits as the middle process does, without unwinding (the
    // daemon owns everything now).
    read_end.reset();
    write_end.reset();
    exit_as(child, false);  // the middle process exits 0 once the daemon is ready
  }
  // The middle process: a new session, then a fork, so that the daemon is no
  // session leader and can never acquire a controlling terminal. It waits
  // for the daemon's verdict: 'R' once it serves, else the daemon's exit.
  if (::setsid() < 0) {
    std::fprintf(stderr, "perf persistent daemon: setsid: %s\n", std::strerror(errno));
    ::_exit(1);
  }
  pid_t daemon = ::fork();
  if (daemon < 0) {
    std::fprintf(stderr, "perf persistent daemon: fork: %s\n", std::strerror(errno));
    ::_exit(1);
  }
  if (daemon > 0) {
    write_end.reset();
    char byte = 0;
    ssize_t n;
    do {
      n = ::read(read_end.get(), &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n == 1 && byte == 'R')
      ::_exit(0);
    exit_as(daemon, true);
  }
  read_end.reset();
  // Nothing of the caller's stays: no descriptor beyond 0-2 (a lock the
  // caller holds is its own), no environment beyond a fixed PATH and LANG=C.
  close_inherited(write_end.get());
  ::clearenv();
  ::setenv("PATH", kDaemonPath, 1);
  ::setenv("LANG", "C", 1);
  ::umask(022);
  if (::chdir("/") != 0)
    return error_from_errno(errno, "chdir /");
  Fd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!null || ::dup2(null.get(), 0) < 0)
    return error_from_errno(errno, "cannot put stdin on /dev/null");
  return Detached(std::move(write_end));
}

Status Detached::ready(const std::string& log_path) {
  int flags = O_WRONLY | O_CLOEXEC;
  Fd out(log_path.empty() ? ::open("/dev/null", flags)
                          : ::open(log_path.c_str(), flags | O_CREAT | O_APPEND, 0600));
  if (!out)
    return error_from_errno(errno, "cannot open " + (log_path.empty() ? "/dev/null" : log_path));
  char byte = 'R';
  if (::write(pipe_.get(), &byte, 1) != 1)
    return error_from_errno(errno, "cannot tell the starter that the daemon is ready");
  pipe_.reset();
  if (::dup2(out.get(), 1) < 0 || ::dup2(out.get(), 2) < 0)
    return error_from_errno(errno, "cannot move stdout and stderr to the log");
  return ok_status();
}

Result<SignalFd> SignalFd::open(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals)
    sigaddset(&set, s);
  sigset_t before;
  if (::pthread_sigmask(SIG_BLOCK, &set, &before) != 0)
    return Error(EINVAL, "cannot block signals for the signal fd");
  sigset_t blocked;
  sigemptyset(&blocked);
  for (int s : signals)
    if (!sigismember(&before, s))
      sigaddset(&blocked, s);
  Fd fd(::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd) {
    int saved = errno;
    ::pthread_sigmask(SIG_UNBLOCK, &blocked, nullptr);
    return error_from_errno(saved, "signalfd");
  }
  return SignalFd(std::move(fd), blocked);
}

SignalFd::SignalFd(SignalFd&& other) noexcept
    : fd_(std::move(other.fd_)), blocked_(other.blocked_) {}

SignalFd& SignalFd::operator=(SignalFd&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::move(other.fd_);
    blocked_ = other.blocked_;
  }
  return *this;
}

SignalFd::~SignalFd() {
  close();
}

void SignalFd::close() {
  if (!fd_)
    return;
  while (read().ok()) {
  }
  fd_.reset();
  ::pthread_sigmask(SIG_UNBLOCK, &blocked_, nullptr);
}

Result<int> SignalFd::read() {
  signalfd_siginfo info;
  for (;;) {
    ssize_t n = ::read(fd_.get(), &info, sizeof(info));
    if (n == sizeof(info))
      return int(info.ssi_signo);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return error_from_errno(errno, "reading the signal fd");
    return Error(EIO, "short read from the signal fd");
  }
}

Result<LockFile> LockFile::acquire(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd)
    return error_from_errno(errno, "cannot open the lock file " + path);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK)
      return error_from_errno(errno, "cannot lock " + path);
    char buf[32] = {};
    ssize_t n = ::pread(fd.get(), buf, sizeof(buf) - 1, 0);
    std::string holder = n > 0 ? std::string(trim(std::string_view(buf, size_t(n)))) : "?";
    return errorf(EBUSY, "another broker (pid %s) holds %s", holder.c_str(), path.c_str());
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd.get(), 0) != 0 || ::pwrite(fd.get(), pid.data(), pid.size(), 0) < 0)
    return error_from_errno(errno, "cannot write the pid into " + path);
  return LockFile(std::move(fd));
}

Result<pid_t> LockFile::holder(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd)
    return error_from_errno(errno, "cannot open the lock file " + path);
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0)
    return errorf(ENOENT, "nobody holds %s", path.c_str());
  if (errno != EWOULDBLOCK)
    return error_from_errno(errno, "cannot test the lock " + path);
  char buf[32] = {};
  ssize_t n = ::pread(fd.get(), buf, sizeof(buf) - 1, 0);
  auto pid = parse_u64(trim(std::string_view(buf, n > 0 ? size_t(n) : 0)), "the holder's pid");
  if (!pid.ok() || *pid == 0 || *pid > uint64_t(INT_MAX))
    return errorf(EINVAL, "%s is held, but holds no pid", path.c_str());
  return pid_t(*pid);
}

Status send_signal(pid_t pid, int signal) {
  if (::kill(pid, signal) < 0 && errno != ESRCH)
    return error_from_errno(errno, "cannot signal process " + std::to_string(pid));
  return ok_status();
}

bool perf_capable_at(uint64_t cap_effective, std::optional<long> paranoid) {
  bool admin = (cap_effective >> kCapSysAdmin) & 1;
  bool perfmon = (cap_effective >> kCapPerfmon) & 1;
  return paranoid && *paranoid >= 3 ? admin : admin || perfmon;
}

}  // namespace pp::sys

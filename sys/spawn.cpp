#include "sys/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string_view>

#include "sys/fd.h"

extern char** environ;

namespace pp::sys {
namespace {

// How messages name the command: the shell's line, cut when long.
std::string command_label(const std::string& command) {
  constexpr size_t kMax = 80;
  std::string shown = command.size() > kMax ? command.substr(0, kMax) + "..." : command;
  return "'/bin/sh -c " + shown + "'";
}

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
    std::string entry = n;
    entry += '=';
    entry += v;
    env.push_back(std::move(entry));
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

class ShellProcess final : public Process {
 public:
  explicit ShellProcess(pid_t pid) : pid_(pid) {}
  ShellProcess(const ShellProcess&) = delete;
  ShellProcess& operator=(const ShellProcess&) = delete;
  ~ShellProcess() override {
    if (reaped_)
      return;
    ::kill(-pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }

  pid_t pid() const override { return pid_; }

  Result<std::optional<ExitStatus>> poll() override {
    if (reaped_)
      return std::optional<ExitStatus>(status_);
    int raw = 0;
    pid_t got;
    do {
      got = ::waitpid(pid_, &raw, WNOHANG);
    } while (got < 0 && errno == EINTR);
    if (got == 0)
      return std::optional<ExitStatus>();
    reaped_ = true;
    if (got < 0) {
      if (errno != ECHILD)
        return error_from_errno(errno, "waiting for pid " + std::to_string(pid_));
      status_.unknown = true;  // SIGCHLD ignored: the kernel reaped it
    } else if (WIFSIGNALED(raw)) {
      status_.signal = WTERMSIG(raw);
    } else {
      status_.code = WEXITSTATUS(raw);
    }
    return std::optional<ExitStatus>(status_);
  }

  Status kill_group(int signal) override {
    if (reaped_)
      return ok_status();
    if (::kill(-pid_, signal) < 0 && errno != ESRCH)
      return error_from_errno(errno, "cannot send " + signal_name(signal) +
                                         " to the process group of pid " + std::to_string(pid_));
    return ok_status();
  }

 private:
  pid_t pid_;
  bool reaped_ = false;
  ExitStatus status_;
};

// posix_spawn's attributes and file actions, destroyed on every path.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

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

Result<std::unique_ptr<Process>> spawn_shell(const SpawnRequest& request) {
  std::string label = command_label(request.command);
  if (request.command.empty())
    return usage_error("no command to run");
  Fd input;
  if (!request.stdin_data.empty()) {
    PP_ASSIGN_OR_RETURN(input, memory_file(request.stdin_data, label));
  }

  SpawnSetup setup;
  if (input)
    posix_spawn_file_actions_adddup2(&setup.actions, input.get(), STDIN_FILENO);
  else
    posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, STDERR_FILENO, STDOUT_FILENO);
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, 3);

  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT, SIGUSR1, SIGUSR2})
    sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&setup.attr, &none);
  posix_spawnattr_setsigdefault(&setup.attr, &defaults);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setflags(&setup.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env = environment_with(request.env);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (std::string& e : env)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", command = request.command;
  char* argv[] = {sh.data(), dash_c.data(), command.data(), nullptr};

  pid_t pid = -1;
  int err = ::posix_spawn(&pid, "/bin/sh", &setup.actions, &setup.attr, argv, envp.data());
  if (err != 0)
    return error_from_errno(err, "cannot run " + label);
  return std::unique_ptr<Process>(std::make_unique<ShellProcess>(pid));
}

}  // namespace pp::sys

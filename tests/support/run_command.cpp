#include "tests/support/run_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/support/test_env.h"

extern char** environ;

namespace pp::testing {

CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  CommandResult result;
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    result.err = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; e++)
    env_strings.emplace_back(*e);
  for (const std::string& e : options.env)
    env_strings.push_back(e);
  std::vector<char*> envp, args;
  for (std::string& e : env_strings)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execvpe(args[0], args.data(), envp.data());
    dprintf(2, "exec %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // The input is small in tests; write it all, then close so the child sees EOF.
  signal(SIGPIPE, SIG_IGN);
  size_t written = 0;
  while (written < options.input.size()) {
    ssize_t n = write(in[1], options.input.data() + written, options.input.size() - written);
    if (n <= 0)
      break;
    written += size_t(n);
  }
  close(in[1]);

  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  bool killed = false;
  while (open_fds > 0) {
    int n = poll(fds, 2, 200);
    if (n < 0 && errno != EINTR)
      break;
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char buf[65536];
      ssize_t got = read(fds[i].fd, buf, sizeof(buf));
      if (got > 0) {
        sinks[i]->append(buf, size_t(got));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
      }
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!killed && now.tv_sec - start.tv_sec > options.timeout_seconds) {
      kill(pid, SIGKILL);
      killed = true;
      result.err += "\n[run_command: killed after timeout]\n";
    }
  }
  for (pollfd& p : fds)
    if (p.fd >= 0)
      close(p.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

CommandResult run_pp(const std::vector<std::string>& args, const CommandOptions& options) {
  std::vector<std::string> argv = {binary_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, options);
}

}  // namespace pp::testing

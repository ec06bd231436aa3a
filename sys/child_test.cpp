#include "sys/child.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <thread>

#include "tests/support/temp_dir.h"

namespace pp::sys {
namespace {

TEST(Child, ExitStatusAndPidfd) {
  auto child = Child::spawn({"sh", "-c", "exit 7"});
  ASSERT_TRUE(child.ok()) << child.error().message();
  pollfd p = {child->pidfd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "the pidfd must poll readable when the child exits";
  auto status = child->wait();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 7);
  EXPECT_TRUE(child->exited());
  EXPECT_TRUE(child->reaped());
  EXPECT_EQ(*child->wait(), 7) << "a second wait returns the same status";
}

TEST(Child, ExecFailureIsAnErrorNotAStatus) {
  auto child = Child::spawn({"/nonexistent/command", "x"});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().code(), ENOENT);
  EXPECT_EQ(child.error().message(),
            "cannot run '/nonexistent/command': No such file or directory");
}

TEST(Child, SignalledChildReportsSignal) {
  auto child = Child::spawn({"sleep", "30"});
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE(child->exited());
  ASSERT_TRUE(child->kill(SIGKILL).ok());
  pollfd p = {child->pidfd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  EXPECT_TRUE(child->exited()) << "exited, not yet reaped";
  EXPECT_FALSE(child->reaped());
  EXPECT_EQ(*child->wait(), 128 + SIGKILL);
}

TEST(Child, BlockedSignalsAreUnblockedInTheChild) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(::sigprocmask(SIG_BLOCK, &block, &old), 0);
  auto child = Child::spawn({"sleep", "30"});
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->kill(SIGTERM).ok());
  EXPECT_EQ(*child->wait(), 128 + SIGTERM) << "SIGTERM must reach the command";
}

TEST(Child, DestructorStopsARunningChild) {
  pid_t pid;
  {
    auto child = Child::spawn({"sleep", "30"});
    ASSERT_TRUE(child.ok());
    pid = child->pid();
  }
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH) << "the child must be gone and reaped";
}

// ---- try_wait, kill_group and the options watch's triggers use ------------

// Polls until the child exits (at most `limit_ms`).
std::optional<ExitStatus> wait_for(Child& c, int limit_ms = 5000) {
  for (int waited = 0; waited < limit_ms; waited += 10) {
    auto status = c.try_wait();
    EXPECT_TRUE(status.ok()) << status.error().message();
    if (!status.ok() || *status)
      return status.ok() ? *status : std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return std::nullopt;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Result<Child> shell(const std::string& command, SpawnOptions options = {}) {
  return Child::spawn({"/bin/sh", "-c", command}, options);
}

TEST(ChildTryWait, ExitStatusIsReportedOnceExited) {
  auto c = shell("exit 3");
  ASSERT_TRUE(c.ok()) << c.error().message();
  auto status = wait_for(*c);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->code, 3);
  EXPECT_EQ(status->signal, 0);
  EXPECT_FALSE(status->success());
  EXPECT_EQ(status->describe(), "exited with status 3");
  auto again = c->try_wait();
  ASSERT_TRUE(again.ok() && *again) << "a reaped child keeps its status";
  EXPECT_EQ((*again)->code, 3);
  EXPECT_EQ(*c->wait(), 3) << "wait() after try_wait() returns the same status";
}

// Without a pidfd (a caller that polls with try_wait(), as triggers do, on
// any kernel): exited() still sees the exit, without reaping.
TEST(ChildTryWait, WithoutAPidfdTheExitIsStillSeen) {
  auto c = shell("exit 4", {.pidfd = false});
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->pidfd(), -1);
  bool exited = false;
  for (int i = 0; i < 500 && !exited; i++) {
    exited = c->exited();
    if (!exited)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(exited);
  EXPECT_FALSE(c->reaped()) << "exited() does not reap";
  auto status = c->try_wait();
  ASSERT_TRUE(status.ok() && *status);
  EXPECT_EQ((*status)->code, 4);
  EXPECT_EQ(*c->wait(), 4);
}

TEST(ChildTryWait, RunningChildIsNotReaped) {
  auto c = shell("exec sleep 30");
  ASSERT_TRUE(c.ok());
  auto status = c->try_wait();
  ASSERT_TRUE(status.ok());
  EXPECT_FALSE(*status) << "still running";
  EXPECT_FALSE(c->reaped());
}

TEST(ChildOptions, StdinEnvironmentAndNoInheritedFds) {
  testing::TempDir dir;
  std::string out = dir.path("out");
  // An fd of ours without CLOEXEC must not reach the command.
  int leak = ::dup(STDERR_FILENO);
  ASSERT_GE(leak, 3);
  ::setenv("PP_SPAWN_TEST_KEEP", "kept", 1);
  ::setenv("PP_SPAWN_TEST_REPLACED", "old", 1);
  SpawnOptions o;
  o.env = {{"EXTRA", "a b"}, {"PP_SPAWN_TEST_REPLACED", "new"}};
  o.stdin_data = "{\"severity\":\"fatal\"}\n";
  o.close_other_fds = true;
  auto c = shell(
      "{ cat; echo \"$PP_SPAWN_TEST_KEEP $PP_SPAWN_TEST_REPLACED $EXTRA\"; "
      "if [ -e /proc/self/fd/" +
          std::to_string(leak) + " ]; then echo leaked; else echo closed; fi; } > " + out,
      o);
  ::close(leak);
  ::unsetenv("PP_SPAWN_TEST_KEEP");
  ::unsetenv("PP_SPAWN_TEST_REPLACED");
  ASSERT_TRUE(c.ok()) << c.error().message();
  auto status = wait_for(*c);
  ASSERT_TRUE(status && status->success()) << (status ? status->describe() : "running");
  EXPECT_EQ(read_file(out), "{\"severity\":\"fatal\"}\nkept new a b\nclosed\n");
}

TEST(ChildOptions, WithoutOptionsTheCallersFdsAndEnvironmentStay) {
  testing::TempDir dir;
  std::string out = dir.path("out");
  int kept = ::dup(STDERR_FILENO);
  ASSERT_GE(kept, 3);
  auto c = shell("if [ -e /proc/self/fd/" + std::to_string(kept) +
                 " ]; then echo open; else echo closed; fi > " + out);
  ::close(kept);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c->wait(), 0);
  EXPECT_EQ(read_file(out), "open\n") << "record's COMMAND keeps what it always had";
}

TEST(ChildOptions, LargeStdinNeverBlocksAndACommandMayIgnoreIt) {
  SpawnOptions o;
  o.stdin_data = std::string(4 << 20, 'x');  // far beyond a pipe's 64 KiB
  auto start = std::chrono::steady_clock::now();
  auto c = shell("sleep 0.1", o);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  auto status = wait_for(*c);
  ASSERT_TRUE(status);
  EXPECT_TRUE(status->success()) << status->describe();
}

TEST(ChildOptions, OwnProcessGroupIsKilledWhole) {
  testing::TempDir dir;
  std::string pids = dir.path("pids");
  // The shell starts a grandchild; killing the group must end both.
  SpawnOptions o;
  o.own_process_group = true;
  auto c = shell("sleep 30 & echo $! > " + pids + "; wait", o);
  ASSERT_TRUE(c.ok());
  pid_t pid = c->pid();
  EXPECT_EQ(::getpgid(pid), pid) << "the command leads its own process group";
  std::string grandchild;
  for (int i = 0; i < 500 && grandchild.empty(); i++) {
    grandchild = read_file(pids);
    if (grandchild.empty() || grandchild.back() != '\n')
      grandchild.clear(), std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(grandchild.empty());
  pid_t sleeper = pid_t(std::stol(grandchild));
  ASSERT_TRUE(c->kill_group(SIGTERM).ok());
  auto status = wait_for(*c);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->signal, SIGTERM);
  EXPECT_EQ(status->describe(), "killed by SIGTERM");
  bool gone = false;
  for (int i = 0; i < 500 && !gone; i++) {
    // Gone, or a zombie its new parent has yet to reap.
    std::string stat = read_file("/proc/" + std::to_string(sleeper) + "/stat");
    size_t paren = stat.rfind(')');
    gone = paren == std::string::npos || stat.substr(paren + 2, 1) == "Z";
    if (!gone)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "the grandchild " << sleeper << " got the group's SIGTERM";
  EXPECT_TRUE(c->kill_group(SIGKILL).ok()) << "signalling a reaped child is a no-op";
}

TEST(ChildOptions, BlockedSignalsAreUnblockedInTheGroup) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(::sigprocmask(SIG_BLOCK, &block, &old), 0);
  SpawnOptions o;
  o.own_process_group = true;
  auto c = shell("exec sleep 30", o);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->kill_group(SIGTERM).ok());
  auto status = wait_for(*c);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->signal, SIGTERM);
}

TEST(ChildOptions, DefaultSignalsUndoWhatTheCallerIgnores) {
  struct sigaction ignore = {}, old = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGUSR1, &ignore, &old), 0);
  SpawnOptions o;
  o.default_signals = true;
  auto reset = shell("exec sleep 30", o);
  auto inherited = shell("exec sleep 30");
  ::sigaction(SIGUSR1, &old, nullptr);
  ASSERT_TRUE(reset.ok() && inherited.ok());
  ASSERT_TRUE(reset->kill(SIGUSR1).ok());
  EXPECT_EQ(*reset->wait(), 128 + SIGUSR1);
  ASSERT_TRUE(inherited->kill(SIGUSR1).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(inherited->exited()) << "without the option an ignored signal stays ignored";
}

TEST(SignalName, NamesAndNumbers) {
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(1000), "signal 1000");
}

}  // namespace
}  // namespace pp::sys

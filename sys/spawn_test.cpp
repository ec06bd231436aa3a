#include "sys/spawn.h"

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

// Polls until the process exits (at most `limit_ms`).
std::optional<ExitStatus> wait_for(Process& p, int limit_ms = 5000) {
  for (int waited = 0; waited < limit_ms; waited += 10) {
    auto status = p.poll();
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

TEST(SpawnShell, ExitStatusIsReportedOnceExited) {
  auto p = spawn_shell({"exit 3", {}, ""});
  ASSERT_TRUE(p.ok()) << p.error().message();
  auto status = wait_for(**p);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->code, 3);
  EXPECT_EQ(status->signal, 0);
  EXPECT_FALSE(status->success());
  EXPECT_EQ(status->describe(), "exited with status 3");
  auto again = (*p)->poll();
  ASSERT_TRUE(again.ok() && *again) << "a reaped process keeps its status";
  EXPECT_EQ((*again)->code, 3);
}

TEST(SpawnShell, StdinEnvironmentAndNoInheritedFds) {
  testing::TempDir dir;
  std::string out = dir.path("out");
  // An fd of ours without CLOEXEC must not reach the command.
  int leak = ::dup(STDERR_FILENO);
  ASSERT_GE(leak, 3);
  ::setenv("PP_SPAWN_TEST_KEEP", "kept", 1);
  ::setenv("PP_SPAWN_TEST_REPLACED", "old", 1);
  SpawnRequest req;
  req.command =
      "{ cat; echo \"$PP_SPAWN_TEST_KEEP $PP_SPAWN_TEST_REPLACED $EXTRA\"; "
      "if [ -e /proc/self/fd/" +
      std::to_string(leak) + " ]; then echo leaked; else echo closed; fi; } > " + out;
  req.env = {{"EXTRA", "a b"}, {"PP_SPAWN_TEST_REPLACED", "new"}};
  req.stdin_data = "{\"severity\":\"fatal\"}\n";
  auto p = spawn_shell(req);
  ::close(leak);
  ::unsetenv("PP_SPAWN_TEST_KEEP");
  ::unsetenv("PP_SPAWN_TEST_REPLACED");
  ASSERT_TRUE(p.ok()) << p.error().message();
  auto status = wait_for(**p);
  ASSERT_TRUE(status && status->success()) << (status ? status->describe() : "running");
  EXPECT_EQ(read_file(out), "{\"severity\":\"fatal\"}\nkept new a b\nclosed\n");
}

TEST(SpawnShell, LargeStdinNeverBlocksAndACommandMayIgnoreIt) {
  SpawnRequest req;
  req.command = "sleep 0.1";
  req.stdin_data = std::string(4 << 20, 'x');  // far beyond a pipe's 64 KiB
  auto start = std::chrono::steady_clock::now();
  auto p = spawn_shell(req);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  auto status = wait_for(**p);
  ASSERT_TRUE(status);
  EXPECT_TRUE(status->success()) << status->describe();
}

TEST(SpawnShell, OwnProcessGroupIsKilledWhole) {
  testing::TempDir dir;
  std::string pids = dir.path("pids");
  // The shell starts a grandchild; killing the group must end both.
  auto p = spawn_shell({"sleep 30 & echo $! > " + pids + "; wait", {}, ""});
  ASSERT_TRUE(p.ok());
  pid_t pid = (*p)->pid();
  EXPECT_EQ(::getpgid(pid), pid) << "the command leads its own process group";
  std::string grandchild;
  for (int i = 0; i < 500 && grandchild.empty(); i++) {
    grandchild = read_file(pids);
    if (grandchild.empty() || grandchild.back() != '\n')
      grandchild.clear(), std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(grandchild.empty());
  pid_t sleeper = pid_t(std::stol(grandchild));
  ASSERT_TRUE((*p)->kill_group(SIGTERM).ok());
  auto status = wait_for(**p);
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
  EXPECT_TRUE((*p)->kill_group(SIGKILL).ok()) << "signalling a reaped process is a no-op";
}

TEST(SpawnShell, BlockedSignalsAreUnblockedInTheCommand) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(::sigprocmask(SIG_BLOCK, &block, &old), 0);
  auto p = spawn_shell({"exec sleep 30", {}, ""});
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE((*p)->kill_group(SIGTERM).ok());
  auto status = wait_for(**p);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->signal, SIGTERM);
}

TEST(SpawnShell, DestroyingARunningProcessKillsAndReapsIt) {
  pid_t pid;
  {
    auto p = spawn_shell({"exec sleep 30", {}, ""});
    ASSERT_TRUE(p.ok());
    pid = (*p)->pid();
  }
  EXPECT_EQ(::kill(pid, 0), -1) << "killed and reaped, not a zombie";
  EXPECT_EQ(errno, ESRCH);
}

TEST(SpawnShell, EmptyCommandIsAUsageError) {
  auto p = spawn_shell({"", {}, ""});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind(), ErrorKind::kUsage);
}

TEST(SignalName, NamesAndNumbers) {
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(1000), "signal 1000");
}

}  // namespace
}  // namespace pp::sys

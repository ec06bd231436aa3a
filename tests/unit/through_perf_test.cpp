// A verb started as `perf persistent VERB` ends when perf does: perf runs
// perf-persistent as its child and waits, and a SIGKILL or SIGTERM to perf
// alone would leave the verb running under init (sys::end_with_perf_parent).
// The parent here is a shell script named `perf` (its comm is "perf", as
// perf's own is), which the test kills with SIGKILL; a helper process is the
// child subreaper, so the orphan comes back to it and its exit status is
// seen: the verb's own status for SIGTERM, 0 for watch.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <gtest/gtest.h>
#include <string>
#include <thread>

#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

// In the helper (a forked child of the test): -1 when something failed,
// -2 when the verb outlived perf by 10 s, else the verb's exit status.
int kill_perf_and_wait_for_the_verb(const TempDir& dir, const char* parent_name) {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    return -1;
  std::string perf = dir.path(parent_name);
  std::string pid_file = dir.path("verb.pid");
  pid_t parent = ::fork();
  if (parent == 0) {
    std::string bin = binary_path();
    std::string run_dir = dir.path("run");
    ::execl(perf.c_str(), perf.c_str(), bin.c_str(), "watch", "--no-db", "--no-harvest",
            "--run-dir", run_dir.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_t verb = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (verb == 0 && std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(pid_file);
    if (!(in >> verb))
      verb = 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (verb <= 0)
    return -1;
  // The verb is running (its own comm, under the parent) before perf goes.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t got = ::waitpid(verb, &status, WNOHANG);
    if (got == verb)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(verb, SIGKILL);
  ::waitpid(verb, nullptr, 0);
  return -2;
}

int run_helper(const TempDir& dir, const char* parent_name) {
  dir.write(parent_name, "#!/bin/sh\n\"$@\" 2>" + dir.path("verb.log") + " &\necho $! > " +
                             dir.path("verb.pid") + "\nwait\n");
  ::chmod(dir.path(parent_name).c_str(), 0755);
  ::mkdir(dir.path("run").c_str(), 0700);
  pid_t helper = ::fork();
  if (helper == 0) {
    int r = kill_perf_and_wait_for_the_verb(dir, parent_name);
    ::_exit(r == -1 ? 201 : r == -2 ? 202 : r);
  }
  int status = 0;
  ::waitpid(helper, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(ThroughPerf, TheVerbEndsWhenPerfIsKilledWithItsOwnSigtermStatus) {
  TempDir dir;
  int status = run_helper(dir, "perf");
  EXPECT_NE(status, 201) << "the test could not start the verb";
  EXPECT_NE(status, 202) << "the verb outlived perf by 10 s";
  EXPECT_EQ(status, 0) << "watch stops with status 0 on SIGTERM";
}

// Debian's /usr/bin/perf runs the versioned perf_<version>: the same.
TEST(ThroughPerf, DebiansVersionedPerfCountsAsPerf) {
  TempDir dir;
  EXPECT_EQ(run_helper(dir, "perf_6.1"), 0);
}

}  // namespace
}  // namespace pp::testing

// The context stream on this machine's kernel: tasks that run and exit
// before anyone records are still named by `perf script` in a later
// `record --snapshot --no-follow`, because the broker kept their COMM, FORK
// and EXIT records in the context stream; an event created with --no-context
// shows the very same samples without names, which proves the stream is what
// names them (the tasks are gone from /proc, so record cannot synthesise
// them). Each test has its own run directory and broker.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "sys/process.h"
#include "sys/tree.h"
#include "tests/kernel/kernel_env.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

// getpgid(kMarkerPid) fails with ESRCH; the events' filter keeps only calls
// with this argument, so every sample is one of the test's own tasks.
constexpr long kMarkerPid = 424242;
constexpr int kTasks = 5;
constexpr int kCallsPerTask = 10;
const char* const kFilter = "pid == 424242";

class Tracking : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    PP_SKIP_UNLESS(perf_allowed(&why), why);
    PP_SKIP_UNLESS(tracepoint_id("syscalls", "sys_enter_getpgid") >= 0,
                   "no syscalls:sys_enter_getpgid in tracefs");
    run_dir_ = tmp_.path("run");
    ::setenv("PERF_PERSISTENT_RUN_DIR", run_dir_.c_str(), 1);
  }

  void TearDown() override {
    auto text = sys::Tree(run_dir_).read("broker.lock");
    pid_t pid = text.ok() ? pid_t(std::atol(text->c_str())) : 0;
    if (pid > 0 && sys::process_exists(pid)) {
      ::kill(pid, SIGTERM);
      for (int i = 0; i < 500 && sys::process_exists(pid); i++)
        std::this_thread::sleep_for(10ms);
    }
    ::unsetenv("PERF_PERSISTENT_RUN_DIR");
  }

  // Tasks named ppctx0..ppctx<kTasks-1> (prctl PR_SET_NAME: a COMM record),
  // each making kCallsPerTask marked getpgid calls, all reaped before this
  // returns. Their pids, by name.
  static std::map<std::string, pid_t> run_named_tasks() {
    std::map<std::string, pid_t> tasks;
    for (int i = 0; i < kTasks; i++) {
      std::string name = "ppctx" + std::to_string(i);
      pid_t pid = ::fork();
      if (pid == 0) {
        ::prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
        for (int c = 0; c < kCallsPerTask; c++)
          ::syscall(SYS_getpgid, kMarkerPid);
        ::_exit(0);
      }
      EXPECT_GT(pid, 0);
      int status = 0;
      EXPECT_EQ(::waitpid(pid, &status, 0), pid);
      tasks[name] = pid;
    }
    return tasks;
  }

  // comm -> pids of the sys_enter_getpgid samples perf script prints.
  static std::multimap<std::string, long> script_comms(const std::string& file) {
    CommandResult r = run_command({"perf", "script", "-i", file, "-F", "comm,pid,event"});
    EXPECT_EQ(r.status, 0) << "perf script -i " << file << ": " << r.err;
    std::multimap<std::string, long> out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("sys_enter_getpgid") == std::string::npos)
        continue;
      std::istringstream fields(line);
      std::string comm;
      long pid = -1;
      fields >> comm >> pid;
      out.emplace(comm, pid);
    }
    return out;
  }

  TempDir tmp_;
  std::string run_dir_;
};

TEST_F(Tracking, ASnapshotNamesTasksThatExitedBeforeRecordRan) {
  CommandResult made = run_pp(
      {"create", "-e", "syscalls:sys_enter_getpgid", "--name", "withctx", "--filter", kFilter});
  ASSERT_EQ(made.status, 0) << made.err;
  made = run_pp({"create", "-e", "syscalls:sys_enter_getpgid", "--name", "noctx", "--filter",
                 kFilter, "--no-context"});
  ASSERT_EQ(made.status, 0) << made.err;

  // list -v shows the stream, and which event has it.
  CommandResult listed = run_pp({"list", "-v", "--json"});
  ASSERT_EQ(listed.status, 0) << listed.err;
  json doc = json::parse(listed.out);
  uint64_t stream = 0, withctx = 0;
  bool noctx_has_none = false;
  for (const json& e : doc["events"]) {
    if (e["role"] == "context")
      stream = e["id"].get<uint64_t>();
    if (e["name"] == "withctx" && e["context"].is_number())
      withctx = e["context"].get<uint64_t>();
    if (e["name"] == "noctx")
      noctx_has_none = e["context"].is_null();
  }
  EXPECT_NE(stream, 0u) << listed.out;
  EXPECT_EQ(withctx, stream) << listed.out;
  EXPECT_TRUE(noctx_has_none) << listed.out;

  std::map<std::string, pid_t> tasks = run_named_tasks();
  for (const auto& [name, pid] : tasks)
    ASSERT_FALSE(sys::process_exists(pid)) << name << " is still there";

  // With the context stream: every sample named, every name there, each
  // sample under its own task's name.
  std::string with = tmp_.path("with.data");
  CommandResult r =
      run_pp({"record", "--snapshot", "--no-follow", "-e", "persistent/withctx/", "-o", with});
  ASSERT_EQ(r.status, 0) << r.err;
  auto comms = script_comms(with);
  EXPECT_EQ(comms.size(), size_t(kTasks * kCallsPerTask));
  std::set<std::string> seen;
  for (const auto& [comm, pid] : comms) {
    EXPECT_NE(comm[0], ':') << "unnamed sample of pid " << pid;
    auto task = tasks.find(comm);
    ASSERT_NE(task, tasks.end()) << "sample of pid " << pid << " named '" << comm << "'";
    EXPECT_EQ(task->second, pid) << comm;
    seen.insert(comm);
  }
  EXPECT_EQ(seen.size(), size_t(kTasks));

  // Without it: the same samples, and none of the names.
  std::string without = tmp_.path("without.data");
  r = run_pp({"record", "--snapshot", "--no-follow", "-e", "persistent/noctx/", "-o", without});
  ASSERT_EQ(r.status, 0) << r.err;
  comms = script_comms(without);
  EXPECT_EQ(comms.size(), size_t(kTasks * kCallsPerTask));
  for (const auto& [comm, pid] : comms) {
    EXPECT_EQ(tasks.count(comm), 0u) << "named without the stream: " << comm;
    EXPECT_EQ(comm, ":" + std::to_string(pid));
  }
}

TEST_F(Tracking, TheStreamGoesWithTheLastEventThatUsesIt) {
  ASSERT_EQ(run_pp({"create", "-e", "syscalls:sys_enter_getpgid", "--name", "a"}).status, 0);
  ASSERT_EQ(run_pp({"create", "-e", "syscalls:sys_enter_getsid", "--name", "b"}).status, 0);
  auto streams = [] {
    json doc = json::parse(run_pp({"list", "-v", "--json"}).out);
    int n = 0;
    for (const json& e : doc["events"])
      n += e["role"] == "context";
    return n;
  };
  EXPECT_EQ(streams(), 1) << "one stream serves both tracepoints";
  // A plain list does not show it.
  EXPECT_EQ(run_pp({"list"}).out.find("[context]"), std::string::npos);
  ASSERT_EQ(run_pp({"kill", "a"}).status, 0);
  EXPECT_EQ(streams(), 1);
  ASSERT_EQ(run_pp({"kill", "b"}).status, 0);
  EXPECT_EQ(streams(), 0);
}

}  // namespace
}  // namespace pp::testing

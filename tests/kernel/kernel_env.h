// What the machine's kernel allows, for the real-kernel tests.
//
// A real-kernel test may skip only where the kernel truly refuses. Skip with
// PP_SKIP_UNLESS(condition, reason); tests/kernel/run then fails the whole
// run if anything was skipped on a machine where perf_event_open works for
// this user, so a broken environment never passes as green.
#pragma once

#include <sys/types.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/result.h"
#include "sys/unix_socket.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace pp::testing {

// Whether a per-CPU software event (cpu-clock on CPU 0, pid -1) opens: true
// for root or CAP_PERFMON, or perf_event_paranoid <= 0. `why` gets the errno
// explanation when not.
bool perf_allowed(std::string* why = nullptr);

// The tracefs root with events/ (mounted by tests/kernel/run), or "".
std::string tracefs_root();

// The tracepoint id of sys:name, or -1 when tracefs does not have it.
long tracepoint_id(const std::string& sys, const std::string& name);

// The pid that `kernel_tests --getppid N` printed on stderr ("pid P"), or -1.
pid_t workload_pid(const std::string& err);

// The syscalls:sys_enter_getppid lines of `pid` in `perf script -F
// pid,event` output.
int count_getppid(const std::string& script, pid_t pid);

// The sys_enter_getppid samples of `pid` that perf script finds in `file`
// (a failing perf script fails the test; its stderr goes to `err`).
int perf_script_count(const std::string& file, pid_t pid, std::string* err = nullptr);

// Until a background record writing `file` has flushed its first data
// (perf.data's data size, the u64 at 0x30, is no longer 0): then it is
// attached. False after 10 s.
bool wait_for_record_start(const std::string& file);

// A child pinned to CPU 0 that makes `calls` getppid(2) calls once released:
// the load whose samples a test counts. Until go() it waits on a pipe, so
// events and readers can be set up first with its pid (a filter on it:
// filter()). The destructor kills and reaps a child not waited for.
class GetppidCaller {
 public:
  explicit GetppidCaller(long calls);
  ~GetppidCaller();
  GetppidCaller(const GetppidCaller&) = delete;
  GetppidCaller& operator=(const GetppidCaller&) = delete;

  pid_t pid() const { return pid_; }
  // "common_pid == PID": a tracepoint filter that keeps only its calls.
  std::string filter() const;
  // Releases it; false when it could not be told.
  bool go();
  // Waits for it: true when it made every call.
  bool wait();
  // go() then wait().
  bool run() { return go() && wait(); }
  // Whether it has exited, without waiting (reaps it if so).
  bool done();

 private:
  pid_t pid_ = -1;
  int gate_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// A test that runs its own broker in a private run directory (run_dir_,
// under tmp_). SetUp skips where the kernel refuses perf events or has no
// syscalls:sys_enter_getppid (a fixture that extends it calls it first and
// returns if IsSkipped()); TearDown stops the broker, SIGCONT first in case
// the test stopped it, and fails the test if it ignored SIGTERM.
class PrivateBrokerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // perf-persistent ARGS --run-dir=<run_dir_>.
  CommandResult pp(std::vector<std::string> args) const;
  // The broker's pid from its lock file, or 0.
  pid_t broker_pid() const;

  TempDir tmp_;
  std::string run_dir_;
};

}  // namespace pp::testing

#define PP_SKIP_UNLESS(condition, reason)             \
  do {                                                \
    if (!(condition))                                 \
      GTEST_SKIP() << "kernel refuses: " << (reason); \
  } while (0)

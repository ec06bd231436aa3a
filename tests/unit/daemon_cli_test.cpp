// `daemon --status` and `daemon --stop` through the real binary, against a
// stand-in broker: a child that holds <run-dir>/broker.lock as the broker
// does (sys::LockFile) and dies of SIGTERM. The statuses are LSB's, as
// Documentation/perf-persistent-daemon.txt (EXIT STATUS) says.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <gtest/gtest.h>
#include <thread>

#include "sys/process.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace pp::testing {
namespace {

// A child holding `lock` until a signal ends it.
pid_t hold_lock(const std::string& lock) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::signal(SIGTERM, SIG_DFL);  // the stand-in dies of SIGTERM as a broker does
    auto held = sys::LockFile::acquire(lock);
    if (!held.ok())
      ::_exit(1);
    for (;;)
      ::pause();
  }
  return pid;
}

TEST(DaemonCli, StatusAndStop) {
  TempDir dir;
  std::string run_dir = "--run-dir=" + dir.path("");

  CommandResult r = run_pp({"daemon", "--status", run_dir});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.out.find("no broker runs for " + dir.path("")), std::string::npos) << r.out;
  r = run_pp({"daemon", "--stop", run_dir});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("no broker ran"), std::string::npos) << r.out;

  // A child inherits the mask: a test before this one that left SIGTERM
  // blocked (a sys::SignalFd never closed) would leave the stand-in alive.
  sigset_t mask;
  ASSERT_EQ(::sigprocmask(SIG_SETMASK, nullptr, &mask), 0);
  ASSERT_FALSE(sigismember(&mask, SIGTERM))
      << "SIGTERM is blocked in the test process: a test before this one left a signal mask";
  pid_t broker = hold_lock(dir.path("broker.lock"));
  ASSERT_GT(broker, 0);
  for (int i = 0; i < 200; ++i) {
    auto holder = sys::LockFile::holder(dir.path("broker.lock"));
    if (holder.ok() && *holder == broker)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r = run_pp({"daemon", "--status", run_dir});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("pid " + std::to_string(broker)), std::string::npos) << r.out;

  r = run_pp({"daemon", "--stop", run_dir});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("stopped the broker"), std::string::npos) << r.out;
  int wstatus = 0;
  ASSERT_EQ(::waitpid(broker, &wstatus, 0), broker);
  EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGTERM) << wstatus;

  r = run_pp({"daemon", "--status", run_dir});
  EXPECT_EQ(r.status, 3) << r.out;

  r = run_pp({"daemon", "--stop", "--status", run_dir});
  EXPECT_EQ(r.status, 1) << r.err;
}

}  // namespace
}  // namespace pp::testing

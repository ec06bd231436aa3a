#include "sys/isolated.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <gtest/gtest.h>
#include <string>
#include <thread>

namespace pp::sys {
namespace {

TEST(RunIsolated, WorkThatFinishesReportsEverything) {
  int seen_by_child = 41;  // the child sees the caller's memory as at the fork
  auto run = run_isolated(
      {},
      [&](const IsolatedReport& report) {
        seen_by_child++;
        report("a");
        report(std::to_string(seen_by_child));
      },
      "test");
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_EQ(run->output, "a42");
  EXPECT_TRUE(run->end.finished()) << run->end.describe({});
  EXPECT_EQ(seen_by_child, 41) << "the child's writes must not reach the caller";
}

// A crash ends the child with its signal, whatever handler the caller has
// (ASan's, libFuzzer's or its own), and what it reported before stays.
TEST(RunIsolated, ACrashEndsTheChildWithItsSignal) {
  struct sigaction mine {
  }, old{};
  mine.sa_handler = [](int) { ::_exit(42); };
  sigemptyset(&mine.sa_mask);
  ASSERT_EQ(::sigaction(SIGFPE, &mine, &old), 0);
  auto run = run_isolated(
      {},
      [](const IsolatedReport& report) {
        report("before");
        ::raise(SIGFPE);
        report("after");
      },
      "test");
  ::sigaction(SIGFPE, &old, nullptr);
  ASSERT_TRUE(run.ok()) << run.error().message();
  EXPECT_EQ(run->output, "before");
  EXPECT_FALSE(run->end.finished());
  EXPECT_EQ(run->end.status.signal, SIGFPE);
  EXPECT_EQ(run->end.describe({}), "killed by SIGFPE");
}

TEST(RunIsolated, AnEarlyExitIsNotFinished) {
  auto run = run_isolated(
      {},
      [](const IsolatedReport& report) {
        report("x");
        ::_exit(3);
      },
      "test");
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->output, "x");
  EXPECT_FALSE(run->end.finished());
  EXPECT_EQ(run->end.describe({}), "exited with status 3");
}

// The child runs under its CPU limit and dies of SIGXCPU past it (raised
// here: the limit's one second of CPU would cost every run of the suite
// that second); work that waits meets the wall-clock limit.
TEST(RunIsolated, CpuAndWallLimits) {
  IsolatedLimits cpu{.cpu_seconds = 3};
  auto limited = run_isolated(
      cpu,
      [](const IsolatedReport& report) {
        rlimit limit{};
        ::getrlimit(RLIMIT_CPU, &limit);
        report(std::to_string(limit.rlim_cur));
        ::raise(SIGXCPU);
      },
      "test");
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->output, "3");
  EXPECT_TRUE(limited->end.out_of_cpu()) << limited->end.describe(cpu);
  EXPECT_EQ(limited->end.describe(cpu), "ran out of its 3 s of CPU time");

  IsolatedLimits wall{.cpu_seconds = 5, .wall = std::chrono::milliseconds(200)};
  auto start = std::chrono::steady_clock::now();
  auto wait = run_isolated(
      wall,
      [](const IsolatedReport& report) {
        report("w");
        std::this_thread::sleep_for(std::chrono::seconds(30));
      },
      "test");
  ASSERT_TRUE(wait.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(wait->output, "w");
  EXPECT_TRUE(wait->end.timed_out);
  EXPECT_EQ(wait->end.status.signal, SIGKILL);
  EXPECT_EQ(wait->end.describe(wall), "did not finish within 200 ms");
}

TEST(RunIsolated, AChildThatReportsTooMuchIsKilled) {
  IsolatedLimits small{.max_output = 10};
  auto run = run_isolated(
      small,
      [](const IsolatedReport& report) {
        for (;;)
          report("0123456789abcdef");
      },
      "test");
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->end.overflowed);
  EXPECT_LE(run->output.size(), 10u);
  EXPECT_FALSE(run->end.finished());
}

// The child leaves with _exit(): what the caller's stdio holds unwritten
// is written once, by the caller.
TEST(RunIsolated, TheChildDoesNotFlushTheCallersBuffers) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  std::fputs("once", file);  // buffered, not yet written
  auto run = run_isolated(
      {}, [](const IsolatedReport&) {}, "test");
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->end.finished());
  std::fflush(file);
  std::rewind(file);
  char text[16] = {};
  size_t n = std::fread(text, 1, sizeof(text) - 1, file);
  std::fclose(file);
  EXPECT_EQ(std::string(text, n), "once");
}

}  // namespace
}  // namespace pp::sys

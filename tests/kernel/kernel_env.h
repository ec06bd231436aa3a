// What the machine's kernel allows, for the real-kernel tests.
//
// A real-kernel test may skip only where the kernel truly refuses. Skip with
// PP_SKIP_UNLESS(condition, reason); tests/kernel/run then fails the whole
// run if anything was skipped on a machine where perf_event_open works for
// this user, so a broken environment never passes as green.
#pragma once

#include <gtest/gtest.h>

#include <sys/types.h>

#include <string>

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

}  // namespace pp::testing

#define PP_SKIP_UNLESS(condition, reason)                 \
  do {                                                    \
    if (!(condition))                                     \
      GTEST_SKIP() << "kernel refuses: " << (reason);     \
  } while (0)

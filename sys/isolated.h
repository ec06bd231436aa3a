// Work that may crash or hang the process that runs it (a library's parser
// given a crafted file), run in a throwaway child: a fork of the caller,
// which has the caller's memory as it was at the fork, so the work sees the
// caller's state and nothing it does reaches the caller. The child reports
// its progress through a pipe; the caller learns how it ended (it finished,
// exited early, died of a signal, or ran out of time) and how far it got.
//
//   sys::IsolatedLimits limits{.cpu_seconds = 2, .wall = std::chrono::seconds(10)};
//   PP_ASSIGN_OR_RETURN(sys::IsolatedRun run,
//                       sys::run_isolated(limits, [&](const sys::IsolatedReport& report) {
//                         for (const Item& item : items)
//                           report(try_item(item) ? "y" : "n");  // one byte per item
//                       }));
//   // run.output: "yyn" when the child died on the fourth item;
//   // run.end.describe(): "killed by SIGSEGV"
#pragma once

#include <signal.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "sys/child.h"

namespace pp::sys {

struct IsolatedLimits {
  // The child's CPU time (RLIMIT_CPU): past it the kernel ends it with
  // SIGXCPU. CPU time, not wall time, so that a loaded machine does not
  // make work that is merely slow look like a hang.
  unsigned cpu_seconds = 2;
  // Wall time from the fork: past it the caller kills the child (SIGKILL).
  // The backstop for a child that waits instead of computing.
  std::chrono::milliseconds wall{10'000};
  // Bytes the caller keeps of what the child reports; a child that reports
  // more is killed as one that misbehaves (ended.overflowed).
  size_t max_output = size_t(16) << 20;
};

// How the child ended.
struct IsolatedEnd {
  ExitStatus status;        // its exit status or signal, as waitpid() gave it
  bool timed_out = false;   // killed at IsolatedLimits::wall
  bool overflowed = false;  // killed for reporting more than max_output

  // Whether `work` returned: the child exited with status 0, in time.
  bool finished() const { return !timed_out && !overflowed && status.success(); }
  // Whether it ran out of CPU time (SIGXCPU at IsolatedLimits::cpu_seconds).
  bool out_of_cpu() const { return !timed_out && status.signal == SIGXCPU; }
  // "killed by SIGFPE", "exited with status 1", "did not finish within
  // 10000 ms", "ran out of its 2 s of CPU time".
  std::string describe(const IsolatedLimits& limits) const;
};

struct IsolatedRun {
  std::string output;  // every byte the child reported, in order
  IsolatedEnd end;
};

// What the work calls to report progress: the bytes reach the caller in
// order, each call's bytes whole before the next call returns (a child that
// dies after a call has reported what the call was given).
using IsolatedReport = std::function<void(std::string_view)>;

// Forks; the child, with core dumps off (PR_SET_DUMPABLE 0), killed when
// the caller dies (PR_SET_PDEATHSIG), SIGSEGV, SIGBUS, SIGFPE, SIGILL,
// SIGABRT, SIGTRAP, SIGSYS and SIGXCPU unblocked with their default action
// (so that it dies of them, whatever handler the caller or a sanitizer
// installed), and RLIMIT_CPU at limits.cpu_seconds, runs `work` and leaves
// with _exit(): no atexit handler, no flush of the caller's stdio buffers,
// no leak check. The caller reads the pipe until the child closes it (it
// ends) or limits.wall passes (it is killed), and reaps it.
//
// The caller's memory is the child's, copied: `work` may read whatever the
// caller built before the call and must not expect its writes to come back.
// Only the calling thread lives on in the child: `work` must not wait for
// another thread or take a lock another thread may hold.
//
// Errors: what pipe2() or fork() fails with (EAGAIN at the process limit,
// ENOMEM), as "cannot fork a child to <what>". How the child ended is no
// error: it is in the result.
Result<IsolatedRun> run_isolated(const IsolatedLimits& limits,
                                 const std::function<void(const IsolatedReport&)>& work,
                                 std::string_view what);

}  // namespace pp::sys

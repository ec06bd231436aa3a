// Who holds a lock file that a sys::LockFile (sys/process.h) took: the
// running broker's <run-dir>/broker.lock holds its pid, written by the
// holder ("4242\n").
//
//   PP_ASSIGN_OR_RETURN(pid_t pid, sys::lock_holder(dir.lock()));  // 0: none
#pragma once

#include <sys/types.h>

#include <string>

#include "base/result.h"

namespace pp::sys {

// The pid of the process that holds the lock at `path` (the one it wrote
// there), or 0 when none holds it (no file, or nobody locks it). Takes a
// shared lock for no longer than the test.
Result<pid_t> lock_holder(const std::string& path);

// Sends `signal` to `pid`; ESRCH (it has gone) is not an error.
Status send_signal(pid_t pid, int signal);

}  // namespace pp::sys

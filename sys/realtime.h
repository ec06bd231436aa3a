// perf record's -r/--realtime: the calling process under SCHED_FIFO, so a
// busy machine cannot starve the reader while the kernel overwrites what it
// has not read yet.
#pragma once

#include "base/result.h"

namespace pp::sys {

// sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, priority): the
// caller runs at `priority` (1-99); the processes it starts (a COMMAND) do
// not inherit it. EPERM without CAP_SYS_NICE (or an RLIMIT_RTPRIO that
// allows it) is explained.
Status set_realtime_priority(int priority);

}  // namespace pp::sys

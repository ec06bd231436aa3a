#include "sys/realtime.h"

#include <sched.h>

#include <cerrno>
#include <cstring>

namespace pp::sys {

Status set_realtime_priority(int priority) {
  struct sched_param param = {};
  param.sched_priority = priority;
  if (::sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &param) == 0)
    return ok_status();
  int err = errno;
  if (err == EPERM)
    return errorf(ErrorKind::kRefused, err,
                  "cannot run at SCHED_FIFO priority %d: %s; it needs root or CAP_SYS_NICE (or "
                  "an RLIMIT_RTPRIO of at least %d)",
                  priority, std::strerror(err), priority);
  return errorf(ErrorKind::kUsage, err, "cannot run at SCHED_FIFO priority %d: %s (give 1 to 99)",
                priority, std::strerror(err));
}

}  // namespace pp::sys

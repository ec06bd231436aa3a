#include "sys/lock_holder.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "sys/fd.h"

namespace pp::sys {

Result<pid_t> lock_holder(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT)
      return pid_t(0);
    return error_from_errno(errno, "cannot open the lock file " + path);
  }
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0)
    return pid_t(0);  // nobody holds it; released when fd closes
  if (errno != EWOULDBLOCK)
    return error_from_errno(errno, "cannot test the lock " + path);
  char buf[32] = {};
  ssize_t n = ::pread(fd.get(), buf, sizeof(buf) - 1, 0);
  long pid = n > 0 ? std::strtol(buf, nullptr, 10) : 0;
  if (pid <= 0)
    return errorf(EBUSY, "%s is locked but holds no pid", path.c_str());
  return pid_t(pid);
}

Status send_signal(pid_t pid, int signal) {
  if (::kill(pid, signal) < 0 && errno != ESRCH)
    return error_from_errno(errno, "cannot signal process " + std::to_string(pid));
  return ok_status();
}

}  // namespace pp::sys

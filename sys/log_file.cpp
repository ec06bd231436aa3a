#include "sys/log_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "sys/fd.h"

namespace pp::sys {

Status rotate_log(const std::string& path) {
  std::string old = path + ".1";
  if (::rename(path.c_str(), old.c_str()) != 0 && errno != ENOENT)
    return error_from_errno(errno, "cannot move " + path + " to " + old);
  Fd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!out)
    return error_from_errno(errno, "cannot open " + path);
  if (::dup2(out.get(), 1) < 0 || ::dup2(out.get(), 2) < 0)
    return error_from_errno(errno, "cannot move stdout and stderr to " + path);
  return ok_status();
}

Result<uint64_t> rotate_log_if_over(const std::string& path, uint64_t max_bytes) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT)
      return uint64_t(0);
    return error_from_errno(errno, "cannot stat " + path);
  }
  if (uint64_t(st.st_size) <= max_bytes)
    return uint64_t(st.st_size);
  std::string old = path + ".1";
  if (::rename(path.c_str(), old.c_str()) != 0)
    return error_from_errno(errno, "cannot move " + path + " to " + old);
  return uint64_t(0);
}

}  // namespace pp::sys

#include "sys/input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "sys/fd.h"

namespace pp::sys {

Result<std::string> read_input(const std::string& path, std::string_view what, size_t limit) {
  const bool stdin_input = path == "-";
  const std::string name = stdin_input ? std::string("standard input") : path;
  const std::string subject(what);
  Fd owned;
  int fd = 0;
  if (!stdin_input) {
    owned = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!owned)
      return error_from_errno(errno, "cannot open " + subject + " " + path);
    fd = owned.get();
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      std::string message = "cannot read ";
      message.append(subject).append(" ").append(name);
      return error_from_errno(errno, message);
    }
    if (n == 0)
      break;
    if (text.size() + size_t(n) > limit)
      return errorf(EFBIG, "%s %s is larger than %zu MiB; give the part around the error",
                    subject.c_str(), name.c_str(), limit >> 20);
    text.append(buf, size_t(n));
  }
  return text;
}

Result<uint64_t> modified_time_ns(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return error_from_errno(errno, "cannot stat " + path);
  return uint64_t(st.st_mtim.tv_sec) * 1000000000ull + uint64_t(st.st_mtim.tv_nsec);
}

}  // namespace pp::sys

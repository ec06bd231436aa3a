#include "sys/input.h"

#include <fcntl.h>
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
      return error_from_errno(errno,
                              std::string("cannot read ").append(subject).append(" ").append(name));
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

}  // namespace pp::sys

#include "sys/absolute_path.h"

#include <unistd.h>

#include <cerrno>
#include <climits>

namespace pp::sys {

Result<std::string> absolute_path(std::string_view path) {
  if (path.empty() || path.front() == '/')
    return std::string(path);
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof(cwd)) == nullptr)
    return error_from_errno(errno, "cannot make " + std::string(path) +
                                       " absolute: the current directory is unknown; give an "
                                       "absolute path");
  std::string out(cwd);
  if (out.back() != '/')
    out += '/';
  out += path;
  return out;
}

}  // namespace pp::sys

#include "sys/tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "sys/fd.h"

namespace pp::sys {

Tree::Tree(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/')
    root_.pop_back();
}

std::string Tree::path(std::string_view relative) const {
  std::string out = root_;
  if (!relative.empty() && relative.front() != '/')
    out += '/';
  out += relative;
  return out;
}

Result<std::string> Tree::read(std::string_view relative, size_t limit) const {
  std::string file = path(relative);
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd)
    return error_from_errno(errno, "cannot open " + file);
  std::string data;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return error_from_errno(errno, "cannot read " + file);
    }
    if (n == 0)
      break;
    data.append(buf, size_t(n));
    if (data.size() > limit)
      return errorf(EFBIG, "%s is larger than %zu bytes; is this the right root?", file.c_str(),
                    limit);
  }
  return data;
}

Result<std::vector<std::string>> Tree::list(std::string_view relative) const {
  PP_ASSIGN_OR_RETURN(std::vector<std::string> names, list_unsorted(relative));
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::vector<std::string>> Tree::list_unsorted(std::string_view relative) const {
  std::string dir = path(relative);
  DIR* d = ::opendir(dir.c_str());
  if (!d)
    return error_from_errno(errno, "cannot list " + dir);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..")
      names.emplace_back(name);
  }
  ::closedir(d);
  return names;
}

Result<std::string> Tree::read_link(std::string_view relative) const {
  std::string file = path(relative);
  char buf[4096];
  ssize_t n = ::readlink(file.c_str(), buf, sizeof(buf));
  if (n < 0)
    return error_from_errno(errno, "cannot read the link " + file);
  if (size_t(n) == sizeof(buf))
    return errorf(ENAMETOOLONG, "the link %s is longer than %zu bytes", file.c_str(), sizeof(buf));
  return std::string(buf, size_t(n));
}

bool Tree::exists(std::string_view relative) const {
  struct stat st;
  return ::stat(path(relative).c_str(), &st) == 0;
}

bool Tree::is_directory(std::string_view relative) const {
  struct stat st;
  return ::stat(path(relative).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<PathInfo> path_info(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0)
    return error_from_errno(errno, "cannot look at " + path);
  return PathInfo{.uid = st.st_uid,
                  .mode = mode_t(st.st_mode & 07777),
                  .is_link = S_ISLNK(st.st_mode),
                  .is_directory = S_ISDIR(st.st_mode),
                  .is_socket = S_ISSOCK(st.st_mode),
                  .is_regular = S_ISREG(st.st_mode)};
}

Result<std::string> real_path(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (!resolved)
    return error_from_errno(errno, "cannot resolve " + path);
  std::string out(resolved);
  std::free(resolved);  // NOLINT(cppcoreguidelines-no-malloc): realpath(3) allocates
  return out;
}

std::string default_tracefs_root() {
  Tree modern(kDefaultTracefsRoot);
  if (modern.exists("events"))
    return kDefaultTracefsRoot;
  Tree legacy("/sys/kernel/debug/tracing");
  if (legacy.exists("events"))
    return legacy.root();
  return kDefaultTracefsRoot;
}

}  // namespace pp::sys

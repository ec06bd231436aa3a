#include "sys/atomic_file.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "sys/fd.h"

namespace pp::sys {
namespace {

std::string parent_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

}  // namespace

Status sync_directory(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd)
    return error_from_errno(errno, "cannot open directory " + dir + " to sync it");
  if (::fsync(fd.get()) != 0)
    return error_from_errno(errno, "cannot sync directory " + dir);
  return ok_status();
}

namespace {

Status write_all(int fd, std::string_view content, const std::string& path) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return error_from_errno(errno, "cannot write " + path);
    }
    content.remove_prefix(size_t(n));
  }
  return ok_status();
}

}  // namespace

std::string temporary_of(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + name + ".tmp." + std::to_string(::getpid());
}

bool is_temporary_name(std::string_view name) {
  size_t at = name.rfind(".tmp.");
  if (name.size() < 2 || name[0] != '.' || at == std::string_view::npos || at < 2)
    return false;
  std::string_view pid = name.substr(at + 5);
  return !pid.empty() && pid.find_first_not_of("0123456789") == std::string_view::npos;
}

Status write_file_atomically(const std::string& path, std::string_view content, mode_t mode,
                             Durability durability) {
  std::string temp = temporary_of(path);
  ::unlink(temp.c_str());  // a leftover of an earlier crash of this pid number
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd)
    return error_from_errno(errno, "cannot create " + temp);
  Status status = write_all(fd.get(), content, temp);
  if (status.ok() && ::fchmod(fd.get(), mode) != 0)  // the umask must not weaken or widen it
    status = error_from_errno(errno, "cannot set the mode of " + temp);
  if (status.ok() && durability == Durability::kSync && ::fsync(fd.get()) != 0)
    status = error_from_errno(errno, "cannot sync " + temp);
  fd.reset();
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0)
    status = error_from_errno(errno, "cannot rename " + temp + " to " + path);
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return status;
  }
  return durability == Durability::kSync ? sync_directory(parent_of(path)) : ok_status();
}

Status remove_file_durably(const std::string& path, Durability durability) {
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT)
      return ok_status();
    return error_from_errno(errno, "cannot remove " + path);
  }
  return durability == Durability::kSync ? sync_directory(parent_of(path)) : ok_status();
}

Status make_directories(const std::string& path, mode_t mode) {
  if (path.empty())
    return Error(EINVAL, "empty directory path");
  for (size_t pos = 1;; pos++) {
    pos = path.find('/', pos);
    std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST)
      return error_from_errno(errno, "cannot create directory " + prefix);
    if (pos == std::string::npos)
      break;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return error_from_errno(errno, "cannot stat " + path);
  if (!S_ISDIR(st.st_mode))
    return errorf(ENOTDIR, "%s exists and is not a directory", path.c_str());
  return ok_status();
}

Status rename_path(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    return error_from_errno(errno, "cannot rename " + from + " to " + to);
  return ok_status();
}

namespace {
int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  return ::remove(path) == 0 || errno == ENOENT ? 0 : -1;
}
}  // namespace

Status remove_tree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return errno == ENOENT ? ok_status() : error_from_errno(errno, "cannot stat " + path);
  // Depth first, not crossing into another file system, links not followed.
  if (::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0)
    return error_from_errno(errno, "cannot remove " + path);
  return ok_status();
}

Status set_mode(const std::string& path, mode_t mode) {
  if (::chmod(path.c_str(), mode) != 0)
    return error_from_errno(errno, "cannot set the mode of " + path);
  return ok_status();
}

Status make_private_file(const std::string& path, const std::string& what, mode_t* tightened_from) {
  if (tightened_from)
    *tightened_from = 0;
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd.valid()) {
    if (errno == ELOOP)
      return errorf(ELOOP,
                    "the %s %s is a symbolic link, which is not followed (whoever controls "
                    "the link chooses the file written): give the file it points to",
                    what.c_str(), path.c_str());
    return error_from_errno(errno, "creating the " + what + " " + path);
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return error_from_errno(errno, "looking at the " + what + " " + path);
  if (!S_ISREG(st.st_mode))
    return errorf(EPERM, "the %s %s is not a regular file; give another path", what.c_str(),
                  path.c_str());
  if (st.st_uid != ::geteuid())
    return errorf(EPERM,
                  "the %s %s belongs to uid %u, not to uid %u that runs this command; another "
                  "user could read or change it: 'chown %u %s', or give another path",
                  what.c_str(), path.c_str(), unsigned(st.st_uid), unsigned(::geteuid()),
                  unsigned(::geteuid()), path.c_str());
  if ((st.st_mode & 077) != 0) {
    if (::fchmod(fd.get(), 0600) != 0)
      return error_from_errno(errno, "setting the mode of the " + what + " " + path +
                                         " to 0600 (run 'chmod 0600 " + path + "')");
    if (tightened_from)
      *tightened_from = mode_t(st.st_mode & 07777);
  }
  return ok_status();
}

}  // namespace pp::sys

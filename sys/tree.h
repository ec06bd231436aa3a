// Read access to a file tree under a root: sysfs, tracefs, procfs, the
// broker's run directory, or a fake of any of them in a test's temp dir.
// Every read under /sys, /proc and tracefs in the project goes through a Tree,
// so no code hard-codes a root.
//
//   sys::Tree sysfs("/sys");
//   auto type = sysfs.read("bus/event_source/devices/persistent/type");  // "6\n"
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp::sys {

inline constexpr const char* kDefaultSysfsRoot = "/sys";
inline constexpr const char* kDefaultTracefsRoot = "/sys/kernel/tracing";
inline constexpr const char* kDefaultProcRoot = "/proc";

class Tree {
 public:
  explicit Tree(std::string root);

  const std::string& root() const { return root_; }

  // The absolute path of `relative` under the root.
  std::string path(std::string_view relative) const;

  // The whole file. Refuses files over `limit` bytes (EFBIG): sysfs and
  // tracefs files are small, and a hostile tree must not exhaust memory.
  Result<std::string> read(std::string_view relative, size_t limit = 1 << 20) const;

  // The names in a directory, sorted, without "." and "..".
  Result<std::vector<std::string>> list(std::string_view relative) const;

  // The same names in the order the kernel returns them (readdir order), for
  // callers that must enumerate as perf does (tracepoint globs, PMU scans).
  Result<std::vector<std::string>> list_unsorted(std::string_view relative) const;

  // The target of a symbolic link (readlink(2)): "user:[4026531837]" for
  // /proc/<pid>/ns/user. EINVAL when it is no link.
  Result<std::string> read_link(std::string_view relative) const;

  bool exists(std::string_view relative) const;
  bool is_directory(std::string_view relative) const;

 private:
  std::string root_;
};

// What lstat(2) says of `path` itself: a symbolic link is not followed.
struct PathInfo {
  uid_t uid = 0;
  mode_t mode = 0;  // permission bits only (07777)
  bool is_link = false, is_directory = false, is_socket = false, is_regular = false;
};
Result<PathInfo> path_info(const std::string& path);

// `path` with every symbolic link, "." and ".." resolved, absolute
// (realpath(3)); the error names the path.
Result<std::string> real_path(const std::string& path);

// The tracefs root to use when none was given: /sys/kernel/tracing, or the
// old /sys/kernel/debug/tracing when only that one has events/.
std::string default_tracefs_root();

}  // namespace pp::sys

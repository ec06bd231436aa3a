// Watching a directory for its own removal (inotify), and waiting on several
// descriptors as one (epoll): the broker serves until a signal arrives or
// its run directory goes away.
//
//   PP_ASSIGN_OR_RETURN(auto watch, DirWatch::open("/run/perf-persistent",
//                                                  {"broker.sock", "broker.lock"}));
//   PP_ASSIGN_OR_RETURN(auto any, FdUnion::open({signals.fd(), watch.fd()}));
//   ... poll any.fd() ...
//   PP_ASSIGN_OR_RETURN(std::string gone, watch.read());  // "" when nothing that matters
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "base/result.h"
#include "sys/fd.h"

namespace pp::sys {

class DirWatch {
 public:
  // Watches `dir` for being removed or moved, and for `vital` entries in it
  // being removed or moved away.
  static Result<DirWatch> open(const std::string& dir, std::vector<std::string> vital);

  int fd() const { return fd_.get(); }

  // Reads what is pending: "" when nothing that matters happened, else what
  // did ("/run/perf-persistent was removed", "/run/perf-persistent/broker.sock
  // was removed"). Never blocks.
  Result<std::string> read();

 private:
  DirWatch(Fd fd, std::string dir, std::vector<std::string> vital)
      : fd_(std::move(fd)), dir_(std::move(dir)), vital_(std::move(vital)) {}
  Fd fd_;
  std::string dir_;
  std::vector<std::string> vital_;
};

// Changes to the entries of one directory (inotify): an entry created,
// removed, renamed or rewritten. What the keeper follows the broker's
// published registry with, so that it never has to ask the broker.
class DirChanges {
 public:
  // ENOENT when `dir` does not exist (yet).
  static Result<DirChanges> open(const std::string& dir);

  int fd() const { return fd_.get(); }

  struct Drained {
    bool changed = false;  // an entry changed
    bool gone = false;     // the directory itself went: open it again
  };
  // Reads what is pending, never blocking.
  Result<Drained> read();

 private:
  DirChanges(Fd fd, std::string dir) : fd_(std::move(fd)), dir_(std::move(dir)) {}
  Fd fd_;
  std::string dir_;
};

// One descriptor that is readable when any of `fds` is (an epoll set).
class FdUnion {
 public:
  static Result<FdUnion> open(std::initializer_list<int> fds);
  int fd() const { return fd_.get(); }

 private:
  explicit FdUnion(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace pp::sys

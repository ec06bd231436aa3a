#include "sys/dir_watch.h"

#include <sys/epoll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

namespace pp::sys {

namespace {

// Reads every inotify event queued on `fd` (non-blocking) and hands each to
// `on_event`; returns once the queue is empty.
Status drain_inotify(int fd, const std::string& dir,
                     const std::function<void(const inotify_event&)>& on_event) {
  alignas(inotify_event) char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return ok_status();
    if (n <= 0)
      return error_from_errno(n < 0 ? errno : EIO, "reading the watch on " + dir);
    for (char* p = buf; p < buf + n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(p);
      p += sizeof(inotify_event) + e->len;
      on_event(*e);
    }
  }
}

}  // namespace

Result<DirWatch> DirWatch::open(const std::string& dir, std::vector<std::string> vital) {
  Fd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd)
    return error_from_errno(errno, "inotify_init1");
  uint32_t mask = IN_DELETE_SELF | IN_MOVE_SELF | IN_DELETE | IN_MOVED_FROM | IN_DONT_FOLLOW;
  if (::inotify_add_watch(fd.get(), dir.c_str(), mask) < 0)
    return error_from_errno(errno, "cannot watch " + dir);
  return DirWatch(std::move(fd), dir, std::move(vital));
}

Result<std::string> DirWatch::read() {
  std::string what;
  PP_RETURN_IF_ERROR(drain_inotify(fd_.get(), dir_, [&](const inotify_event& e) {
    if (!what.empty())
      return;
    std::string name = e.len ? std::string(e.name) : std::string();
    if (e.mask & (IN_DELETE_SELF | IN_IGNORED))
      what = dir_ + " was removed";
    else if (e.mask & IN_MOVE_SELF)
      what = dir_ + " was moved or renamed";
    else if ((e.mask & (IN_DELETE | IN_MOVED_FROM)) &&
             std::find(vital_.begin(), vital_.end(), name) != vital_.end())
      what = dir_ + "/" + name + ((e.mask & IN_DELETE) ? " was removed" : " was moved away");
  }));
  return what;
}

Result<DirChanges> DirChanges::open(const std::string& dir) {
  Fd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd)
    return error_from_errno(errno, "inotify_init1");
  uint32_t mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE |
                  IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW;
  if (::inotify_add_watch(fd.get(), dir.c_str(), mask) < 0)
    return error_from_errno(errno, "cannot watch " + dir);
  return DirChanges(std::move(fd), dir);
}

Result<DirChanges::Drained> DirChanges::read() {
  Drained drained;
  PP_RETURN_IF_ERROR(drain_inotify(fd_.get(), dir_, [&](const inotify_event& e) {
    if (e.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
      drained.gone = true;
    else
      drained.changed = true;
    if (e.mask & IN_Q_OVERFLOW)
      drained.changed = true;
  }));
  return drained;
}

Result<FdUnion> FdUnion::open(std::initializer_list<int> fds) {
  Fd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep)
    return error_from_errno(errno, "epoll_create1");
  for (int fd : fds) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd, &ev) != 0)
      return error_from_errno(errno, "epoll_ctl");
  }
  return FdUnion(std::move(ep));
}

}  // namespace pp::sys

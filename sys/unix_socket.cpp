#include "sys/unix_socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "sys/atomic_file.h"

namespace pp::sys {
namespace {

Result<sockaddr_un> socket_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() > max_socket_path())
    return errorf(ENAMETOOLONG,
                  "socket path '%s' is %zu bytes; a Unix socket path holds 1 to %zu: choose a "
                  "shorter run directory",
                  path.c_str(), path.size(), max_socket_path());
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

Status wait_writable(int fd) {
  pollfd p = {fd, POLLOUT, 0};
  for (;;) {
    int n = ::poll(&p, 1, -1);
    if (n >= 0)
      return ok_status();
    if (errno != EINTR)
      return error_from_errno(errno, "poll");
  }
}

// Newer than some C libraries' headers; the kernel ignores what it does not know.
#ifndef SO_PASSPIDFD
#define SO_PASSPIDFD 76
#endif
#ifndef SCM_PIDFD
#define SCM_PIDFD 0x04
#endif

Status enable_credentials(int fd) {
  int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) != 0)
    return error_from_errno(errno, "setsockopt(SO_PASSCRED)");
  (void)::setsockopt(fd, SOL_SOCKET, SO_PASSPIDFD, &one, sizeof(one));  // Linux 6.5+
  return ok_status();
}

}  // namespace

bool pidfd_alive(int pidfd) {
  // Signal 0 checks without sending. EPERM means the process is there but
  // this one may not signal it (another uid, and no CAP_KILL: the broker's
  // unit keeps only CAP_PERFMON); only ESRCH means it has exited.
  if (::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) == 0)
    return true;
  return errno == EPERM;
}

Status UnixSocket::pass_credentials() {
  return enable_credentials(fd_.get());
}

Status UnixListener::pass_credentials() {
  return enable_credentials(fd_.get());
}

Result<ReceivedMessage> UnixSocket::receive_message(std::span<uint8_t> buf) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred)) + CMSG_SPACE(sizeof(int)) +
                                CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  for (;;) {
    iovec iov = {buf.data(), buf.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return error_from_errno(errno, "cannot receive from the socket");
    }
    ReceivedMessage out;
    out.bytes = size_t(n);
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET)
        continue;
      if (c->cmsg_type == SCM_RIGHTS) {
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
          Fd closed(fd);
        }
        out.fds_received += count;
      } else if (c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len >= CMSG_LEN(sizeof(ucred))) {
        ucred cred;
        std::memcpy(&cred, CMSG_DATA(c), sizeof(cred));
        out.sender = PeerCredentials{cred.pid, cred.uid, cred.gid};
      } else if (c->cmsg_type == SCM_PIDFD && c->cmsg_len >= CMSG_LEN(sizeof(int))) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
        out.sender_pidfd = Fd(fd);
      }
    }
    out.fds_truncated = (msg.msg_flags & MSG_CTRUNC) != 0;
    return out;
  }
}

size_t max_socket_path() {
  return sizeof(sockaddr_un::sun_path) - 1;
}

Result<Fd> duplicate(int fd) {
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0)
    return error_from_errno(errno, "cannot duplicate fd " + std::to_string(fd));
  return Fd(copy);
}

Result<int> wait_for(std::span<pollfd> fds, int timeout_ms) {
  for (;;) {
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n >= 0)
      return n;
    if (errno != EINTR)
      return error_from_errno(errno, "poll");
  }
}

Result<UnixSocket> UnixSocket::connect(const std::string& path) {
  PP_ASSIGN_OR_RETURN(sockaddr_un addr, socket_address(path));
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd)
    return error_from_errno(errno, "socket");
  for (;;) {
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0)
      break;
    if (errno != EINTR)
      return error_from_errno(errno, "cannot connect to " + path);
  }
  return UnixSocket(std::move(fd));
}

Result<std::pair<UnixSocket, UnixSocket>> UnixSocket::pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    return error_from_errno(errno, "socketpair");
  return std::pair<UnixSocket, UnixSocket>(UnixSocket(Fd(fds[0])), UnixSocket(Fd(fds[1])));
}

Result<size_t> UnixSocket::send_some(std::span<const uint8_t> data, std::span<const int> fds) {
  if (fds.size() > kMaxFdsPerMessage)
    return errorf(EINVAL, "cannot pass %zu descriptors in one message (at most %zu)", fds.size(),
                  kMaxFdsPerMessage);
  if (data.empty())
    return fds.empty() ? Result<size_t>(size_t(0))
                       : Error(EINVAL, "descriptors must travel with at least one byte");
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  iovec iov = {const_cast<uint8_t*>(data.data()), data.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    std::memset(control, 0, sizeof(control));
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL);
    if (n >= 0)
      return size_t(n);
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
      return size_t(0);
    return error_from_errno(errno, "cannot send on the socket");
  }
}

Status UnixSocket::send(std::span<const uint8_t> data, std::span<const int> fds) {
  // A blocking socket returns EAGAIN only when its SO_SNDTIMEO ran out.
  int flags = ::fcntl(fd_.get(), F_GETFL);
  bool blocking = flags >= 0 && !(flags & O_NONBLOCK);
  bool first = true;
  while (!data.empty()) {
    PP_ASSIGN_OR_RETURN(size_t sent, send_some(data, first ? fds : std::span<const int>{}));
    if (sent == 0) {
      if (blocking)
        return Error(ETIMEDOUT, "timed out sending on the socket: the peer is not reading");
      PP_RETURN_IF_ERROR(wait_writable(fd_.get()));
      continue;
    }
    first = false;
    data = data.subspan(sent);
  }
  return ok_status();
}

Result<size_t> UnixSocket::receive(std::span<uint8_t> buf, std::vector<Fd>* fds) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  for (;;) {
    iovec iov = {buf.data(), buf.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return error_from_errno(errno, "cannot receive from the socket");
    }
    std::vector<Fd> received;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
        continue;
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; i++) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        received.emplace_back(fd);
      }
    }
    if (msg.msg_flags & MSG_CTRUNC)
      return Error(EPROTO, "descriptors sent with a message did not fit; the message is refused");
    if (fds)
      for (Fd& fd : received)
        fds->push_back(std::move(fd));
    return size_t(n);
  }
}

Result<PeerCredentials> UnixSocket::peer_credentials() const {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd_.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return error_from_errno(errno, "getsockopt(SO_PEERCRED)");
  return PeerCredentials{cred.pid, cred.uid, cred.gid};
}

Status UnixSocket::set_nonblocking(bool nonblocking) {
  int flags = ::fcntl(fd_.get(), F_GETFL);
  if (flags < 0)
    return error_from_errno(errno, "fcntl(F_GETFL)");
  flags = nonblocking ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (::fcntl(fd_.get(), F_SETFL, flags) != 0)
    return error_from_errno(errno, "fcntl(F_SETFL)");
  return ok_status();
}

Status UnixSocket::set_timeouts(int ms) {
  timeval tv = {ms / 1000, suseconds_t(ms % 1000) * 1000};
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
      ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0)
    return error_from_errno(errno, "setsockopt(SO_RCVTIMEO/SO_SNDTIMEO)");
  return ok_status();
}

Result<UnixListener> UnixListener::adopt(Fd fd, const std::string& path) {
  auto not_ours = [&](const std::string& why) {
    return Error(EINVAL, "the descriptor handed over for " + path + " " + why);
  };
  int type = 0;
  socklen_t len = sizeof(type);
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM)
    return not_ours("is not a stream socket");
  int listening = 0;
  len = sizeof(listening);
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening)
    return not_ours("is not listening");
  sockaddr_un addr{};
  socklen_t addr_len = sizeof(addr);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0 ||
      addr.sun_family != AF_UNIX ||
      std::string(addr.sun_path, strnlen(addr.sun_path, sizeof(addr.sun_path))) != path)
    return not_ours("is bound elsewhere");
  int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0)
    return error_from_errno(errno, "cannot make the socket of " + path + " non-blocking");
  (void)::fcntl(fd.get(), F_SETFD, FD_CLOEXEC);
  UnixListener listener;
  listener.fd_ = std::move(fd);
  listener.path_ = path;
  return listener;
}

UnixListener::~UnixListener() {
  if (fd_ && !path_.empty())
    ::unlink(path_.c_str());
}

UnixListener& UnixListener::operator=(UnixListener&& other) noexcept {
  if (this != &other) {
    if (fd_ && !path_.empty())
      ::unlink(path_.c_str());
    fd_ = std::move(other.fd_);
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

Result<UnixListener> UnixListener::listen(const std::string& path, mode_t mode, int backlog) {
  PP_ASSIGN_OR_RETURN(sockaddr_un addr, socket_address(path));
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd)
    return error_from_errno(errno, "socket");
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0)
    return error_from_errno(errno, "cannot bind a socket at " + path);
  UnixListener listener;
  listener.fd_ = std::move(fd);
  listener.path_ = path;  // from here on, the destructor removes it
  PP_RETURN_IF_ERROR(set_mode(path, mode));
  if (::listen(listener.fd_.get(), backlog) != 0)
    return error_from_errno(errno, "cannot listen on " + path);
  return listener;
}

void SpareFd::take() {
  if (!fd_.valid())
    fd_ = Fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
}

Result<UnixSocket> UnixListener::accept() {
  for (;;) {
    int fd = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0)
      return UnixSocket(Fd(fd));
    if (errno == EINTR || errno == ECONNABORTED)
      continue;
    return error_from_errno(errno, "accept on " + path_);
  }
}

}  // namespace pp::sys

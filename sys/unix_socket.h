// Unix stream sockets, the broker's transport: a listener bound to a path in
// the run directory, connected sockets that carry bytes and file descriptors
// (SCM_RIGHTS), and the peer's credentials (SO_PEERCRED).
//
//   auto listener = UnixListener::listen("/run/perf-persistent/broker.sock", 0666);
//   auto client = UnixSocket::connect("/run/perf-persistent/broker.sock");
//   client->send(bytes, {perf_fd});          // the fd travels with the bytes
//   std::vector<Fd> fds;
//   auto n = server.receive(buffer, &fds);   // fds arrive close-on-exec
//
// Every socket is close-on-exec; sends never raise SIGPIPE (EPIPE instead).
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "sys/fd.h"

namespace pp::sys {

// At most this many fds travel with one message (SCM_RIGHTS's own limit is 253).
inline constexpr size_t kMaxFdsPerMessage = 64;

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

// One message as the receiving end saw it (UnixSocket::receive_message):
// its bytes, who sent them, and what came with them.
struct ReceivedMessage {
  size_t bytes = 0;  // 0: the peer closed
  // The sending process at send time (SCM_CREDENTIALS: its pid and real uid
  // and gid), when the socket passes credentials (pass_credentials()).
  std::optional<PeerCredentials> sender;
  // A pidfd of the sender (SCM_PIDFD, Linux 6.5 and later), invalid when the
  // kernel sent none: while it refers to a live process, `sender->pid` is
  // still that process.
  Fd sender_pidfd;
  size_t fds_received = 0;     // SCM_RIGHTS descriptors that came; all closed unread
  bool fds_truncated = false;  // more came than fit (MSG_CTRUNC): the rest were discarded
};

class UnixSocket {
 public:
  UnixSocket() = default;
  explicit UnixSocket(Fd fd) : fd_(std::move(fd)) {}

  // Connects to the socket at `path`. ENOENT: nothing there; ECONNREFUSED:
  // a stale socket nobody listens on; EACCES: the directory or the socket is
  // not ours to use.
  static Result<UnixSocket> connect(const std::string& path);

  // Two connected sockets (socketpair), for tests and in-process peers.
  static Result<std::pair<UnixSocket, UnixSocket>> pair();

  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }
  void close() { fd_.reset(); }

  // Sends all of `data`, waiting for room when the socket is full (blocking
  // or not); `fds` (at most kMaxFdsPerMessage) ride with the first byte. A
  // socket timeout (set_timeouts) ends the wait with EAGAIN.
  Status send(std::span<const uint8_t> data, std::span<const int> fds = {});

  // Sends what fits now without waiting: the number of bytes sent, 0 when the
  // socket is full (the fds went only when the result is > 0). For an event
  // loop that keeps the rest and waits for POLLOUT.
  Result<size_t> send_some(std::span<const uint8_t> data, std::span<const int> fds = {});

  // Receives up to buf.size() bytes; 0 means the peer closed. Descriptors that
  // came with them are appended to `fds` (close-on-exec); when `fds` is null
  // any that came are closed. A message whose descriptors did not fit
  // (MSG_CTRUNC) is EPROTO.
  Result<size_t> receive(std::span<uint8_t> buf, std::vector<Fd>* fds);

  // Receives up to buf.size() bytes as one message, with its sender's
  // credentials when they are passed. Descriptors that came are closed and
  // counted; too many is not an error here (fds_truncated), so the caller
  // can answer the peer. The kernel never joins bytes of two senders in one
  // message.
  Result<ReceivedMessage> receive_message(std::span<uint8_t> buf);

  // Asks the kernel to attach the sender's credentials (SO_PASSCRED) and,
  // where it can, a pidfd (SO_PASSPIDFD) to every message this socket
  // receives. Sockets accepted from a listener that passes them inherit it.
  Status pass_credentials();

  // Who is at the other end, as the kernel saw it at connect time.
  Result<PeerCredentials> peer_credentials() const;

  Status set_nonblocking(bool nonblocking);
  // SO_RCVTIMEO / SO_SNDTIMEO: a blocking call fails with EAGAIN after `ms`.
  Status set_timeouts(int ms);

 private:
  Fd fd_;
};

class UnixListener {
 public:
  UnixListener() = default;
  ~UnixListener();
  UnixListener(UnixListener&& other) noexcept
      : fd_(std::move(other.fd_)), path_(std::exchange(other.path_, {})) {}
  UnixListener& operator=(UnixListener&& other) noexcept;
  UnixListener(const UnixListener&) = delete;
  UnixListener& operator=(const UnixListener&) = delete;

  // Binds a non-blocking listening socket at `path` with permissions `mode`.
  // A file already at `path` is an error (EADDRINUSE): the caller removes a
  // stale socket only once it knows no other listener owns it.
  static Result<UnixListener> listen(const std::string& path, mode_t mode, int backlog = 64);

  // A listening socket another process made and passed on (SCM_RIGHTS, or
  // systemd's fd store), bound at `path`: made non-blocking. EINVAL when
  // `fd` is no listening Unix stream socket.
  static Result<UnixListener> adopt(Fd fd, const std::string& path);

  // Leaves the socket file in place when this listener goes: another
  // process holds the same socket and serves it on.
  void keep_path() { path_.clear(); }

  // The next pending connection, or EAGAIN when there is none.
  Result<UnixSocket> accept();

  int fd() const { return fd_.get(); }
  const std::string& path() const { return path_; }

  // UnixSocket::pass_credentials() for every socket accepted from here on.
  Status pass_credentials();

 private:
  Fd fd_;
  std::string path_;  // unlinked on destruction
};

// One descriptor held in reserve (an fd of /dev/null), so that a server out
// of descriptors (accept fails with EMFILE) can still accept one connection,
// tell it why it is turned away and close it: release() frees the slot just
// before that accept, take() holds one again after the close.
class SpareFd {
 public:
  void take();  // best effort: held() says whether it worked
  void release() { fd_.reset(); }
  bool held() const { return fd_.valid(); }

 private:
  Fd fd_;
};

// The longest socket path the kernel accepts (sun_path less its NUL).
size_t max_socket_path();

// A second fd for the same open file (close-on-exec), e.g. to queue an fd
// for sending while its owner may close the original.
Result<Fd> duplicate(int fd);

// Whether the process a pidfd refers to is still alive (pidfd_send_signal
// with signal 0): false once it has exited.
bool pidfd_alive(int pidfd);

// poll(2) on sockets and pipes: the number of ready fds, 0 on timeout; EINTR
// is retried.
Result<int> wait_for(std::span<struct pollfd> fds, int timeout_ms);

}  // namespace pp::sys

#include "sys/unix_socket.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace pp::sys {
namespace {

std::span<const uint8_t> bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string receive_string(UnixSocket& s, std::vector<Fd>* fds, size_t max = 256) {
  std::vector<uint8_t> buf(max);
  auto n = s.receive(buf, fds);
  EXPECT_TRUE(n.ok()) << n.error().message();
  return n.ok() ? std::string(buf.begin(), buf.begin() + long(*n)) : "";
}

TEST(UnixSocket, ListenConnectAcceptAndCredentials) {
  testing::TempDir dir;
  std::string path = dir.path("broker.sock");
  auto listener = UnixListener::listen(path, 0666);
  ASSERT_TRUE(listener.ok()) << listener.error().message();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0666u);

  auto none = listener->accept();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), EAGAIN);

  auto client = UnixSocket::connect(path);
  ASSERT_TRUE(client.ok()) << client.error().message();
  auto server = listener->accept();
  ASSERT_TRUE(server.ok()) << server.error().message();
  auto cred = server->peer_credentials();
  ASSERT_TRUE(cred.ok());
  EXPECT_EQ(cred->pid, ::getpid());
  EXPECT_EQ(cred->uid, ::geteuid());

  ASSERT_TRUE(client->send(bytes("hello")).ok());
  EXPECT_EQ(receive_string(*server, nullptr), "hello");
  client->close();
  std::vector<uint8_t> buf(8);
  auto eof = server->receive(buf, nullptr);
  ASSERT_TRUE(eof.ok());
  EXPECT_EQ(*eof, 0u);
}

TEST(UnixSocket, ListenerRemovesItsSocketAndRefusesAnExistingFile) {
  testing::TempDir dir;
  std::string path = dir.path("broker.sock");
  {
    auto listener = UnixListener::listen(path, 0600);
    ASSERT_TRUE(listener.ok());
    auto second = UnixListener::listen(path, 0600);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().code(), EADDRINUSE);
    EXPECT_TRUE(::access(path.c_str(), F_OK) == 0) << "the failed listener removed the socket";
  }
  EXPECT_NE(::access(path.c_str(), F_OK), 0) << "socket left after the listener went";
}

TEST(UnixSocket, ConnectErrorsSayWhere) {
  testing::TempDir dir;
  auto missing = UnixSocket::connect(dir.path("nothing.sock"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ENOENT);
  EXPECT_NE(missing.error().message().find(dir.path("nothing.sock")), std::string::npos);

  auto too_long = UnixSocket::connect("/" + std::string(200, 'x'));
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code(), ENAMETOOLONG);
}

TEST(UnixSocket, DescriptorsTravelWithTheBytes) {
  auto pair = UnixSocket::pair();
  ASSERT_TRUE(pair.ok());
  auto& [a, b] = *pair;
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  Fd read_end(p[0]), write_end(p[1]);
  int to_send[] = {read_end.get()};
  ASSERT_TRUE(a.send(bytes("fd!"), to_send).ok());
  read_end.reset();  // only the passed copy keeps the pipe's read side open

  std::vector<Fd> fds;
  EXPECT_EQ(receive_string(b, &fds), "fd!");
  ASSERT_EQ(fds.size(), 1u);
  EXPECT_TRUE(::fcntl(fds[0].get(), F_GETFD) & FD_CLOEXEC);
  ASSERT_EQ(::write(write_end.get(), "z", 1), 1);
  char c = 0;
  ASSERT_EQ(::read(fds[0].get(), &c, 1), 1);
  EXPECT_EQ(c, 'z');
}

TEST(UnixSocket, UnwantedDescriptorsAreClosed) {
  auto pair = UnixSocket::pair();
  ASSERT_TRUE(pair.ok());
  auto& [a, b] = *pair;
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  Fd read_end(p[0]), write_end(p[1]);
  int to_send[] = {read_end.get()};
  ASSERT_TRUE(a.send(bytes("x"), to_send).ok());
  read_end.reset();
  EXPECT_EQ(receive_string(b, nullptr), "x");
  // Every read side is closed now, so writing fails with EPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  EXPECT_EQ(::write(write_end.get(), "z", 1), -1);
  EXPECT_EQ(errno, EPIPE);
}

TEST(UnixSocket, SendSomeReportsAFullSocketWithoutBlocking) {
  auto pair = UnixSocket::pair();
  ASSERT_TRUE(pair.ok());
  auto& [a, b] = *pair;
  ASSERT_TRUE(a.set_nonblocking(true).ok());
  std::vector<uint8_t> chunk(1 << 16, 'x');
  size_t total = 0;
  for (int i = 0; i < 1000; i++) {
    auto n = a.send_some(chunk);
    ASSERT_TRUE(n.ok());
    if (*n == 0)
      break;
    total += *n;
  }
  EXPECT_GT(total, 0u);
  auto full = a.send_some(chunk);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(*full, 0u) << "a full socket must report 0, not block";
}

TEST(UnixSocket, BlockingSendTimesOutWhenThePeerDoesNotRead) {
  auto pair = UnixSocket::pair();
  ASSERT_TRUE(pair.ok());
  auto& [a, b] = *pair;
  ASSERT_TRUE(a.set_timeouts(100).ok());
  std::vector<uint8_t> big(8 << 20, 'x');
  Status s = a.send(big);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ETIMEDOUT);
}

TEST(UnixSocket, TooManyDescriptorsIsRefused) {
  auto pair = UnixSocket::pair();
  ASSERT_TRUE(pair.ok());
  std::vector<int> fds(kMaxFdsPerMessage + 1, 0);
  auto n = pair->first.send_some(bytes("x"), fds);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code(), EINVAL);
}

// A process that may not signal another (another uid, no CAP_KILL: the
// broker under its unit) still sees it alive; a process that exited is not.
TEST(PidfdAlive, AliveEvenWhenSignallingItIsNotAllowed) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root, to become another uid";
  int self = int(::syscall(SYS_pidfd_open, ::getpid(), 0));
  ASSERT_GE(self, 0);
  EXPECT_TRUE(pidfd_alive(self));
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // uid 65534 has no capabilities and may not signal root's process.
    if (::setgid(65534) != 0 || ::setuid(65534) != 0)
      ::_exit(2);
    bool denied = ::syscall(SYS_pidfd_send_signal, self, 0, nullptr, 0) != 0 && errno == EPERM;
    ::_exit(!denied ? 3 : pidfd_alive(self) ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: called dead; 2: setuid failed; 3: not denied";
  pid_t exited = ::fork();
  ASSERT_GE(exited, 0);
  if (exited == 0)
    ::_exit(0);
  int pidfd = int(::syscall(SYS_pidfd_open, exited, 0));
  ASSERT_GE(pidfd, 0);
  ASSERT_EQ(::waitpid(exited, &status, 0), exited);
  EXPECT_FALSE(pidfd_alive(pidfd));
  ::close(pidfd);
  ::close(self);
}

}  // namespace
}  // namespace pp::sys

// The broker against hostile and careless clients, in-process and pumped one
// loop pass at a time: who a request is checked against (its sender, not
// whoever connected), connection limits and idle timeouts, requests that
// arrive after their deadline, too many descriptors, a log flood, and a
// broker out of file descriptors. The bounds are persistent/limits.h's.
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <gtest/gtest.h>
#include <map>
#include <sstream>
#include <thread>

#include "broker/broker.h"
#include "broker/log.h"
#include "persistent/broker_client.h"
#include "persistent/protocol.h"
#include "persistent/testing/raw_call.h"
#include "persistent/testing/test_doubles.h"
#include "tests/support/temp_dir.h"

namespace pp::broker {
namespace {

std::string create_payload(const std::string& event = "syscalls:sys_enter_getppid") {
  persistent::Request r;
  r.op = persistent::Op::kCreate;
  r.create.event = event;
  return persistent::encode_request(r);
}

// Blocking request/reply on a socket whose broker runs elsewhere (a child
// process of the test talks to the broker its parent pumps).
using persistent::testing::raw_call;

// Drops every capability of the calling process (capset), keeping its uids.
bool drop_all_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  return ::syscall(SYS_capset, &header, data) == 0;
}

bool become_nobody() {
  return ::setgroups(0, nullptr) == 0 && ::setresgid(65534, 65534, 65534) == 0 &&
         ::setresuid(65534, 65534, 65534) == 0;
}

class BrokerLimitsTest : public ::testing::Test {
 protected:
  BrokerLimitsTest() {
    sysfs_.write("devices/system/cpu/online", "0-1\n");
    config_.run_dir = tmp_.path("run");
    config_.sysfs_root = sysfs_.path();
    config_.kernel = &kernel_;
    config_.resolver = &resolver_;
    config_.clock = [] { return int64_t(1700000000); };
    config_.log = &log_;
  }

  std::unique_ptr<Broker> start() {
    auto broker = Broker::start(config_);
    EXPECT_TRUE(broker.ok()) << broker.error().message();
    return broker.ok() ? std::move(*broker) : nullptr;
  }

  void pump(Broker& broker, int passes = 5) {
    for (int i = 0; i < passes; i++) {
      auto r = broker.serve_once(-1, 5);
      ASSERT_TRUE(r.ok()) << r.error().message();
    }
  }

  sys::UnixSocket connect() {
    auto s = sys::UnixSocket::connect(socket_path());
    EXPECT_TRUE(s.ok()) << s.error().message();
    return std::move(*s);
  }

  std::string socket_path() const { return config_.run_dir + "/broker.sock"; }

  // Sends `payload` and pumps the broker until its reply arrives.
  Result<json> call(Broker& broker, sys::UnixSocket& s, const std::string& payload) {
    std::string frame = persistent::encode_frame(persistent::FrameKind::kRequest, payload);
    PP_RETURN_IF_ERROR(s.send(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(frame.data()), frame.size())));
    return pumped_reply(broker, s);
  }

  Result<json> pumped_reply(Broker& broker, sys::UnixSocket& s) {
    persistent::FrameReader reader(persistent::FrameKind::kReply, persistent::kMaxReplyPayload);
    (void)s.set_nonblocking(true);
    for (int i = 0; i < 400; i++) {
      PP_ASSIGN_OR_RETURN(auto next, reader.next());
      if (next)
        return persistent::decode_reply(*next);
      pump(broker, 1);
      uint8_t buf[65536];
      auto n = s.receive(buf, nullptr);
      if (n.ok() && *n == 0)
        return Error(ECONNRESET, "closed without a reply");
      if (n.ok())
        reader.append(std::span<const uint8_t>(buf, *n));
    }
    return Error(ETIMEDOUT, "no reply");
  }

  // Runs `child` in a forked process while pumping the broker; its exit code.
  int run_child(Broker& broker, const std::function<int()>& child) {
    pid_t pid = ::fork();
    if (pid == 0)
      ::_exit(child());
    int status = 0;
    for (int i = 0; i < 4000; i++) {
      pump(broker, 1);
      if (::waitpid(pid, &status, WNOHANG) == pid)
        return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }

  // Messages, not lines: a message's help goes on indented lines below it.
  size_t log_messages() const {
    std::istringstream in(log_.str());
    size_t n = 0;
    for (std::string line; std::getline(in, line);)
      n += !line.starts_with("  ");
    return n;
  }

  ::pp::testing::TempDir tmp_, sysfs_;
  persistent::testing::RefusingKernel kernel_{EACCES};
  persistent::testing::TestResolver resolver_;
  BrokerConfig config_;
  std::ostringstream log_;
};

// A root process connects, then hands the socket to a child that becomes
// nobody: the child's create and open are the child's, and refused.
TEST_F(BrokerLimitsTest, SocketHandedToAnUnprivilegedChildSpeaksWithTheChildsRights) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to become another user";
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  ASSERT_TRUE(call(*broker, s, "{\"op\":\"ping\"}").ok()) << "the connector is root";
  ASSERT_TRUE(s.set_nonblocking(false).ok());
  ASSERT_TRUE(s.set_timeouts(5000).ok());
  int code = run_child(*broker, [&] {
    if (!become_nobody())
      return 10;
    auto created = raw_call(s, create_payload());
    if (created.ok() || created.error().code() != EACCES)
      return 11;
    if (created.error().message().find("uid 65534") == std::string::npos)
      return 12;
    std::vector<sys::Fd> fds;
    auto opened = raw_call(s, "{\"op\":\"open\",\"id\":1,\"cpu\":0}", &fds);
    if (opened.ok() || opened.error().code() != EACCES || !fds.empty())
      return 13;
    if (!raw_call(s, "{\"op\":\"list\"}").ok())
      return 14;
    return 0;
  });
  EXPECT_EQ(code, 0) << "see the exit codes in the child above";
  EXPECT_EQ(kernel_.opens, 0) << "the child's create reached the kernel";
  EXPECT_NE(log_.str().find("refused to create for uid 65534"), std::string::npos) << log_.str();
}

// Root with an empty effective set is refused where `perf record -a` is:
// the check is CAP_PERFMON or CAP_SYS_ADMIN, not uid 0.
TEST_F(BrokerLimitsTest, RootWithoutCapabilitiesIsRefused) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root";
  auto broker = start();
  ASSERT_TRUE(broker);
  std::string path = socket_path();
  int code = run_child(*broker, [&] {
    if (!drop_all_capabilities())
      return 10;
    auto s = sys::UnixSocket::connect(path);
    if (!s.ok() || !s->set_timeouts(5000).ok())
      return 11;
    auto created = raw_call(*s, create_payload());
    if (created.ok() || created.error().code() != EACCES)
      return 12;
    if (created.error().message().find("uid 0") == std::string::npos ||
        created.error().message().find("it is root, but without CAP_PERFMON") == std::string::npos)
      return 13;
    return raw_call(*s, "{\"op\":\"list\"}").ok() ? 0 : 14;
  });
  EXPECT_EQ(code, 0) << "see the exit codes in the child above";
  EXPECT_EQ(kernel_.opens, 0);
}

// {"op":"ping","op":"kill"} is not a ping to one reader and a kill to another.
TEST_F(BrokerLimitsTest, DuplicateKeysAreRefused) {
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  auto r = call(*broker, s, "{\"op\":\"ping\",\"op\":\"kill\",\"ref\":\"1\"}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), EINVAL);
  EXPECT_NE(r.error().message().find("the key \"op\" twice"), std::string::npos)
      << r.error().message();
  EXPECT_TRUE(call(*broker, s, "{\"op\":\"ping\"}").ok()) << "the connection stays";
}

// A request the client stopped waiting for is not carried out later.
TEST_F(BrokerLimitsTest, RequestPastItsDeadlineIsNotCarriedOut) {
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  persistent::Request late;
  late.op = persistent::Op::kCreate;
  late.create.event = "syscalls:sys_enter_getppid";
  late.deadline_ms = 1000;  // 1970
  auto r = call(*broker, s, persistent::encode_request(late));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ETIMEDOUT);
  EXPECT_NE(r.error().message().find("it was not carried out"), std::string::npos)
      << r.error().message();
  EXPECT_EQ(kernel_.opens, 0) << "an expired create reached the kernel";
  // The deadline's own millisecond is past: the client gives up within it.
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  late.deadline_ms = now_ms;
  auto at_deadline = call(*broker, s, persistent::encode_request(late));
  ASSERT_FALSE(at_deadline.ok());
  EXPECT_EQ(at_deadline.error().code(), ETIMEDOUT) << at_deadline.error().message();
  EXPECT_EQ(kernel_.opens, 0) << "a create in its deadline's millisecond reached the kernel";
  late.deadline_ms = now_ms + 60000;
  auto in_time = call(*broker, s, persistent::encode_request(late));
  ASSERT_FALSE(in_time.ok());
  EXPECT_EQ(in_time.error().code(), EACCES) << "in time, it reaches the (refusing) kernel";
  EXPECT_EQ(kernel_.opens, 1);
}

// More descriptors than a request may carry: an error reply saying so, then
// the connection closes (its stream was cut), not a silent disconnect.
TEST_F(BrokerLimitsTest, TooManyDescriptorsGetAnErrorReply) {
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  std::vector<sys::Fd> pipes;
  std::vector<int> raw;
  for (size_t i = 0; i < sys::kMaxFdsPerMessage + 36; i++) {
    int p[2];
    ASSERT_EQ(::pipe(p), 0);
    pipes.emplace_back(p[0]);
    pipes.emplace_back(p[1]);
    raw.push_back(p[0]);
  }
  std::string frame =
      persistent::encode_frame(persistent::FrameKind::kRequest, "{\"op\":\"ping\"}");
  std::vector<char> control(CMSG_SPACE(sizeof(int) * raw.size()));
  iovec iov = {frame.data(), frame.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * raw.size());
  std::memcpy(CMSG_DATA(c), raw.data(), sizeof(int) * raw.size());
  ASSERT_EQ(::sendmsg(s.fd(), &msg, 0), ssize_t(frame.size()));
  auto r = pumped_reply(*broker, s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), EINVAL);
  EXPECT_NE(r.error().message().find("more descriptors than the broker receives (at most 64"),
            std::string::npos)
      << r.error().message();
}

// Nothing under way: closed after the idle timeout, and said so.
TEST_F(BrokerLimitsTest, IdleConnectionsAreClosed) {
  config_.idle_timeout_ms = 100;
  auto broker = start();
  ASSERT_TRUE(broker);
  auto idle = connect();
  auto busy = connect();
  pump(*broker);
  EXPECT_EQ(broker->client_count(), 2u);
  for (int i = 0; i < 6; i++) {
    ::usleep(30 * 1000);
    ASSERT_TRUE(call(*broker, busy, "{\"op\":\"ping\"}").ok());
  }
  for (int i = 0; i < 20 && broker->client_count() > 1; i++)
    pump(*broker, 1);
  EXPECT_EQ(broker->client_count(), 1u) << "the idle one is gone, the busy one stays";
  uint8_t buf[16];
  (void)idle.set_nonblocking(false);
  auto n = idle.receive(buf, nullptr);
  EXPECT_TRUE(n.ok() && *n == 0) << "the broker closed it";
  EXPECT_NE(log_.str().find("idle for 100 ms"), std::string::npos) << log_.str();
}

// One user may hold max_clients_per_uid connections; a full broker makes room
// for root by closing the longest-idle connection of whoever holds the most.
TEST_F(BrokerLimitsTest, ConnectionsPerUserAreLimitedAndRootIsAlwaysServed) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to become another user";
  config_.max_clients = 8;
  config_.max_clients_per_uid = 6;
  auto broker = start();
  ASSERT_TRUE(broker);
  ASSERT_EQ(::chmod(tmp_.path().c_str(), 0711), 0);
  ASSERT_EQ(::chmod(config_.run_dir.c_str(), 0711), 0);
  std::string path = socket_path();
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  pid_t child = ::fork();
  if (child == 0) {
    if (!become_nobody())
      ::_exit(10);
    std::vector<sys::UnixSocket> held;
    for (int i = 0; i < 8; i++) {
      auto s = sys::UnixSocket::connect(path);
      if (!s.ok())
        ::_exit(11);
      held.push_back(std::move(*s));
    }
    char c = 'r';
    (void)!::write(ready[1], &c, 1);
    (void)!::read(done[0], &c, 1);
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  pump(*broker, 20);
  EXPECT_EQ(broker->client_count(), 6u) << "nobody got 6 connections, the rest were turned away";
  EXPECT_NE(log_.str().find("uid 65534 has 6 connections to the broker already"), std::string::npos)
      << log_.str();
  // Root fills the broker and then some: nobody's idle ones make room.
  std::vector<sys::UnixSocket> mine;
  for (int i = 0; i < 4; i++) {
    mine.push_back(connect());
    auto r = call(*broker, mine.back(), "{\"op\":\"list\"}");
    EXPECT_TRUE(r.ok()) << i << ": " << r.error().message();
  }
  EXPECT_EQ(broker->client_count(), 8u);
  EXPECT_NE(log_.str().find("to make room for uid 0"), std::string::npos) << log_.str();
  ASSERT_EQ(::write(done[1], "d", 1), 1);
  ::waitpid(child, nullptr, 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]})
    ::close(fd);
}

// A flood of failing requests writes a bounded number of lines, then says
// how many it left out. The log's clock is the test's: the 500 requests fall
// in one window however long they take, and the next comes after it without
// a sleep.
TEST_F(BrokerLimitsTest, RefusedRequestFloodDoesNotGrowTheLogWithoutBound) {
  int64_t now_ms = 1'000'000;
  config_.log_limits.burst = 10;
  config_.log_limits.window_ms = 1000;
  config_.log_limits.clock_ms = [&now_ms] { return now_ms; };
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  for (int i = 0; i < 500; i++)
    ASSERT_FALSE(call(*broker, s, create_payload()).ok());
  EXPECT_EQ(kernel_.opens, 500);
  EXPECT_LE(log_messages(), 12u) << log_.str();
  now_ms += 1050;
  ASSERT_FALSE(call(*broker, s, create_payload()).ok());
  EXPECT_NE(log_.str().find("490 more messages from uid 0 suppressed"), std::string::npos)
      << log_.str();
}

TEST(BrokerLog, RotatesPastItsSizeAndStopsWhenItCannot) {
  std::ostringstream out;
  int rotations = 0;
  BrokerLog log({.out = &out,
                 .max_bytes = 1000,
                 .rotate =
                     [&] {
                       rotations++;
                       out.str("");
                       return ok_status();
                     },
                 .clock_ms = {}});
  for (int i = 0; i < 100; i++)
    log.write_always(std::string(80, 'x'));
  EXPECT_GE(rotations, 8);
  EXPECT_LE(out.str().size(), 1000u);
  BrokerLog stuck({.out = &out,
                   .max_bytes = 1000,
                   .rotate = [] { return Status(Error(EACCES, "cannot move broker.log")); },
                   .clock_ms = {}});
  out.str("");
  for (int i = 0; i < 100; i++)
    stuck.write_always(std::string(80, 'x'));
  EXPECT_LE(out.str().size(), 1200u);
  EXPECT_NE(out.str().find("the log is full and cannot move broker.log"), std::string::npos);
}

// Out of file descriptors, the broker backs off instead of spinning on a
// listener that stays readable, and tells each waiting client why. Measured with getrusage in the
// broker's own process, not by wall time.
TEST_F(BrokerLimitsTest, OutOfDescriptorsTheBrokerBacksOffAndLogsLittle) {
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  std::string path = socket_path();
  pid_t child = ::fork();
  if (child == 0) {
    ::close(report[0]);
    auto broker = Broker::start(config_);
    if (!broker.ok())
      ::_exit(10);
    rlimit low = {32, 32};
    if (::setrlimit(RLIMIT_NOFILE, &low) != 0)
      ::_exit(11);
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    while (std::chrono::steady_clock::now() < until)
      (void)(*broker)->serve_once(-1, 50);
    rusage usage;
    ::getrusage(RUSAGE_SELF, &usage);
    long cpu_ms = usage.ru_utime.tv_sec * 1000 + usage.ru_utime.tv_usec / 1000 +
                  usage.ru_stime.tv_sec * 1000 + usage.ru_stime.tv_usec / 1000;
    std::string line = std::to_string(cpu_ms) + " " + std::to_string(log_.str().size()) + "\n";
    (void)!::write(report[1], line.data(), line.size());
    ::_exit(0);
  }
  ::close(report[1]);
  for (int i = 0; i < 200 && !sys::Tree(config_.run_dir).exists("broker.sock"); i++)
    ::usleep(10 * 1000);
  std::vector<sys::UnixSocket> held;
  for (int i = 0; i < 60; i++) {
    auto s = sys::UnixSocket::connect(path);
    if (s.ok())
      held.push_back(std::move(*s));
  }
  EXPECT_GE(held.size(), 40u) << "connections wait in the backlog";
  // Out of fds, a newcomer is told why on the broker's spare fd, not left
  // waiting in the backlog until its timeout.
  auto late = persistent::BrokerConnection::connect(persistent::RunDir(config_.run_dir), 5000);
  ASSERT_TRUE(late.ok()) << late.error().message();
  persistent::Request ping;
  auto refused = late->call(ping);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), EMFILE) << refused.error().message();
  EXPECT_NE(refused.error().message().find("the broker is out of file descriptors ("),
            std::string::npos)
      << refused.error().message();
  char buf[64] = {};
  ssize_t n = ::read(report[0], buf, sizeof(buf) - 1);
  ::close(report[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_GT(n, 0);
  long cpu_ms = 0, log_bytes = 0;
  ASSERT_EQ(std::sscanf(buf, "%ld %ld", &cpu_ms, &log_bytes), 2) << buf;
  EXPECT_LT(cpu_ms, 500) << "the broker spun for 1.5 s out of descriptors";
  EXPECT_LT(log_bytes, 8192) << "its log grew while out of descriptors";
}

// The fd room a create needs: one fd per CPU, one per CPU of a new context
// stream, and kFdReserve kept free; the advice follows who runs the broker.
TEST(FdRoom, RefusesPastTheLimitAndSaysWhatToRaise) {
  persistent::FdRoom room{.event = "fp25",
                          .cpus = 2,
                          .usage = {.open = 46, .limit = 64, .hard_limit = 64},
                          .events = 20};
  EXPECT_TRUE(persistent::check_fd_room(room).ok()) << "46 + 2 + 16 = 64 fits";
  room.context_cpus = 2;
  Status refused = persistent::check_fd_room(room);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), EMFILE);
  EXPECT_EQ(refused.error().message(),
            "cannot create 'fp25': it needs 2 file descriptors (one per CPU, 2 CPUs) and 2 for "
            "its context stream, and the broker holds 46 fds of its limit of 64 (RLIMIT_NOFILE, "
            "hard limit 64) for 20 events (each takes one fd per CPU, and each context stream one "
            "per CPU), keeping 16 free for clients and its own files; start the broker with a "
            "higher limit ('ulimit -n 1024' in its shell first; the broker raises its soft limit "
            "to the hard one), or kill events you no longer need ('perf persistent kill')");
  room.service = "perf-persistent.service";
  room.usage = {.open = 1010, .limit = 1024, .hard_limit = -1};
  std::string message = persistent::check_fd_room(room).error().message();
  EXPECT_NE(message.find("limit of 1024 (RLIMIT_NOFILE) for"), std::string::npos) << message;
  EXPECT_NE(message.find("raise LimitNOFILE= (e.g. LimitNOFILE=4096, 'systemctl edit "
                         "perf-persistent.service') and restart it"),
            std::string::npos)
      << message;
  room.usage.limit = 0;
  EXPECT_TRUE(persistent::check_fd_room(room).ok()) << "no limit known: nothing refused";
}

}  // namespace
}  // namespace pp::broker

// The broker on this machine's real kernel against callers who are not who
// connected: a socket handed to a child that drops to nobody, root with an
// empty capability set, and a client whose create timed out while the broker
// was stopped. Each test has its own run directory and broker.
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <thread>

#include "persistent/broker_client.h"
#include "persistent/protocol.h"
#include "sys/process.h"
#include "sys/tree.h"
#include "sys/unix_socket.h"
#include "tests/kernel/kernel_env.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

using json = nlohmann::json;

class PersistentCredentials : public PrivateBrokerTest {
 protected:
  size_t event_count() {
    CommandResult r = pp({"list", "--json"});
    EXPECT_EQ(r.status, 0) << r.err;
    json doc = json::parse(r.out, nullptr, false);
    return doc.is_discarded() ? 0 : doc["events"].size();
  }
};

Result<json> call(sys::UnixSocket& s, const std::string& payload, std::vector<sys::Fd>* fds) {
  std::string frame = persistent::encode_frame(persistent::FrameKind::kRequest, payload);
  PP_RETURN_IF_ERROR(s.send(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(frame.data()), frame.size())));
  persistent::FrameReader reader(persistent::FrameKind::kReply, persistent::kMaxReplyPayload);
  for (;;) {
    PP_ASSIGN_OR_RETURN(auto next, reader.next());
    if (next)
      return persistent::decode_reply(*next);
    uint8_t buf[4096];
    PP_ASSIGN_OR_RETURN(size_t n, s.receive(buf, fds));
    if (n == 0)
      return Error(ECONNRESET, "closed");
    reader.append(std::span<const uint8_t>(buf, n));
  }
}

// Root connects, forks, and the child drops to nobody keeping the socket:
// the broker serves the child as nobody. No event is created and no perf fd
// is handed out. (Before: the child created an event and got an fd.)
TEST_F(PersistentCredentials, SocketHandedToAnUnprivilegedChildGetsNoEventAndNoFd) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "keep", "-m", "1"}).status,
            0);
  auto s = sys::UnixSocket::connect(run_dir_ + "/broker.sock");
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE(s->set_timeouts(5000).ok());
  ASSERT_TRUE(call(*s, "{\"op\":\"ping\"}", nullptr).ok());
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0)
      ::_exit(10);
    auto created = call(*s,
                        "{\"op\":\"create\",\"event\":\"syscalls:sys_enter_getppid\","
                        "\"name\":\"stolen\",\"pages\":1}",
                        nullptr);
    if (created.ok())
      ::_exit(11);
    if (created.error().code() != EACCES ||
        created.error().message().find("uid 65534") == std::string::npos)
      ::_exit(12);
    std::vector<sys::Fd> fds;
    auto opened = call(*s, "{\"op\":\"open\",\"id\":1,\"cpu\":0}", &fds);
    if (opened.ok() || !fds.empty())
      ::_exit(13);
    auto killed = call(*s, "{\"op\":\"kill\",\"ref\":\"keep\"}", nullptr);
    ::_exit(killed.ok() ? 14 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child exit " << WEXITSTATUS(status) << " (11: created, 13: got an fd, 14: killed)";
  EXPECT_EQ(event_count(), 1u) << "only 'keep', still there";
  // The parent, root with its capabilities, is still served on the same socket.
  EXPECT_TRUE(call(*s, "{\"op\":\"list\"}", nullptr).ok());
}

// uid 0 without CAP_PERFMON and CAP_SYS_ADMIN is refused, as perf_event_open
// refuses `perf record -a` for it; it may still list.
TEST_F(PersistentCredentials, RootWithAnEmptyCapabilitySetIsRefused) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "keep", "-m", "1"}).status,
            0);
  std::vector<std::string> nocaps = {"setpriv",    "--bounding-set", "-all",
                                     "--inh-caps", "-all",           binary_path()};
  auto run = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = nocaps;
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--run-dir=" + run_dir_);
    return run_command(argv);
  };
  CommandResult created = run({"create", "-e", "syscalls:sys_enter_getppid", "--name", "x"});
  EXPECT_EQ(created.status, 2) << created.err;
  EXPECT_NE(created.err.find("uid 0"), std::string::npos) << created.err;
  EXPECT_NE(created.err.find("without CAP_PERFMON and CAP_SYS_ADMIN"), std::string::npos)
      << created.err;
  CommandResult killed = run({"kill", "keep"});
  EXPECT_EQ(killed.status, 2) << killed.err;
  EXPECT_EQ(run({"list"}).status, 0);
  EXPECT_EQ(event_count(), 1u);
}

// With the broker stopped, create gets no reply and says the outcome and how
// to check; after SIGCONT the request, past its deadline, is not carried out.
// The same create again then makes the event once, and once more reports it.
TEST_F(PersistentCredentials, TimedOutCreateDoesNotHappenLaterAndCreateIsIdempotent) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "first", "-m", "1"}).status,
            0);
  pid_t broker = broker_pid();
  ASSERT_GT(broker, 0);
  auto conn = persistent::BrokerConnection::connect(persistent::RunDir(run_dir_), 300);
  ASSERT_TRUE(conn.ok()) << conn.error().message();
  ASSERT_EQ(::kill(broker, SIGSTOP), 0);
  persistent::Request request;
  request.op = persistent::Op::kCreate;
  request.create = {"syscalls:sys_enter_getpid", "late", 1, "", ""};
  auto r = conn->call(request);
  ASSERT_EQ(::kill(broker, SIGCONT), 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ETIMEDOUT);
  EXPECT_NE(r.error().message().find("did not reply within 300 ms"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("will not carry it out"), std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("perf persistent list --run-dir " + run_dir_),
            std::string::npos)
      << r.error().message();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(event_count(), 1u) << "the timed-out create happened after all";

  std::vector<std::string> create = {"create", "-e",       "syscalls:sys_enter_getpid",
                                     "--name", "late",     "-m",
                                     "1",      "--filter", "common_pid == 1"};
  CommandResult once = pp(create);
  ASSERT_EQ(once.status, 0) << once.err;
  CommandResult twice = pp(create);
  EXPECT_EQ(twice.status, 0) << twice.err;
  EXPECT_EQ(twice.out, once.out) << "the same id";
  EXPECT_NE(twice.err.find("exists already with this definition"), std::string::npos) << twice.err;
  create.back() = "common_pid == 2";
  EXPECT_EQ(pp(create).status, 3) << "another definition under the name is name-taken";
  EXPECT_EQ(event_count(), 2u);
}

}  // namespace
}  // namespace pp::testing

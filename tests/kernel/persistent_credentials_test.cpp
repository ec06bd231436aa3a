// The broker on this machine's real kernel against callers who are not who
// connected: a socket handed to a child that drops to nobody, root with an
// empty capability set, and a client whose create timed out while the broker
// was stopped. Each test has its own run directory and broker.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <thread>

#include "persistent/broker_client.h"
#include "persistent/protocol.h"
#include "persistent/testing/raw_call.h"
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
  return persistent::testing::raw_call(s, payload, fds);
}

// Drops the calling (forked) process to uid and gid 65534 with no groups,
// keeping it dumpable so that it may write its own /proc files.
bool become_nobody() {
  return ::setgroups(0, nullptr) == 0 && ::setresgid(65534, 65534, 65534) == 0 &&
         ::setresuid(65534, 65534, 65534) == 0 && ::prctl(PR_SET_DUMPABLE, 1) == 0;
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

// A uid-65534 process that makes its own user namespace (what `unshare -U -r`
// does, and every rootless container) holds every capability there, and
// its /proc/PID/status says so; none of them opens a perf event, which asks
// for the initial namespace. Given the socket, it is refused with the reason
// (before: it created an event and received an O_RDWR perf fd).
TEST_F(PersistentCredentials, CapabilitiesInAnotherUserNamespaceAreRefused) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "keep", "-m", "1"}).status,
            0);
  auto s = sys::UnixSocket::connect(run_dir_ + "/broker.sock");
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE(s->set_timeouts(5000).ok());
  ASSERT_TRUE(call(*s, "{\"op\":\"ping\"}", nullptr).ok());
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto say = [&](const std::string& text, int status) {
      [[maybe_unused]] ssize_t n = ::write(pipe_fds[1], text.data(), text.size());
      ::_exit(status);
    };
    if (!become_nobody())
      say("cannot become uid 65534", 10);
    if (::unshare(CLONE_NEWUSER) != 0)
      say(std::string("unshare(CLONE_NEWUSER): ") + std::strerror(errno), 20);
    int map = ::open("/proc/self/uid_map", O_WRONLY | O_CLOEXEC);
    if (map < 0 || ::write(map, "0 65534 1", 9) != 9)
      say(std::string("writing uid_map: ") + std::strerror(errno), 21);
    ::close(map);
    auto status = sys::read_process_status(sys::Tree("/proc"), ::getpid());
    if (!status.ok() || !status->perfmon_capable())
      say("no capabilities inside the new user namespace", 22);
    auto created = call(*s,
                        "{\"op\":\"create\",\"event\":\"syscalls:sys_enter_getppid\","
                        "\"name\":\"stolen\",\"pages\":1}",
                        nullptr);
    if (created.ok())
      say("created an event", 11);
    if (created.error().code() != EACCES ||
        created.error().message().find("user namespace") == std::string::npos)
      say(created.error().message(), 12);
    std::vector<sys::Fd> fds;
    auto opened = call(*s, "{\"op\":\"open\",\"id\":1,\"cpu\":0}", &fds);
    if (opened.ok() || !fds.empty())
      say("received a perf fd", 13);
    say(created.error().message(), 0);
  }
  ::close(pipe_fds[1]);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof(buf))) > 0;)
    said.append(buf, size_t(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  PP_SKIP_UNLESS(WEXITSTATUS(status) != 20, said);
  EXPECT_EQ(WEXITSTATUS(status), 0) << said;
  EXPECT_NE(said.find("uid 65534"), std::string::npos) << said;
  EXPECT_EQ(event_count(), 1u) << "only 'keep', still there";
}

// A client that keeps the broker from reading (a reply it does not read)
// sends a create, then execs a set-user-ID-root program: before, the broker
// read the capabilities when it got to the create, the program's (every one
// of them), and created the event. The sender is judged when its bytes
// arrive, and a set-user-ID program is refused anyway.
TEST_F(PersistentCredentials, ExecAfterSendingDoesNotLendTheProgramsRights) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "first", "-m", "1"}).status,
            0);
  auto s = sys::UnixSocket::connect(run_dir_ + "/broker.sock");
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE(s->set_timeouts(5000).ok());
  // A list reply larger than the socket can hold: 60 events with 4 KiB
  // filters, so the broker waits for the client to read it.
  std::string filter;
  while (filter.size() < 4000)
    filter += (filter.empty() ? "" : " && ") + std::string("common_pid != ") +
              std::to_string(100000 + filter.size());
  for (int i = 0; i < 60; i++) {
    json create = {{"op", "create"},
                   {"event", "syscalls:sys_enter_getppid"},
                   {"name", "f" + std::to_string(i)},
                   {"pages", 1},
                   {"cpus", "0"},
                   {"filter", filter}};
    auto made = call(*s, create.dump(), nullptr);
    ASSERT_TRUE(made.ok()) << made.error().message();
  }
  size_t events_before = event_count();
  // A set-user-ID-root program the child can run.
  ASSERT_EQ(::chmod(tmp_.path().c_str(), 0711), 0);
  std::string bin = tmp_.path("bin");
  ASSERT_EQ(::mkdir(bin.c_str(), 0755), 0);
  std::string suid = bin + "/suid-sleep";
  std::filesystem::copy_file("/bin/sleep", suid);
  ASSERT_EQ(::chown(suid.c_str(), 0, 0), 0);
  ASSERT_EQ(::chmod(suid.c_str(), 04755), 0);
  struct statvfs fs;
  ASSERT_EQ(::statvfs(suid.c_str(), &fs), 0);
  ASSERT_FALSE(fs.f_flag & ST_NOSUID) << tmp_.path() << " is mounted nosuid; this test needs "
                                      << "a set-user-ID program";

  int result[2];
  ASSERT_EQ(::pipe2(result, O_CLOEXEC), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(result[0]);
    if (!become_nobody())
      ::_exit(10);
    std::string frames =
        persistent::encode_frame(persistent::FrameKind::kRequest, "{\"op\":\"list\"}") +
        persistent::encode_frame(persistent::FrameKind::kRequest,
                                 "{\"op\":\"create\",\"event\":\"syscalls:sys_enter_getppid\","
                                 "\"name\":\"exec_race\",\"pages\":1}");
    if (!s->send(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(frames.data()),
                                          frames.size()))
             .ok())
      ::_exit(11);
    // The broker has read both requests once the list reply starts to come.
    pollfd p{s->fd(), POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1)
      ::_exit(12);
    pid_t reader = ::fork();
    if (reader == 0) {
      // Reads the replies once the child runs the set-user-ID program.
      ::usleep(300 * 1000);
      persistent::FrameReader replies(persistent::FrameKind::kReply, persistent::kMaxReplyPayload);
      std::string verdict = "X: no second reply";
      for (int got = 0; got < 2;) {
        auto next = replies.next();
        if (!next.ok())
          break;
        if (!next->has_value()) {
          uint8_t buf[65536];
          auto n = s->receive(buf, nullptr);
          if (!n.ok() || *n == 0)
            break;
          replies.append(std::span<const uint8_t>(buf, *n));
          continue;
        }
        if (++got == 2) {
          auto reply = persistent::decode_reply(**next);
          verdict = reply.ok()                       ? "C: created"
                    : reply.error().code() == EACCES ? "R: " + reply.error().message()
                                                     : "E: " + reply.error().message();
        }
      }
      [[maybe_unused]] ssize_t n = ::write(result[1], verdict.data(), verdict.size());
      ::_exit(0);
    }
    ::execl(suid.c_str(), suid.c_str(), "1", nullptr);
    ::_exit(13);
  }
  ::close(result[1]);
  std::string verdict;
  char buf[1024];
  for (ssize_t n; (n = ::read(result[0], buf, sizeof(buf))) > 0;)
    verdict.append(buf, size_t(n));
  ::close(result[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child " << status;
  // C: the create was carried out with the program's rights.
  EXPECT_EQ(verdict.substr(0, 3), "R: ") << verdict;
  EXPECT_NE(verdict.find("uid 65534"), std::string::npos) << verdict;
  EXPECT_EQ(event_count(), events_before);
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

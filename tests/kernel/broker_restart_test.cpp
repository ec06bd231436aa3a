// Broker restarts on the real kernel, and what each keeps: `daemon
// --replace` (every sample), a broker killed outright without systemd (the
// events with their ids and names, no sample, and list says so), a reload
// (an unchanged event keeps its samples), and a restart under systemd's
// protocol with the keeper: the test serves NOTIFY_SOCKET itself (a
// datagram socket taking READY=1, WATCHDOG=1 and the FDSTORE=1 fds) and
// starts the next broker with LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES and
// the stored fds from fd 3 on, exactly as systemd 252 does; the systemd VM
// test then confirms it under the real thing.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "sys/child.h"
#include "sys/fd.h"
#include "sys/process.h"
#include "sys/tree.h"
#include "tests/kernel/kernel_env.h"
#include "tests/support/broker.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

using json = nlohmann::json;
constexpr int kCalls = 1000;

class PersistentRestart : public PrivateBrokerTest {
 protected:
  // Makes the caller's calls: its pid.
  static pid_t calls(GetppidCaller& caller) {
    EXPECT_TRUE(caller.run());
    return caller.pid();
  }

  // The getppid samples of `pid` that the event `name`'s buffers hold now.
  int samples_now(const std::string& name, pid_t pid) {
    std::string file = tmp_.path(name + "-" + std::to_string(++snapshots_) + ".data");
    CommandResult r =
        pp({"record", "--snapshot", "--no-follow", "-e", "persistent/" + name + "/", "-o", file});
    EXPECT_EQ(r.status, 0) << r.err;
    return perf_script_count(file, pid);
  }

  json events() {
    CommandResult r = pp({"list", "-v", "--json"});
    json doc = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << r.out << r.err;
    json out = json::array();
    if (!doc.is_discarded())
      for (const json& e : doc.value("events", json::array()))
        if (e.value("role", "") == "event")
          out.push_back(e);
    return out;
  }

  json event(const std::string& name) {
    for (const json& e : events())
      if (e.value("name", "") == name)
        return e;
    ADD_FAILURE() << "no event " << name;
    return json::object();
  }

  static void wait_gone(pid_t pid) {
    for (int i = 0; i < 1000 && sys::process_exists(pid); i++)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  int snapshots_ = 0;
};

// --replace: the new broker takes every event's fds and the socket over and
// maps every buffer before the old one exits. Same ids and names, and the
// N samples made before are all there after.
TEST_F(PersistentRestart, ReplaceKeepsEveryEventAndItsSamples) {
  GetppidCaller gated(kCalls);
  ASSERT_EQ(
      pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "gp", "--filter", gated.filter()})
          .status,
      0);
  ASSERT_EQ(pp({"create", "-e", "cpu-clock", "-m", "8", "-C", "1"}).status, 0);
  json before = events();
  ASSERT_EQ(before.size(), 2u);
  pid_t caller = calls(gated);
  ASSERT_EQ(samples_now("gp", caller), kCalls);
  pid_t old = broker_pid();

  CommandResult replaced = pp({"daemon", "--replace"});
  ASSERT_EQ(replaced.status, 0) << replaced.err;
  wait_gone(old);
  EXPECT_FALSE(sys::process_exists(old)) << "the old broker exits once it handed over";
  EXPECT_NE(broker_pid(), old);
  json after = events();
  ASSERT_EQ(after.size(), 2u);
  for (size_t i = 0; i < after.size(); i++) {
    EXPECT_EQ(after[i]["id"], before[i]["id"]);
    EXPECT_EQ(after[i]["name"], before[i]["name"]);
    EXPECT_EQ(after[i]["perf_ids"], before[i]["perf_ids"]) << "the same kernel events";
    EXPECT_FALSE(after[i]["restarted"].get<bool>()) << after[i].dump();
    EXPECT_TRUE(after[i]["buffers_lost"].is_null());
  }
  EXPECT_EQ(samples_now("gp", caller), kCalls) << "every sample from before the replace";
  std::string log = sys::Tree(run_dir_).read("broker.log").value_or("");
  EXPECT_NE(log.find("handed over to"), std::string::npos) << log;
  EXPECT_NE(log.find("2 taken back with their fds, 2 with their samples"), std::string::npos)
      << log;
  // The new broker serves: a create works, under the next id.
  CommandResult next = pp({"create", "-e", "syscalls:sys_enter_getpid"});
  EXPECT_EQ(next.status, 0) << next.err;
  EXPECT_EQ(next.out, "3\n");
}

// Without systemd and without --replace, a broker killed outright takes its
// fds with it: the next one restores the registry (same ids and names) and
// creates the events again, empty; list (text and JSON) and check say which
// buffers were lost and when.
TEST_F(PersistentRestart, KilledWithoutSystemdTheEventsComeBackEmptyAndListSaysSo) {
  GetppidCaller gated(kCalls);
  ASSERT_EQ(
      pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "gp", "--filter", gated.filter()})
          .status,
      0);
  pid_t caller = calls(gated);
  ASSERT_EQ(samples_now("gp", caller), kCalls);
  int64_t created = event("gp")["created"].get<int64_t>();
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // so the restart's second differs
  (void)stop_broker(run_dir_, SIGKILL);
  ASSERT_EQ(pp({"daemon"}).status, 0);
  json gp = event("gp");
  EXPECT_EQ(gp["id"], 1);
  EXPECT_TRUE(gp["restarted"].get<bool>());
  ASSERT_TRUE(gp["buffers_lost"].is_object()) << gp.dump();
  EXPECT_GT(gp["buffers_lost"]["time"].get<int64_t>(), created);
  EXPECT_NE(gp["buffers_lost"]["reason"].get<std::string>().find("created again"),
            std::string::npos)
      << gp.dump();
  CommandResult text = pp({"list"});
  EXPECT_NE(text.err.find("* gp: the buffers restarted"), std::string::npos) << text.err;
  EXPECT_NE(text.err.find("samples from before are gone"), std::string::npos) << text.err;
  EXPECT_EQ(samples_now("gp", caller), 0) << "the kernel freed the old buffer with the broker";
  CommandResult check = run_pp({"check", "--json", "--run-dir=" + run_dir_});
  json findings = json::parse(check.out, nullptr, false);
  ASSERT_FALSE(findings.is_discarded()) << check.out;
  bool found = false;
  for (const json& f : findings["findings"])
    if (f["id"] == "buffers-lost") {
      found = true;
      EXPECT_EQ(f["status"], "WARNING") << f.dump();
      EXPECT_NE(f["found"].get<std::string>().find("gp"), std::string::npos) << f.dump();
    }
  EXPECT_TRUE(found) << check.out;
}

// A reload touches only the difference: the unchanged event keeps its id,
// its kernel event and its samples; a bad config changes nothing (exit 9).
TEST_F(PersistentRestart, ReloadKeepsAnUnchangedEventsSamples) {
  std::string conf = tmp_.path("pp.conf");
  auto write = [&](const std::string& text) { std::ofstream(conf) << text; };
  GetppidCaller gated(kCalls);
  std::string gp_section =
      "[gp]\nevent = syscalls:sys_enter_getppid\nfilter = " + gated.filter() + "\n";
  write(gp_section +
        "[other]\nevent = syscalls:sys_enter_getpid\n"
        "[mce]\nevent = mce:mce_record\noptional = yes\n");
  CommandResult started = pp({"daemon", "--config=" + conf});
  ASSERT_EQ(started.status, 0) << started.err;
  json gp = event("gp");
  EXPECT_EQ(gp["origin"], "config");
  pid_t caller = calls(gated);
  write(gp_section + "[new]\nevent = syscalls:sys_enter_getsid\n");
  CommandResult reload = pp({"daemon", "--reload"});
  ASSERT_EQ(reload.status, 0) << reload.err;
  EXPECT_NE(reload.out.find("1 created, 2 killed, 1 unchanged"), std::string::npos) << reload.out;
  json after = event("gp");
  EXPECT_EQ(after["id"], gp["id"]);
  EXPECT_EQ(after["perf_ids"], gp["perf_ids"]);
  EXPECT_EQ(samples_now("gp", caller), kCalls) << "the unchanged event kept its buffer";
  ASSERT_EQ(events().size(), 2u);

  write(gp_section + "bogus\n");
  CommandResult bad = pp({"daemon", "--reload"});
  EXPECT_EQ(bad.status, 9) << bad.err;
  EXPECT_NE(bad.err.find("pp.conf:4"), std::string::npos) << bad.err;
  EXPECT_EQ(events().size(), 2u) << "nothing changed";
  // SIGHUP does the same as --reload, reporting in the log.
  write(gp_section);
  ASSERT_EQ(::kill(broker_pid(), SIGHUP), 0);
  for (int i = 0; i < 500 && events().size() != 1; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(events().size(), 1u);
  EXPECT_EQ(samples_now("gp", caller), kCalls);
}

// The test's own systemd: a NOTIFY_SOCKET that keeps what FDSTORE=1 stores,
// and starts brokers with the stored fds as systemd does.
class FakeServiceManager {
 public:
  explicit FakeServiceManager(std::string path) : path_(std::move(path)) {
    fd_ = sys::Fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path_.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    int one = 1;
    ok_ = fd_.valid() && ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
          ::setsockopt(fd_.get(), SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) == 0;
  }
  bool ok() const { return ok_; }
  const std::string& path() const { return path_; }

  // Reads every pending notification, keeping stored fds by name.
  void drain() {
    for (;;) {
      char buf[4096];
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 16) + CMSG_SPACE(sizeof(ucred))];
      iovec iov{buf, sizeof(buf) - 1};
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC);
      if (n < 0)
        return;
      std::vector<sys::Fd> fds;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
          for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            fds.emplace_back(fd);
          }
      std::string text(buf, size_t(n));
      messages.push_back(text);
      std::map<std::string, std::string> fields;
      for (size_t at = 0; at < text.size();) {
        size_t end = text.find('\n', at);
        std::string line = text.substr(at, end == std::string::npos ? end : end - at);
        if (size_t eq = line.find('='); eq != std::string::npos)
          fields[line.substr(0, eq)] = line.substr(eq + 1);
        at = end == std::string::npos ? text.size() : end + 1;
      }
      if (fields["FDSTORE"] == "1" && fields["FDPOLL"] == "0" && fds.size() == 1)
        store[fields["FDNAME"]] = std::move(fds[0]);
      if (fields["FDSTOREREMOVE"] == "1")
        store.erase(fields["FDNAME"]);
    }
  }

  // Waits until a notification that starts with `prefix` has come.
  bool wait_for(const std::string& prefix, size_t after = 0, int timeout_ms = 20000) {
    for (int waited = 0; waited < timeout_ms; waited += 10) {
      drain();
      for (size_t i = after; i < messages.size(); i++)
        if (messages[i].rfind(prefix, 0) == 0)
          return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Starts `argv` in the foreground as systemd starts a Type=notify unit:
  // NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID, and the stored fds from
  // fd 3 on with LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES. stdout and
  // stderr go to `log`.
  pid_t start(const std::vector<std::string>& argv, const std::string& log) {
    std::vector<int> fds;
    std::string names;
    for (const auto& [name, fd] : store) {
      fds.push_back(fd.get());
      names += (names.empty() ? "" : ":") + name;
    }
    pid_t pid = ::fork();
    if (pid != 0)
      return pid;
    // The child: fds to 3.. (through high numbers first, so none is
    // overwritten before it moved), the environment systemd gives.
    std::vector<int> high;
    for (int fd : fds)
      high.push_back(::fcntl(fd, F_DUPFD, 1000));
    for (size_t i = 0; i < high.size(); i++)
      ::dup2(high[i], int(3 + i));  // dup2 clears close-on-exec
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    ::dup2(out, 1);
    ::dup2(out, 2);
    std::string pid_text = std::to_string(::getpid());
    ::setenv("NOTIFY_SOCKET", path_.c_str(), 1);
    ::setenv("WATCHDOG_USEC", "400000", 1);
    ::setenv("WATCHDOG_PID", pid_text.c_str(), 1);
    if (!fds.empty()) {
      ::setenv("LISTEN_PID", pid_text.c_str(), 1);
      ::setenv("LISTEN_FDS", std::to_string(fds.size()).c_str(), 1);
      ::setenv("LISTEN_FDNAMES", names.c_str(), 1);
    }
    sigset_t all;
    sigemptyset(&all);
    ::sigprocmask(SIG_SETMASK, &all, nullptr);
    std::vector<char*> args;
    for (const std::string& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }

  std::vector<std::string> messages;
  std::map<std::string, sys::Fd> store;

 private:
  std::string path_;
  sys::Fd fd_;
  bool ok_ = false;
};

// Under systemd's protocol, with the keeper: READY=1 once it listens,
// WATCHDOG=1 from its loop, every fd in the store; after a SIGTERM restart
// and after a SIGKILL the new broker adopts the stored events and the
// keeper's mappings kept the buffers: the same ids, names and N samples.
// Without the keeper, a restart keeps the events but not the samples, and
// list says why.
TEST_F(PersistentRestart, KeeperAndTheFdStoreKeepSamplesAcrossRestarts) {
  FakeServiceManager manager(tmp_.path("notify.sock"));
  ASSERT_TRUE(manager.ok());
  std::string log = tmp_.path("broker.log");
  std::vector<std::string> broker = {binary_path(), "daemon", "--foreground",
                                     "--run-dir=" + run_dir_, "--config=/dev/null"};
  auto reap = [](pid_t pid, int signal) {
    ::kill(pid, signal);
    int status = 0;
    ::waitpid(pid, &status, 0);
  };
  pid_t first = manager.start(broker, log);
  ASSERT_TRUE(manager.wait_for("READY=1"))
      << sys::Tree(tmp_.path("")).read("broker.log").value_or("");
  size_t ready_at = manager.messages.size();
  EXPECT_TRUE(manager.wait_for("WATCHDOG=1", ready_at)) << "pinged at half of 400 ms";

  auto keeper = sys::Child::spawn(
      {binary_path(), "daemon", "--keeper", "--foreground", "--run-dir=" + run_dir_});
  ASSERT_TRUE(keeper.ok()) << keeper.error().message();
  GetppidCaller gated(kCalls);
  ASSERT_EQ(
      pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "gp", "--filter", gated.filter()})
          .status,
      0);
  auto kept = [&] {
    for (int i = 0; i < 1000; i++) {
      json gp = event("gp");
      if (gp.value("kept", false))
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  ASSERT_TRUE(kept()) << "the keeper maps the new event's buffers";
  json gp = event("gp");
  EXPECT_EQ(gp["readers"], 0) << "the keeper is no reader";
  manager.drain();
  EXPECT_TRUE(manager.store.count("pp-event-1-cpu-0")) << "stored by name, FDPOLL=0";
  EXPECT_TRUE(manager.store.count("pp-listener"));
  pid_t caller = calls(gated);
  ASSERT_EQ(samples_now("gp", caller), kCalls);

  pid_t current = first;
  for (int signal : {SIGTERM, SIGKILL}) {
    SCOPED_TRACE(signal == SIGTERM ? "systemctl restart (SIGTERM)" : "SIGKILL, Restart=always");
    reap(current, signal);
    manager.drain();
    size_t at = manager.messages.size();
    current = manager.start(broker, log);
    ASSERT_TRUE(manager.wait_for("READY=1", at))
        << sys::Tree(tmp_.path("")).read("broker.log").value_or("");
    json now = event("gp");
    EXPECT_EQ(now["id"], gp["id"]);
    EXPECT_EQ(now["name"], "gp");
    EXPECT_EQ(now["perf_ids"], gp["perf_ids"]) << "adopted from the store";
    EXPECT_FALSE(now["restarted"].get<bool>()) << now.dump();
    EXPECT_EQ(samples_now("gp", caller), kCalls) << "the keeper kept the buffers";
    EXPECT_TRUE(kept()) << "the keeper registers with the new broker";
  }

  // No keeper: the events come back from the store, the samples do not.
  ASSERT_TRUE(keeper->kill(SIGTERM).ok());
  (void)keeper->wait();
  reap(current, SIGKILL);
  manager.drain();
  size_t at = manager.messages.size();
  current = manager.start(broker, log);
  ASSERT_TRUE(manager.wait_for("READY=1", at));
  json now = event("gp");
  EXPECT_EQ(now["perf_ids"], gp["perf_ids"]) << "still the same kernel event";
  ASSERT_TRUE(now["restarted"].get<bool>())
      << now.dump() << "\n"
      << sys::Tree(tmp_.path("")).read("broker.log").value_or("");
  EXPECT_NE(now["buffers_lost"]["reason"].get<std::string>().find("nothing kept its buffers"),
            std::string::npos)
      << now.dump();
  EXPECT_EQ(samples_now("gp", caller), 0);
  reap(current, SIGTERM);
  manager.drain();
  EXPECT_EQ(manager.messages.back().rfind("STOPPING=1", 0), 0u) << manager.messages.back();
}

}  // namespace
}  // namespace pp::testing

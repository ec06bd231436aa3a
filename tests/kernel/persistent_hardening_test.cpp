// What a careless caller or operator can do to the broker and its clients on
// this machine's real kernel: a daemon that keeps the caller's descriptors or
// terminal, a run directory removed under a running broker, names that mean
// something else in `persistent/NAME/`, and `record -o - | head`. Each test
// has its own run directory and stops the broker it started.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <sstream>
#include <thread>

#include "base/strings.h"
#include "persistent/broker_client.h"
#include "persistent/protocol.h"
#include "sys/process.h"
#include "sys/tree.h"
#include "tests/kernel/kernel_env.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

bool wait_until_gone(pid_t pid, int ms) {
  for (int i = 0; i < ms / 10 && sys::process_exists(pid); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return !sys::process_exists(pid);
}

class PersistentHardening : public PrivateBrokerTest {
 protected:
  // The broker, and a second one a test may have started by hand.
  void TearDown() override {
    PrivateBrokerTest::TearDown();
    if (started_ > 0 && sys::process_exists(started_)) {
      ::kill(started_, SIGTERM);
      if (!wait_until_gone(started_, 5000))
        ::kill(started_, SIGKILL);
    }
  }

  // Field `n` (1-based, after the command name) of /proc/PID/stat.
  static long stat_field(pid_t pid, int n) {
    auto text = sys::Tree("/proc").read(std::to_string(pid) + "/stat");
    if (!text.ok())
      return -1;
    std::istringstream in(text->substr(text->rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= n && in >> field; i++) {
    }
    return std::atol(field.c_str());
  }

  pid_t started_ = 0;
};

// The caller's shell holds a flock on an inherited fd; the broker that
// `create` starts must not keep it (nor any other of the caller's fds, its
// environment, its session or its terminal).
TEST_F(PersistentHardening, AutoStartedBrokerKeepsNoneOfTheCallersFdsOrEnvironment) {
  std::string lock = tmp_.path("caller.lock");
  CommandResult r = run_command(
      {"/bin/sh", "-c",
       "exec 9>\"$1\" && flock 9 && PP_SECRET=x \"$2\" create -e syscalls:sys_enter_getppid "
       "--run-dir \"$3\"",
       "sh", lock, binary_path(), run_dir_});
  ASSERT_EQ(r.status, 0) << r.err;
  pid_t broker = broker_pid();
  ASSERT_GT(broker, 0);
  started_ = broker;

  int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0)
      << "the caller's lock is still held after the caller exited: the broker kept its fd";
  ::close(fd);

  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(broker) + "/fd")) {
    std::string target = std::filesystem::read_symlink(entry.path()).string();
    EXPECT_EQ(target.find("caller.lock"), std::string::npos) << "fd " << entry.path();
  }

  auto environ_text = sys::Tree("/proc").read(std::to_string(broker) + "/environ");
  ASSERT_TRUE(environ_text.ok());
  std::string env = *environ_text;
  std::replace(env.begin(), env.end(), '\0', '\n');
  EXPECT_EQ(env, std::string("PATH=") + sys::kDaemonPath + "\nLANG=C\n");

  long session = stat_field(broker, 6), tty = stat_field(broker, 7);
  EXPECT_NE(session, long(::getsid(0))) << "still in the caller's session";
  EXPECT_NE(session, long(broker)) << "a session leader can acquire a controlling terminal";
  EXPECT_EQ(tty, 0) << "has a controlling terminal";
  EXPECT_EQ(stat_field(broker, 4), 1L) << "its parent should be gone (double fork)";
}

// Removing the run directory under a running broker stops it: no second
// broker beside one whose events no command can reach any more.
TEST_F(PersistentHardening, BrokerStopsWhenItsRunDirectoryIsRemoved) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid"}).status, 0);
  pid_t first = broker_pid();
  ASSERT_GT(first, 0);
  started_ = first;
  // The broker removes its own entries as soon as it notices: an entry
  // remove_all() listed may be gone before it gets to it (ENOENT), so what
  // is left is removed again until nothing is.
  std::error_code ec;
  for (int i = 0; i < 100 && std::filesystem::exists(run_dir_); i++)
    std::filesystem::remove_all(run_dir_, ec);
  ASSERT_FALSE(std::filesystem::exists(run_dir_)) << run_dir_ << ": " << ec.message();
  EXPECT_TRUE(wait_until_gone(first, 3000)) << "the broker kept running without its run dir";

  CommandResult again = pp({"create", "-e", "syscalls:sys_enter_getppid"});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(broker_pid(), first);
  EXPECT_FALSE(sys::process_exists(first));
  CommandResult list = pp({"list"});
  EXPECT_EQ(list.out.find("\n2 "), std::string::npos) << "a fresh registry: " << list.out;
}

TEST_F(PersistentHardening, RunDirectoryOpenToOthersOrALinkIsRefused) {
  ASSERT_EQ(::mkdir(run_dir_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(run_dir_.c_str(), 0775), 0);
  CommandResult open = run_pp({"daemon", "--foreground", "--run-dir", run_dir_});
  EXPECT_EQ(open.status, 2) << open.err;
  EXPECT_NE(open.err.find("has mode 0775"), std::string::npos) << open.err;
  ASSERT_EQ(::chmod(run_dir_.c_str(), 0777), 0);
  CommandResult writable = run_pp({"daemon", "--foreground", "--run-dir", run_dir_});
  EXPECT_NE(writable.status, 0);
  EXPECT_NE(writable.err.find("has mode 0777"), std::string::npos) << writable.err;
  ASSERT_EQ(::chmod(run_dir_.c_str(), 0700), 0);
  std::string link = tmp_.path("link");
  ASSERT_EQ(::symlink(run_dir_.c_str(), link.c_str()), 0);
  CommandResult linked = run_pp({"daemon", "--foreground", "--run-dir", link});
  EXPECT_NE(linked.status, 0);
  EXPECT_NE(linked.err.find("is a symbolic link"), std::string::npos) << linked.err;
  EXPECT_FALSE(sys::Tree(run_dir_).exists("broker.sock"));
}

// A name is accepted only when persistent/NAME/ is that event; ids always
// work.
TEST_F(PersistentHardening, NamesMeanTheirEventAndIdsAlwaysWork) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid"}).status, 0);  // id 1
  started_ = broker_pid();
  for (const char* name : {"config", "period", "-", "-x", ".x", "persistent", "7up"}) {
    CommandResult r =
        pp({"create", "-e", "syscalls:sys_enter_getpid", "--name=" + std::string(name)});
    EXPECT_EQ(r.status, 1) << name << ": " << r.err;
    EXPECT_NE(r.err.find("invalid name"), std::string::npos) << r.err;
  }
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getpid", "--name", "mine"}).status, 0);
  CommandResult list = pp({"list", "--json"});
  ASSERT_NE(list.out.find("\"mine\""), std::string::npos) << list.out;
  for (const char* ref : {"persistent/1/", "persistent/2/", "persistent/mine/"}) {
    CommandResult r = pp({"record", "--no-follow", "-e", ref, "-o", tmp_.path("out.data")});
    EXPECT_EQ(r.status, 0) << ref << ": " << r.err;
  }
  CommandResult term =
      pp({"record", "--no-follow", "-e", "persistent/period/", "-o", tmp_.path("out.data")});
  EXPECT_NE(term.status, 0);
  EXPECT_NE(term.err.find("is a term of the event syntax"), std::string::npos) << term.err;
}

// A perfmon client that is not a new broker asks for the handover (which
// froze every accept and handed out the listening socket): refused, even
// with the run directory's token, since it does not run the broker's
// program; and the broker goes on serving.
TEST_F(PersistentHardening, OnlyANewBrokerMayTakeTheBrokerOver) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "g"}).status, 0);
  started_ = broker_pid();
  persistent::RunDir dir(run_dir_);
  auto token = sys::Tree(run_dir_).read("handover.token", 4096);
  ASSERT_TRUE(token.ok()) << token.error().message();
  struct stat st {};
  ASSERT_EQ(::stat(dir.handover_token().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  auto connection = persistent::BrokerConnection::connect(dir);
  ASSERT_TRUE(connection.ok()) << connection.error().message();
  persistent::Request handover;
  handover.op = persistent::Op::kHandover;
  handover.token = std::string(trim(*token));
  std::vector<sys::Fd> fds;
  auto reply = connection->call(handover, &fds);
  ASSERT_FALSE(reply.ok()) << "this test program took the broker over";
  EXPECT_EQ(reply.error().code(), EACCES);
  EXPECT_NE(reply.error().message().find("may not take this broker over"), std::string::npos)
      << reply.error().message();
  EXPECT_TRUE(fds.empty());
  // Not frozen: a change is made at once.
  CommandResult created = pp({"create", "-e", "syscalls:sys_enter_getpid", "--name", "h"});
  EXPECT_EQ(created.status, 0) << created.err;
}

// 256 connections that each read a buffer (the most the broker serves)
// used to lock root out of list and kill for good: a reader is never closed
// to make room. Now one uid holds at most 64 readers and 16 connections are
// kept for clients that hold no buffer; the refused ones are told why.
TEST_F(PersistentHardening, ReadersCannotLockRootOutOfListAndKill) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "g"}).status, 0);
  started_ = broker_pid();
  CommandResult listed = pp({"list", "--json"});
  ASSERT_EQ(listed.status, 0) << listed.err;
  persistent::RunDir dir(run_dir_);
  std::vector<persistent::BrokerConnection> readers;
  std::vector<sys::Fd> buffers;
  size_t refused = 0;
  std::string reason;
  for (int i = 0; i < 256; i++) {
    auto connection = persistent::BrokerConnection::connect(dir);
    ASSERT_TRUE(connection.ok()) << i << ": " << connection.error().message();
    persistent::Request open;
    open.op = persistent::Op::kOpen;
    open.id = 1;
    open.cpu = 0;
    auto reply = connection->call(open, &buffers);
    if (!reply.ok()) {
      refused++;
      reason = reply.error().message();
    }
    readers.push_back(std::move(*connection));
  }
  EXPECT_EQ(buffers.size(), 64u) << "uid 0 may hold 64 readers";
  EXPECT_EQ(refused, 192u);
  EXPECT_NE(reason.find("uid 0 holds 64 connections that read event buffers already"),
            std::string::npos)
      << reason;
  CommandResult list = pp({"list", "--json"});
  EXPECT_EQ(list.status, 0) << list.err;
  EXPECT_NE(list.out.find("\"name\":\"g\""), std::string::npos) << list.out;
  CommandResult killed = pp({"kill", "g"});
  EXPECT_EQ(killed.status, 0) << killed.err;
  CommandResult after = pp({"list", "--json"});
  EXPECT_EQ(after.status, 0) << after.err;
  EXPECT_EQ(after.out.find("\"name\":\"g\""), std::string::npos) << after.out;
}

// `record -o - | reader`: record stops on the closed pipe, says so, and
// stops its COMMAND instead of dying of SIGPIPE and leaving it to init. The
// reader drains the pipe for two seconds, so that the header is written
// whole (it carries the kernel's saved_cmdlines, more than a pipe holds on
// a machine that traced many tasks) and COMMAND has started; then record
// has nothing more to write: it must notice the closed pipe by itself.
TEST_F(PersistentHardening, RecordToAClosedPipeStopsItsCommand) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid"}).status, 0);
  started_ = broker_pid();
  std::string pid_file = tmp_.path("command.pid");
  CommandResult r =
      run_command({"/bin/bash", "-c",
                   "\"$1\" record -e persistent/sys_enter_getppid/ --run-dir \"$2\" -o - -- "
                   "sh -c 'echo $$ > \"$0\"; exec sleep 30' \"$3\" | timeout 2 cat >/dev/null; "
                   "echo \"record=${PIPESTATUS[0]}\" >&2",
                   "bash", binary_path(), run_dir_, pid_file},
                  {.input = {}, .env = {}, .timeout_seconds = 20});
  EXPECT_NE(r.err.find("output pipe closed by reader; stopping"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("record=5"), std::string::npos) << "the output status: " << r.err;
  auto text = sys::Tree(tmp_.path()).read("command.pid");
  ASSERT_TRUE(text.ok()) << "COMMAND never started: " << r.err;
  pid_t command = pid_t(std::atol(text->c_str()));
  EXPECT_TRUE(wait_until_gone(command, 2000)) << "COMMAND (pid " << command << ") still runs";
  if (sys::process_exists(command))
    ::kill(command, SIGKILL);
}

}  // namespace
}  // namespace pp::testing

// Each exit status of Documentation/perf-persistent.txt (EXIT STATUS) that
// needs the kernel or a broker, through the real binary with a private run
// directory (tests/unit/exit_status_test.cpp has the others), and through
// perf's own dispatcher, `perf --exec-path=DIR persistent ...`, which reads
// a 127 from perf-persistent as "not a perf-command": a COMMAND that cannot
// be run, or that exits 127 itself, must reach the caller as 6.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <thread>

#include "sys/process.h"
#include "sys/tree.h"
#include "tests/kernel/kernel_env.h"
#include "tests/support/broker.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

using json = nlohmann::json;

class ExitStatusKernel : public PrivateBrokerTest {
 protected:
  void SetUp() override {
    PrivateBrokerTest::SetUp();
    if (IsSkipped())
      return;
    CommandResult created = pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "gp"});
    ASSERT_EQ(created.status, 0) << created.err;
  }

  // perf-persistent VERB --run-dir=RUN ARGS...: before a `--` and the
  // COMMAND after it, where PrivateBrokerTest::pp() would append it.
  CommandResult pp(std::vector<std::string> args) {
    args.insert(args.begin() + 1, "--run-dir=" + run_dir_);
    return run_pp(args);
  }

  // The same through perf's dispatcher, the binary in a directory of its own
  // as perf-persistent.
  CommandResult through_perf(std::vector<std::string> args) {
    std::string exec_dir = tmp_.path("exec");
    if (!sys::Tree(exec_dir).exists("perf-persistent")) {
      tmp_.mkdir("exec");
      EXPECT_EQ(::symlink(binary_path().c_str(), (exec_dir + "/perf-persistent").c_str()), 0);
    }
    args.insert(args.begin() + 1, "--run-dir=" + run_dir_);
    std::vector<std::string> argv = {perf_program(), "--exec-path=" + exec_dir, "persistent"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv);
  }
};

TEST_F(ExitStatusKernel, Status0) {
  EXPECT_EQ(pp({"list"}).status, 0);
  CommandResult r =
      pp({"record", "-q", "--no-follow", "-e", "persistent/gp/", "-o", tmp_.path("ok.data")});
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(ExitStatusKernel, Status2ABrokerAlreadyServesTheRunDirectory) {
  CommandResult r = run_pp({"daemon", "--foreground", "--run-dir", run_dir_});
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("a broker already serves"), std::string::npos) << r.err;
}

// create when no broker runs and none can be started (its saved state is
// corrupt, so the broker it starts exits 2): broker-down (8), in text and
// JSON, never "refused". A bad config file stops the broker with 9.
TEST_F(ExitStatusKernel, Status8CreateWhenNoBrokerCanStartAnd9ForABadConfig) {
  EXPECT_TRUE(stop_broker(run_dir_));
  ASSERT_TRUE(sys::Tree(run_dir_).exists("state.json"));
  tmp_.write("run/state.json", "{\"version\": 1, \"next_id\": \"x\"}");
  CommandResult r = pp({"create", "-e", "syscalls:sys_enter_getpid"});
  EXPECT_EQ(r.status, 8) << r.err;
  EXPECT_NE(r.err.find("the broker is not running"), std::string::npos) << r.err;
  r = pp({"create", "--json", "-e", "syscalls:sys_enter_getpid"});
  EXPECT_EQ(r.status, 8) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["error"]["kind"], "broker-down");
  EXPECT_EQ(j["error"]["exit_status"], 8);
  // daemon --reload with no broker: 8 as well.
  EXPECT_EQ(run_pp({"daemon", "--reload", "--run-dir", run_dir_}).status, 8);
  ::unlink((run_dir_ + "/state.json").c_str());
  tmp_.write("bad.conf", "[a]\nevent = syscalls:sys_enter_getpid\ncolour = red\n");
  r = run_pp({"daemon", "--run-dir", run_dir_, "--config", tmp_.path("bad.conf")});
  EXPECT_EQ(r.status, 9) << r.err;
  EXPECT_NE(r.err.find("bad.conf:3: unknown key 'colour'"), std::string::npos) << r.err;
}

TEST_F(ExitStatusKernel, Status3NameTaken) {
  CommandResult r = pp({"create", "--json", "-e", "syscalls:sys_enter_getpid", "--name", "gp"});
  EXPECT_EQ(r.status, 3) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["error"]["kind"], "name-taken") << "the broker's kind, through the protocol";
  EXPECT_EQ(j["error"]["exit_status"], 3);
  EXPECT_EQ(j["error"]["errno"], "EEXIST");
}

TEST_F(ExitStatusKernel, Status4NotFound) {
  EXPECT_EQ(pp({"kill", "nosuch"}).status, 4);
  CommandResult r = pp({"record", "-e", "persistent/nosuch/", "-o", tmp_.path("x.data")});
  EXPECT_EQ(r.status, 4) << r.err;
}

TEST_F(ExitStatusKernel, Status5OutputFailed) {
  CommandResult r =
      pp({"record", "--no-follow", "-e", "persistent/gp/", "-o", "/nonexistent/x.data"});
  EXPECT_EQ(r.status, 5) << "not 4, 'no such event': the output failed\n" << r.err;
  EXPECT_NE(r.err.find("/nonexistent/x.data"), std::string::npos) << r.err;
}

TEST_F(ExitStatusKernel, Status6CommandCouldNotBeRunAndNever127) {
  CommandResult r = pp({"record", "-q", "-e", "persistent/gp/", "-o", tmp_.path("a.data"), "--",
                        "/nonexistent/command"});
  EXPECT_EQ(r.status, 6) << r.err;
  EXPECT_NE(r.err.find("cannot run '/nonexistent/command'"), std::string::npos) << r.err;

  r = pp({"record", "-q", "-e", "persistent/gp/", "-o", tmp_.path("b.data"), "--", "sh", "-c",
          "exit 127"});
  EXPECT_EQ(r.status, 6) << r.err;
  EXPECT_NE(r.err.find("status 127"), std::string::npos) << r.err;

  r = pp({"record", "-q", "-e", "persistent/gp/", "-o", tmp_.path("c.data"), "--", "sh", "-c",
          "exit 3"});
  EXPECT_EQ(r.status, 3) << "COMMAND's own status passes through\n" << r.err;
}

TEST_F(ExitStatusKernel, ThroughPerfsDispatcher) {
  CommandResult r = through_perf({"list"});
  ASSERT_EQ(r.status, 0) << perf_program()
                         << " could not run perf-persistent (install perf with "
                            "./scripts/setup, or set PP_PERF to a perf binary): "
                         << r.err;

  r = through_perf({"record", "-q", "-e", "persistent/gp/", "-o", tmp_.path("a.data"), "--",
                    "/nonexistent/command"});
  EXPECT_EQ(r.status, 6) << r.err;
  EXPECT_EQ(r.err.find("is not a perf-command"), std::string::npos) << r.err;

  r = through_perf({"record", "-q", "-e", "persistent/gp/", "-o", tmp_.path("b.data"), "--", "sh",
                    "-c", "exit 127"});
  EXPECT_EQ(r.status, 6) << r.err;
  EXPECT_EQ(r.err.find("is not a perf-command"), std::string::npos) << r.err;

  r = through_perf({"record", "--no-follow", "-e", "persistent/gp/", "-o", "/nonexistent/x.data"});
  EXPECT_EQ(r.status, 5) << r.err;
  EXPECT_EQ(through_perf({"kill", "nosuch"}).status, 4);
  EXPECT_EQ(through_perf({"create", "-e", "syscalls:sys_enter_getpid", "--name", "gp"}).status, 3);
  EXPECT_EQ(through_perf({"list", "--bogus"}).status, 1);
}

// With a broker: invalid UTF-8 crosses the protocol (escaped by its
// encoder) and comes out as valid JSON with the right status.
TEST_F(ExitStatusKernel, InvalidUtf8ThroughTheBroker) {
  CommandResult r = pp({"create", "--json", "-e", "syscalls:\xff"});
  EXPECT_EQ(r.status, 1) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["error"]["kind"], "usage");

  r = pp({"kill", "--json", "\xfe"});
  EXPECT_EQ(r.status, 4);
  j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["errors"][0]["ref"], "\\xfe");

  r = pp({"list", "--json"});
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(json::parse(r.out, nullptr, false).is_discarded()) << r.out;
}

}  // namespace
}  // namespace pp::testing

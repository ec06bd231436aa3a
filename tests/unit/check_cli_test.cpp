// `perf persistent check` through the real binary, on fake roots
// (PERF_PERSISTENT_CHECK_ROOT): the plugin's exit statuses 0-3, its first
// line, and its JSON, bad options included. Each cause on its own is in
// persistent/check_test.cpp.
#include <filesystem>
#include <gtest/gtest.h>

#include "base/json.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace pp::testing {
namespace {

class CheckCli : public ::testing::Test {
 protected:
  CheckCli() {
    dir.write("root/proc/sys/kernel/arch", "x86_64\n");
    dir.write("root/proc/cmdline", "root=/dev/vda1 quiet\n");
    dir.write("root/proc/sys/kernel/perf_event_paranoid", "2\n");
    dir.write("root/proc/sys/kernel/perf_event_mlock_kb", "516\n");
    dir.write("root/sys/kernel/tracing/events/mce/mce_record/id", "123\n");
    dir.write("root/sys/kernel/debug/sched/verbose", "N\n");
    dir.write("root/sys/devices/system/machinecheck/machinecheck0/check_interval", "300\n");
    dir.write("root/etc/systemd/system/multi-user.target.wants/perf-persistent.service", "");
    dir.mkdir("run");
  }

  CommandResult check(std::vector<std::string> args) {
    args.insert(args.begin(), {"check", "--run-dir", dir.path("run")});
    CommandOptions options;
    options.env = {"PERF_PERSISTENT_CHECK_ROOT=" + dir.path("root")};
    return run_pp(args, options);
  }

  // A host whose kernel holds persistent events (no broker needed) and has
  // no machine checks to miss: everything is OK.
  void healthy_arm() {
    dir.write("root/proc/sys/kernel/arch", "aarch64\n");
    std::filesystem::remove_all(dir.path("root/sys/kernel/tracing/events/mce"));
    dir.write("root/sys/kernel/tracing/events/sched/sched_switch/id", "316\n");
    std::filesystem::remove_all(dir.path("root/sys/devices/system/machinecheck"));
    dir.mkdir("root/sys/bus/event_source/devices/persistent/events");
    dir.write("root/sys/bus/event_source/devices/persistent/type", "6\n");
  }

  TempDir dir;
};

TEST_F(CheckCli, NoBrokerIsCriticalWithExitTwo) {
  CommandResult r = check({});
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("PERSISTENT CRITICAL - 2 problems: broker-not-running, no-mce-event | "
                        "critical=2 warning=0 unknown=0 acknowledged=0 events=0 errors=U\n",
                        0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("what to do: start it: 'systemctl start perf-persistent'"),
            std::string::npos)
      << r.out;

  r = check({"--json"});
  EXPECT_EQ(r.status, 2) << r.err;
  auto doc = parse_json(r.out, "check --json");
  ASSERT_TRUE(doc.ok()) << r.out;
  EXPECT_EQ((*doc)["status"], "CRITICAL");
  EXPECT_EQ((*doc)["exit_status"], 2);
  int critical = 0;
  for (const auto& f : (*doc)["findings"])
    if (f["status"] == "CRITICAL") {
      critical++;
      EXPECT_TRUE(f["id"] == "broker-not-running" || f["id"] == "no-mce-event") << f.dump();
    }
  EXPECT_EQ(critical, 2);
}

TEST_F(CheckCli, HealthyIsOkWithExitZero) {
  healthy_arm();
  CommandResult r = check({});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("PERSISTENT OK - 24 checks passed, 0 event(s) held |", 0), 0u) << r.out;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << r.out;
  r = check({"-v"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("\nOK broker-not-running: the kernel holds persistent events itself"),
            std::string::npos)
      << r.out;
}

TEST_F(CheckCli, WarningIsExitOneAndUnknownThree) {
  healthy_arm();
  dir.write("root/proc/77/comm", "mcelog\n");
  dir.write("root/proc/77/cmdline", std::string("mcelog\0", 7));
  CommandResult r = check({});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("PERSISTENT WARNING - 1 problem: other-consumer |", 0), 0u) << r.out;

  std::filesystem::remove(dir.path("root/proc/sys/kernel/perf_event_paranoid"));
  std::filesystem::remove(dir.path("root/proc/77/comm"));
  std::filesystem::remove(dir.path("root/proc/77/cmdline"));
  r = check({"--json"});
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  auto doc = parse_json(r.out, "check --json");
  ASSERT_TRUE(doc.ok()) << r.out;
  EXPECT_EQ((*doc)["status"], "UNKNOWN");
  EXPECT_EQ((*doc)["summary"], "1 problem: perf-event-paranoid");
}

// watch's liveness from what a real watch left: its history's heartbeat
// (stopped, after --once) and its metrics file (watch_up 0); acknowledged
// by the config file's [check] section, whose typo is refused naming it.
TEST_F(CheckCli, WatchLivenessFromItsFilesAndTheConfigFilesAcknowledgements) {
  healthy_arm();
  std::string conf = dir.path("watch.conf");
  std::string watch_part = "[watch]\ndb = " + dir.path("history.db") +
                           "\nprometheus = " + dir.path("m.prom") + "\nharvest = no\n";
  dir.write("watch.conf", watch_part);
  CommandResult r = check({"--config", conf});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("WARNING watch-not-alive: watch has never written its history"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("WARNING metrics-stale: watch's metrics file is missing"), std::string::npos)
      << r.out;

  CommandResult w = run_pp({"watch", "--config", conf, "--once", "--run-dir", dir.path("run")});
  ASSERT_EQ(w.status, 0) << w.out << w.err;
  r = check({"--config", conf, "--json"});
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  auto doc = parse_json(r.out, "check --json");
  ASSERT_TRUE(doc.ok()) << r.out;
  EXPECT_EQ((*doc)["summary"], "2 problems: watch-not-alive, metrics-stale");
  EXPECT_EQ((*doc)["errors"], 0) << "the history counts its machine checks";
  for (const auto& f : (*doc)["findings"]) {
    if (f["id"] == "watch-not-alive") {
      EXPECT_NE(f["found"].get<std::string>().find(" stopped "), std::string::npos) << f.dump();
    }
    if (f["id"] == "metrics-stale") {
      EXPECT_NE(f["found"].get<std::string>().find("perf_persistent_watch_up 0"), std::string::npos)
          << f.dump();
    }
  }

  dir.write("watch.conf", watch_part + "[check]\nignore = watch-not-alive, metrics-stale\n");
  r = check({"--config", conf});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("acknowledged=2 events=0 errors=0c\n"), std::string::npos) << r.out;

  dir.write("watch.conf", watch_part + "[check]\nignore = watch-dead\n");
  r = check({"--config", conf});
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.out.find(conf + " [check] ignore watch-dead: no check has that id"),
            std::string::npos)
      << r.out;

  r = check({"--config", dir.path("missing.conf")});
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("missing.conf"), std::string::npos) << r.out;
}

// A bad option is UNKNOWN (3), as plugins report it, not the usage status 1.
TEST_F(CheckCli, BadOptionIsUnknown) {
  CommandResult r = check({"--bogus"});
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(r.out.rfind("PERSISTENT UNKNOWN - ", 0), 0u) << r.out;
  EXPECT_NE(r.err.find("Usage: perf persistent check"), std::string::npos) << r.err;

  r = check({"--json", "--bogus"});
  EXPECT_EQ(r.status, 3);
  auto doc = parse_json(r.out, "check --json");
  ASSERT_TRUE(doc.ok()) << r.out;
  EXPECT_EQ((*doc)["status"], "UNKNOWN");
  EXPECT_EQ((*doc)["exit_status"], 3);
  EXPECT_EQ((*doc)["error"]["kind"], "usage");
}

}  // namespace
}  // namespace pp::testing

// `perf persistent watch` on this machine's kernel: a persistent getppid
// event (filtered on one load process, so other tests' calls never count)
// read by the watcher into its history, its Prometheus file and a trigger,
// then read back with `report --db`. Every count is exact: N calls are N
// records, once, however often the watcher restarts.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/kernel/kernel_env.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

using json = nlohmann::json;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      lines.push_back(json::parse(line));
  return lines;
}

class Watch : public PrivateBrokerTest {
 protected:
  void SetUp() override {
    PrivateBrokerTest::SetUp();
    if (IsSkipped())
      return;
    db_ = tmp_.path() + "/history.db";
    prom_ = tmp_.path() + "/pp.prom";
  }

  // A persistent getppid event that keeps only `caller`'s calls.
  void create_for(const GetppidCaller& caller) {
    CommandResult r = pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "ppid",
                          "--filter", caller.filter()});
    ASSERT_EQ(r.status, 0) << r.err;
  }

  // watch --once into the history, no harvest (the host's kernel log is not
  // this test's).
  CommandResult watch_once(std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"watch", "-e", "persistent/ppid/", "--once",
                                     "--db",  db_,  "--no-harvest"};
    args.insert(args.end(), more.begin(), more.end());
    return pp(args);
  }

  std::vector<json> history() {
    CommandResult r = run_pp({"report", "--db", db_, "--json"});
    EXPECT_EQ(r.status, 0) << r.err;
    return json_lines(r.out);
  }

  std::string db_, prom_;
};

TEST_F(Watch, KeepsEveryCallOnceAcrossRestarts) {
  GetppidCaller caller(1000);
  create_for(caller);
  ASSERT_TRUE(caller.run());

  CommandResult first = watch_once({"--prometheus", prom_});
  ASSERT_EQ(first.status, 0) << first.err;
  std::vector<json> records = history();
  ASSERT_EQ(records.size(), 1000u) << first.err;
  for (const json& r : records) {
    EXPECT_EQ(r["event"], "ppid");
    EXPECT_EQ(r["tracepoint"], "syscalls:sys_enter_getppid");
    EXPECT_EQ(r["origin"], "live");
    EXPECT_EQ(r["pid"], caller.pid());
    EXPECT_EQ(r["cpu"], 0);  // the caller is pinned to CPU 0
  }

  // The metrics of that run: exactly the calls, on CPU 0.
  std::string prom = slurp(prom_);
  EXPECT_TRUE(std::regex_search(
      prom, std::regex(R"(perf_persistent_records_total\{[^}]*cpu="0"[^}]*\} 1000\n)")))
      << prom;
  EXPECT_TRUE(std::regex_search(prom, std::regex(R"(perf_persistent_watch_up 0\n)"))) << prom;

  // A restart reads the same buffers again and keeps nothing twice: it
  // resumes after the history's newest record (the history's own
  // uniqueness would hide a broken resume, so the run must say 0).
  CommandResult again = watch_once();
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(history().size(), 1000u) << again.err;
  EXPECT_NE(again.err.find("watch: 0 records kept,"), std::string::npos) << again.err;

  // New calls after the restart: only they are added.
  GetppidCaller more(500);
  CommandResult filter = pp(
      {"create", "-e", "syscalls:sys_enter_getppid", "--name", "ppid2", "--filter", more.filter()});
  ASSERT_EQ(filter.status, 0) << filter.err;
  ASSERT_TRUE(more.run());
  CommandResult both = pp({"watch", "-e", "persistent/ppid/", "-e", "persistent/ppid2/", "--once",
                           "--db", db_, "--no-harvest"});
  ASSERT_EQ(both.status, 0) << both.err;
  records = history();
  EXPECT_EQ(records.size(), 1500u) << both.err;
  int second = 0;
  for (const json& r : records)
    second += r["event"] == "ppid2" && r["pid"] == more.pid();
  EXPECT_EQ(second, 500);

  // The summary counts the same, event by event.
  CommandResult summary = run_pp({"report", "--db", db_, "--summary", "--json"});
  ASSERT_EQ(summary.status, 0) << summary.err;
  json parsed = json::parse(summary.out);
  std::map<std::string, int64_t> counts;
  for (const json& e : parsed["summary"]["events"])
    counts[e["event"].get<std::string>()] += e["count"].get<int64_t>();
  EXPECT_EQ(counts, (std::map<std::string, int64_t>{{"ppid", 1000}, {"ppid2", 500}}))
      << summary.out;
}

// More records than one transaction of the history holds (65536), then a
// SIGTERM while the watcher waits: what it says it kept is in the file (the
// step commits and the final one), and a restart adds the rest, if any,
// and nothing twice.
TEST_F(Watch, SigtermKeepsEveryRecordPastTheTransactionSize) {
  constexpr long kCalls = 70000;
  auto stored = [&] {  // the summary's count: no 70000 lines to parse
    CommandResult r = run_pp({"report", "--db", db_, "--summary", "--json"});
    EXPECT_EQ(r.status, 0) << r.err;
    return json::parse(r.out, nullptr, false).value("/summary/records"_json_pointer, int64_t{-1});
  };
  GetppidCaller caller(kCalls);
  CommandResult made = pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "ppid",
                           "--filter", caller.filter(), "-m", "2048"});  // 8 MiB a CPU
  ASSERT_EQ(made.status, 0) << made.err;
  ASSERT_TRUE(caller.run());
  CommandResult watched =
      run_command({"timeout", "--preserve-status", "-s", "TERM", "3", binary_path(), "watch", "-e",
                   "persistent/ppid/", "--db", db_, "--no-harvest", "--run-dir=" + run_dir_});
  ASSERT_EQ(watched.status, 0) << watched.err;
  std::smatch kept;
  ASSERT_TRUE(std::regex_search(watched.err, kept, std::regex(R"(stopped: (\d+) records kept)")))
      << watched.err;
  EXPECT_EQ(stored(), std::stol(kept[1])) << watched.err;
  CommandResult again = watch_once();
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(stored(), kCalls) << again.err;
  // It resumed after the newest record stored (stream_times, written with
  // each commit): the history's uniqueness would hide a resume point left
  // behind, so the restart must say how many it added.
  std::string added = std::to_string(kCalls - std::stol(kept[1])) + " records kept,";
  EXPECT_NE(again.err.find("watch: " + added), std::string::npos) << again.err;
}

// Each record carries its task's name: perf's samples have none and the
// kernel's saved_cmdlines holds only ftrace's, so it comes from /proc
// (an exited task that nobody reaped yet still has its comm there).
TEST_F(Watch, EveryRecordCarriesItsTasksName) {
  GetppidCaller caller(50);
  create_for(caller);
  ASSERT_TRUE(caller.go());
  std::string stat_path = "/proc/" + std::to_string(caller.pid()) + "/stat";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::string stat;
  while (std::chrono::steady_clock::now() < deadline) {
    stat = slurp(stat_path);
    if (stat.find(") Z ") != std::string::npos)
      break;  // it made its calls and exited; not reaped: its comm stays
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(stat.find(") Z "), std::string::npos) << stat;
  std::string comm = slurp("/proc/self/comm");
  comm.erase(comm.find_last_not_of('\n') + 1);
  CommandResult r = watch_once();
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(caller.wait());
  std::vector<json> records = history();
  ASSERT_EQ(records.size(), 50u) << r.err;
  for (const json& record : records)
    EXPECT_EQ(record.value("comm", ""), comm) << record.dump();
}

TEST_F(Watch, PromtoolAcceptsTheMetricsFile) {
  GetppidCaller caller(100);
  create_for(caller);
  ASSERT_TRUE(caller.run());
  CommandResult r = watch_once({"--prometheus", prom_});
  ASSERT_EQ(r.status, 0) << r.err;
  bool have_promtool = run_command({"sh", "-c", "command -v promtool"}).status == 0;
  if (!have_promtool) {
    ASSERT_EQ(getenv("CI"), nullptr) << "promtool is missing (./scripts/setup --test installs it)";
    GTEST_SKIP() << "promtool is missing; ./scripts/setup --test installs it";
  }
  CommandResult check = run_command({"sh", "-c", "promtool check metrics < " + prom_});
  EXPECT_EQ(check.status, 0) << check.out << check.err << slurp(prom_);
}

TEST_F(Watch, FollowsNewRecordsAsTheyComeAndNdjsonHasEach) {
  GetppidCaller caller(1000);
  create_for(caller);
  CommandResult watched;
  std::thread watcher([&] {
    watched = pp({"watch", "-e", "persistent/ppid/", "--no-db", "--no-harvest", "--ndjson",
                  "--prometheus", prom_, "--prometheus-interval", "0.2", "--duration", "7"});
  });
  sleep(1);  // attached by now: the calls come while it watches
  bool called = caller.run();
  // The records are followed while the watcher runs: its metrics file says
  // 1000 with watch_up 1 (the final write, after --duration, says 0), not
  // only the last drain before it stops.
  const std::regex all(R"(perf_persistent_records_total\{[^}]*cpu="0"[^}]*\} 1000\n)");
  const std::regex up(R"(perf_persistent_watch_up 1\n)");
  std::string prom;
  bool followed = false;
  for (int i = 0; called && i < 50 && !followed; i++) {
    usleep(100 * 1000);
    prom = slurp(prom_);
    followed = std::regex_search(prom, all) && std::regex_search(prom, up);
  }
  watcher.join();
  ASSERT_TRUE(called);
  EXPECT_TRUE(followed) << "within 5 s of the calls, while watching:\n" << prom << watched.err;
  ASSERT_EQ(watched.status, 0) << watched.err;
  std::vector<json> lines = json_lines(watched.out);
  ASSERT_EQ(lines.size(), 1000u) << watched.err;
  EXPECT_EQ(lines.front()["fields"].type(), json::value_t::object);
  EXPECT_EQ(lines.back()["pid"], caller.pid());
}

TEST_F(Watch, ATriggerRunsOncePerThresholdCrossed) {
  GetppidCaller caller(1000);
  create_for(caller);
  ASSERT_TRUE(caller.run());
  std::string out = tmp_.path() + "/fired";
  // 1000 matching records, 100 per firing: exactly 10 runs, each given the
  // record that crossed the threshold on its stdin.
  CommandResult r = watch_once({"--exec", "cat >> " + out, "--match",
                                "pid == " + std::to_string(caller.pid()), "--threshold",
                                "100 in 1h", "--rate-limit", "1000 per 1h", "--max-children", "1"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<json> fired = json_lines(slurp(out));
  EXPECT_EQ(fired.size(), 10u) << r.err;
  for (const json& f : fired)
    EXPECT_EQ(f["pid"], caller.pid());
}

// A named event that does not exist stops watch at once, named. (report
// --db's own mistakes, a missing or garbage file, are watch/db_report_test's.)
TEST_F(Watch, AnUnknownEventIsNamed) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "ppid"}).status, 0);
  CommandResult unknown = pp({"watch", "-e", "persistent/nosuch/", "--once", "--no-db"});
  EXPECT_NE(unknown.status, 0);
  EXPECT_NE(unknown.err.find("nosuch"), std::string::npos) << unknown.err;
}

// An event the broker lists as unavailable (optional in its config, and
// this kernel has no such tracepoint, as a VM has no mce_record) is a state,
// not a mistake: named in watch's config file or with -e, watch says so once,
// reads the other events, and --once and --duration end with 0.
TEST_F(Watch, AnUnavailableOptionalEventIsWaitedForNotAnError) {
  GetppidCaller caller(100);
  std::string broker_conf = tmp_.path("pp.conf");
  std::ofstream(broker_conf) << "[late]\nevent = pp_test_absent:absent\noptional = yes\n"
                             << "[ppid]\nevent = syscalls:sys_enter_getppid\nfilter = "
                             << caller.filter() << "\n";
  CommandResult started = pp({"daemon", "--config=" + broker_conf});
  ASSERT_EQ(started.status, 0) << started.err;
  ASSERT_TRUE(caller.run());
  std::string watch_conf = tmp_.path("watch.conf");
  std::ofstream(watch_conf) << "[watch]\nevent = persistent/late/\nevent = persistent/ppid/\n"
                            << "harvest = no\ndb = " << db_ << "\n";

  CommandResult once = pp({"watch", "--config", watch_conf, "--once"});
  EXPECT_EQ(once.status, 0) << once.err;
  EXPECT_EQ(history().size(), 100u) << once.err;
  size_t said =
      once.err.find("persistent/late/ (pp_test_absent:absent) is unavailable on this host");
  EXPECT_NE(said, std::string::npos) << once.err;
  const std::string phrase = "is unavailable on this host";
  EXPECT_EQ(once.err.find(phrase, once.err.find(phrase) + 1), std::string::npos) << "said once";
  EXPECT_NE(once.err.find("Not an error: watch reads the other events"), std::string::npos)
      << once.err;

  CommandResult named =
      pp({"watch", "-e", "persistent/late/", "--once", "--no-db", "--no-harvest"});
  EXPECT_EQ(named.status, 0) << named.err;
  EXPECT_NE(named.err.find("is unavailable on this host"), std::string::npos) << named.err;

  CommandResult running = pp({"watch", "--config", watch_conf, "--duration", "2", "--no-db"});
  EXPECT_EQ(running.status, 0) << running.err;
  EXPECT_NE(running.err.find("reading persistent/ppid/"), std::string::npos) << running.err;
}

// The event waited for as unavailable is attached once the broker makes it
// (here: a reload gives it a tracepoint this kernel has), without a restart
// of watch, and its records from the buffer's start are read.
TEST_F(Watch, AWaitedEventIsAttachedWhenTheBrokerMakesIt) {
  GetppidCaller caller(100);
  std::string broker_conf = tmp_.path("pp.conf");
  std::ofstream(broker_conf) << "[late]\nevent = pp_test_absent:absent\noptional = yes\n"
                             << "[ppid]\nevent = syscalls:sys_enter_getppid\nfilter = "
                             << caller.filter() << "\n";
  CommandResult started = pp({"daemon", "--config=" + broker_conf});
  ASSERT_EQ(started.status, 0) << started.err;
  std::string watch_conf = tmp_.path("watch.conf");
  std::ofstream(watch_conf) << "[watch]\nevent = persistent/late/\nevent = persistent/ppid/\n"
                            << "harvest = no\n";
  const std::string out = tmp_.path("watch.out"), err = tmp_.path("watch.err");
  const std::string pid_file = tmp_.path("watch.pid");
  // In the background, past one look for the waited event (every 10 s).
  CommandResult bg =
      run_command({"sh", "-c",
                   "'" + binary_path() + "' watch --config '" + watch_conf + "' --run-dir '" +
                       run_dir_ + "' --no-db --ndjson --duration 14 >'" + out + "' 2>'" + err +
                       "' & echo $! >'" + pid_file + "'"});
  ASSERT_EQ(bg.status, 0) << bg.err;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  std::ofstream(broker_conf, std::ios::trunc)
      << "[late]\nevent = syscalls:sys_enter_getppid\nfilter = " << caller.filter()
      << "\noptional = yes\n[ppid]\nevent = syscalls:sys_enter_getppid\nfilter = "
      << caller.filter() << "\n";
  CommandResult reload = pp({"daemon", "--reload"});
  ASSERT_EQ(reload.status, 0) << reload.err;
  ASSERT_TRUE(caller.run());
  pid_t pid = 0;
  std::ifstream(pid_file) >> pid;
  ASSERT_GT(pid, 0);
  for (int i = 0; i < 250 && ::kill(pid, 0) == 0; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::stringstream log, lines;
  log << std::ifstream(err).rdbuf();
  lines << std::ifstream(out).rdbuf();
  EXPECT_NE(log.str().find("persistent/late/ (pp_test_absent:absent) is unavailable on this host"),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("persistent/late/ (syscalls:sys_enter_getppid)"), std::string::npos)
      << log.str();
  std::map<std::string, int> by_event;
  for (std::string line; std::getline(lines, line);)
    by_event[nlohmann::json::parse(line).value("event", "")]++;
  EXPECT_EQ(by_event["late"], 100) << log.str();
  EXPECT_EQ(by_event["ppid"], 100) << log.str();
}

}  // namespace
}  // namespace pp::testing

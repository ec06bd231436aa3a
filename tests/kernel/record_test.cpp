// `perf persistent record` on this machine's kernel, driven as a user drives
// it, with the real perf as the judge of what it wrote: a persistent
// syscalls:sys_enter_getppid event, a workload pinned to CPU 0 that makes
// exactly N getppid calls (kernel_tests --getppid N), and `perf script` /
// `perf report --stats` reading the file. Each test has its own run
// directory and broker, stopped at the end whatever happened.
#include <linux/perf_event.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "sys/child.h"
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
using namespace std::chrono_literals;

constexpr int kCalls = 1000;

class Record : public PrivateBrokerTest {
 protected:
  void SetUp() override {
    PrivateBrokerTest::SetUp();
    if (IsSkipped())
      return;
    ::setenv("PERF_PERSISTENT_RUN_DIR", run_dir_.c_str(), 1);
    self_ = sys::self_executable().value_or("");
    ASSERT_FALSE(self_.empty());
  }

  void TearDown() override {
    background_.clear();  // SIGTERM and reap any record still running
    PrivateBrokerTest::TearDown();
    ::unsetenv("PERF_PERSISTENT_RUN_DIR");
  }

  void create(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"create", "-e", "syscalls:sys_enter_getppid", "--name", "gp"};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult r = run_pp(args);
    ASSERT_EQ(r.status, 0) << r.err;
  }

  // The workload: exactly `calls` getppid calls on CPU 0. Returns its pid.
  pid_t run_workload(int calls) {
    CommandResult r = run_command({self_, "--getppid", std::to_string(calls)});
    EXPECT_EQ(r.status, 0) << r.err;
    return workload_pid(r.err);
  }

  // Starts a record in the background, its stderr in `err_file`.
  sys::Child& start_record(const std::string& output, const std::string& err_file,
                           const std::vector<std::string>& extra = {}) {
    std::string cmd = "exec '" + binary_path() + "' record -e persistent/gp/ -o '" + output + "'";
    for (const std::string& e : extra)
      cmd += " '" + e + "'";
    cmd += " 2>'" + err_file + "'";
    auto child = sys::Child::spawn({"sh", "-c", cmd});
    EXPECT_TRUE(child.ok()) << child.error().message();
    background_.push_back(std::move(child).value());
    return background_.back();
  }

  // Waits until the broker counts `n` readers of "gp".
  void wait_for_readers(int n) {
    for (int i = 0; i < 500; i++) {
      CommandResult r = run_pp({"list", "-v", "--json"});
      json doc = json::parse(r.out, nullptr, false);
      if (!doc.is_discarded())
        for (const json& e : doc.value("events", json::array()))
          if (e.value("name", "") == "gp" && e["readers"].is_number() && e["readers"] == n)
            return;
      std::this_thread::sleep_for(10ms);
    }
    FAIL() << "the broker never saw " << n << " readers of 'gp'";
  }

  // Waits until a background record has written its first flush (the side
  // band and its snapshot), after which it is in its loop: the perf.data
  // header's data size (the u64 at offset 0x30) is no longer 0.
  void wait_for_start(const std::string& file) {
    for (int i = 0; i < 1000; i++) {
      std::ifstream in(file, std::ios::binary);
      uint64_t data_size = 0;
      if (in.seekg(0x30) && in.read(reinterpret_cast<char*>(&data_size), 8) && data_size > 0)
        return;
      std::this_thread::sleep_for(10ms);
    }
    FAIL() << file << " was never started";
  }

  // "SAMPLE events: N" (the total) and "LOST events: N" from perf report --stats.
  static std::pair<long, long> perf_stats(const std::string& file) {
    CommandResult r = run_command({"perf", "report", "--stats", "-i", file});
    EXPECT_EQ(r.status, 0) << r.err;
    long samples = -1, lost = 0;
    std::smatch m;
    if (std::regex_search(r.out, m, std::regex("SAMPLE events: *([0-9]+)")))
      samples = std::stol(m[1]);
    if (std::regex_search(r.out, m, std::regex("LOST events: *([0-9]+)")))
      lost = std::stol(m[1]);
    return {samples, lost};
  }

  // All sys_enter_getppid lines perf script prints, whatever the pid.
  static long perf_script_total(const std::string& file) {
    CommandResult r = run_command({"perf", "script", "-i", file, "-F", "event"});
    long n = 0;
    for (size_t at = 0; (at = r.out.find("sys_enter_getppid", at)) != std::string::npos; at++)
      n++;
    return n;
  }

  static std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string self_;
  std::deque<sys::Child> background_;  // a deque: references stay valid
};

TEST_F(Record, CommandsSamplesReachPerfScriptExactly) {
  create();
  std::string file = tmp_.path("a.data");
  CommandResult r = run_pp({"record", "-e", "persistent/gp/", "-o", file, "--", self_, "--getppid",
                            std::to_string(kCalls)});
  ASSERT_EQ(r.status, 0) << r.err;
  pid_t pid = workload_pid(r.err);
  ASSERT_GT(pid, 0) << r.err;
  EXPECT_EQ(perf_script_count(file, pid), kCalls);
  // perf report agrees with perf script on the count, and nothing was lost.
  auto [samples, lost] = perf_stats(file);
  EXPECT_EQ(samples, perf_script_total(file));
  EXPECT_EQ(lost, 0);
  EXPECT_NE(r.err.find("[ perf persistent record: Captured and wrote "), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("lost"), std::string::npos) << r.err;
  // The tracking event names the workload: perf script shows its comm.
  // (perf pads the pid to five columns: "kernel_tests  6876".)
  CommandResult comm = run_command({"perf", "script", "-i", file, "-F", "comm,pid"});
  bool named = false;
  std::istringstream lines(comm.out);
  for (std::string line; std::getline(lines, line) && !named;) {
    std::istringstream fields(line);
    std::string name, pid_text;
    named =
        (fields >> name >> pid_text) && name == "kernel_tests" && pid_text == std::to_string(pid);
  }
  EXPECT_TRUE(named) << "no 'kernel_tests " << pid << "' line in:\n" << comm.out.substr(0, 400);
}

TEST_F(Record, ExitStatusIsTheCommands) {
  create();
  CommandResult r = run_pp({"record", "-q", "-e", "persistent/gp/", "-o", tmp_.path("x.data"), "--",
                            "sh", "-c", "exit 3"});
  EXPECT_EQ(r.status, 3) << r.err;
  r = run_pp({"record", "-q", "-e", "persistent/gp/", "-o", tmp_.path("y.data"), "--",
              "/nonexistent/command"});
  // 6, not 127: perf's dispatcher reads 127 as "not a perf-command".
  EXPECT_EQ(r.status, 6) << r.err;
  EXPECT_NE(r.err.find("cannot run '/nonexistent/command': No such file or directory"),
            std::string::npos)
      << r.err;
}

TEST_F(Record, ConcurrentRecordersEachGetEverySampleAndAKilledOneHarmsNone) {
  create();
  std::string a = tmp_.path("a.data"), b = tmp_.path("b.data"), c = tmp_.path("c.data");
  sys::Child& ra = start_record(a, tmp_.path("a.err"));
  sys::Child& rb = start_record(b, tmp_.path("b.err"));
  sys::Child& rc = start_record(c, tmp_.path("c.err"));
  wait_for_readers(3);
  for (const std::string& file : {a, b, c})
    wait_for_start(file);

  // Half the calls, then the third recorder dies without a word once it has
  // flushed them (it flushes every 250 ms), then the rest.
  CommandResult first = run_command({self_, "--getppid", std::to_string(kCalls / 2)});
  ASSERT_EQ(first.status, 0);
  std::this_thread::sleep_for(700ms);
  ASSERT_TRUE(rc.kill(SIGKILL).ok());
  EXPECT_EQ(*rc.wait(), 128 + SIGKILL);
  wait_for_readers(2);
  CommandResult second = run_command({self_, "--getppid", std::to_string(kCalls / 2)});
  ASSERT_EQ(second.status, 0);
  pid_t p1 = workload_pid(first.err), p2 = workload_pid(second.err);

  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(ra.kill(SIGINT).ok());
  ASSERT_TRUE(rb.kill(SIGINT).ok());
  EXPECT_EQ(*ra.wait(), 0) << slurp(tmp_.path("a.err"));
  EXPECT_EQ(*rb.wait(), 0) << slurp(tmp_.path("b.err"));
  for (const std::string& file : {a, b}) {
    EXPECT_EQ(perf_script_count(file, p1) + perf_script_count(file, p2), kCalls) << file;
    EXPECT_EQ(perf_stats(file).second, 0) << file;
  }
  // The killed recorder's file is valid up to its last flush.
  std::string err;
  EXPECT_EQ(perf_script_count(c, p1, &err), kCalls / 2) << err;

  // The event is untouched: still listed, still counting.
  CommandResult list = run_pp({"list", "--json"});
  EXPECT_NE(list.out.find("\"name\":\"gp\""), std::string::npos) << list.out;
  std::string d = tmp_.path("d.data");
  CommandResult again = run_pp({"record", "-e", "persistent/gp/", "-o", d, "--", self_, "--getppid",
                                std::to_string(kCalls)});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(perf_script_count(d, workload_pid(again.err)), kCalls);
}

TEST_F(Record, SnapshotWritesWhatHappenedBeforeAnyoneLooked) {
  create();
  pid_t pid = run_workload(kCalls);  // no reader attached
  std::string file = tmp_.path("snap.data");
  CommandResult r = run_pp({"record", "-e", "persistent/gp/", "--no-follow", "-o", file});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(perf_script_count(file, pid), kCalls);
  EXPECT_EQ(perf_stats(file).second, 0);
  EXPECT_EQ(r.err.find("lost"), std::string::npos) << r.err;
}

TEST_F(Record, SnapshotOfATooSmallBufferSaysHowManyWereLost) {
  create({"-m", "1"});  // one page: a few dozen samples
  pid_t pid = run_workload(kCalls);
  std::string file = tmp_.path("small.data");
  CommandResult r = run_pp({"record", "-e", "persistent/gp/", "--no-follow", "-o", file});
  ASSERT_EQ(r.status, 0) << r.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(r.err, m, std::regex("lost ([0-9]+) samples: ([0-9]+) overwritten")))
      << r.err;
  long said_lost = std::stol(m[1]);
  int kept = perf_script_count(file, pid);
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, kCalls);
  // The file says the same as the summary, and the estimate is close: kept
  // plus lost is about every call made (this machine's other getppid calls
  // and the record's size estimate can move it a little).
  EXPECT_EQ(perf_stats(file).second, 1) << "one PERF_RECORD_LOST for the one lapped buffer";
  EXPECT_NEAR(double(kept + said_lost), double(kCalls), kCalls * 0.1) << r.err;
}

TEST_F(Record, PipeModeFeedsPerfScript) {
  create();
  std::string cmd = "'" + binary_path() + "' record -q -e persistent/gp/ -o - -- '" + self_ +
                    "' --getppid " + std::to_string(kCalls) + " | perf script -i - -F pid,event";
  CommandResult r = run_command({"sh", "-c", cmd});
  ASSERT_EQ(r.status, 0) << r.err;
  pid_t pid = workload_pid(r.err);
  ASSERT_GT(pid, 0) << r.err;
  EXPECT_EQ(count_getppid(r.out, pid), kCalls);
}

// One sample on a quiet event wakes no watermark, yet it must reach the file
// while record keeps running, within a second (the poll timeout, 250 ms,
// bounds it). The file is read from a copy taken while record runs: each
// flush leaves the header valid, so perf reads it without record stopping.
TEST_F(Record, ALoneSampleReachesTheFileWithinASecond) {
  create();
  std::string file = tmp_.path("lone.data");
  sys::Child& rec = start_record(file, tmp_.path("lone.err"));
  wait_for_readers(1);
  wait_for_start(file);
  pid_t pid = run_workload(1);
  ASSERT_GT(pid, 0);
  auto called = std::chrono::steady_clock::now();
  std::string copy = tmp_.path("lone-copy.data");
  int seen = 0;
  while (seen == 0 && std::chrono::steady_clock::now() - called < 1s) {
    std::this_thread::sleep_for(50ms);
    std::filesystem::copy_file(file, copy, std::filesystem::copy_options::overwrite_existing);
    // A copy taken mid-flush may be torn: only a clean read counts.
    CommandResult r = run_command({"perf", "script", "-i", copy, "-F", "pid,event"});
    if (r.status == 0)
      seen = count_getppid(r.out, pid);
  }
  EXPECT_EQ(seen, 1) << "the lone sample was not in the file a second after the call";
  EXPECT_FALSE(rec.exited()) << "record must still be following";
  ASSERT_TRUE(rec.kill(SIGINT).ok());
  EXPECT_EQ(*rec.wait(), 0);
  EXPECT_EQ(perf_script_count(file, pid), 1);
}

TEST_F(Record, SigintLeavesACompleteFile) {
  create();
  std::string file = tmp_.path("int.data");
  sys::Child& rec = start_record(file, tmp_.path("int.err"));
  wait_for_readers(1);
  wait_for_start(file);
  pid_t pid = run_workload(kCalls);
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(rec.kill(SIGINT).ok());
  EXPECT_EQ(*rec.wait(), 0);
  EXPECT_EQ(perf_script_count(file, pid), kCalls);
  EXPECT_NE(slurp(tmp_.path("int.err")).find("Captured and wrote"), std::string::npos);
}

TEST_F(Record, AFullDiskStopsCleanlyWithAValidFile) {
  create();
  // A 256 KiB tmpfs in a private mount namespace; ~88-byte samples fill it.
  std::string mnt = tmp_.path("small");
  std::string cmd = "mkdir -p '" + mnt + "' && mount -t tmpfs -o size=256k none '" + mnt +
                    "' && '" + binary_path() + "' record -e persistent/gp/ -o '" + mnt +
                    "/full.data' -- '" + self_ +
                    "' --getppid 20000; echo status=$?; "
                    "perf script -i '" +
                    mnt +
                    "/full.data' -F event 2>&1 | grep -c sys_enter_getppid; "
                    "echo script=$?";
  CommandResult r = run_command({"unshare", "-m", "sh", "-c", cmd});
  PP_SKIP_UNLESS(r.err.find("mount:") == std::string::npos, "cannot mount a tmpfs: " + r.err);
  EXPECT_NE(r.out.find("status=5"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find("no space left on the device of " + mnt + "/full.data"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("is complete up to the last record written"), std::string::npos) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("status=5\n([0-9]+)\nscript=0"))) << r.out;
  long kept = std::stol(m[1]);
  EXPECT_GT(kept, 100) << "the file must hold what fitted";
  EXPECT_LT(kept, 20000);
}

TEST_F(Record, EventsThatAreNotPersistentOrDoNotExist) {
  create();
  CommandResult r = run_pp({"record", "-e", "sched:sched_switch", "-o", tmp_.path("n.data")});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("'sched:sched_switch' is not a persistent event"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("perf persistent create -e sched:sched_switch"), std::string::npos);
  r = run_pp({"record", "-e", "persistent/nosuch/", "-o", tmp_.path("n.data")});
  EXPECT_EQ(r.status, 4) << r.err;
  r = run_pp({"record", "-e", "persistent/gp/", "-C", "4095", "-o", tmp_.path("n.data")});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("has no buffer on CPU 4095"), std::string::npos) << r.err;
}

TEST_F(Record, CpuClockSamplesNameTheHottestFunction) {
  CommandResult c = run_pp({"create", "-e", "cpu-clock", "--name", "clk"});
  ASSERT_EQ(c.status, 0) << c.err;
  std::string file = tmp_.path("clk.data");
  CommandResult r =
      run_pp({"record", "-e", "persistent/clk/", "-o", file, "--", self_, "--busy", "700"});
  ASSERT_EQ(r.status, 0) << r.err;
  // The samples are system-wide: look at the workload's alone.
  CommandResult rep =
      run_command({"perf", "report", "-i", file, "--stdio", "--comms", "kernel_tests",
                   "--percentage", "relative", "--sort", "sym", "--percent-limit", "5"});
  ASSERT_EQ(rep.status, 0) << rep.err;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(rep.out, m, std::regex("([0-9.]+)%\\s+\\[\\.\\] pp_test_busy_loop")))
      << rep.out.substr(0, 2000);
  EXPECT_GT(std::stod(m[1]), 50.0) << "the busy loop must dominate the workload's samples";
}

// Issue 16: a persistent tracepoint event is created lean (sample_type
// IP|TID|TIME|RAW) and record supplies the rest from the buffer each record
// came from: perf script shows each sample's CPU and period, perf report
// reads the file and counts every sample once.
TEST_F(Record, LeanEventsSamplesGetTheirBuffersCpuAndPeriod) {
  PP_SKIP_UNLESS(::sysconf(_SC_NPROCESSORS_ONLN) >= 2, "needs CPUs 0 and 1 online");
  create();
  CommandResult listed = run_pp({"list", "--json"});
  ASSERT_EQ(listed.status, 0) << listed.err;
  uint64_t sample_type = 0;
  for (const json& e : json::parse(listed.out).value("events", json::array()))
    if (e.value("name", "") == "gp")
      sample_type = std::stoull(e["attr"][3].get<std::string>(), nullptr, 16);
  EXPECT_EQ(sample_type,
            uint64_t(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW))
      << listed.out;

  constexpr int kOnCpu0 = kCalls, kOnCpu1 = kCalls / 2;
  std::string file = tmp_.path("lean.data");
  std::string both = "'" + self_ + "' --getppid-on 0 " + std::to_string(kOnCpu0) + " && '" + self_ +
                     "' --getppid-on 1 " + std::to_string(kOnCpu1);
  CommandResult r = run_pp({"record", "-e", "persistent/gp/", "-o", file, "--", "sh", "-c", both});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> pids;
  std::smatch m;
  for (auto it = r.err.cbegin(); std::regex_search(it, r.err.cend(), m, std::regex("pid ([0-9]+)"));
       it = m.suffix().first)
    pids.push_back(m[1]);
  ASSERT_EQ(pids.size(), 2u) << r.err;

  CommandResult script = run_command({"perf", "script", "-i", file, "-F", "cpu,pid,event,period"});
  ASSERT_EQ(script.status, 0) << script.err;
  // "30181 [001]          1 syscalls:sys_enter_getppid: "
  std::regex line_re("^ *([0-9]+) +\\[([0-9]+)\\] +([0-9]+) +syscalls:sys_enter_getppid:.*");
  int on0 = 0, on1 = 0, elsewhere = 0, total = 0;
  std::istringstream lines(script.out);
  for (std::string line; std::getline(lines, line);) {
    if (!std::regex_match(line, m, line_re))
      continue;
    total++;
    EXPECT_EQ(m[3].str(), "1") << "period of: " << line;
    if (m[1] == pids[0])
      (m[2] == "000" ? on0 : elsewhere)++;
    else if (m[1] == pids[1])
      (m[2] == "001" ? on1 : elsewhere)++;
  }
  EXPECT_EQ(on0, kOnCpu0) << script.out.substr(0, 600);
  EXPECT_EQ(on1, kOnCpu1) << script.out.substr(0, 600);
  EXPECT_EQ(elsewhere, 0) << "samples of a pinned workload on another CPU";

  CommandResult report = run_command({"perf", "report", "--stdio", "-i", file});
  ASSERT_EQ(report.status, 0) << report.err;
  // "# Samples: 1K of event ...": perf rounds the count; the event count is exact.
  EXPECT_TRUE(std::regex_search(
      report.out, std::regex("# Samples: [0-9.]+K? +of event 'syscalls:sys_enter_getppid'")))
      << report.out.substr(0, 1000);
  ASSERT_TRUE(
      std::regex_search(report.out, m, std::regex("# Event count \\(approx\\.\\): ([0-9]+)")))
      << report.out.substr(0, 1000);
  EXPECT_EQ(std::stol(m[1]), total) << "every sample's period is 1";
  EXPECT_EQ(report.err.find("non matching"), std::string::npos) << report.err;
}

}  // namespace
}  // namespace pp::testing

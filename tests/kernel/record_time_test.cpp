// record's time and perf's habits on this machine's kernel, judged by the
// real perf: wall-clock times (perf script -F tod) against readings taken
// around the load, rotating files (--switch-output by size, time and
// signal) that together hold every sample of a counted load, --max-size,
// and the --json summary. Each test has its own run directory and broker.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
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
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

uint64_t wall_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ULL + uint64_t(ts.tv_nsec);
}

class RecordTime : public PrivateBrokerTest {
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
    PrivateBrokerTest::TearDown();
    ::unsetenv("PERF_PERSISTENT_RUN_DIR");
  }

  void create(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"create", "-e",  "syscalls:sys_enter_getppid", "--name", "gp",
                                     "-m",     "1024"};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult r = run_pp(args);
    ASSERT_EQ(r.status, 0) << r.err;
  }

  // The perf.data.<16 digits> files next to `base`, oldest first.
  static std::vector<std::string> switched(const std::string& base) {
    std::vector<std::string> out;
    std::regex name(std::filesystem::path(base).filename().string() + "\\.[0-9]{16}");
    for (const auto& e :
         std::filesystem::directory_iterator(std::filesystem::path(base).parent_path()))
      if (std::regex_match(e.path().filename().string(), name))
        out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string self_;
};

// Every sample's tod lies within the wall-clock readings around the load,
// a millisecond either side; the header names the clock.
TEST_F(RecordTime, PerfScriptTodAgreesWithTheWallClock) {
  create();
  std::string file = tmp_.path("t.data");
  uint64_t before = wall_ns();
  CommandResult r =
      run_pp({"record", "-e", "persistent/gp/", "-o", file, "--", self_, "--getppid", "200"});
  uint64_t after = wall_ns();
  ASSERT_EQ(r.status, 0) << r.err;
  pid_t pid = workload_pid(r.err);
  CommandResult header = run_command({"perf", "report", "--header-only", "-i", file});
  EXPECT_NE(header.out.find("# clockid: monotonic (1)"), std::string::npos) << header.out;
  EXPECT_NE(header.out.find("use_clockid = 1"), std::string::npos) << header.out;

  ::setenv("TZ", "UTC", 1);
  CommandResult s = run_command({"perf", "script", "--ns", "-i", file, "-F", "pid,tod"});
  ::unsetenv("TZ");
  ASSERT_EQ(s.status, 0) << s.err;
  std::regex line(
      "^\\s*([0-9]+)\\s+([0-9]{4})-([0-9]{2})-([0-9]{2}) "
      "([0-9]{2}):([0-9]{2}):([0-9]{2})\\.([0-9]{9})");
  int checked = 0;
  std::istringstream in(s.out);
  for (std::string text; std::getline(in, text);) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(text, m, line)) << text;
    if (std::stol(m[1]) != pid)
      continue;
    struct tm tm = {};
    tm.tm_year = std::stoi(m[2]) - 1900;
    tm.tm_mon = std::stoi(m[3]) - 1;
    tm.tm_mday = std::stoi(m[4]);
    tm.tm_hour = std::stoi(m[5]);
    tm.tm_min = std::stoi(m[6]);
    tm.tm_sec = std::stoi(m[7]);
    uint64_t tod = uint64_t(timegm(&tm)) * 1000000000ULL + std::stoull(m[8]);
    EXPECT_GE(tod + 1000000, before) << text;
    EXPECT_LE(tod, after + 1000000) << text;
    checked++;
  }
  EXPECT_EQ(checked, 200) << s.out.substr(0, 400);
}

// report's --since and --until read one grammar: on a file with the
// events' clock, a duration before now, a date and an ISO time choose the
// same records that perf's seconds do.
TEST_F(RecordTime, ReportSinceTakesDurationsDatesAndSeconds) {
  create();
  std::string file = tmp_.path("t.data");
  uint64_t before = wall_ns();
  CommandResult r =
      run_pp({"record", "-e", "persistent/gp/", "-o", file, "--", self_, "--getppid", "50"});
  ASSERT_EQ(r.status, 0) << r.err;
  pid_t pid = workload_pid(r.err);
  // The workload's lines among what report prints with `args`.
  auto lines = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"report", "--json", "-i", file});
    CommandResult rep = run_pp(args);
    EXPECT_EQ(rep.status, 0) << rep.err;
    int n = 0;
    std::istringstream in(rep.out);
    for (std::string text; std::getline(in, text);)
      if (json::parse(text).value("pid", -1) == pid)
        n++;
    return n;
  };
  time_t today = time_t(before / 1000000000ULL);
  struct tm tm = {};
  gmtime_r(&today, &tm);
  char date[16], iso[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d", &tm);
  std::strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
  EXPECT_EQ(lines({}), 50);
  EXPECT_EQ(lines({"--since", "1h"}), 50);
  EXPECT_EQ(lines({"--since", "0", "--until", "0s"}), 50);
  EXPECT_EQ(lines({"--since", iso}), 50);
  // The day the load began, from its 00:00:00 UTC.
  EXPECT_EQ(lines({"--since", date}), 50);
  EXPECT_EQ(lines({"--since", "0s"}), 0);
  EXPECT_EQ(lines({"--until", "1h"}), 0);
  EXPECT_EQ(lines({"--until", "1"}), 0);
  CommandResult bad = run_pp({"report", "-i", file, "--since", "yesterday"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("a duration before now (90m, 24h, 7d"), std::string::npos) << bad.err;
}

// -k on create: the clock is the event's, shown by list, and written into
// the file record makes.
TEST_F(RecordTime, CreateDashKIsListedAndRecorded) {
  CommandResult c = run_pp({"create", "-e", "cpu-clock", "--name", "clk", "-k", "CLOCK_BOOTTIME"});
  ASSERT_EQ(c.status, 0) << c.err;
  CommandResult l = run_pp({"list", "--json"});
  json doc = json::parse(l.out);
  ASSERT_EQ(doc["events"].size(), 1u) << l.out;
  EXPECT_EQ(doc["events"][0]["clock"], "boottime");
  CommandResult v = run_pp({"list", "-v"});
  EXPECT_NE(v.out.find("boottime"), std::string::npos) << v.out;
  std::string file = tmp_.path("clk.data");
  CommandResult r = run_pp({"record", "-e", "persistent/clk/", "-o", file, "--", "sleep", "0.1"});
  ASSERT_EQ(r.status, 0) << r.err;
  CommandResult header = run_command({"perf", "report", "--header-only", "-i", file});
  EXPECT_NE(header.out.find("# clockid: boottime (7)"), std::string::npos) << header.out;
  // A tracepoint cannot take boottime: the kernel says EINVAL, explained.
  CommandResult t = run_pp({"create", "-e", "syscalls:sys_enter_getppid", "-k", "boottime"});
  EXPECT_EQ(t.status, 2) << t.err;
  EXPECT_NE(t.err.find("try: -k monotonic"), std::string::npos) << t.err;
}

// --switch-output by size: several files, each valid in perf script,
// together every sample of the load; the JSON summary lists them.
TEST_F(RecordTime, SwitchOutputBySizeLosesNothingBetweenFiles) {
  create();
  std::string file = tmp_.path("s.data");
  std::string summary = tmp_.path("s.json");
  CommandResult r = run_pp({"record", "-e", "persistent/gp/", "-o", file, "--switch-output=64K",
                            "--json=" + summary, "--", self_, "--getppid", "20000"});
  ASSERT_EQ(r.status, 0) << r.err;
  pid_t pid = workload_pid(r.err);
  std::vector<std::string> files = switched(file);
  ASSERT_GE(files.size(), 2u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(file)) << "the last file is renamed too";
  int total = 0;
  for (const std::string& f : files)
    total += perf_script_count(f, pid);
  EXPECT_EQ(total, 20000);
  EXPECT_NE(r.err.find("[ perf persistent record: Dump " + files[0] + " ]"), std::string::npos)
      << r.err;
  std::ifstream in(summary);
  json doc = json::parse(in);
  EXPECT_EQ(doc["files"].size(), files.size());
  EXPECT_EQ(doc["exit_reason"], "command");
  EXPECT_EQ(doc["exit_status"], 0);
  EXPECT_EQ(doc["lost"]["total"], 0);
  EXPECT_GE(doc["samples"].get<uint64_t>(), 20000u);
  EXPECT_FALSE(doc["buffers"].empty());
}

// --switch-output by time with --switch-max-files: only the newest files stay.
TEST_F(RecordTime, SwitchOutputByTimeKeepsTheNewestFiles) {
  create();
  std::string file = tmp_.path("t.data");
  CommandResult r = run_pp({"record", "-e", "persistent/gp/", "-o", file, "--switch-output=1s",
                            "--switch-max-files=2", "--json", "--", "sleep", "3.5"});
  ASSERT_EQ(r.status, 0) << r.err;
  json doc = json::parse(r.err.substr(r.err.rfind("\n{") + 1));
  EXPECT_GE(doc["files"].size(), 4u) << r.err;
  EXPECT_EQ(doc["removed"].size(), doc["files"].size() - 2) << r.err;
  std::vector<std::string> files = switched(file);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files.back(), doc["files"].back());
  for (const std::string& f : files)
    EXPECT_EQ(run_command({"perf", "script", "-i", f}).status, 0) << f;
}

// --switch-output at SIGUSR2: loads before and after the signal land in two
// files, all of them.
TEST_F(RecordTime, SwitchOutputAtSigusr2) {
  create();
  std::string file = tmp_.path("u.data");
  std::string err = tmp_.path("u.err");
  auto child = sys::Child::spawn({"sh", "-c",
                                  "exec '" + binary_path() + "' record -e persistent/gp/ -o '" +
                                      file + "' --switch-output 2>'" + err + "'"});
  ASSERT_TRUE(child.ok());
  for (int i = 0; i < 500 && !std::filesystem::exists(file); i++)
    std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(300ms);
  CommandResult a = run_command({self_, "--getppid", "3000"});
  pid_t pa = workload_pid(a.err);
  std::this_thread::sleep_for(400ms);
  ASSERT_TRUE(child->kill(SIGUSR2).ok());
  std::this_thread::sleep_for(400ms);
  CommandResult b = run_command({self_, "--getppid", "2000"});
  pid_t pb = workload_pid(b.err);
  std::this_thread::sleep_for(400ms);
  ASSERT_TRUE(child->kill(SIGINT).ok());
  ASSERT_TRUE(child->wait().ok());
  std::vector<std::string> files = switched(file);
  ASSERT_EQ(files.size(), 2u) << sys::Tree("/").read(err.substr(1)).value_or("");
  EXPECT_EQ(perf_script_count(files[0], pa), 3000);
  EXPECT_EQ(perf_script_count(files[1], pb), 2000);
  EXPECT_EQ(perf_script_count(files[0], pb) + perf_script_count(files[1], pa), 0);
}

// --max-size stops the recording, says so, and leaves a valid file.
TEST_F(RecordTime, MaxSizeStopsTheSession) {
  create();
  std::string file = tmp_.path("m.data");
  CommandResult r = run_pp({"record", "-e", "persistent/gp/", "-o", file, "--max-size=200K",
                            "--json", "--", self_, "--getppid", "200000"});
  EXPECT_NE(r.err.find("perf size limit reached"), std::string::npos) << r.err;
  json doc = json::parse(r.err.substr(r.err.rfind("\n{") + 1));
  EXPECT_EQ(doc["exit_reason"], "max-size");
  uint64_t size = std::filesystem::file_size(file);
  EXPECT_GE(size, 200u * 1024);
  EXPECT_LT(size, 200u * 1024 + (8u << 20)) << "at most one pass over the buffers past it";
  EXPECT_EQ(run_command({"perf", "script", "-i", file, "-F", "event"}).status, 0);
}

}  // namespace
}  // namespace pp::testing

// record --instance on this machine's kernel: a plain ftrace instance with
// syscalls:sys_enter_getppid and sched:sched_switch enabled, a known number
// of getppid calls pinned to CPU 0, then the instance written as perf.data
// and read back by the real perf script and by our own report.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>

#include "base/wall_time.h"
#include "broker/previous_boot.h"
#include "sys/clock.h"
#include "tests/kernel/kernel_env.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

constexpr long kCalls = 2000;

class RecordInstance : public ::testing::Test {
 protected:
  void SetUp() override {
    tracefs_ = tracefs_root();
    PP_SKIP_UNLESS(!tracefs_.empty(), "no tracefs");
    PP_SKIP_UNLESS(tracepoint_id("syscalls", "sys_enter_getppid") >= 0,
                   "no syscalls:sys_enter_getppid");
    name_ = "pp_test_" + std::to_string(getpid());
    dir_ = tracefs_ + "/instances/" + name_;
    PP_SKIP_UNLESS(mkdir(dir_.c_str(), 0700) == 0, "cannot create an ftrace instance");
    created_ = true;
  }
  void TearDown() override {
    if (created_) {
      EXPECT_EQ(rmdir(dir_.c_str()), 0) << "cannot remove " << dir_;
    }
  }
  // Appends a line as `echo TEXT >> FILE` does (set_event adds an event).
  ::testing::AssertionResult write(const std::string& file, const std::string& text) const {
    std::string path = dir_ + "/" + file, line = text + "\n";
    int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    bool ok = fd >= 0 && ::write(fd, line.data(), line.size()) == ssize_t(line.size());
    int err = errno;
    if (fd >= 0)
      close(fd);
    if (ok)
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "writing '" << text << "' to " << path << ": " << strerror(err);
  }

  std::string tracefs_, name_, dir_;
  bool created_ = false;
  TempDir tmp_;
};

// Lines of `output` that hold `needle` and `pid` as a word and `cpu` ("[000]").
int count_lines(const std::string& output, const std::string& needle, pid_t pid,
                const std::string& cpu) {
  std::istringstream in(output);
  std::string line;
  int n = 0;
  const std::string p = " " + std::to_string(pid) + " ";
  while (std::getline(in, line))
    n += line.find(needle) != std::string::npos &&
         (" " + line + " ").find(p) != std::string::npos && line.find(cpu) != std::string::npos;
  return n;
}

TEST_F(RecordInstance, EveryGetppidCallReachesPerfScriptWithItsPidAndCpu) {
  ASSERT_TRUE(write("set_event", "syscalls:sys_enter_getppid"));
  ASSERT_TRUE(write("set_event", "sched:sched_switch"));
  GetppidCaller caller(kCalls);
  ASSERT_TRUE(caller.run());
  ASSERT_TRUE(write("tracing_on", "0"));  // nothing more while it is read

  std::string file = tmp_.path("instance.data");
  CommandResult rec = run_pp({"record", "--instance", name_, "-o", file, "--json"});
  ASSERT_EQ(rec.status, 0) << rec.err;
  auto summary = nlohmann::json::parse(rec.err, nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << rec.err;
  EXPECT_EQ(summary["instance"], name_);
  EXPECT_EQ(summary["clock"], "local");
  EXPECT_EQ(summary["events"], 2);
  EXPECT_GE(summary["samples"].get<long>(), kCalls);
  EXPECT_EQ(summary["lost"]["missed_events"], 0);

  CommandResult script =
      run_command({perf_program(), "script", "-i", file, "-F", "pid,cpu,event,trace"});
  ASSERT_EQ(script.status, 0) << script.err;
  EXPECT_EQ(count_lines(script.out, "syscalls:sys_enter_getppid", caller.pid(), "[000]"), kCalls)
      << script.out.substr(0, 2000);
  EXPECT_NE(script.out.find("sched:sched_switch"), std::string::npos);
  EXPECT_NE(script.out.find("prev_pid="), std::string::npos);  // decoded by its format

  CommandResult report = run_pp({"report", "-i", file});
  ASSERT_EQ(report.status, 0) << report.err;
  EXPECT_EQ(count_lines(report.out, "sys_enter_getppid", caller.pid(), "[000]"), kCalls)
      << report.out.substr(0, 2000);

  // Reading consumed the buffer: a second record finds nothing.
  CommandResult again = run_pp({"record", "--instance", name_, "-o", tmp_.path("again.data")});
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.err.find("(0 samples)"), std::string::npos) << again.err;
}

TEST_F(RecordInstance, RefusesAnInstanceWithoutEventsAndAMissingOne) {
  CommandResult none = run_pp({"record", "--instance", name_, "-o", tmp_.path("x.data")});
  EXPECT_EQ(none.status, exit_status_of(ErrorKind::kUsage)) << none.err;
  EXPECT_NE(none.err.find("has no enabled event"), std::string::npos) << none.err;
  CommandResult missing =
      run_pp({"record", "--instance", name_ + "_missing", "-o", tmp_.path("y.data")});
  EXPECT_EQ(missing.status, exit_status_of(ErrorKind::kNotFound)) << missing.err;
  EXPECT_NE(missing.err.find("no ftrace instance"), std::string::npos) << missing.err;
}

// This machine boots without a boot-mapped instance: --previous-boot says
// so from the real /proc/cmdline (and how to add one).
TEST_F(RecordInstance, PreviousBootSaysTheCommandLineHasNoBootMappedInstance) {
  std::ifstream in("/proc/cmdline");
  std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(cmdline.empty());
  ASSERT_EQ(cmdline.find("trace_instance="), std::string::npos)
      << "this test expects a machine booted without trace_instance=: " << cmdline;
  CommandResult r = run_pp({"record", "--previous-boot", "-o", tmp_.path("p.data")});
  EXPECT_EQ(r.status, exit_status_of(ErrorKind::kNotFound)) << r.err;
  EXPECT_NE(r.err.find("names no boot-mapped ftrace instance"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("trace_instance=boot_mapped^traceoff@0x10000000:12M"), std::string::npos)
      << r.err;
}

// The black box's arming on this kernel's tracefs (broker/previous_boot.h):
// an instance the command line is made to name as boot-mapped (this
// machine boots with none; the instance is a plain one, with no
// last_boot_info, so nothing is kept) gets the RAS events this kernel has,
// tracing on and a clock marker; record --instance then maps its records
// to wall-clock time, and perf script -F +tod prints today's date.
TEST_F(RecordInstance, TheBlackBoxArmsAnInstanceAndItsMarkerGivesWallClockTime) {
  broker::BlackBoxConfig config;
  config.tracefs_root = tracefs_;
  config.kept_dir = tmp_.path("kept");
  config.kernel_cmdline = "root=/dev/vda trace_instance=" + name_ + "^traceoff@0x10000000:12M";
  std::string log;
  config.log = [&log](const std::string& line) { log += line + "\n"; };
  uint64_t before_ns = sys::realtime_ns();
  auto box = broker::BlackBox::start(config);
  ASSERT_TRUE(box.ok()) << box.error().message();
  ASSERT_NE(*box, nullptr);
  const broker::BlackBoxReport& r = (*box)->report();
  EXPECT_FALSE(r.held_previous) << "a plain instance has no last_boot_info";
  EXPECT_EQ(r.kept, "");
  ASSERT_TRUE(r.armed) << log;
  std::ifstream set_event(dir_ + "/set_event");
  std::string enabled((std::istreambuf_iterator<char>(set_event)),
                      std::istreambuf_iterator<char>());
  for (const std::string& e : r.enabled)
    EXPECT_NE(enabled.find(e), std::string::npos) << e << " not in set_event: " << enabled;
  for (const char* ras : {"ras:mc_event", "ras:arm_event"}) {
    if (tracepoint_id("ras", std::string(ras).substr(4)) >= 0) {
      EXPECT_NE(enabled.find(ras), std::string::npos) << enabled;
    }
  }
  std::ifstream on(dir_ + "/tracing_on");
  std::string tracing;
  on >> tracing;
  EXPECT_EQ(tracing, "1");

  std::string file = tmp_.path("marked.data");
  CommandResult rec = run_pp({"record", "--instance", name_, "-o", file, "--json"});
  ASSERT_EQ(rec.status, 0) << rec.err;
  auto summary = nlohmann::json::parse(rec.err, nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << rec.err;
  ASSERT_TRUE(summary["wall_clock"].is_object()) << rec.err;
  EXPECT_EQ(summary["wall_clock"]["markers"], 1);
  auto last = parse_wall_time(summary["wall_clock"]["last"].get<std::string>());
  ASSERT_TRUE(last.ok());
  EXPECT_GE(*last, before_ns);
  EXPECT_LE(*last, sys::realtime_ns());

  CommandResult script = run_command({perf_program(), "script", "-i", file, "-F", "+tod"});
  ASSERT_EQ(script.status, 0) << script.err;
  // "  :4242  4242 [001] 2026-12-06 01:16:37.165977  30.563929: ftrace:print: ...":
  // the time of day (perf prints it in the local zone).
  std::istringstream lines(script.out);
  std::string line, marker_line;
  while (std::getline(lines, line))
    if (line.find("perf-persistent clock-marker clock=local") != std::string::npos)
      marker_line = line;
  ASSERT_FALSE(marker_line.empty()) << script.out;
  EXPECT_TRUE(std::regex_search(
      marker_line, std::regex(R"(\] 20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:)")))
      << "perf script -F +tod prints the time of day: " << marker_line;
}

}  // namespace
}  // namespace pp::testing

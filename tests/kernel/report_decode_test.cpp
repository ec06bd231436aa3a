// `perf persistent report` on this machine's kernel: a perf.data that the
// real `perf record` wrote system-wide for sched:sched_switch, decoded by
// report, must give for every record what `perf script` prints (the whole
// line: task, tid, CPU, time, event and every field of the print format),
// and report --json the same field values; and `report -e persistent/NAME/`
// must decode straight from a persistent event's buffers.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <thread>

#include "base/strings.h"
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

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty())
      out.push_back(line);
  return out;
}

// "prev_comm=a b prev_pid=3 ..." -> {prev_comm: "a b", prev_pid: "3", ...}:
// a value runs to the next " name=" (comms may hold spaces).
std::map<std::string, std::string> fields_of(std::string_view text,
                                             const std::vector<std::string>& names) {
  std::map<std::string, std::string> out;
  for (size_t i = 0; i < names.size(); i++) {
    std::string key = names[i] + "=";
    size_t at = text.find(key);
    if (at == std::string_view::npos)
      continue;
    size_t begin = at + key.size();
    size_t end = text.size();
    if (i + 1 < names.size()) {
      size_t next = text.find(" " + names[i + 1] + "=", begin);
      if (next != std::string_view::npos)
        end = next;
    }
    std::string value(text.substr(begin, end - begin));
    if (names[i] == "prev_state")  // "S ==>": the arrow is the format's
      value = value.substr(0, value.find(" ==>"));
    out[names[i]] = value;
  }
  return out;
}

// The letters sched_switch's print format gives prev_state (its
// __print_flags over the low 8 bits, joined by '|'; "R" when none is set;
// a '+' for bit 8, a preempted task), from the number --json prints.
std::string state_letters(int64_t state) {
  static const char* const kLetters[] = {"S", "D", "T", "t", "X", "Z", "P", "I"};
  std::string out;
  for (int bit = 0; bit < 8; bit++) {
    if (state & (int64_t(1) << bit))
      out += (out.empty() ? "" : "|") + std::string(kLetters[bit]);
  }
  if (out.empty())
    out = "R";
  if (state & 0x100)
    out += "+";
  return out;
}

std::string context(const CommandResult& r) {
  return "status " + std::to_string(r.status) + "\nstdout:\n" + r.out.substr(0, 2000) +
         "\nstderr:\n" + r.err.substr(0, 2000);
}

// A perf.data of sched:sched_switch, whole machine, that the real perf
// record wrote while `workload` ran.
class ReportDecode : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    PP_SKIP_UNLESS(perf_allowed(&why), why);
    PP_SKIP_UNLESS(tracepoint_id("sched", "sched_switch") >= 0, "no sched:sched_switch");
  }
  void record(std::vector<std::string> workload) {
    std::vector<std::string> argv = {perf_program(), "record", "-q", "-e", "sched:sched_switch",
                                     "-a",           "-o",     file, "--"};
    argv.insert(argv.end(), workload.begin(), workload.end());
    CommandResult rec = run_command(argv);
    ASSERT_EQ(rec.status, 0) << "perf record failed (install perf with ./scripts/setup, or set "
                                "PP_PERF to a perf binary)\n"
                             << context(rec);
  }
  TempDir dir;
  std::string file = dir.path("perf.data");
};

TEST_F(ReportDecode, SchedSwitchFromPerfRecordMatchesPerfScript) {
  ASSERT_NO_FATAL_FAILURE(record({"sleep", "1"}));

  CommandResult script = run_command({perf_program(), "script", "-i", file});
  ASSERT_EQ(script.status, 0) << context(script);
  CommandResult text = run_pp({"report", "-i", file});
  ASSERT_EQ(text.status, 0) << context(text);
  CommandResult js = run_pp({"report", "-i", file, "--json"});
  ASSERT_EQ(js.status, 0) << context(js);

  std::vector<std::string> theirs = lines_of(script.out), ours = lines_of(text.out);
  ASSERT_GT(theirs.size(), 10u) << "a second of a whole machine switches more than that";
  ASSERT_EQ(ours.size(), theirs.size());
  // Records with the same time on two CPUs may come in either order: the
  // lines must be the same as a whole, and each record's line identical.
  std::vector<std::string> a = theirs, b = ours;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  for (size_t i = 0; i < a.size(); i++)
    ASSERT_EQ(b[i], a[i]) << "record " << i << " (sorted) differs";

  // --json: the same values, field by field, for every record. perf script
  // shows prev_state through the format's __print_flags (its letters, as
  // the text lines above show them); JSON has the number, which must give
  // those letters' bits.
  const std::vector<std::string> names = {"prev_comm", "prev_pid", "prev_prio", "prev_state",
                                          "next_comm", "next_pid", "next_prio"};
  std::multimap<std::pair<uint64_t, int>, std::map<std::string, std::string>> expected;
  for (const std::string& line : theirs) {
    // "comm tid [cpu] secs.usecs: sched:sched_switch: fields"
    size_t open = line.find(" ["), close = line.find("] ", open);
    ASSERT_NE(close, std::string::npos) << line;
    int cpu = std::stoi(line.substr(open + 2, close - open - 2));
    size_t colon = line.find(": ", close);
    std::string secs(trim(line.substr(close + 2, colon - close - 2)));
    uint64_t usecs = std::stoull(secs.substr(0, secs.find('.'))) * 1000000 +
                     std::stoull(secs.substr(secs.find('.') + 1));
    size_t event_end = line.find("sched:sched_switch: ");
    ASSERT_NE(event_end, std::string::npos) << line;
    expected.emplace(std::make_pair(usecs, cpu),
                     fields_of(std::string_view(line).substr(event_end + 20), names));
  }
  size_t compared = 0;
  for (const std::string& line : lines_of(js.out)) {
    json j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    uint64_t usecs = j["time"].get<uint64_t>() / 1000;
    auto range = expected.equal_range({usecs, j["cpu"].get<int>()});
    ASSERT_NE(range.first, range.second) << "no perf script record at " << line;
    const json& g = j["fields"];
    std::map<std::string, std::string> decoded = {
        {"prev_comm", g["prev_comm"].get<std::string>()},
        {"next_comm", g["next_comm"].get<std::string>()},
        {"prev_state", state_letters(g["prev_state"].get<int64_t>())}};
    for (const char* n : {"prev_pid", "prev_prio", "next_pid", "next_prio"})
      decoded[n] = std::to_string(g[n].get<int64_t>());
    bool matched = false;
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second == decoded) {
        matched = true;
        expected.erase(it);
        break;
      }
    }
    EXPECT_TRUE(matched) << "no perf script record has the fields of " << line;
    compared++;
  }
  EXPECT_EQ(compared, theirs.size());
  EXPECT_TRUE(expected.empty()) << expected.size() << " perf script records unmatched";
}

// A persistent event through the broker, private run directory.
class ReportLive : public PrivateBrokerTest {
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

  std::string self_;
};

TEST_F(ReportLive, DecodesWhatTheBuffersHoldWithoutConsumingIt) {
  CommandResult created = run_pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "gp"});
  ASSERT_EQ(created.status, 0) << context(created);
  // The workload: 300 getppid calls on CPU 0 (kernel_tests --getppid).
  CommandResult load = run_command({self_, "--getppid", "300"});
  ASSERT_EQ(load.status, 0) << context(load);
  pid_t pid = workload_pid(load.err);
  ASSERT_GT(pid, 0) << "the workload printed no pid: " << load.err;

  for (int round = 0; round < 2; round++) {
    CommandResult r = run_pp({"report", "-e", "persistent/gp/", "--json"});
    ASSERT_EQ(r.status, 0) << context(r);
    int ours = 0;
    for (const std::string& line : lines_of(r.out)) {
      json j = json::parse(line, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << line;
      EXPECT_EQ(j["event"], "syscalls:sys_enter_getppid") << line;
      ASSERT_TRUE(j["fields"].contains("__syscall_nr")) << line;
      if (j["pid"] == pid)
        ours++;
    }
    // Exactly the workload's calls, on both reads: reading takes nothing away.
    EXPECT_EQ(ours, 300) << "round " << round << "\n" << context(r);
  }

  CommandResult summary = run_pp({"report", "-e", "persistent/gp/", "--summary"});
  ASSERT_EQ(summary.status, 0) << context(summary);
  // "count cpu event": CPU 0 holds at least the workload's 300.
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(summary.out, m, std::regex(R"(\s(\d+)\s+0\s+syscalls:sys_enter_getppid)")))
      << context(summary);
  EXPECT_GE(std::stol(m[1]), 300) << context(summary);

  CommandResult missing = run_pp({"report", "-e", "persistent/nosuch/"});
  EXPECT_EQ(missing.status, 4) << context(missing);
  EXPECT_NE(missing.err.find("nosuch"), std::string::npos) << context(missing);
}

// `report | head`: the reader goes away after a line. report stops
// printing and ends quietly with 0, as `perf script | head` is quiet; it
// never dies of SIGPIPE (which perf's dispatcher reports as "unable to run").
TEST_F(ReportDecode, AReaderThatStopsEarlyEndsTheReportCleanly) {
  // Far more text than a pipe holds, so a write fails whatever the timing.
  ASSERT_NO_FATAL_FAILURE(record({perf_program(), "bench", "sched", "pipe", "-l", "20000"}));
  CommandResult r = run_command(
      {"/bin/bash", "-c",
       "\"$1\" report -i \"$2\" | head -n 1 >/dev/null; echo \"report=${PIPESTATUS[0]}\" >&2",
       "bash", binary_path(), file},
      {.input = {}, .env = {}, .timeout_seconds = 60});
  EXPECT_EQ(r.err, "report=0\n");
}

}  // namespace
}  // namespace pp::testing

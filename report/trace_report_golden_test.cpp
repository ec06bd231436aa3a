// report's output, byte for byte, on whole traces: three synthetic perf.data
// files (report/testing/synthetic_trace.h) made from fixed seeds, one with
// every tracepoint of tests/fixtures/tracefs-6.18 (sched_switch and
// sys_enter_getppid most of all, as in a mixed `perf record -a`), one of
// sched_switch alone, one with the machine checks and RAS events of
// tests/fixtures/tracefs-debian-6.1 and a wall clock; each printed as text,
// --json, --summary, --summary --json and sorted by cpu,comm. The expected
// files in tests/fixtures/report-golden/ were written by the report of the
// commit that added this test (the sched_switch ones by that same report,
// run on the file this test writes), before the decoder was made faster;
// any change of output, however small, fails here and names the first line
// that differs.
//
// To accept a change of output that is meant (and say so in the commit):
//   PP_UPDATE_GOLDEN=1 build/unit_tests --gtest_filter='ReportGolden*'
// rewrites the files under PP_SOURCE_DIR.
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "report/testing/synthetic_trace.h"
#include "report/trace_report.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::report {
namespace {

struct Mode {
  const char* suffix;
  bool json, summary;
  std::vector<SortKey> sort;
};

const Mode kModes[] = {
    {"txt", false, false, {}},
    {"json", true, false, {}},
    {"summary", false, true, {}},
    {"summary.json", true, true, {}},
    {"sorted.txt", false, false, {SortKey::kCpu, SortKey::kComm}},
};

std::string golden_path(const std::string& name) {
  return pp::testing::fixtures_dir() + "/report-golden/" + name;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "line N: expected '...' got '...'" for the first line that differs.
std::string first_difference(const std::string& expected, const std::string& got) {
  std::istringstream a(expected), b(got);
  std::string la, lb;
  for (size_t line = 1;; line++) {
    bool ha = bool(std::getline(a, la)), hb = bool(std::getline(b, lb));
    if (!ha && !hb)
      return "the same lines, but the bytes differ (a final newline?)";
    if (!ha || !hb || la != lb)
      return "line " + std::to_string(line) + ":\n  expected: " + (ha ? la : "<end>") +
             "\n  got:      " + (hb ? lb : "<end>");
  }
}

class ReportGolden : public ::testing::Test {
 protected:
  // Writes the trace, reports it in every mode and compares (or, under
  // PP_UPDATE_GOLDEN, rewrites the expected files).
  void check(const std::string& name, const testing::SyntheticTraceOptions& options) {
    auto bytes = testing::synthetic_trace(options);
    ASSERT_TRUE(bytes.ok()) << bytes.error().message();
    std::string path = dir_.path(name + ".data");
    {
      std::ofstream file(path, std::ios::binary);
      file.write(reinterpret_cast<const char*>(bytes->data()), std::streamsize(bytes->size()));
    }
    bool update = std::getenv("PP_UPDATE_GOLDEN") != nullptr;
    for (const Mode& mode : kModes) {
      ReportOptions o;
      o.json = mode.json;
      o.summary = mode.summary;
      o.sort = mode.sort;
      std::ostringstream out, err;
      auto stats = report_file(path, o, out, err);
      ASSERT_TRUE(stats.ok()) << stats.error().message();
      EXPECT_EQ(err.str(), "") << name << "." << mode.suffix;
      EXPECT_EQ(stats->bad, 0u);
      EXPECT_EQ(stats->records, options.samples);
      std::string file = golden_path(name + "." + mode.suffix);
      if (update) {
        std::ofstream golden(file, std::ios::binary);
        golden << out.str();
        ASSERT_TRUE(golden.good()) << "cannot write " << file;
        continue;
      }
      std::string expected = read_file(file);
      ASSERT_FALSE(expected.empty()) << "no golden " << file;
      EXPECT_TRUE(out.str() == expected) << name << "." << mode.suffix << " differs from " << file
                                         << ": " << first_difference(expected, out.str());
    }
  }

  pp::testing::TempDir dir_;
};

TEST_F(ReportGolden, MixedTracepoints) {
  testing::SyntheticTraceOptions o;
  o.seed = 30;
  o.samples = 700;
  o.cpus = 4;
  o.tracefs_root = pp::testing::fixtures_dir() + "/tracefs-6.18";
  o.tracepoints = testing::fixture_6_18_tracepoints();
  check("mixed", o);
}

// sched_switch alone, as `perf record -e sched:sched_switch -a` gives it:
// one print format with flags, symbols and ?:, on every record.
TEST_F(ReportGolden, SchedSwitchOnly) {
  testing::SyntheticTraceOptions o;
  o.seed = 31;
  o.samples = 600;
  o.cpus = 2;
  o.tracefs_root = pp::testing::fixtures_dir() + "/tracefs-6.18";
  o.tracepoints = {{"sched", "sched_switch", 0}};
  check("switch", o);
}

TEST_F(ReportGolden, MachineChecksWithWallClock) {
  testing::SyntheticTraceOptions o;
  o.seed = 7;
  o.samples = 120;
  o.cpus = 2;
  o.tracefs_root = pp::testing::fixtures_dir() + "/tracefs-debian-6.1";
  o.tracepoints = {{"mce", "mce_record", 0},       {"ras", "mc_event", 0},
                   {"ras", "aer_event", 0},        {"ras", "memory_failure_event", 0},
                   {"ras", "extlog_mem_event", 0}, {"ras", "arm_event", 0}};
  sys::ClockPair clock;
  clock.clockid = CLOCK_MONOTONIC;
  clock.clock_ns = 18970000000000ULL;
  clock.wall_ns = 1764770012000000000ULL;
  o.clock = clock;
  check("mce", o);
}

}  // namespace
}  // namespace pp::report

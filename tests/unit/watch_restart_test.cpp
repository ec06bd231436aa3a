// `perf persistent watch` restarted over its history, as a service is: the
// kernel's log and pstore still hold machine checks older than the
// retention, so every start finds them again. Each must be new once (its
// trigger run once in total), and the metrics written after every start must
// be the ones written after the first: counted over the history, not from 0,
// and not lowered when retention deletes the rows. No broker, no kernel:
// the run directory is empty, so watch reads only the logs it is given.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <sstream>

#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines of a metrics file that start with `family`, "name{labels} value".
std::vector<std::string> series(const std::string& prom, const std::string& family) {
  std::vector<std::string> out;
  std::istringstream in(prom);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(family + "{", 0) == 0)
      out.push_back(line);
  return out;
}

uint64_t count_lines(const std::string& text) {
  uint64_t n = 0;
  for (char c : text)
    n += c == '\n';
  return n;
}

// Two corrected errors in this boot's kernel log and a fatal one in a
// previous boot's panic text, all from September 2020: past a 30-day
// retention.
constexpr const char* kKmsg =
    "0,10,5,-;mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 2: 9400000000000091\n"
    "0,11,5,-;mce: [Hardware Error]: TSC 0 ADDR 5678000 \n"
    "0,12,5,-;mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1600000000 SOCKET 0 APIC 1 "
    "microcode 1\n"
    "0,13,5,-;mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 7: 9c0000000000009f\n"
    "0,14,5,-;mce: [Hardware Error]: TSC 0 ADDR 1234000 MISC 86 \n"
    "0,15,5,-;mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1600000100 SOCKET 0 APIC 0 "
    "microcode 1\n";
constexpr const char* kPanic =
    "<0>[    6.8] mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 1: "
    "be00000000000150\n"
    "<0>[    6.8] mce: [Hardware Error]: TSC 5663dac3e ADDR 1234000 MISC 86 \n"
    "<0>[    6.8] mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1600000200 SOCKET 0 APIC 0 "
    "microcode 1\n"
    "<0>[    6.8] mce: [Hardware Error]: Machine check: Processor context corrupt\n"
    "<0>[    6.8] Kernel panic - not syncing: Fatal machine check\n";

TEST(WatchRestart, OldErrorsAreNewOnceAndCountersSurviveRestartsAndRetention) {
  TempDir dir;
  dir.write("kmsg", kKmsg);
  dir.write("pstore/dmesg-ramoops-0", kPanic);
  dir.mkdir("run");
  ASSERT_EQ(::chmod(dir.path("run").c_str(), 0700), 0);
  const std::string db = dir.path("history.db"), prom = dir.path("pp.prom");
  const std::string fired = dir.path("fired");
  std::vector<std::string> first_checks, first_severities;
  for (int start = 1; start <= 3; start++) {
    SCOPED_TRACE("start " + std::to_string(start));
    CommandResult r = run_pp({"watch", "--once", "--db", db, "--run-dir", dir.path("run"), "--kmsg",
                              dir.path("kmsg"), "--pstore", dir.path("pstore"), "--prometheus",
                              prom, "--retention-days", "30", "--max-children", "1", "--exec",
                              "echo \"$PERF_PERSISTENT_SEVERITY\" >> '" + fired + "'"});
    ASSERT_EQ(r.status, 0) << r.err;
    std::string metrics = slurp(prom);
    std::vector<std::string> checks = series(metrics, "perf_persistent_machine_checks_total");
    std::vector<std::string> severities =
        series(metrics, "perf_persistent_machine_checks_by_severity_total");
    if (start == 1) {
      EXPECT_EQ(checks.size(), 3u) << metrics;
      EXPECT_NE(metrics.find("{mce_severity=\"corrected\"} 2\n"), std::string::npos) << metrics;
      EXPECT_NE(metrics.find("{mce_severity=\"fatal\"} 1\n"), std::string::npos) << metrics;
      first_checks = checks;
      first_severities = severities;
    } else {
      // The second start's retention moved the rows out of the records
      // table; the counters did not move.
      EXPECT_EQ(checks, first_checks) << metrics;
      EXPECT_EQ(severities, first_severities) << metrics;
      EXPECT_NE(r.err.find("3 machine checks in the kernel's logs, 0 new"), std::string::npos)
          << r.err;
    }
    // One run of the trigger per error, over all the starts.
    EXPECT_EQ(count_lines(slurp(fired)), 3u) << slurp(fired);
  }
  EXPECT_EQ(slurp(fired), "fatal\ncorrected\ncorrected\n");  // pstore's first, then kmsg's
}

// SIGHUP reloads the config file: a new metrics file is written at once
// with the counts the old one had (nothing reset), the process goes on; a
// config with a mistake is refused with its reason, the running one kept;
// SIGTERM still ends it with 0.
TEST(WatchRestart, SighupReloadsKeepsCountersAndRefusesABadConfig) {
  TempDir dir;
  dir.write("kmsg", kKmsg);
  dir.mkdir("run");
  ASSERT_EQ(::chmod(dir.path("run").c_str(), 0700), 0);
  const std::string conf = dir.path("watch.conf");
  auto config = [&](const std::string& prom, const std::string& extra) {
    return "[watch]\ndb = " + dir.path("history.db") + "\nprometheus = " + prom +
           "\nprometheus-interval = 0.1\n" + extra;
  };
  dir.write("watch.conf", config(dir.path("a.prom"), ""));
  dir.write("good.conf", config(dir.path("b.prom"), "[trigger t]\nexec = true\n"));
  dir.write("bad.conf", config(dir.path("b.prom"), "[trigger t]\nmatch = severity >=\n"));
  // Waits for a file while watch runs, 20 s at most.
  auto wait_for = [](const std::string& path) {
    return "for i in $(seq 200); do [ -e '" + path +
           "' ] && break; kill -0 $pid || exit 90; sleep 0.1; done; ";
  };
  std::string script = "'" + binary_path() + "' watch --config '" + conf + "' --run-dir '" +
                       dir.path("run") + "' --kmsg '" + dir.path("kmsg") +
                       "' --no-pstore & pid=$!; " + wait_for(dir.path("a.prom")) + "cp '" +
                       dir.path("good.conf") + "' '" + conf + "'; kill -HUP $pid; " +
                       wait_for(dir.path("b.prom")) + "cp '" + dir.path("bad.conf") + "' '" + conf +
                       "'; kill -HUP $pid; kill -TERM $pid; wait $pid";
  CommandResult r = run_command({"sh", "-c", script});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("watch: reloaded the configuration: 1 trigger (thresholds and rate limits "
                       "start afresh), the metrics file " +
                       dir.path("b.prom")),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("watch: reload refused, the running configuration is kept: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("watch.conf"), std::string::npos) << r.err;
  // Both files count the two machine checks of the log, and the old one
  // says its writer left it.
  std::string a = slurp(dir.path("a.prom")), b = slurp(dir.path("b.prom"));
  EXPECT_NE(a.find("{mce_severity=\"corrected\"} 2\n"), std::string::npos) << a;
  EXPECT_NE(b.find("{mce_severity=\"corrected\"} 2\n"), std::string::npos) << b;
  EXPECT_NE(a.find("perf_persistent_watch_up 0\n"), std::string::npos) << a;
}

}  // namespace
}  // namespace pp::testing

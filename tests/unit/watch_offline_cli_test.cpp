// `perf persistent watch` with page offlining, end to end through the
// program and its history: three corrected errors at one page in this
// boot's kernel log give exactly one action, which `report --db --actions`
// lists, the metrics count, and a restart over the same history does not
// take again. Mode account: nothing here writes to the kernel (the soft and
// hard paths are watch/offline_test.cpp's, against the fake, and the QEMU
// test's, against a real kernel).
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <gtest/gtest.h>
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

std::string corrected_at(int seq, uint64_t time, const char* addr) {
  std::string p = "0," + std::to_string(seq) + ",5,-;mce: [Hardware Error]: ";
  return p + "CPU 0: Machine Check: 0 Bank 7: 9c0000000000009f\n" + p + "TSC 0 ADDR " + addr +
         " MISC 86 \n" + p + "PROCESSOR 0:50654 TIME " + std::to_string(time) +
         " SOCKET 0 APIC 0 microcode 1\n";
}

TEST(WatchOffline, ThreeErrorsAtOnePageAreOneActionAcrossRestarts) {
  TempDir dir;
  dir.write("kmsg",
            corrected_at(10, 1796000000, "1234040") + corrected_at(20, 1796000100, "1234080") +
                corrected_at(30, 1796000200, "12340c0") + corrected_at(40, 1796000300, "5678000"));
  dir.mkdir("run");
  ASSERT_EQ(::chmod(dir.path("run").c_str(), 0700), 0);
  const std::string db = dir.path("history.db"), prom = dir.path("pp.prom");
  for (int start = 1; start <= 2; start++) {
    SCOPED_TRACE("start " + std::to_string(start));
    CommandResult w = run_pp({"watch", "--once", "--db", db, "--run-dir", dir.path("run"), "--kmsg",
                              dir.path("kmsg"), "--no-pstore", "--prometheus", prom,
                              "--offline-pages=account", "--offline-policy", "mcelog"});
    ASSERT_EQ(w.status, 0) << w.err;
    EXPECT_NE(w.err.find("page offlining: account, policy mcelog (2 in 24h per page)"),
              std::string::npos)
        << w.err;
    EXPECT_NE(
        slurp(prom).find(
            "perf_persistent_page_offline_total{action=\"account\",result=\"accounted\"} 1\n"),
        std::string::npos)
        << slurp(prom);
  }
  CommandResult r = run_pp({"report", "--db", db, "--actions", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  std::vector<std::string> actions;
  for (std::string line; std::getline(lines, line);)
    actions.push_back(line);
  ASSERT_EQ(actions.size(), 1u) << r.out;
  EXPECT_NE(actions[0].find(R"("page":"0x1234","address":"0x1234000","action":"account",)"
                            R"("policy":"mcelog","result":"accounted","errno":null,"attempt":0,)"),
            std::string::npos)
      << actions[0];
  CommandResult text = run_pp({"report", "--db", db, "--actions"});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find(" page 0x1234 account accounted: 2 corrected errors, the leaky bucket "
                          "of 2 in 24h overflowed (policy mcelog)\n"),
            std::string::npos)
      << text.out;
  CommandResult none = run_pp({"report", "--db", db, "--actions", "--since", "2037-01-01"});
  ASSERT_EQ(none.status, 0) << none.err;
  EXPECT_EQ(none.out, "no page offlining actions in " + db + "\n");
}

// watch restarted between a page's first and second error (a package
// upgrade): the first, kept in the history, counts again, so the second
// still offlines the page.
TEST(WatchOffline, ErrorsBeforeARestartStillCount) {
  TempDir dir;
  dir.mkdir("run");
  ASSERT_EQ(::chmod(dir.path("run").c_str(), 0700), 0);
  const std::string db = dir.path("history.db");
  auto watch = [&] {
    return run_pp({"watch", "--once", "--db", db, "--run-dir", dir.path("run"), "--kmsg",
                   dir.path("kmsg"), "--no-pstore", "--offline-pages=account"});
  };
  dir.write("kmsg", corrected_at(10, 1796000000, "1234040"));
  CommandResult first = watch();
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_EQ(first.err.find("accounted"), std::string::npos) << first.err;
  dir.write("kmsg",
            corrected_at(10, 1796000000, "1234040") + corrected_at(20, 1796000100, "1234080"));
  CommandResult second = watch();
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_NE(second.err.find("1 corrected memory error of this boot counted again"),
            std::string::npos)
      << second.err;
  EXPECT_NE(second.err.find("page 0x1234 account accounted"), std::string::npos) << second.err;
  CommandResult third = watch();  // nothing new: no second action
  ASSERT_EQ(third.status, 0) << third.err;
  CommandResult r = run_pp({"report", "--db", db, "--actions", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST(WatchOffline, BadOptionsAreUsageErrors) {
  CommandResult r = run_pp({"watch", "--once", "--no-db", "--offline-pages=yes"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--offline-pages 'yes': say soft, hard, account or off"), std::string::npos)
      << r.err;
  r = run_pp({"watch", "--once", "--no-db", "--offline-policy", "kernel-cec", "--page-threshold",
              "2000 in 1h"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("1023"), std::string::npos) << r.err;
  r = run_pp({"report", "--actions"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--actions reads watch's history"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pp::testing

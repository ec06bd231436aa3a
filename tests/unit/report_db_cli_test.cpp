// `perf persistent report --db` on the command line, with a history the
// test writes itself (no kernel needed): both spellings of --db, and the
// options it refuses with a message that says what to give instead.
#include <gtest/gtest.h>

#include "cmd/exit_codes.h"
#include "mce/decode.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "watch/history.h"
#include "watch/record.h"

namespace pp::testing {
namespace {

// A history holding one corrected machine check, at `path`.
void one_machine_check(const std::string& path) {
  auto history = watch::History::open(path, {});
  ASSERT_TRUE(history.ok()) << history.error().message();
  watch::WatchRecord r;
  r.origin = watch::Origin::kLive;
  r.event = "mce_record";
  r.tracepoint = "mce:mce_record";
  r.time = 1000;
  r.wall_ns = 1796285030ULL * 1000000000ULL;
  r.cpu = 1;
  r.pid = 0;
  r.tid = 0;
  mce::MceRegisters regs;
  regs.status = 0x9400000000000091;
  regs.bank = 2;
  regs.cpu = 1;
  r.mce = mce::decode_mce(regs);
  r.key = "mce:cpu=1:bank=2:status=9400000000000091";
  ASSERT_TRUE((*history)->record(r, watch::record_json(r)).ok());
  ASSERT_TRUE((*history)->tick(0, true).ok());
}

TEST(ReportDbCli, BothSpellingsReadTheSameHistory) {
  TempDir dir;
  std::string path = dir.path("history.db");
  ASSERT_NO_FATAL_FAILURE(one_machine_check(path));
  CommandResult spaced = run_pp({"report", "--db", path, "--json"});
  CommandResult joined = run_pp({"report", "--db=" + path, "--json"});
  ASSERT_EQ(spaced.status, 0) << spaced.err;
  EXPECT_EQ(spaced.out, joined.out);
  EXPECT_NE(spaced.out.find("\"severity\":\"corrected\""), std::string::npos) << spaced.out;
}

TEST(ReportDbCli, RefusesWhatDoesNotApplyAndSaysWhatToGive) {
  TempDir dir;
  std::string path = dir.path("history.db");
  ASSERT_NO_FATAL_FAILURE(one_machine_check(path));
  CommandResult with_input = run_pp({"report", "--db", path, "-i", "perf.data"});
  EXPECT_EQ(with_input.status, cmd::kExitUsage);
  EXPECT_NE(with_input.err.find("give one of them"), std::string::npos) << with_input.err;
  CommandResult sorted = run_pp({"report", "--db", path, "--sort", "cpu"});
  EXPECT_EQ(sorted.status, cmd::kExitUsage);
  EXPECT_NE(sorted.err.find("time order"), std::string::npos) << sorted.err;
  CommandResult two = run_pp({"report", "--db", path, "other.db"});
  EXPECT_EQ(two.status, cmd::kExitUsage);
  EXPECT_NE(two.err.find("other.db"), std::string::npos) << two.err;
  CommandResult missing = run_pp({"report", "--db", dir.path("none.db")});
  EXPECT_EQ(missing.status, cmd::kExitNotFound);
  EXPECT_NE(missing.err.find("perf persistent watch --db"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace pp::testing

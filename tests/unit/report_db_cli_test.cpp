// `perf persistent report --db` on the command line, with a history the
// test writes itself (no kernel needed): both spellings of --db, and the
// options it refuses with a message that says what to give instead.
#include <unistd.h>

#include <cstdio>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

// A --db that is a symbolic link is not followed: whoever controls the
// link would choose the file read (or, for watch, written).
TEST(ReportDbCli, ALinkedHistoryIsNotFollowed) {
  TempDir dir;
  std::string path = dir.path("history.db");
  ASSERT_NO_FATAL_FAILURE(one_machine_check(path));
  std::string link = dir.path("link.db");
  ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
  CommandResult r = run_pp({"report", "--db", link});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("is a symbolic link, which is not followed"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  CommandResult j = run_pp({"report", "--db", link, "--json"});
  EXPECT_NE(j.status, 0);
  EXPECT_NE(j.out.find("\"error\""), std::string::npos) << j.out;
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
  // A missing input file exits 2 in every verb (report -i, decode --log).
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("perf persistent watch --db"), std::string::npos) << missing.err;
}

// The i-th corrected error EDAC reported on row 0x1d26 of DIMM
// CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (socket 0, controller 0, channel 1, slot
// 0, rank 0, bank group 2, bank 1), at `column`, a minute apart from
// 2026-12-03T08:03:50Z, as watch stores a ras:mc_event record.
watch::WatchRecord edac_row_error(int i, uint32_t column) {
  watch::WatchRecord r;
  r.origin = watch::Origin::kLive;
  r.event = "mc_event";
  r.tracepoint = "ras:mc_event";
  r.time = 1000 + uint64_t(i);
  r.wall_ns = (1796285030ULL + uint64_t(i) * 60) * 1000000000ULL;
  r.cpu = 0;
  r.pid = 0;
  r.tid = 0;
  uint64_t address = 0x8a6c1000 + uint64_t(i) * 0x40;
  char detail[160];
  std::snprintf(detail, sizeof(detail),
                "err_code:0x0000:0x009f socket:0 imc:0 rank:0 bg:2 ba:1 row:0x1d26 col:0x%x",
                column);
  r.fields = {{"error_type", 0},
              {"msg", "memory read error"},
              {"label", "CPU_SrcID#0_MC#0_Chan#1_DIMM#0"},
              {"error_count", 1},
              {"mc_index", 0},
              {"top_layer", 0},
              {"middle_layer", 1},
              {"lower_layer", 0},
              {"address", address},
              {"grain_bits", 5},
              {"syndrome", 0},
              {"driver_detail", detail}};
  r.key = "edac:" + std::to_string(i);
  return r;
}

// Three corrected errors EDAC reported on one row of one DIMM, at three
// columns, as watch stores ras:mc_event records; and the machine check of
// the first, which the kernel logged too: one row fault of three errors.
TEST(ReportDbCli, ThreeErrorsOnOneRowAreOneRowFault) {
  TempDir dir;
  std::string path = dir.path("history.db");
  {
    auto history = watch::History::open(path, {});
    ASSERT_TRUE(history.ok()) << history.error().message();
    const uint32_t columns[] = {0x140, 0x148, 0x3f8};
    for (int i = 0; i < 3; i++)
      ASSERT_TRUE((*history)
                      ->record(edac_row_error(i, columns[i]),
                               watch::record_json(edac_row_error(i, columns[i])))
                      .ok());
    watch::WatchRecord m;
    m.origin = watch::Origin::kLive;
    m.event = "mce_record";
    m.tracepoint = "mce:mce_record";
    m.wall_ns = 1796285031ULL * 1000000000ULL;
    m.cpu = 0;
    m.pid = 0;
    m.tid = 0;
    mce::MceRegisters regs;
    regs.status = 0x8c0000400001009f;  // VAL EN MISCV ADDRV, memory read, channel unspecified
    regs.addr = 0x8a6c1000;
    regs.bank = 13;
    regs.cpu = 0;
    m.mce = mce::decode_mce(regs);
    m.key = "mce:one";
    ASSERT_TRUE((*history)->record(m, watch::record_json(m)).ok());
    ASSERT_TRUE((*history)->tick(0, true).ok());
  }
  CommandResult text = run_pp({"report", "--db", path, "--faults"});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_EQ(text.out.find("row fault on CPU_SrcID#0_MC#0_Chan#1_DIMM#0: 3 errors (0 uncorrected)"),
            0u)
      << text.out;
  EXPECT_NE(text.out.find("row 0x1d26; 1 row, 3 columns"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find(" fault on ", 10), std::string::npos) << "one fault only:\n" << text.out;

  CommandResult json = run_pp({"report", "--db", path, "--faults", "--json"});
  ASSERT_EQ(json.status, 0) << json.err;
  nlohmann::json j = nlohmann::json::parse(json.out);  // one line: one fault
  EXPECT_EQ(j["mode"], "row");
  EXPECT_EQ(j["errors"], 3);
  EXPECT_EQ(j["columns"], 3);
  EXPECT_EQ(j["dimm"], "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
  EXPECT_EQ(j["location"]["row"], 0x1d26);
  EXPECT_EQ(j["first_seen"], "2026-12-03T08:03:50Z");
  // EDAC errors alone: the advice in the words mce_advice() uses.
  EXPECT_EQ(j["advice"],
            "Hardware event, not a software error: memory at DIMM CPU_SrcID#0_MC#0_Chan#1_DIMM#0 "
            "has a row fault; plan to replace it.");

  // --summary rolls the same errors up per DIMM (the machine check joined).
  CommandResult summary = run_pp({"report", "--db", path, "--summary", "--json"});
  ASSERT_EQ(summary.status, 0) << summary.err;
  nlohmann::json dimms = nlohmann::json::parse(summary.out)["summary"]["dimms"];
  ASSERT_EQ(dimms.size(), 1u) << summary.out;
  EXPECT_EQ(dimms[0]["dimm"], "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
  EXPECT_EQ(dimms[0]["errors"], 3);
  EXPECT_EQ(dimms[0]["uncorrected"], 0);
  CommandResult summary_text = run_pp({"report", "--db", path, "--summary"});
  EXPECT_NE(summary_text.out.find("         3            0  CPU_SrcID#0_MC#0_Chan#1_DIMM#0\n"),
            std::string::npos)
      << summary_text.out;

  CommandResult bad = run_pp({"report", "--faults"});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("--faults reads watch's history: give --db [FILE] with it"),
            std::string::npos)
      << bad.err;
}

// An Ice Lake-SP iMC machine check an hour after the EDAC errors (so not
// their twin), on the same row of the same DIMM: MCi_MISC gives socket 0
// (SOCKET), controller 0 channel 1 (bank 14), slot 0 rank 0, bank group 2,
// bank 1, row 0x1d26, column 0x200. Located by memory_location(), it takes
// the DIMM's label from EDAC and joins the row fault; the fault's advice
// names it.
TEST(ReportDbCli, AnIceLakeMachineCheckJoinsTheEdacRowFaultWithAdvice) {
  TempDir dir;
  std::string path = dir.path("history.db");
  {
    auto history = watch::History::open(path, {});
    ASSERT_TRUE(history.ok()) << history.error().message();
    const uint32_t columns[] = {0x140, 0x148, 0x3f8};
    for (int i = 0; i < 3; i++)
      ASSERT_TRUE((*history)
                      ->record(edac_row_error(i, columns[i]),
                               watch::record_json(edac_row_error(i, columns[i])))
                      .ok());
    watch::WatchRecord m;
    m.origin = watch::Origin::kLive;
    m.event = "mce_record";
    m.tracepoint = "mce:mce_record";
    m.wall_ns = (1796285030ULL + 3600) * 1000000000ULL;
    m.cpu = 0;
    m.pid = 0;
    m.tid = 0;
    mce::MceRegisters regs;
    regs.status = 0x8c00000000800091;  // VAL EN MISCV ADDRV, MSCOD 0x0080, memory read channel 1
    regs.addr = 0x9b000000;            // another page: no EDAC error there
    regs.misc = (uint64_t{0x200 >> 2} << 9) | (uint64_t{0x1d26} << 19) | (uint64_t{2} << 40) |
                (uint64_t{1} << 42) | (uint64_t{1} << 63);  // transient: no failed device
    regs.bank = 14;
    regs.cpu = 0;
    regs.cpuid = 0x606A6;
    regs.cpuvendor = 0;
    regs.socketid = 0;
    m.mce = mce::decode_mce(regs);
    m.key = "mce:icx";
    ASSERT_TRUE((*history)->record(m, watch::record_json(m)).ok());
    ASSERT_TRUE((*history)->tick(0, true).ok());
  }
  CommandResult text = run_pp({"report", "--db", path, "--faults"});
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_EQ(text.out.find("row fault on CPU_SrcID#0_MC#0_Chan#1_DIMM#0: 4 errors (0 uncorrected)"),
            0u)
      << text.out;
  EXPECT_NE(text.out.find("row 0x1d26; 1 row, 4 columns\n"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find(" fault on ", 10), std::string::npos) << "one fault only:\n" << text.out;
  EXPECT_NE(text.out.find("  advice: Hardware event, not a software error: memory at DIMM "
                          "CPU_SrcID#0_MC#0_Chan#1_DIMM#0"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("has a row fault; plan to replace it.\n"), std::string::npos) << text.out;

  CommandResult json = run_pp({"report", "--db", path, "--faults", "--json"});
  ASSERT_EQ(json.status, 0) << json.err;
  nlohmann::json j = nlohmann::json::parse(json.out);  // one line: one fault
  EXPECT_EQ(j["mode"], "row");
  EXPECT_EQ(j["errors"], 4);
  EXPECT_EQ(j["columns"], 4);
  ASSERT_TRUE(j["advice"].is_string()) << json.out;
  EXPECT_NE(j["advice"].get<std::string>().find("row fault; plan to replace it."),
            std::string::npos)
      << json.out;
}

}  // namespace
}  // namespace pp::testing

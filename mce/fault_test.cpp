// Faults from memory errors: each mode from the errors that make it, and a
// machine check counted once when EDAC reported it too.
#include "mce/fault.h"

#include <gtest/gtest.h>

#include "mce/edac.h"

namespace pp::mce {
namespace {

constexpr uint64_t kSecond = 1000000000ull;

// An error on DIMM CPU0_DIMM_A1 (socket 0, controller 0, channel 1, slot 0).
FaultError at(uint32_t rank, uint32_t bank, uint32_t row, uint32_t column, uint64_t t = 0) {
  FaultError e;
  e.location.socket = 0;
  e.location.controller = 0;
  e.location.channel = 1;
  e.location.slot = 0;
  e.location.label = "CPU0_DIMM_A1";
  e.location.rank = rank;
  e.location.bank_group = 0;
  e.location.bank = bank;
  e.location.row = row;
  e.location.column = column;
  e.wall_ns = t;
  return e;
}

TEST(Faults, OneCellIsACellFault) {
  auto f = group_faults({at(0, 1, 0x100, 0x20, 1 * kSecond), at(0, 1, 0x100, 0x20, 9 * kSecond)});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].mode, FaultMode::kCell);
  EXPECT_EQ(f[0].errors, 2u);
  EXPECT_EQ(f[0].first_ns, 1 * kSecond);
  EXPECT_EQ(f[0].last_ns, 9 * kSecond);
  EXPECT_EQ(f[0].dimm, "CPU0_DIMM_A1");
}

TEST(Faults, ThreeColumnsOfOneRowAreOneRowFault) {
  auto f = group_faults({at(0, 1, 0x100, 0x20), at(0, 1, 0x100, 0x28), at(0, 1, 0x100, 0x30)});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].mode, FaultMode::kRow);
  EXPECT_EQ(f[0].errors, 3u);
  EXPECT_EQ(f[0].rows, 1u);
  EXPECT_EQ(f[0].columns, 3u);
  EXPECT_EQ(f[0].where.row, 0x100u);
  EXPECT_EQ(f[0].where.column, std::nullopt);
  EXPECT_EQ(f[0].where.bank, 1u);
}

TEST(Faults, RowsOfOneColumnAreAColumnFaultAndBothABankFault) {
  auto column = group_faults({at(0, 1, 0x100, 0x20), at(0, 1, 0x200, 0x20)});
  ASSERT_EQ(column.size(), 1u);
  EXPECT_EQ(column[0].mode, FaultMode::kColumn);
  auto bank = group_faults({at(0, 1, 0x100, 0x20), at(0, 1, 0x200, 0x28)});
  ASSERT_EQ(bank.size(), 1u);
  EXPECT_EQ(bank[0].mode, FaultMode::kBank);
}

TEST(Faults, TwoBanksAreTwoFaultsThreeAreARankOrADevice) {
  auto two = group_faults({at(0, 1, 0x100, 0x20), at(0, 2, 0x100, 0x20)});
  EXPECT_EQ(two.size(), 2u);
  auto rank = group_faults({at(0, 1, 1, 1), at(0, 2, 2, 2), at(0, 3, 3, 3)});
  ASSERT_EQ(rank.size(), 1u);
  EXPECT_EQ(rank[0].mode, FaultMode::kRank);
  EXPECT_EQ(rank[0].banks, 3u);
  std::vector<FaultError> same_device = {at(0, 1, 1, 1), at(0, 2, 2, 2), at(0, 3, 3, 3)};
  for (FaultError& e : same_device)
    e.location.device = 7;
  auto device = group_faults(same_device);
  ASSERT_EQ(device.size(), 1u);
  EXPECT_EQ(device[0].mode, FaultMode::kDevice);
  EXPECT_EQ(device[0].where.device, 7u);
}

TEST(Faults, WithoutRowAndColumnTheModeIsUnknownButTheDimmIsNamed) {
  FaultError a;
  a.location.socket = 0;
  a.location.channel = 2;
  a.location.slot = 0;
  a.location.label = "CPU#0Channel#2_DIMM#0";
  a.count = 4;
  FaultError b = a;
  b.count = 2;
  auto f = group_faults({a, b});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].mode, FaultMode::kUnknown);
  EXPECT_EQ(f[0].errors, 6u);
  EXPECT_EQ(f[0].dimm, "CPU#0Channel#2_DIMM#0");
  // Two DIMMs of one channel: a channel fault.
  FaultError c = a;
  c.location.slot = 1;
  c.location.label = "CPU#0Channel#2_DIMM#1";
  auto ch = group_faults({a, c});
  ASSERT_EQ(ch.size(), 1u);
  EXPECT_EQ(ch[0].mode, FaultMode::kChannel);
  EXPECT_EQ(ch[0].dimm, "socket 0 channel 2");
}

TEST(Faults, AMachineCheckThatEdacReportedCountsOnce) {
  FaultError edac = at(0, 1, 0x100, 0x20, 100 * kSecond);
  edac.location.address = 0x12345040;
  edac.location.page = 0x12345;
  FaultError mce;
  mce.machine_check = true;
  mce.location.address = 0x12345040;
  mce.location.page = 0x12345;
  mce.wall_ns = 101 * kSecond;
  FaultError later = mce;
  later.wall_ns = 200 * kSecond;  // outside the window: an error of its own
  auto joined = join_machine_checks({edac, mce, later}, 5 * kSecond);
  ASSERT_EQ(joined.size(), 2u);
  EXPECT_FALSE(joined[0].machine_check);
  EXPECT_TRUE(joined[1].machine_check);
  auto f = group_faults(joined);
  ASSERT_EQ(f.size(), 2u);
  // The lone machine check is located by page only.
  EXPECT_EQ(f[1].mode, FaultMode::kUnknown);
  EXPECT_EQ(f[1].where.page, 0x12345u);
  std::string text;
  print_faults_text(f, text);
  EXPECT_NE(text.find("cell fault on CPU0_DIMM_A1: 1 error (0 uncorrected)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("unknown fault on an unknown DIMM"), std::string::npos) << text;
}

// A machine check located to socket, controller, channel and slot takes the
// label of the EDAC errors there when they name one DIMM (of its rank, when
// both give one); the fault's advice then names that DIMM.
TEST(Faults, AMachineCheckTakesTheLabelOfItsDimmsEdacErrors) {
  FaultError rank1 = at(1, 1, 0x100, 0x20);
  rank1.location.label = "CPU0_DIMM_A2";
  auto check = [](std::optional<uint32_t> rank) {
    FaultError m;
    m.machine_check = true;
    m.location.socket = 0;
    m.location.controller = 0;
    m.location.channel = 1;
    m.location.slot = 0;
    m.location.rank = rank;
    return m;
  };
  FaultError of_rank0 = check(0);
  MceRegisters regs;
  regs.status = 0x9c0000000000009f;  // corrected, memory controller
  of_rank0.mce = std::make_shared<const MceDecoded>(decode_mce(regs));
  FaultError no_rank = check(std::nullopt);  // both labels fit: none taken
  FaultError no_slot = check(0);
  no_slot.location.slot.reset();
  FaultError other_channel = check(0);
  other_channel.location.channel = 2;
  auto labelled = label_machine_checks(
      {at(0, 1, 0x100, 0x20), rank1, of_rank0, no_rank, no_slot, other_channel});
  ASSERT_EQ(labelled.size(), 6u);
  EXPECT_EQ(labelled[2].location.label, "CPU0_DIMM_A1");
  EXPECT_EQ(labelled[3].location.label, "");
  EXPECT_EQ(labelled[4].location.label, "");
  EXPECT_EQ(labelled[5].location.label, "");

  std::vector<Fault> f = group_faults({labelled[2]});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].dimm, "CPU0_DIMM_A1");
  EXPECT_EQ(f[0].advice,
            "Corrected and isolated (memory at DIMM CPU0_DIMM_A1 (controller 0, channel 1, slot 0, "
            "rank 0)); no action unless it repeats at the same place.");
}

TEST(Faults, JsonNamesTheModeAndCounts) {
  auto f = group_faults({at(0, 1, 0x100, 0x20, kSecond), at(0, 1, 0x100, 0x28, 2 * kSecond)});
  nlohmann::json j = fault_json(f.at(0));
  EXPECT_EQ(j["mode"], "row");
  EXPECT_EQ(j["dimm"], "CPU0_DIMM_A1");
  EXPECT_EQ(j["errors"], 2);
  EXPECT_EQ(j["columns"], 2);
  EXPECT_EQ(j["first_seen"], "1970-01-01T00:00:01Z");
  EXPECT_EQ(j["location"]["row"], 0x100);
}

}  // namespace
}  // namespace pp::mce

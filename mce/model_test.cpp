// The CPU models' tables, entry by entry with the source of each expected
// value: bank units, MSCOD and XEC meanings, the memory location from
// MCi_MISC (bit by bit), AMD's cache levels; then the context a record
// lacks (vendor and SER_P from the model, a tracepoint record never a
// panic, S=0 SRAO), the kernel's verdict, and the advice.
#include <gtest/gtest.h>

#include "mce/advice.h"
#include "mce/bits.h"
#include "mce/severity.h"
#include "mce/vendor.h"

namespace pp::mce {
namespace {

using namespace bits;

// CPUID leaf 1 EAX of each model (family 6; SDM vol. 4 / intel-family.h):
// 06_55H stepping 4, 06_6AH, 06_8FH, 06_CFH, 06_ADH; AMD 19h model 01h.
constexpr uint32_t kSkx = 0x50654, kIcx = 0x606A6, kSpr = 0x806F8, kEmr = 0xC06F2, kGnr = 0xA06D1,
                   kMilan = 0xA00F11;

MceRegisters intel(uint32_t cpuid, uint32_t bank, uint64_t status) {
  MceRegisters r;
  r.cpuid = cpuid;
  r.bank = bank;
  r.status = status;
  r.cpuvendor = 0;
  r.mcgcap = 0x1000c14;  // SER_P, CMCI_P, TES_P, 20 banks
  return r;
}

// A corrected memory read error (MCACOD 0000 0000 1001 CCCC: memory
// controller, read, channel CCCC) with MISCV and ADDRV, MSCOD `mscod`.
uint64_t mem_read(uint16_t mscod, uint8_t channel = 0xF) {
  return kVal | kEn | kMiscv | kAddrv | (uint64_t{mscod} << 16) | 0x0090 | channel;
}

TEST(MceModel, FindsEachModel) {
  const std::pair<uint32_t, const char*> cases[] = {
      {kSkx, "Skylake-SP/Cascade Lake"},
      {0x50657, "Skylake-SP/Cascade Lake"},
      {kIcx, "Ice Lake-SP"},
      {0x606C1, "Ice Lake-D"},
      {kSpr, "Sapphire Rapids"},
      {kEmr, "Emerald Rapids"},
      {kGnr, "Granite Rapids"},
  };
  for (auto [cpuid, name] : cases) {
    MceDecoded d = decode_mce(intel(cpuid, 0, kVal));
    EXPECT_EQ(d.cpu_model, name) << std::hex << cpuid;
  }
  EXPECT_FALSE(decode_mce(intel(0x306F2, 0, kVal)).cpu_model);  // Haswell-EP: no table
}

// Skylake-SP: [SDM] core banks 0..3 and PCU 4, CHA 9..11; [cross]
// mcelog's skylake_xeon.c: UPI 5/12/19, M2M 7/8, iMC 13..18.
TEST(MceModel, SkylakeBankUnits) {
  const std::pair<uint32_t, const char*> cases[] = {
      {0, "IFU (instruction fetch unit)"},
      {1, "DCU (data cache unit)"},
      {2, "DTLB (data TLB)"},
      {3, "MLC (mid-level cache)"},
      {4, "PCU (power control unit)"},
      {5, "UPI link 0"},
      {12, "UPI link 1"},
      {19, "UPI link 2"},
      {7, "M2M (mesh to memory) 0"},
      {8, "M2M (mesh to memory) 1"},
      {9, "CHA (caching and home agent)"},
      {11, "CHA (caching and home agent)"},
      {13, "iMC (integrated memory controller)"},
      {18, "iMC (integrated memory controller)"},
  };
  for (auto [bank, unit] : cases)
    EXPECT_EQ(decode_mce(intel(kSkx, bank, kVal)).unit, unit) << bank;
  EXPECT_FALSE(decode_mce(intel(kSkx, 6, kVal)).unit);   // no public name: left unnamed
  EXPECT_FALSE(decode_mce(intel(kSkx, 20, kVal)).unit);  // past the table
  // [sev] MSCOD 0x0010 in an iMC bank: uncorrected patrol scrub; the channel
  // is MCACOD[3:0] (SDM: CCCC), the controller unknown.
  MceDecoded d = decode_mce(intel(kSkx, 14, mem_read(0x0010, 2)));
  EXPECT_EQ(d.mscod_meaning, "uncorrected patrol scrub error");
  ASSERT_TRUE(d.location);
  EXPECT_EQ(d.location->channel, 2u);
  EXPECT_FALSE(d.location->controller);
  EXPECT_FALSE(d.location->row);
  // CCCC = 1111 is "unspecified": no channel.
  EXPECT_FALSE(decode_mce(intel(kSkx, 14, mem_read(0x0010))).location->channel);
}

// Ice Lake-SP: [cross] rasdaemon's mce-intel-i10nm.c banks (PCU 4, UPI
// 5/7/8, M2M 12/16/20/24, iMC 13-15/17-19/21-23/25-27); [i10nm] the DDR
// channels 13, 14, 17, 18, 21, 22, 25, 26 as controller (bank-13)/4,
// channel (bank-13)%2.
TEST(MceModel, IceLakeBankUnits) {
  const std::pair<uint32_t, const char*> cases[] = {
      {4, "PCU (power control unit)"},
      {5, "UPI link 0"},
      {7, "UPI link 1"},
      {8, "UPI link 2"},
      {12, "M2M (mesh to memory) 0"},
      {16, "M2M (mesh to memory) 1"},
      {24, "M2M (mesh to memory) 3"},
      {13, "iMC 0 channel 0"},
      {14, "iMC 0 channel 1"},
      {15, "iMC 0"},
      {17, "iMC 1 channel 0"},
      {18, "iMC 1 channel 1"},
      {21, "iMC 2 channel 0"},
      {22, "iMC 2 channel 1"},
      {25, "iMC 3 channel 0"},
      {26, "iMC 3 channel 1"},
      {27, "iMC 3"},
  };
  for (auto [bank, unit] : cases)
    EXPECT_EQ(decode_mce(intel(kIcx, bank, kVal)).unit, unit) << bank;
}

// [cross] rasdaemon's and mcelog's i10nm iMC MSCOD tables; the issue's
// example: 0x0080 is a corrected read error.
TEST(MceModel, TenNmImcMscod) {
  const std::pair<uint16_t, const char*> cases[] = {
      {0x0001, "address parity error"},
      {0x0003, "data ECC error"},
      {0x0008, "corrected patrol scrub error"},
      {0x0010, "uncorrected patrol scrub error"},
      {0x0080, "corrected read error"},
      {0x00A0, "uncorrected read error"},
      {0x00C0, "uncorrected metadata error"},
      {0x0108, "DDR link failure"},
      {0x0200, "DDR command/address parity error"},
  };
  for (auto [mscod, meaning] : cases) {
    EXPECT_EQ(decode_mce(intel(kIcx, 13, mem_read(mscod))).mscod_meaning, meaning) << mscod;
    EXPECT_EQ(decode_mce(intel(kSpr, 13, mem_read(mscod))).mscod_meaning, meaning) << mscod;
  }
  EXPECT_FALSE(decode_mce(intel(kIcx, 13, mem_read(0x0005))).mscod_meaning);
  // Not an iMC bank: no iMC meaning.
  EXPECT_FALSE(decode_mce(intel(kIcx, 4, mem_read(0x0080))).mscod_meaning);
}

// The 10nm MISC layout, one field at a time: each field's bits set alone
// give that field's value and leave every other field at zero.
TEST(MceModel, IceLakeMiscBitByBit) {
  auto locate = [](uint64_t misc, uint64_t extra_status = 0) {
    MceRegisters r = intel(kIcx, 18, mem_read(0x0080) | extra_status);
    r.misc = misc;
    r.addr = 0x12345678;
    r.socketid = 1;
    MceDecoded d = decode_mce(r);
    EXPECT_TRUE(d.location) << std::hex << misc;
    return d.location.value_or(MemoryLocation{});
  };
  const MemoryLocation zero = locate(0);
  EXPECT_EQ(zero.socket, 1u);
  EXPECT_EQ(zero.controller, 1u);  // bank 18: (18-13)/4
  EXPECT_EQ(zero.channel, 1u);     // (18-13)%2
  EXPECT_EQ(zero.address, 0x12345678u);
  EXPECT_EQ(zero.page, 0x12345u);
  EXPECT_EQ(zero.column, 0u);
  EXPECT_EQ(zero.row, 0u);
  EXPECT_EQ(zero.device, 0u);
  EXPECT_EQ(zero.transient, false);

  // Column MISC[18:9], shifted left 2.
  for (int b = 9; b <= 18; b++) {
    MemoryLocation l = locate(uint64_t{1} << b);
    EXPECT_EQ(l.column, 1u << (b - 9 + 2)) << b;
    EXPECT_EQ(l.row, 0u) << b;
  }
  // Row MISC[39:19].
  for (int b = 19; b <= 39; b++) {
    MemoryLocation l = locate(uint64_t{1} << b);
    EXPECT_EQ(l.row, 1u << (b - 19)) << b;
    EXPECT_EQ(l.column, 0u) << b;
    EXPECT_EQ(l.bank_group, 0u) << b;
  }
  // Bank group MISC[41:40] and [44] as its bit 2; bank MISC[43:42].
  EXPECT_EQ(locate(uint64_t{1} << 40).bank_group, 1u);
  EXPECT_EQ(locate(uint64_t{1} << 41).bank_group, 2u);
  EXPECT_EQ(locate(uint64_t{1} << 44).bank_group, 4u);
  EXPECT_EQ(locate(uint64_t{1} << 42).bank, 1u);
  EXPECT_EQ(locate(uint64_t{1} << 43).bank, 2u);
  EXPECT_EQ(locate(uint64_t{1} << 44).bank, 0u);
  // Failed device MISC[51:46], only when neither transient nor UC.
  for (int b = 46; b <= 51; b++)
    EXPECT_EQ(locate(uint64_t{1} << b).device, 1u << (b - 46)) << b;
  EXPECT_FALSE(locate((uint64_t{1} << 46) | (uint64_t{1} << 63)).device);
  EXPECT_FALSE(locate(uint64_t{1} << 46, kUc).device);
  // Subrank MISC[55:52].
  for (int b = 52; b <= 55; b++)
    EXPECT_EQ(locate(uint64_t{1} << b).subrank, 1u << (b - 52)) << b;
  // Rank MISC[58:56]: bits 57:56 the rank, bit 58 the DIMM slot ([i10nm]).
  EXPECT_EQ(locate(uint64_t{1} << 56).rank, 1u);
  EXPECT_EQ(locate(uint64_t{1} << 57).rank, 2u);
  EXPECT_EQ(locate(uint64_t{1} << 58).rank, 0u);
  EXPECT_EQ(locate(uint64_t{1} << 58).slot, 1u);
  // ECC mode MISC[62:59]; transient MISC[63].
  for (int b = 59; b <= 61; b++)  // bit 62 alone is 8, DDR-T: below
    EXPECT_EQ(locate(uint64_t{1} << b).ecc_mode, 1u << (b - 59)) << b;
  EXPECT_EQ(locate(uint64_t{1} << 63).transient, true);

  // All at once: the reading of a real layout.
  const uint64_t misc = (uint64_t{0x2A} << 9) | (uint64_t{0x1ABCD} << 19) | (uint64_t{3} << 40) |
                        (uint64_t{2} << 42) | (uint64_t{1} << 44) | (uint64_t{5} << 46) |
                        (uint64_t{3} << 52) | (uint64_t{7} << 56) | (uint64_t{1} << 59);
  MemoryLocation l = locate(misc);
  EXPECT_EQ(l.column, 0x2Au << 2);
  EXPECT_EQ(l.row, 0x1ABCDu);
  EXPECT_EQ(l.bank_group, 7u);
  EXPECT_EQ(l.bank, 2u);
  EXPECT_EQ(l.device, 5u);
  EXPECT_EQ(l.subrank, 3u);
  EXPECT_EQ(l.rank, 3u);
  EXPECT_EQ(l.slot, 1u);
  EXPECT_EQ(l.ecc_mode, 1u);
  EXPECT_EQ(memory_location(decode_mce([&] {
              MceRegisters r = intel(kIcx, 18, mem_read(0x0080));
              r.misc = misc;
              return r;
            }())),
            std::optional<MemoryLocation>([&] {
              MemoryLocation want = l;
              want.socket.reset();
              want.address.reset();
              want.page.reset();
              return want;
            }()));
}

TEST(MceModel, IceLakeLocationNeedsAMemoryErrorAndAChannelBank) {
  MceRegisters r = intel(kIcx, 13, mem_read(0x0080));
  r.misc = uint64_t{5} << 19;
  EXPECT_TRUE(decode_mce(r).location);
  // [i10nm] ECC mode 8: DDR-T, no DRAM location in MISC.
  r.misc = (uint64_t{8} << 59) | (uint64_t{5} << 19);
  MceDecoded ddrt = decode_mce(r);
  ASSERT_TRUE(ddrt.location);
  EXPECT_FALSE(ddrt.location->row);
  EXPECT_EQ(ddrt.location->ecc_mode, 8u);
  // Not a memory controller code (a cache error in an iMC bank): no location.
  r.status = kVal | kEn | kMiscv | 0x0134;
  EXPECT_FALSE(decode_mce(r).location);
  // Bank 15 is an iMC bank without a DDR channel in MISC.
  EXPECT_FALSE(decode_mce(intel(kIcx, 15, mem_read(0x0080))).location);
  // MISCV clear: controller and channel, no DRAM layers.
  MceRegisters nomisc = intel(kIcx, 14, mem_read(0x0080) & ~kMiscv);
  nomisc.misc = uint64_t{5} << 19;
  MceDecoded d = decode_mce(nomisc);
  ASSERT_TRUE(d.location);
  EXPECT_EQ(d.location->channel, 1u);
  EXPECT_FALSE(d.location->row);
}

// [i10nm] Sapphire Rapids: banks 13..20, controller (bank-13)/2, channel
// (bank-13)%2; MISC column [18:9]<<2, row [36:19], bank group [38:37] |
// [41]<<2, bank [40:39], rank [57], DIMM [58].
TEST(MceModel, SapphireRapidsMiscBitByBit) {
  auto locate = [](uint32_t bank, uint64_t misc) {
    MceRegisters r = intel(kSpr, bank, mem_read(0x0080));
    r.misc = misc;
    return decode_mce(r).location.value_or(MemoryLocation{});
  };
  EXPECT_EQ(decode_mce(intel(kSpr, 13, kVal)).unit, "iMC 0 channel 0");
  EXPECT_EQ(decode_mce(intel(kEmr, 20, kVal)).unit, "iMC 3 channel 1");
  EXPECT_FALSE(decode_mce(intel(kSpr, 21, kVal)).unit);
  EXPECT_EQ(locate(16, 0).controller, 1u);
  EXPECT_EQ(locate(16, 0).channel, 1u);
  for (int b = 9; b <= 18; b++)
    EXPECT_EQ(locate(13, uint64_t{1} << b).column, 1u << (b - 7)) << b;
  for (int b = 19; b <= 36; b++)
    EXPECT_EQ(locate(13, uint64_t{1} << b).row, 1u << (b - 19)) << b;
  EXPECT_EQ(locate(13, uint64_t{1} << 37).bank_group, 1u);
  EXPECT_EQ(locate(13, uint64_t{1} << 38).bank_group, 2u);
  EXPECT_EQ(locate(13, uint64_t{1} << 41).bank_group, 4u);
  EXPECT_EQ(locate(13, uint64_t{1} << 39).bank, 1u);
  EXPECT_EQ(locate(13, uint64_t{1} << 40).bank, 2u);
  EXPECT_EQ(locate(13, uint64_t{1} << 57).rank, 1u);
  EXPECT_EQ(locate(13, uint64_t{1} << 58).slot, 1u);
  EXPECT_EQ(locate(13, uint64_t{1} << 37).row, 0u);
}

TEST(MceModel, GraniteRapidsNamesCoreBanksOnly) {
  EXPECT_EQ(decode_mce(intel(kGnr, 1, kVal)).unit, "DCU (data cache unit)");
  MceDecoded d = decode_mce(intel(kGnr, 13, mem_read(0x0080)));
  EXPECT_FALSE(d.unit);
  EXPECT_FALSE(d.location);
}

// AMD SMCA. The example, a UMC error the kernel and rasdaemon read
// as "Unified Memory Controller, extended error code 2: SDP parity error".
TEST(MceSmca, UmcExtendedErrorCodeAndChannel) {
  MceRegisters r;
  r.status = 0x982000000002080b;
  r.ipid = 0x9600050f00;
  r.cpuvendor = 2;
  r.bank = 22;
  MceDecoded d = decode_mce(r);
  EXPECT_EQ(d.smca_bank_type, "umc");
  EXPECT_EQ(d.unit, "Unified Memory Controller");
  EXPECT_EQ(d.xec, 2u);
  EXPECT_EQ(d.xec_meaning, "SDP parity error");
  ASSERT_TRUE(d.location);
  EXPECT_EQ(d.location->channel, 0u);     // IPID[31:20] of 0x00050f00
  EXPECT_FALSE(d.location->chip_select);  // code 2 is not a DRAM ECC error
  nlohmann::json j = mce_json(d);
  EXPECT_EQ(j["xec"], 2);
  EXPECT_EQ(j["xec_meaning"], "SDP parity error");
  EXPECT_EQ(j["unit"], "Unified Memory Controller");

  // A DRAM ECC error (code 0) with SyndV on UMC instance 0x00350f00:
  // channel 3, chip select SYND[2:0] (amd64_edac's umc_get_err_info()).
  r.status = kVal | kEn | kMiscv | kAddrv | kSyndv | kCecc | 0x009f;
  r.ipid = 0x0000009600350f00;
  r.synd = 0x5a5a00000006;
  r.addr = 0x1000;
  MceDecoded ecc = decode_mce(r);
  EXPECT_EQ(ecc.xec_meaning, "DRAM ECC error");
  ASSERT_TRUE(ecc.location);
  EXPECT_EQ(ecc.location->channel, 3u);
  EXPECT_EQ(ecc.location->chip_select, 6u);
  EXPECT_EQ(ecc.location->address, 0x1000u);
  EXPECT_FALSE(ecc.location->page);  // a normalized address, not physical
  // umc_v2 (McaType 1) has its own table: code 5 is a write data parity error.
  r.ipid = 0x0001009600000000;
  r.status = kVal | kEn | (uint64_t{5} << 16);
  EXPECT_EQ(decode_mce(r).xec_meaning, "write data parity error");
}

// One entry of each bank type's table, with the source: the family
// 17h/19h PPRs as Linux's mce_amd.c listed them.
TEST(MceSmca, EachBankTypeHasItsTable) {
  struct Case {
    uint64_t ipid;
    uint8_t xec;
    const char* unit;
    const char* meaning;
  };
  const Case cases[] = {
      {0x000000B000000000, 0, "Load Store Unit", "load queue parity error"},
      {0x001000B000000000, 1, "Load Store Unit",
       "ECC error or L2 poison on a data cache read by a load"},
      {0x000100B000000000, 3, "Instruction Fetch Unit",
       "instruction cache data array parity error"},
      {0x000200B000000000, 2, "L2 Cache", "L2 data array ECC error"},
      {0x000300B000000000, 0, "Decode Unit", "micro-op cache tag parity error"},
      {0x000500B000000000, 0, "Execution Unit", "watchdog timeout"},
      {0x000600B000000000, 1, "Floating Point Unit", "free list parity error"},
      {0x000700B000000000, 4, "L3 Cache", "L3 data ECC error"},
      {0x0000002E00000000, 8, "Coherent Slave", "probe filter ECC error"},
      {0x0002002E00000000, 10, "Coherent Slave", "probe filter ECC error"},
      {0x0001002E00000000, 3, "Power, Interrupts, etc.", "poison data consumption"},
      {0x0000000500000000, 0, "Parameter Block", "parameter block RAM ECC error"},
      {0x000000FF00000000, 0, "Platform Security Processor", "ECC or parity error in a PSP RAM"},
      {0x0000000100000000, 0, "System Management Unit", "ECC or parity error in an SMU RAM"},
      {0x0000001800000000, 3, "Northbridge IO Unit", "SDP egress poison"},
      {0x0000006C00000000, 1, "NBIF Unit", "SRAM ECC error"},
      {0x0000025900000000, 0, "Ext Global Memory Interconnect PHY Unit", "RAM ECC error"},
  };
  for (const Case& c : cases) {
    MceRegisters r;
    r.status = kVal | kEn | (uint64_t{c.xec} << 16);
    r.ipid = c.ipid;
    MceDecoded d = decode_mce(r, CpuVendor::kAmd);
    EXPECT_EQ(d.unit, c.unit) << std::hex << c.ipid;
    EXPECT_EQ(d.xec_meaning, c.meaning) << std::hex << c.ipid;
  }
  // A code past the table: the number, no meaning.
  MceRegisters r;
  r.status = kVal | (uint64_t{0x3F} << 16);
  r.ipid = 0x000200B000000000;
  MceDecoded d = decode_mce(r, CpuVendor::kAmd);
  EXPECT_EQ(d.xec, 0x3Fu);
  EXPECT_FALSE(d.xec_meaning);
}

// AMD APM vol. 2 (and mce_amd.c's ll_msgs): LL=00 reserved, 01 L1, 10 L2,
// 11 L3/generic; the SDM's reading stays for Intel.
TEST(MceSmca, AmdCacheLevels) {
  const std::pair<uint16_t, const char*> cases[] = {
      {0x0134, "reserved"}, {0x0135, "L1"}, {0x0136, "L2"}, {0x0137, "L3/generic"}};
  for (auto [code, level] : cases) {
    MceRegisters r;
    r.status = kVal | code;
    EXPECT_EQ(mce_json(decode_mce(r, CpuVendor::kAmd))["cache"], level) << code;
  }
  MceRegisters r;
  r.status = kVal | 0x0135;
  EXPECT_EQ(mce_json(decode_mce(r, CpuVendor::kIntel))["cache"], "L2");
}

// The Zen generations from arch/x86/kernel/cpu/amd.c's model ranges.
TEST(MceSmca, ZenModels) {
  const std::pair<uint32_t, const char*> cases[] = {
      {0x800F12, "Zen/Zen+ (family 17h)"}, {0x830F10, "Zen 2 (family 17h)"},
      {kMilan, "Zen 3 (family 19h)"},      {0xA10F11, "Zen 4 (family 19h)"},
      {0xB00F21, "Zen 5 (family 1Ah)"},
  };
  for (auto [cpuid, name] : cases) {
    MceRegisters r;
    r.status = kVal;
    r.cpuid = cpuid;
    MceDecoded d = decode_mce(r);
    EXPECT_EQ(d.cpu_model, name) << std::hex << cpuid;
    EXPECT_EQ(d.vendor, CpuVendor::kAmd) << std::hex << cpuid;
  }
}

// The case: a UCNA from a kernel log (no MCG_CAP, no vendor) on
// CPUID 0x50654 was "uncorrected, panic"; the model says SER_P.
TEST(MceContext, SerPAndVendorFromTheModel) {
  MceRegisters r;
  r.status = 0xb400000000000090;
  r.cpuid = kSkx;
  r.bank = 3;
  r.mcgstatus = 0;
  MceDecoded d = decode_mce(r);
  EXPECT_EQ(d.vendor, CpuVendor::kIntel);
  EXPECT_EQ(d.assumed, (std::vector<std::string>{"vendor intel", "MCG_CAP.SER_P"}));
  EXPECT_EQ(d.severity, MceSeverity::kUcna);
  EXPECT_EQ(d.kernel_severity, KernelSeverity::kUcna);
  EXPECT_FALSE(d.regs.mcgcap);  // the record is not changed
  std::string text;
  print_mce_text(d, text);
  EXPECT_NE(text.find("assumed from the CPU model: vendor intel, MCG_CAP.SER_P"), std::string::npos)
      << text;
  nlohmann::json j = mce_json(d);
  EXPECT_EQ(j["assumed_from_cpu_model"], nlohmann::json::array({"vendor intel", "MCG_CAP.SER_P"}));
  EXPECT_FALSE(j.contains("mcgcap"));
  // A record that has MCG_CAP keeps it, even without SER_P.
  r.mcgcap = 0xa;
  MceDecoded given = decode_mce(r);
  EXPECT_EQ(given.assumed, (std::vector<std::string>{"vendor intel"}));
  EXPECT_EQ(given.severity, MceSeverity::kUncorrected);
  // MCG_CAP 0, as mce-inject's software injection records it: not read.
  r.mcgcap = 0;
  MceDecoded zero = decode_mce(r);
  EXPECT_EQ(zero.severity, MceSeverity::kUcna);
  EXPECT_EQ(zero.assumed, (std::vector<std::string>{"vendor intel", "MCG_CAP.SER_P"}));
  // An unknown model: nothing assumed, as before.
  r.mcgcap.reset();
  r.cpuid = 0x306F2;
  EXPECT_TRUE(decode_mce(r).assumed.empty());
  EXPECT_EQ(decode_mce(r).severity, MceSeverity::kUncorrected);
}

// core.c: the #MC handler panics before the record is queued for the
// tracepoint, so a tracepoint record was survived.
TEST(MceContext, TracepointRecordIsNeverAPanic) {
  MceRegisters r;
  r.status = 0xbe00000000000150;  // PCC
  r.mcgstatus = kRipv | kMcip;
  r.mcgcap = 0x1000c0a;
  r.cs = 0x10;
  EXPECT_EQ(decode_mce(r).kernel_severity, KernelSeverity::kPanic);
  MceDecoded live = decode_mce(r, CpuVendor::kIntel, MceOrigin::kTracepoint);
  EXPECT_EQ(live.kernel_severity, KernelSeverity::kUc);
  EXPECT_EQ(live.severity, MceSeverity::kFatal);  // the SDM's class does not change
  EXPECT_NE(live.kernel_severity_rule.find("Processor context corrupt"), std::string::npos);
  EXPECT_EQ(mce_json(live)["origin"], "tracepoint");
  // A data load in kernel context the kernel survived: a recoverable copy.
  r.status = kVal | kUc | kEn | kMiscv | kAddrv | kS | kAr | 0x0134;
  r.mcgstatus = kEipv | kMcip | kRipv;
  EXPECT_EQ(decode_mce(r).kernel_severity, KernelSeverity::kPanic);
  EXPECT_EQ(decode_mce(r, CpuVendor::kIntel, MceOrigin::kTracepoint).kernel_severity,
            KernelSeverity::kAr);
  // Corrected errors are unchanged.
  r.status = 0x9c0000000000009f;
  EXPECT_EQ(decode_mce(r, CpuVendor::kIntel, MceOrigin::kTracepoint).kernel_severity,
            KernelSeverity::kKeep);
}

// SDM: memory scrubbing (0x00Cx) and L3 explicit writeback (0x017A) are
// SRAO, and CMCI may signal them with S=0.
TEST(MceContext, SrarCodesWithSZeroAreSrao) {
  MceRegisters r;
  r.mcgcap = 0x1000c0a;
  r.status = 0xb4000000000000c3;  // VAL UC EN ADDRV, scrub channel 3
  EXPECT_EQ(decode_mce(r).severity, MceSeverity::kSrao);
  EXPECT_EQ(decode_mce(r).kernel_severity, KernelSeverity::kAo);
  r.status = 0xb40000000000117a;  // L3 writeback, F bit set
  EXPECT_EQ(decode_mce(r).severity, MceSeverity::kSrao);
  r.status = 0xb400000000000090;  // a read: still UCNA
  EXPECT_EQ(decode_mce(r).severity, MceSeverity::kUcna);
}

TEST(MceContext, KernelVerdictIsCompared) {
  MceRegisters r;
  r.status = 0xbe00000000000150;
  r.mcgstatus = kRipv | kMcip;
  r.mcgcap = 0x1000c0a;
  MceDecoded fatal = decode_mce(r);
  KernelVerdict v = compare_kernel_verdict(
      fatal, "[   20.1] mce: [Hardware Error]: Machine check: Processor context corrupt\r\n");
  EXPECT_EQ(v.text, "[   20.1] mce: [Hardware Error]: Machine check: Processor context corrupt");
  EXPECT_EQ(v.severity, KernelSeverity::kPanic);
  EXPECT_EQ(v.rule, "Processor context corrupt");
  EXPECT_TRUE(v.agrees);
  EXPECT_TRUE(
      compare_kernel_verdict(fatal, "Kernel panic - not syncing: Fatal machine check").agrees);

  r.status = 0xb400000000000090;  // UCNA
  r.mcgstatus = 0;
  MceDecoded ucna = decode_mce(r);
  EXPECT_NE(ucna.advice.find(" was not consumed;"), std::string::npos) << ucna.advice;
  apply_kernel_verdict(ucna, "Kernel panic - not syncing: Fatal machine check");
  // The advice follows the kernel: it panicked, whatever the registers say.
  EXPECT_EQ(ucna.advice,
            "Hardware event, not a software error: uncorrected error in CPU ? bank ?; the kernel "
            "panics; have the part serviced before the machine returns to service.");
  ASSERT_TRUE(ucna.kernel_verdict);
  EXPECT_FALSE(ucna.kernel_verdict->agrees);
  EXPECT_EQ(ucna.kernel_verdict->severity, KernelSeverity::kPanic);
  EXPECT_NE(ucna.notes.back().find("differs from this decode's kernel severity ucna"),
            std::string::npos);
  nlohmann::json j = mce_json(ucna);
  EXPECT_EQ(j["kernel_verdict"]["agrees"], false);
  EXPECT_EQ(j["kernel_verdict"]["severity"], "panic");
  // The kernel's own message, matched whatever its case.
  EXPECT_EQ(compare_kernel_verdict(ucna, "machine check: DATA LOAD IN UNRECOVERABLE AREA OF KERNEL")
                .severity,
            KernelSeverity::kPanic);
  // AMD's grader messages on an AMD record.
  MceRegisters a;
  a.status = kVal | kUc | kEn | kPcc;
  MceDecoded amd = decode_mce(a, CpuVendor::kAmd);
  EXPECT_TRUE(compare_kernel_verdict(amd, "Machine check: Processor Context Corrupt").agrees);
  // A line that is none of the grader's messages: no level, no claim.
  KernelVerdict other = compare_kernel_verdict(ucna, "something else");
  EXPECT_FALSE(other.severity);
  EXPECT_TRUE(other.agrees);
}

TEST(MceAdvice, OneSentencePerCase) {
  MceRegisters r;
  r.mcgcap = 0x1000c0a;
  r.bank = 18;
  r.cpu = 4;
  r.status = 0x9c0000000000009f;
  EXPECT_EQ(decode_mce(r).advice,
            "Corrected and isolated (CPU 4 bank 18); no action unless it repeats at the same "
            "place.");
  // A model's table names the part.
  r.cpuid = kIcx;
  r.status = mem_read(0x0080);
  r.misc = uint64_t{3} << 56;
  r.socketid = 0;
  MceDecoded d = decode_mce(r);
  EXPECT_EQ(d.advice,
            "Corrected and isolated (memory at socket 0, controller 1, channel 1, slot 0, rank "
            "3); no action unless it repeats at the same place.");
  // With the DIMM label and the fault model's verdict, the sentence.
  d.location->label = "CPU0_DIMM_A1";
  d.location->slot.reset();
  d.location->controller = 0;
  EXPECT_EQ(mce_advice(d, "row"),
            "Hardware event, not a software error: memory at DIMM CPU0_DIMM_A1 (controller 0, "
            "channel 1, rank 3) has a row fault; plan to replace it.");
  // UCNA with an address: the kernel offlines the page.
  r.cpuid.reset();
  r.status = 0xb400000000000090;
  r.addr = 0x5678000;
  EXPECT_EQ(decode_mce(r).advice,
            "Hardware event, not a software error: uncorrected data in CPU 4 bank 18 was not "
            "consumed; newer kernels offline the page (HardwareCorrupted in /proc/meminfo grows), "
            "older ones leave it; plan to replace the part if it repeats.");
  // Without ADDRV the kernel has no page to offline.
  r.status = 0xb000000000000090;
  EXPECT_NE(decode_mce(r).advice.find("offline the page when they have the address"),
            std::string::npos);
  // Fatal: the kernel panics.
  r.status = 0xbe00000000000150;
  r.mcgstatus = kRipv | kMcip;
  EXPECT_NE(decode_mce(r).advice.find("the kernel panics"), std::string::npos);
  // Every decode carries advice, in its JSON and its text.
  MceDecoded any = decode_mce(r);
  EXPECT_EQ(mce_json(any)["advice"], any.advice);
  std::string text;
  print_mce_text(any, text);
  EXPECT_NE(text.find("  advice: " + any.advice + "\n"), std::string::npos);
  MceRegisters empty;
  EXPECT_EQ(decode_mce(empty).advice, "Not an error: the bank holds no valid record; no action.");
}

}  // namespace
}  // namespace pp::mce

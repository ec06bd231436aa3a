// Intel's server CPU models (family 6), one row each: which unit each
// machine-check bank belongs to, what an iMC bank's MSCOD means, and where a
// memory error lies from MCi_MISC. Written from facts of these sources, each
// cited where it is used:
//
//   [SDM]   Intel SDM vol. 3B, chapter 16, the Xeon Scalable family's
//           machine-check banks (core banks IA32_MC0..3).
//   [i10nm] Linux drivers/edac/i10nm_base.c: i10nm_mc_decode_available()
//           and i10nm_mc_decode() (which banks are memory channels on Ice
//           Lake-SP and Sapphire Rapids, and their MCi_MISC layouts).
//   [sev]   Linux arch/x86/kernel/cpu/mce/severity.c: the Skylake-SP iMC
//           banks 13..18 and their uncorrected patrol scrub MSCOD.
//   [cross] mcelog's skylake_xeon.c and i10nm.c and rasdaemon's
//           mce-intel-skylake-xeon.c and mce-intel-i10nm.c, as cross-checks
//           of the bank numbers and the 10nm iMC MSCOD values and MISC
//           fields (failed device, subrank, ECC mode, transient).
//
// A bank a source does not name stays unnamed: the decoder never guesses.
#include <array>
#include <cstdio>

#include "mce/bits.h"
#include "mce/vendor.h"

namespace pp::mce {
namespace {

using namespace bits;

uint64_t field(uint64_t v, int lo, int hi) {
  return (v >> lo) & ((uint64_t{1} << (hi - lo + 1)) - 1);
}

std::string numbered(const char* unit, uint32_t n) {
  return std::string(unit) + " " + std::to_string(n);
}

// [SDM] The core's own banks on the Xeon Scalable family.
std::optional<std::string> core_bank(uint32_t bank) {
  switch (bank) {
    case 0:
      return "IFU (instruction fetch unit)";
    case 1:
      return "DCU (data cache unit)";
    case 2:
      return "DTLB (data TLB)";
    case 3:
      return "MLC (mid-level cache)";
    default:
      return std::nullopt;
  }
}

// MCACOD 000F 0000 1MMM CCCC, F masked: a memory controller error (SDM vol.
// 3B, compound error codes). [i10nm] decodes MCi_MISC only for these.
bool memory_controller_code(uint64_t status) {
  return (status & 0xEF80) == 0x0080;
}

// The 10nm-family iMC MSCOD (IA32_MCi_STATUS[31:16]): bits 31:24 a
// category, 23:16 the error in it. [cross] rasdaemon's and mcelog's i10nm
// tables agree on these values.
struct MscodMeaning {
  uint16_t mscod;
  const char* meaning;
};
constexpr MscodMeaning kImc10nmMscod[] = {
    {0x0001, "address parity error"},
    {0x0002, "data parity error"},
    {0x0003, "data ECC error"},
    {0x0004, "data byte-enable parity error"},
    {0x0007, "transaction ID parity error"},
    {0x0008, "corrected patrol scrub error"},
    {0x0010, "uncorrected patrol scrub error"},
    {0x0020, "corrected spare error"},
    {0x0040, "uncorrected spare error"},
    {0x0080, "corrected read error"},
    {0x00A0, "uncorrected read error"},
    {0x00C0, "uncorrected metadata error"},
    {0x0100, "write data buffer read parity error"},
    {0x0108, "DDR link failure"},
    {0x0200, "DDR command/address parity error"},
    {0x0400, "read pending queue parity error (primary)"},
};

// [sev] Skylake-SP: MSCOD 0x0010 in an iMC bank is an uncorrected patrol
// scrub error (reported from stepping 4 through CMCI with UC=0).
constexpr MscodMeaning kImcSkxMscod[] = {
    {0x0010, "uncorrected patrol scrub error"},
};

std::optional<std::string> mscod_meaning(std::span<const MscodMeaning> table, uint16_t mscod) {
  for (const MscodMeaning& m : table)
    if (m.mscod == mscod)
      return m.meaning;
  return std::nullopt;
}

// What every iMC location starts with: the socket and the address.
MemoryLocation base_location(const MceRegisters& regs) {
  MemoryLocation loc;
  loc.socket = regs.socketid;
  if (regs.addr && (regs.status.value_or(0) & kAddrv)) {
    loc.address = *regs.addr;
    loc.page = *regs.addr >> 12;
  }
  return loc;
}

// [i10nm] ECC mode 8 is a read from DDR-T (persistent memory): MCi_MISC
// then does not hold a DRAM location.
constexpr uint64_t kEccModeDdrt = 8;

// ---------------------------------------------------------------------------
// Skylake-SP, Cascade Lake, Cooper Lake (06_55H).
// ---------------------------------------------------------------------------

void decode_skx(const MceRegisters& regs, MceDecoded& d) {
  if (!regs.bank)
    return;
  const uint32_t bank = *regs.bank;
  const uint64_t status = regs.status.value_or(0);
  if (auto core = core_bank(bank)) {
    d.unit = core;
    return;
  }
  switch (bank) {
    case 4:  // [SDM] [cross]
      d.unit = "PCU (power control unit)";
      return;
    case 5:  // [cross] UPI links in banks 5, 12, 19
      d.unit = "UPI link 0";
      return;
    case 12:
      d.unit = "UPI link 1";
      return;
    case 19:
      d.unit = "UPI link 2";
      return;
    case 7:  // [cross] mesh-to-memory in banks 7, 8
    case 8:
      d.unit = numbered("M2M (mesh to memory)", bank - 7);
      return;
    case 9:  // [SDM] caching/home agents in banks 9..11
    case 10:
    case 11:
      d.unit = "CHA (caching and home agent)";
      return;
    default:
      break;
  }
  if (bank < 13 || bank > 18)
    return;
  // [sev] [cross] banks 13..18 are the integrated memory controllers. Which
  // controller a bank is, no public source states; the channel within it
  // is MCACOD[3:0] (the SDM's CCCC, 15 unspecified).
  d.unit = "iMC (integrated memory controller)";
  d.mscod_meaning = mscod_meaning(kImcSkxMscod, uint16_t(status >> 16));
  if (!memory_controller_code(status))
    return;
  MemoryLocation loc = base_location(regs);
  if ((status & 0xF) != 0xF)
    loc.channel = uint32_t(status & 0xF);
  d.location = loc;
}

// ---------------------------------------------------------------------------
// Ice Lake-SP (06_6AH) and Ice Lake-D (06_6CH).
// ---------------------------------------------------------------------------

// [cross] Banks 13..15, 17..19, 21..23, 25..27 are iMC banks, four banks a
// controller; 12, 16, 20, 24 the mesh-to-memory unit of each; 5, 7, 8 UPI.
// [i10nm] Of the iMC banks, 13, 14, 17, 18, 21, 22, 25, 26 are DDR channels
// 0 and 1 of controllers 0..3 (controller = (bank - 13) / 4, channel =
// (bank - 13) % 2), and only those have the location in MCi_MISC.
bool icx_imc_bank(uint32_t bank) {
  return bank >= 13 && bank <= 27 && (bank - 12) % 4 != 0;
}
bool icx_ddr_channel_bank(uint32_t bank) {
  return bank >= 13 && bank <= 26 && ((bank - 13) & 2) == 0;
}

// The 10nm iMC MCi_MISC layout ([i10nm] for the DRAM address, [cross] for
// the rest):
//   18:9 column >> 2   39:19 row   41:40 bank group[1:0]   43:42 bank
//   44 bank group[2]   51:46 failed device (valid when neither transient nor
//   UC)   55:52 subrank   58:56 rank (the kernel reads bit 2 as the DIMM
//   slot, bits 1:0 as the rank on it)   62:59 ECC mode   63 transient
void icx_misc(uint64_t misc, bool uc, MemoryLocation& loc) {
  loc.column = uint32_t(field(misc, 9, 18) << 2);
  loc.row = uint32_t(field(misc, 19, 39));
  loc.bank_group = uint32_t(field(misc, 40, 41) | (field(misc, 44, 44) << 2));
  loc.bank = uint32_t(field(misc, 42, 43));
  const bool transient = field(misc, 63, 63) != 0;
  if (!transient && !uc)
    loc.device = uint32_t(field(misc, 46, 51));
  loc.subrank = uint32_t(field(misc, 52, 55));
  const uint32_t rank = uint32_t(field(misc, 56, 58));
  loc.slot = rank >> 2;
  loc.rank = rank & 3;
  loc.ecc_mode = uint32_t(field(misc, 59, 62));
  loc.transient = transient;
}

void decode_icx(const MceRegisters& regs, MceDecoded& d) {
  if (!regs.bank)
    return;
  const uint32_t bank = *regs.bank;
  const uint64_t status = regs.status.value_or(0);
  if (auto core = core_bank(bank)) {
    d.unit = core;
    return;
  }
  switch (bank) {
    case 4:
      d.unit = "PCU (power control unit)";
      return;
    case 5:
      d.unit = "UPI link 0";
      return;
    case 7:
      d.unit = "UPI link 1";
      return;
    case 8:
      d.unit = "UPI link 2";
      return;
    case 9:
    case 10:
    case 11:
      d.unit = "CHA (caching and home agent)";
      return;
    case 12:
    case 16:
    case 20:
    case 24:
      d.unit = numbered("M2M (mesh to memory)", (bank - 12) / 4);
      return;
    default:
      break;
  }
  if (!icx_imc_bank(bank))
    return;
  const uint32_t controller = (bank - 13) / 4;
  d.mscod_meaning = mscod_meaning(kImc10nmMscod, uint16_t(status >> 16));
  if (!icx_ddr_channel_bank(bank)) {
    d.unit = numbered("iMC", controller);
    return;
  }
  const uint32_t channel = (bank - 13) % 2;
  d.unit = numbered("iMC", controller) + " channel " + std::to_string(channel);
  if (!memory_controller_code(status))
    return;
  MemoryLocation loc = base_location(regs);
  loc.controller = controller;
  loc.channel = channel;
  if ((status & kMiscv) && regs.misc) {
    if (field(*regs.misc, 59, 62) == kEccModeDdrt) {
      loc.ecc_mode = uint32_t(kEccModeDdrt);
      d.notes.push_back(
          "ECC mode 8: a read from DDR-T persistent memory, whose MCi_MISC holds "
          "no DRAM location");
    } else {
      icx_misc(*regs.misc, (status & kUc) != 0, loc);
    }
  }
  d.location = loc;
}

// ---------------------------------------------------------------------------
// Sapphire Rapids (06_8FH) and Emerald Rapids (06_CFH).
// ---------------------------------------------------------------------------

// [i10nm] Banks 13..20 are the DDR5 channels, two a controller
// (controller = (bank - 13) / 2, channel = (bank - 13) % 2), with their own
// MCi_MISC layout:
//   18:9 column >> 2   36:19 row   38:37 bank group[1:0]   40:39 bank
//   41 bank group[2]   57 rank   58 DIMM slot
// The 10nm iMC MSCOD values hold ([cross]; command/address parity is DDR5's).
void decode_spr(const MceRegisters& regs, MceDecoded& d) {
  if (!regs.bank)
    return;
  const uint32_t bank = *regs.bank;
  const uint64_t status = regs.status.value_or(0);
  if (auto core = core_bank(bank)) {
    d.unit = core;
    return;
  }
  if (bank == 4) {
    d.unit = "PCU (power control unit)";
    return;
  }
  if (bank < 13 || bank > 20)
    return;
  const uint32_t controller = (bank - 13) / 2;
  const uint32_t channel = (bank - 13) % 2;
  d.unit = numbered("iMC", controller) + " channel " + std::to_string(channel);
  d.mscod_meaning = mscod_meaning(kImc10nmMscod, uint16_t(status >> 16));
  if (!memory_controller_code(status))
    return;
  MemoryLocation loc = base_location(regs);
  loc.controller = controller;
  loc.channel = channel;
  if ((status & kMiscv) && regs.misc) {
    const uint64_t misc = *regs.misc;
    loc.column = uint32_t(field(misc, 9, 18) << 2);
    loc.row = uint32_t(field(misc, 19, 36));
    loc.bank_group = uint32_t(field(misc, 37, 38) | (field(misc, 41, 41) << 2));
    loc.bank = uint32_t(field(misc, 39, 40));
    loc.rank = uint32_t(field(misc, 57, 57));
    loc.slot = uint32_t(field(misc, 58, 58));
  }
  d.location = loc;
}

// ---------------------------------------------------------------------------
// Granite Rapids (06_ADH, 06_AEH): the kernel's i10nm_edac decodes its
// memory errors through the firmware's address translation, not MCi_MISC,
// and no public source names its uncore banks: the core banks only.
// ---------------------------------------------------------------------------

void decode_core_only(const MceRegisters& regs, MceDecoded& d) {
  if (regs.bank)
    d.unit = core_bank(*regs.bank);
}

// The model numbers: Linux arch/x86/include/asm/intel-family.h
// (INTEL_SKYLAKE_X 0x55, INTEL_ICELAKE_X 0x6A, INTEL_ICELAKE_D 0x6C,
// INTEL_SAPPHIRERAPIDS_X 0x8F, INTEL_EMERALDRAPIDS_X 0xCF,
// INTEL_GRANITERAPIDS_X 0xAD, INTEL_GRANITERAPIDS_D 0xAE). Every Xeon
// Scalable part has MCG_CAP.SER_P (SDM vol. 3B, "Enhanced Error Recovery":
// the family supports software error recovery; QEMU's Skylake-Server model
// sets it too).
constexpr CpuModel kModels[] = {
    {6, 0x55, 0x55, "Skylake-SP/Cascade Lake", true, decode_skx},
    {6, 0x6A, 0x6A, "Ice Lake-SP", true, decode_icx},
    {6, 0x6C, 0x6C, "Ice Lake-D", true, decode_icx},
    {6, 0x8F, 0x8F, "Sapphire Rapids", true, decode_spr},
    {6, 0xCF, 0xCF, "Emerald Rapids", true, decode_spr},
    {6, 0xAD, 0xAE, "Granite Rapids", true, decode_core_only},
};

}  // namespace

std::span<const CpuModel> intel_cpu_models() {
  return kModels;
}

}  // namespace pp::mce

#include "mce/error_code.h"

#include <array>
#include <cstdio>

namespace pp::mce {
namespace {

// Intel SDM vol. 3B, "Simple Error Codes" table: the codes that are not a
// compound form. 0x0400 (internal timer) is listed there too but has the
// internal form, so it is decoded as internal below.
struct SimpleCode {
  uint16_t code;
  const char* name;
};
constexpr SimpleCode kSimpleCodes[] = {
    {0x0000, "no error"},
    {0x0001, "unclassified"},
    {0x0002, "microcode ROM parity error"},
    {0x0003, "external error (BINIT# from another processor)"},
    {0x0004, "FRC error (functional redundancy check)"},
    {0x0005, "internal parity error"},
    {0x0006, "SMM handler code access violation"},
    {0x0E0B, "I/O error"},
};

// SDM, "Encoding for TT (Transaction Type) Sub-Field": 00 I, 01 D, 10 G.
constexpr std::array<const char*, 4> kTt = {"instr", "data", "generic", "reserved"};

// SDM, "Encoding of Request (RRRR) Sub-Field": 0000 ERR generic error,
// 0001 RD generic read, 0010 WR generic write, 0011 DRD data read, 0100 DWR
// data write, 0101 IRD instruction fetch, 0110 PREFETCH, 0111 EVICT,
// 1000 SNOOP; the rest reserved.
constexpr std::array<const char*, 16> kRrrr = {
    "err",   "rd",       "wr",       "drd",      "dwr",      "ird",      "prefetch", "evict",
    "snoop", "reserved", "reserved", "reserved", "reserved", "reserved", "reserved", "reserved"};
constexpr std::array<const char*, 16> kRrrrText = {
    "generic error", "generic read",      "generic write", "data read",
    "data write",    "instruction fetch", "prefetch",      "eviction",
    "snoop",         "reserved",          "reserved",      "reserved",
    "reserved",      "reserved",          "reserved",      "reserved"};

// SDM, "Encodings of PP, T, and II Sub-Fields": PP 00 SRC (the local
// processor originated the request), 01 RES (responded), 10 OBS (observed
// as a third party), 11 generic; II 00 M (memory access), 01 reserved,
// 10 IO, 11 other transaction.
constexpr std::array<const char*, 4> kPp = {"src", "res", "obs", "generic"};
constexpr std::array<const char*, 4> kIi = {"mem", "reserved", "io", "other"};

// SDM, "Encodings of MMM and CCCC Sub-Fields": MMM 000 GEN, 001 RD, 010 WR,
// 011 AC (address/command), 100 MS (memory scrubbing), 101-111 reserved;
// CCCC 0000-1110 the channel, 1111 channel not specified.
constexpr std::array<const char*, 8> kMmm = {"generic", "read",     "write",    "addr-cmd",
                                             "scrub",   "reserved", "reserved", "reserved"};
constexpr uint8_t kChannelUnspecified = 0xF;

std::string ll_text(uint8_t ll, std::string_view (*level_name)(uint8_t)) {
  static constexpr std::array<const char*, 4> kBits = {"00", "01", "10", "11"};
  return std::string("ll=") + kBits[ll & 3] + " (" + std::string(level_name(ll)) + ")";
}

}  // namespace

std::string_view mca_error_class_name(McaErrorClass c) {
  switch (c) {
    case McaErrorClass::kSimple:
      return "simple";
    case McaErrorClass::kGeneric:
      return "generic";
    case McaErrorClass::kTlb:
      return "tlb";
    case McaErrorClass::kMemoryController:
      return "memory-controller";
    case McaErrorClass::kCache:
      return "cache";
    case McaErrorClass::kMemoryAsCache:
      return "memory-as-cache";
    case McaErrorClass::kBus:
      return "bus";
    case McaErrorClass::kInternal:
      return "internal";
  }
  return "simple";
}

// The SDM's "Level Encoding for LL" table names the levels by mnemonic
// (00 L0, 01 L1, 10 L2, 11 LG generic), and mcelog and rasdaemon disagree on
// what to print. The SDM's own architectural codes settle which cache each
// is: the SRAR "data load" error, MCACOD 0x0134, is a cache hierarchy error
// with LL=00 on the first-level data cache (the DCU), and the SRAO "L3
// explicit writeback" error, MCACOD 0x017A, has LL=10 (vol. 3B,
// "Architecturally Defined SRAO Errors" / "... SRAR Errors" tables). So
// LL=00 is the L1 cache, 01 the L2 and 10 the L3; JSON keeps the raw LL.
std::string_view cache_level_name(uint8_t ll) {
  switch (ll & 3) {
    case 0:
      return "L1";
    case 1:
      return "L2";
    case 2:
      return "L3";
    default:
      return "generic";
  }
}

McaErrorCode decode_mca_error_code(uint16_t code) {
  McaErrorCode out;
  out.raw = code;
  for (const SimpleCode& s : kSimpleCodes) {
    if (s.code == code) {
      out.error_class = McaErrorClass::kSimple;
      out.simple = s.name;
      return out;
    }
  }
  // SDM: internal unclassified is 0000 01xx xxxx xxxx (at least one x set),
  // the internal timer error 0000 0100 0000 0000. No F bit in this form.
  if ((code & 0xFC00) == 0x0400) {
    out.error_class = McaErrorClass::kInternal;
    out.internal = code == 0x0400 ? "timer" : "unclassified";
    return out;
  }
  // Compound forms: bits 15:13 are zero; bit 12 (F) is the correction
  // report filtering bit and is masked before the form is matched (SDM,
  // "Correction Report Filtering (F) Bit").
  out.f = (code & 0x1000) != 0;
  const uint16_t m = code & 0xEFFF;
  const uint8_t ll = m & 3;
  if ((m & 0xE000) == 0 && (m & 0x0800) != 0) {
    // 000F 1PPT RRRR IILL: bus and interconnect.
    out.error_class = McaErrorClass::kBus;
    out.pp = kPp[(m >> 9) & 3];
    out.t = ((m >> 8) & 1) != 0;
    out.rrrr = kRrrr[(m >> 4) & 0xF];
    out.ii = kIi[(m >> 2) & 3];
    out.ll = ll;
  } else if ((m & 0xFF00) == 0x0100) {
    // 000F 0001 RRRR TTLL: cache hierarchy.
    out.error_class = McaErrorClass::kCache;
    out.rrrr = kRrrr[(m >> 4) & 0xF];
    out.tt = kTt[(m >> 2) & 3];
    out.ll = ll;
  } else if ((m & 0xFF80) == 0x0280) {
    // 000F 0010 1MMM CCCC: an error of the first-level ("near") memory that
    // serves as a cache of a 2-level memory; the code Linux's skx_common
    // EDAC driver tells apart from memory controller errors
    // (drivers/edac/skx_common.h, MCACOD_EXT_MEM_ERR 0x280 under mask 0xef80).
    out.error_class = McaErrorClass::kMemoryAsCache;
    out.mmm = kMmm[(m >> 4) & 7];
    out.cccc = m & 0xF;
  } else if ((m & 0xFF80) == 0x0080) {
    // 000F 0000 1MMM CCCC: memory controller.
    out.error_class = McaErrorClass::kMemoryController;
    out.mmm = kMmm[(m >> 4) & 7];
    out.cccc = m & 0xF;
  } else if ((m & 0xFFF0) == 0x0010) {
    // 000F 0000 0001 TTLL: TLB.
    out.error_class = McaErrorClass::kTlb;
    out.tt = kTt[(m >> 2) & 3];
    out.ll = ll;
  } else if ((m & 0xFFFC) == 0x000C) {
    // 000F 0000 0000 11LL: generic cache hierarchy.
    out.error_class = McaErrorClass::kGeneric;
    out.ll = ll;
  } else {
    // No architectural form: model specific, or reserved.
    out.error_class = McaErrorClass::kSimple;
    out.simple = "unknown (not an architectural code)";
    out.f = false;
  }
  return out;
}

std::string describe_mca_error_code(const McaErrorCode& c,
                                    std::string_view (*level_name)(uint8_t)) {
  std::string out(mca_error_class_name(c.error_class));
  auto rrrr_text = [&]() {
    for (size_t i = 0; i < kRrrr.size(); i++)
      if (c.rrrr && *c.rrrr == kRrrr[i])
        return std::string(kRrrrText[i]) + " (rrrr=" + *c.rrrr + ")";
    return std::string();
  };
  switch (c.error_class) {
    case McaErrorClass::kSimple:
      out += ": " + c.simple.value_or("");
      break;
    case McaErrorClass::kInternal:
      out += ": " + c.internal.value_or("");
      break;
    case McaErrorClass::kGeneric:
      out += ": generic cache hierarchy error, " + ll_text(*c.ll, level_name);
      break;
    case McaErrorClass::kTlb:
      out += ": tt=" + *c.tt + ", " + ll_text(*c.ll, level_name);
      break;
    case McaErrorClass::kCache:
      out += ": " + rrrr_text() + ", tt=" + *c.tt + ", " + ll_text(*c.ll, level_name);
      break;
    case McaErrorClass::kMemoryController:
    case McaErrorClass::kMemoryAsCache:
      out +=
          ": mmm=" + *c.mmm + ", channel " +
          (*c.cccc == kChannelUnspecified ? std::string("unspecified") : std::to_string(*c.cccc));
      break;
    case McaErrorClass::kBus:
      out += ": " + rrrr_text() + ", pp=" + *c.pp + ", " + (*c.t ? "timeout" : "no timeout") +
             ", ii=" + *c.ii + ", " + ll_text(*c.ll, level_name);
      break;
  }
  if (c.f)
    out += ", f=1 (corrected filtering)";
  return out;
}

}  // namespace pp::mce

// The machine-check register bits, written once for the decoder and its
// grader.
//
// IA32_MCi_STATUS (Intel SDM vol. 3B, "IA32_MCi_STATUS MSRs"):
//   63 VAL  62 OVER  61 UC  60 EN  59 MISCV  58 ADDRV  57 PCC
//   56 S, 55 AR          (with MCG_CAP.SER_P; reserved otherwise)
//   54:53 threshold-based error status (with MCG_CAP.TES_P)
//   52:38 corrected error count        (with MCG_CAP.CMCI_P)
//   31:16 MSCOD (model specific)       15:0 MCA error code
// AMD's MCA_STATUS (AMD64 APM vol. 2, "Machine Check Architecture"; the
// family PPRs): the same 63:57, then 55 TCC (task context corrupt), 53 SyndV
// (MCA_SYND valid), 46 CECC, 45 UECC, 44 Deferred, 43 Poison, 40 Scrub.
// IA32_MCG_STATUS: 0 RIPV, 1 EIPV, 2 MCIP, 3 LMCE_S.
// IA32_MCG_CAP: 7:0 bank count, 8 MCG_CTL_P, 9 MCG_EXT_P, 10 MCG_CMCI_P,
//   11 MCG_TES_P, 24 MCG_SER_P, 27 MCG_LMCE_P.
#pragma once

#include <cstdint>

namespace pp::mce::bits {

constexpr uint64_t bit(int n) {
  return uint64_t{1} << n;
}

inline constexpr uint64_t kVal = bit(63);
inline constexpr uint64_t kOver = bit(62);
inline constexpr uint64_t kUc = bit(61);
inline constexpr uint64_t kEn = bit(60);
inline constexpr uint64_t kMiscv = bit(59);
inline constexpr uint64_t kAddrv = bit(58);
inline constexpr uint64_t kPcc = bit(57);
inline constexpr uint64_t kS = bit(56);
inline constexpr uint64_t kAr = bit(55);

inline constexpr uint64_t kTcc = bit(55);
inline constexpr uint64_t kSyndv = bit(53);
inline constexpr uint64_t kCecc = bit(46);
inline constexpr uint64_t kUecc = bit(45);
inline constexpr uint64_t kDeferred = bit(44);
inline constexpr uint64_t kPoison = bit(43);
inline constexpr uint64_t kScrub = bit(40);

inline constexpr uint64_t kRipv = bit(0);
inline constexpr uint64_t kEipv = bit(1);
inline constexpr uint64_t kMcip = bit(2);
inline constexpr uint64_t kLmce = bit(3);

inline constexpr uint64_t kMcgCmciP = bit(10);
inline constexpr uint64_t kMcgTesP = bit(11);
inline constexpr uint64_t kMcgSerP = bit(24);

}  // namespace pp::mce::bits

#include "mce/severity.h"

#include "mce/bits.h"

namespace pp::mce {

using namespace bits;

SeverityVerdict invalid_verdict() {
  return {MceSeverity::kInvalid,
          "VAL=0: the bank holds no valid error (SDM: IA32_MCi_STATUS.VAL, bit 63)"};
}

SeverityVerdict corrected_verdict() {
  return {MceSeverity::kCorrected,
          "UC=0: the error was corrected (SDM: IA32_MCi_STATUS.UC, bit 61; class CE)"};
}

// SDM, "MCA Error Classification": an uncorrected error with PCC=1 left the
// processor context corrupt; the system must be reset.
SeverityVerdict fatal_verdict() {
  return {MceSeverity::kFatal,
          "UC=1 and PCC=1: processor context corrupt, the SDM's uncorrected error (UC) class; "
          "reset the system"};
}

// A record without cs is the kernel's cs 0 (the kernel stores ip and cs
// only when they are valid). With both RIPV and EIPV the kernel looks the IP
// up in its exception tables to tell a recoverable kernel copy from the
// rest, which a record cannot show, so this says kernel.
ErrorContext error_context(const MceRegisters& regs, std::vector<std::string>& notes) {
  uint8_t cs = regs.cs.value_or(0);
  if ((cs & 3) == 3)
    return ErrorContext::kUser;
  uint64_t mcg = regs.mcgstatus.value_or(0);
  if ((mcg & (kRipv | kEipv)) == (kRipv | kEipv))
    notes.push_back(
        "the kernel may have graded this error in a recoverable kernel copy routine (a lookup of "
        "the IP in its exception tables that a record cannot show); graded as kernel context");
  return ErrorContext::kKernel;
}

}  // namespace pp::mce

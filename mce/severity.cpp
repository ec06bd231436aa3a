#include "mce/severity.h"

#include <cctype>

#include "base/strings.h"
#include "mce/advice.h"
#include "mce/bits.h"
#include "mce/vendor.h"

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

namespace pp::mce {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.front())) != 0))
    s.remove_prefix(1);
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.back())) != 0 ||
                        s.back() == '.' || s.back() == '!'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

// The kernel prints its grader's message when it panics on a machine check
// (arch/x86/kernel/cpu/mce/core.c: mce_panic() prints "Machine check:
// <msg>" with the message of the severity rule that matched, and panics
// with "Fatal machine check" or that message).
KernelVerdict compare_kernel_verdict(const MceDecoded& d, std::string_view verdict_text) {
  KernelVerdict v;
  v.text = std::string(trim(verdict_text));
  std::string_view message = v.text;
  const std::string low = ascii_lower(v.text);
  for (std::string_view prefix : {"machine check: ", "kernel panic - not syncing: "}) {
    if (size_t at = low.find(prefix); at != std::string::npos) {
      message = trim(std::string_view(v.text).substr(at + prefix.size()));
      break;
    }
  }
  const bool amd = vendor_ops(d.vendor).amd_layout;
  std::optional<KernelSeverity> level =
      amd ? amd_kernel_message_severity(message) : intel_kernel_message_severity(message);
  if (!level)
    level = amd ? intel_kernel_message_severity(message) : amd_kernel_message_severity(message);
  if (level) {
    v.rule = std::string(message);
  } else if (ascii_lower(message).starts_with("fatal machine check") ||
             low.find("kernel panic") != std::string::npos) {
    level = KernelSeverity::kPanic;
  }
  v.severity = level;
  v.agrees = !level || *level == d.kernel_severity;
  return v;
}

void apply_kernel_verdict(MceDecoded& d, std::string_view verdict_text) {
  KernelVerdict v = compare_kernel_verdict(d, verdict_text);
  if (v.severity && !v.agrees)
    d.notes.push_back("the kernel's verdict \"" + v.text + "\" (" +
                      std::string(kernel_severity_name(*v.severity)) + ") differs from this " +
                      "decode's kernel severity " +
                      std::string(kernel_severity_name(d.kernel_severity)) +
                      ": the record lacks what the kernel saw (MCG_CAP, the context of the IP)");
  d.kernel_verdict = std::move(v);
  d.advice = mce_advice(d);
}

}  // namespace pp::mce

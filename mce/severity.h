// The two severities of a machine check: the class the architecture defines
// (Intel SDM vol. 3B, "UCR Error Classification"; AMD's deferred errors) and
// the level Linux's grader gives it (arch/x86/kernel/cpu/mce/severity.c).
// Each comes with the rule that decided it, in words an operator can check.
//
// Each vendor's rules are in its row (vendor.h: VendorOps::classify and
// ::grade, in vendor_<family>.cpp); this file holds what they share.
#pragma once

#include <string>
#include <vector>

#include "mce/decode.h"

namespace pp::mce {

struct SeverityVerdict {
  MceSeverity severity = MceSeverity::kInvalid;
  std::string rule;
};

struct KernelSeverityVerdict {
  KernelSeverity severity = KernelSeverity::kNo;
  std::string rule;
  std::vector<std::string> notes;  // what the grader used that a record cannot show
};

// The classes every vendor's class rule shares, with the SDM's rules:
// VAL=0 (the bank holds no error), UC=0 (corrected), UC=1 with PCC=1.
SeverityVerdict invalid_verdict();
SeverityVerdict corrected_verdict();
SeverityVerdict fatal_verdict();

// Where Linux's grader says the error hit, as its rules test it.
enum class ErrorContext { kAny, kKernel, kUser, kKernelRecoverable };

// error_context() in severity.c: a CS with RPL 3 is user mode; otherwise
// kernel (the kernel's lookup of the IP in its exception tables, which
// tells a recoverable kernel copy routine apart, cannot be seen in a
// record: a note says so when it would have run). Never kAny.
ErrorContext error_context(const MceRegisters& regs, std::vector<std::string>& notes);

// The kernel's verdict line from a log, compared with d's grade. The text
// may be the whole line or its message: "mce: [Hardware Error]: Machine
// check: Data load in unrecoverable area of kernel", "Kernel panic - not
// syncing: Fatal machine check". A message of the kernel's grader names its
// level; "Fatal machine check" and "Machine check: <message>" say the kernel
// panicked. `agrees` is false when the level differs from d.kernel_severity.
KernelVerdict compare_kernel_verdict(const MceDecoded& d, std::string_view verdict_text);

// Stores compare_kernel_verdict()'s result in d.kernel_verdict, adds a note
// when it disagrees, and gives d its advice again.
void apply_kernel_verdict(MceDecoded& d, std::string_view verdict_text);

}  // namespace pp::mce

// The two severities of a machine check: the class the architecture defines
// (Intel SDM vol. 3B, "UCR Error Classification"; AMD's deferred errors) and
// the level Linux's grader gives it (arch/x86/kernel/cpu/mce/severity.c).
// Each comes with the rule that decided it, in words an operator can check.
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

// The SDM's (or, with `amd`, AMD's) class of `regs`.
SeverityVerdict sdm_severity(const MceRegisters& regs, bool amd);

// What Linux's grader decides for `regs`: Intel's rule table, or with `amd`
// the AMD/Hygon grader.
KernelSeverityVerdict kernel_severity(const MceRegisters& regs, bool amd);

}  // namespace pp::mce

#include "mce/severity.h"

#include "mce/bits.h"

namespace pp::mce {
namespace {

using namespace bits;

bool has(uint64_t value, uint64_t bits) {
  return (value & bits) == bits;
}

// ---------------------------------------------------------------------------
// Linux's grader, Intel side (arch/x86/kernel/cpu/mce/severity.c, the
// severities[] table walked by mce_severity_intel()): rules tried in order,
// the first that matches wins. Each rule below states one row of that table
// as facts: the status bits it tests and their values, the MCG_STATUS bits,
// whether it needs MCG_CAP.SER_P (the kernel's mca_cfg.ser) or its absence,
// the context, and whether it applies only in the #MC handler. `message` is
// the text the kernel itself prints for the rule ("Machine check: <message>"
// when it panics), so a log line and this decoder name the same rule.
// ---------------------------------------------------------------------------

enum class Ser : uint8_t { kAny, kRequired, kForbidden };
enum class Context : uint8_t { kAny, kKernel, kUser, kKernelRecoverable };
enum class Exception : uint8_t { kAny, kOnlyInHandler };

// MCACOD values the kernel's rules name (arch/x86/include/asm/mce.h): the
// SDM's architecturally defined SRAO/SRAR codes, F bit masked.
constexpr uint64_t kMcacod = 0xEFFF;
constexpr uint64_t kMcacodScrubMask = 0xEFF0;
constexpr uint64_t kMcacodScrub = 0x00C0;  // memory controller, MMM=100 scrubbing
constexpr uint64_t kMcacodL3Wb = 0x017A;   // cache, RRRR=evict, TT=generic, LL=10
constexpr uint64_t kMcacodData = 0x0134;   // cache, RRRR=drd, TT=data, LL=00
constexpr uint64_t kMcacodInstr = 0x0150;  // cache, RRRR=ird, TT=instr, LL=00

constexpr uint64_t kUcS = kUc | kS;
constexpr uint64_t kUcAr = kUc | kAr;
constexpr uint64_t kUcSar = kUc | kS | kAr;
constexpr uint64_t kAddrMisc = kAddrv | kMiscv;

struct KernelRule {
  KernelSeverity severity;
  const char* message;
  uint64_t mask, value;         // (status & mask) == value
  uint8_t mcg_mask, mcg_value;  // (mcgstatus & mcg_mask) == mcg_value
  Ser ser = Ser::kAny;
  Context context = Context::kAny;
  Exception exception = Exception::kAny;
  bool skylake_patrol_scrub = false;  // model 0x55 stepping >= 4, banks 13..18
};

// Every row of the kernel's table, in its order, so that the first match is
// the kernel's. Two kinds of row can never match a record and stay only to
// keep the order: "MCIP not set in MCA handler" (a record is graded as in the
// handler exactly when MCIP is set) and the Context::kKernelRecoverable rows
// (context_of() cannot see the kernel's exception-table lookup).
constexpr KernelRule kIntelRules[] = {
    {KernelSeverity::kNo, "Invalid", kVal, 0, 0, 0},
    {KernelSeverity::kNo, "Not enabled", kEn, 0, 0, 0, Ser::kAny, Context::kAny,
     Exception::kOnlyInHandler},
    {KernelSeverity::kPanic, "Processor context corrupt", kPcc, kPcc, 0, 0},
    {KernelSeverity::kPanic, "MCIP not set in MCA handler", 0, 0, kMcip, 0, Ser::kAny,
     Context::kAny, Exception::kOnlyInHandler},
    {KernelSeverity::kPanic, "Neither restart nor error IP", 0, 0, kRipv | kEipv, 0, Ser::kAny,
     Context::kAny, Exception::kOnlyInHandler},
    {KernelSeverity::kPanic, "In kernel and no restart IP", 0, 0, kRipv, 0, Ser::kAny,
     Context::kKernel, Exception::kOnlyInHandler},
    {KernelSeverity::kPanic, "In kernel and no restart IP", 0, 0, kRipv, 0, Ser::kAny,
     Context::kKernelRecoverable, Exception::kOnlyInHandler},
    {KernelSeverity::kKeep, "Corrected error", kUc, 0, 0, 0, Ser::kForbidden},
    // SRAO codes: S is not tested (the SDM lets an SRAO error be signalled by
    // #MC or by CMCI).
    {KernelSeverity::kAo, "Action optional: memory scrubbing error", kUcAr | kMcacodScrubMask,
     kUc | kMcacodScrub, 0, 0, Ser::kRequired},
    {KernelSeverity::kAo, "Action optional: last level cache writeback error", kUcAr | kMcacod,
     kUc | kMcacodL3Wb, 0, 0, Ser::kRequired},
    // Skylake-SP from stepping 4 may report an uncorrected patrol scrub error
    // through CMCI with UC=0, MSCOD 0x0010 and MCACOD 000X 0000 1100 XXXX in
    // a memory controller bank (13 to 18).
    {KernelSeverity::kAo, "Uncorrected Patrol Scrub Error", kUc | kAddrMisc | 0xFFFFEFF0,
     kAddrMisc | 0x001000C0, 0, 0, Ser::kRequired, Context::kAny, Exception::kAny, true},
    // OVER is not tested for UCNA.
    {KernelSeverity::kUcna, "Uncorrected no action required", kUcSar, kUc, 0, 0, Ser::kRequired},
    {KernelSeverity::kPanic, "Illegal combination (UCNA with AR=1)", kOver | kUcSar, kUc | kAr, 0,
     0, Ser::kRequired},
    {KernelSeverity::kKeep, "Non signaled machine check", kS, 0, 0, 0, Ser::kRequired},
    {KernelSeverity::kPanic, "Action required with lost events", kOver | kUcSar, kOver | kUcSar, 0,
     0, Ser::kRequired},
    // Known SRAR codes (these rules exist when the kernel has
    // CONFIG_MEMORY_FAILURE, as distribution kernels do).
    {KernelSeverity::kKeep, "Action required but unaffected thread is continuable",
     kOver | kUcSar | kAddrMisc, kUcSar | kAddrMisc, kRipv | kEipv, kRipv, Ser::kRequired},
    {KernelSeverity::kAr, "Action required: data load in error recoverable area of kernel",
     kOver | kUcSar | kAddrMisc | kMcacod, kUcSar | kAddrMisc | kMcacodData, 0, 0, Ser::kRequired,
     Context::kKernelRecoverable},
    {KernelSeverity::kAr, "Action required: data load error in a user process",
     kOver | kUcSar | kAddrMisc | kMcacod, kUcSar | kAddrMisc | kMcacodData, 0, 0, Ser::kRequired,
     Context::kUser},
    {KernelSeverity::kAr, "Action required: instruction fetch error in a user process",
     kOver | kUcSar | kAddrMisc | kMcacod, kUcSar | kAddrMisc | kMcacodInstr, 0, 0, Ser::kRequired,
     Context::kUser},
    {KernelSeverity::kPanic, "Data load in unrecoverable area of kernel",
     kOver | kUcSar | kAddrMisc | kMcacod, kUcSar | kAddrMisc | kMcacodData, 0, 0, Ser::kRequired,
     Context::kKernel},
    {KernelSeverity::kPanic, "Instruction fetch error in kernel",
     kOver | kUcSar | kAddrMisc | kMcacod, kUcSar | kAddrMisc | kMcacodInstr, 0, 0, Ser::kRequired,
     Context::kKernel},
    {KernelSeverity::kPanic, "Action required: unknown MCACOD", kOver | kUcSar, kUcSar, 0, 0,
     Ser::kRequired},
    {KernelSeverity::kSome, "Action optional: unknown MCACOD", kOver | kUcSar, kUcS, 0, 0,
     Ser::kRequired},
    {KernelSeverity::kSome, "Action optional with lost events", kOver | kUcSar, kOver | kUcS, 0, 0,
     Ser::kRequired},
    {KernelSeverity::kPanic, "Overflowed uncorrected", kOver | kUc, kOver | kUc, 0, 0},
    {KernelSeverity::kUc, "Uncorrected", kUc, kUc, 0, 0},
    {KernelSeverity::kSome, "No match", 0, 0, 0, 0},  // always matches
};

// CPUID leaf 1 EAX: stepping 3:0, model 7:4, family 11:8, extended model
// 19:16; families 6 and 15 add the extended model above the model.
struct CpuSignature {
  uint32_t family, model, stepping;
};
CpuSignature signature_of(uint32_t eax) {
  uint32_t family = (eax >> 8) & 0xF;
  uint32_t model = (eax >> 4) & 0xF;
  if (family == 6 || family == 15)
    model |= ((eax >> 16) & 0xF) << 4;
  if (family == 15)
    family += (eax >> 20) & 0xFF;
  return {family, model, eax & 0xF};
}

// error_context() in severity.c: a CS with RPL 3 is user mode; without both
// RIPV and EIPV the kernel assumes kernel mode; with both, the kernel looks
// the IP up in its exception tables to tell a recoverable kernel copy from
// the rest, which a record cannot show, so this says kernel. A record
// without cs is the kernel's cs 0 (it stores ip and cs only when valid).
Context context_of(const MceRegisters& regs, std::vector<std::string>& notes) {
  uint8_t cs = regs.cs.value_or(0);
  if ((cs & 3) == 3)
    return Context::kUser;
  uint64_t mcg = regs.mcgstatus.value_or(0);
  if (has(mcg, kRipv | kEipv))
    notes.push_back(
        "the kernel may have graded this error in a recoverable kernel copy routine (a lookup of "
        "the IP in its exception tables that a record cannot show); graded as kernel context");
  return Context::kKernel;
}

std::string context_name(Context c) {
  switch (c) {
    case Context::kUser:
      return "user";
    case Context::kKernelRecoverable:
      return "kernel, recoverable";
    default:
      return "kernel";
  }
}

KernelSeverityVerdict intel_kernel_severity(const MceRegisters& regs) {
  KernelSeverityVerdict out;
  const uint64_t status = regs.status.value_or(0);
  const uint64_t mcg = regs.mcgstatus.value_or(0);
  // mca_cfg.ser is MCG_CAP.SER_P.
  const bool ser = regs.mcgcap && (*regs.mcgcap & kMcgSerP);
  if (!regs.mcgcap)
    out.notes.push_back("MCG_CAP unknown: graded as without SER_P (give --mcgcap)");
  // The grader runs in the #MC handler (is_excp) or from polling and CMCI.
  // MCG_STATUS.MCIP is set by the processor when it raises #MC, so it tells
  // the two apart in a record.
  const bool in_handler = (mcg & kMcip) != 0;
  const Context ctx = context_of(regs, out.notes);
  std::optional<CpuSignature> sig;
  if (regs.cpuid)
    sig = signature_of(*regs.cpuid);

  for (const KernelRule& r : kIntelRules) {
    if ((status & r.mask) != r.value)
      continue;
    if ((mcg & r.mcg_mask) != r.mcg_value)
      continue;
    if (r.ser == Ser::kRequired && !ser)
      continue;
    if (r.ser == Ser::kForbidden && ser)
      continue;
    if (r.context != Context::kAny && r.context != ctx)
      continue;
    if (r.exception == Exception::kOnlyInHandler && !in_handler)
      continue;
    if (r.skylake_patrol_scrub) {
      // INTEL_FAM6_SKYLAKE_X is family 6 model 0x55.
      if (!sig || sig->family != 6 || sig->model != 0x55 || sig->stepping < 4)
        continue;
      if (!regs.bank || *regs.bank < 13 || *regs.bank > 18)
        continue;
    }
    out.severity = r.severity;
    out.rule = std::string(r.message) + " (" + context_name(ctx) + " context, " +
               (in_handler ? "#MC handler" : "polled") + ")";
    // A level of UC or above in kernel context is a panic.
    if (r.severity >= KernelSeverity::kUc && ctx == Context::kKernel &&
        r.severity != KernelSeverity::kPanic) {
      out.severity = KernelSeverity::kPanic;
      out.rule += "; uncorrected in kernel context, so panic";
    }
    return out;
  }
  return out;  // unreachable: the last rule always matches
}

// mce_severity_amd() in severity.c (AMD and Hygon), in the kernel's order:
// PCC panics; Deferred (checked before UC) is DEFERRED; UC=0 is KEEP; an
// overflowed UC error panics without the CPU's MCA overflow recovery, any UC
// error panics without its SUCCOR; in kernel context it panics; otherwise
// AR (the process is killed). Overflow recovery and SUCCOR are CPUID
// features (0x80000007 EBX bits 0 and 1) that a record does not carry: an
// SMCA CPU (the record has MCA_IPID) has both, older ones are graded
// without. The rule texts are the kernel's own panic messages.
KernelSeverityVerdict amd_kernel_severity(const MceRegisters& regs) {
  KernelSeverityVerdict out;
  const uint64_t status = regs.status.value_or(0);
  auto verdict = [&out](KernelSeverity severity, std::string rule) {
    out.severity = severity;
    out.rule = std::move(rule);
    return out;
  };
  if (!(status & kVal))
    return verdict(KernelSeverity::kNo, "VAL=0: nothing to grade");
  if (status & kPcc)
    return verdict(KernelSeverity::kPanic, "Processor Context Corrupt");
  if (status & kDeferred)
    return verdict(KernelSeverity::kDeferred,
                   "Deferred error (Deferred=1, graded before UC): memory-failure handling");
  if (!(status & kUc))
    return verdict(KernelSeverity::kKeep, "Corrected error (UC=0): logged");
  const bool smca = regs.ipid.has_value();
  out.notes.push_back(smca ? "graded with MCA overflow recovery and SUCCOR, as SMCA CPUs have them"
                           : "no MCA_IPID (not an SMCA CPU): graded without MCA overflow "
                             "recovery and SUCCOR");
  if ((status & kOver) && !smca)
    return verdict(KernelSeverity::kPanic,
                   "Overflowed uncorrected error without MCA Overflow Recovery");
  if (!smca)
    return verdict(KernelSeverity::kPanic, "Uncorrected error without MCA Recovery");
  if (context_of(regs, out.notes) == Context::kKernel)
    return verdict(KernelSeverity::kPanic, "Uncorrected unrecoverable error in kernel context");
  return verdict(KernelSeverity::kAr, "Action required: the process is killed (user context)");
}

}  // namespace

SeverityVerdict sdm_severity(const MceRegisters& regs, bool amd) {
  const uint64_t status = regs.status.value_or(0);
  if (!(status & kVal))
    return {MceSeverity::kInvalid,
            "VAL=0: the bank holds no valid error (SDM: IA32_MCi_STATUS.VAL, bit 63)"};
  if (!(status & kUc)) {
    // AMD APM vol. 2, MCA_STATUS: Deferred (bit 44) marks an uncorrectable
    // error that was not consumed and whose handling was deferred; UC is 0.
    if (amd && (status & kDeferred))
      return {MceSeverity::kDeferred,
              "UC=0 and Deferred=1: an uncorrectable error not yet consumed, handling deferred "
              "(AMD APM vol. 2, MCA_STATUS bit 44)"};
    return {MceSeverity::kCorrected,
            "UC=0: the error was corrected (SDM: IA32_MCi_STATUS.UC, bit 61; class CE)"};
  }
  // SDM, "MCA Error Classification": an uncorrected error with PCC=1 left
  // the processor context corrupt; the system must be reset.
  if (status & kPcc)
    return {MceSeverity::kFatal,
            "UC=1 and PCC=1: processor context corrupt, the SDM's uncorrected error (UC) class; "
            "reset the system"};
  if (amd)
    return {MceSeverity::kUncorrected,
            "UC=1 and PCC=0 on AMD: uncorrected, the process context may be lost when TCC=1 "
            "(AMD APM vol. 2, MCA_STATUS)"};
  // SDM, "UCR Error Classification" (with IA32_MCG_CAP.SER_P, bit 24): the
  // signature of an uncorrected recoverable error is UC=1 PCC=0 and
  //   S=0 AR=0  UCNA  uncorrected, no action required (signalled by CMCI)
  //   S=1 AR=0  SRAO  software recoverable, action optional
  //   S=1 AR=1  SRAR  software recoverable, action required
  if (!regs.mcgcap)
    return {MceSeverity::kUncorrected,
            "UC=1 and PCC=0, MCG_CAP unknown: the SDM's UCR classes (UCNA, SRAO, SRAR) need "
            "MCG_CAP.SER_P"};
  if (!(*regs.mcgcap & kMcgSerP))
    return {MceSeverity::kUncorrected,
            "UC=1 and PCC=0 without MCG_CAP.SER_P: S and AR are reserved, no UCR class"};
  const bool s = status & kS, ar = status & kAr;
  if (!s && !ar)
    return {MceSeverity::kUcna,
            "UC=1 PCC=0 S=0 AR=0 with SER_P: UCNA, uncorrected no action required (SDM: UCR "
            "error classification)"};
  if (s && !ar)
    return {MceSeverity::kSrao,
            "UC=1 PCC=0 S=1 AR=0 with SER_P: SRAO, software recoverable action optional (SDM: "
            "UCR error classification)"};
  if (s && ar)
    return {MceSeverity::kSrar,
            "UC=1 PCC=0 S=1 AR=1 with SER_P: SRAR, software recoverable action required (SDM: "
            "UCR error classification)"};
  return {MceSeverity::kUncorrected,
          "UC=1 PCC=0 S=0 AR=1: not a UCR signature the SDM defines (AR needs S)"};
}

KernelSeverityVerdict kernel_severity(const MceRegisters& regs, bool amd) {
  return amd ? amd_kernel_severity(regs) : intel_kernel_severity(regs);
}

}  // namespace pp::mce

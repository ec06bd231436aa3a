// The SDM's machine-check architecture: Intel's rows, and Zhaoxin's and
// Centaur's, which share it (vendor.h).

#include "base/strings.h"
#include "mce/bits.h"
#include "mce/error_code.h"
#include "mce/vendor.h"

namespace pp::mce {
namespace {

using namespace bits;

// ---------------------------------------------------------------------------
// Status bits and fields (Intel SDM vol. 3B, "IA32_MCi_STATUS MSRs").
// ---------------------------------------------------------------------------

// Only with MCG_CAP.SER_P (bit 24): S (signalled) and AR (action required);
// without SER_P these bits are reserved.
constexpr StatusBit kStatusBits[] = {{kS, "S", kMcgSerP}, {kAr, "AR", kMcgSerP}};

// SDM, "Threshold-Based Error Status": 00 no tracking, 01 green (below
// threshold), 10 yellow (above threshold), 11 reserved.
std::string threshold_name(uint64_t status) {
  switch ((status >> 53) & 3) {
    case 0:
      return "none";
    case 1:
      return "green";
    case 2:
      return "yellow";
    default:
      return "reserved";
  }
}

void decode_fields(const MceRegisters& regs, MceDecoded& d) {
  const uint64_t status = regs.status.value_or(0);
  const uint64_t cap = regs.mcgcap.value_or(0);
  if (!(cap & kMcgSerP) && (status & (kS | kAr)))
    d.notes.push_back(regs.mcgcap ? "bits 56:55 set but MCG_CAP.SER_P is clear: reserved, not S/AR"
                                  : "bits 56:55 set but MCG_CAP unknown: S/AR not decoded (give "
                                    "--mcgcap)");
  // Bits 54:53 are the threshold-based error status only when MCG_CAP.TES_P
  // (bit 11) is set; bits 52:38 the corrected error count only when
  // MCG_CAP.CMCI_P (bit 10) is set. Otherwise model specific.
  if (cap & kMcgTesP)
    d.threshold = threshold_name(status);
  if (cap & kMcgCmciP)
    d.corrected_count = uint32_t((status >> 38) & 0x7FFF);
}

// ---------------------------------------------------------------------------
// The SDM's class (vol. 3B, "MCA Error Classification" and "UCR Error
// Classification").
// ---------------------------------------------------------------------------

SeverityVerdict classify(const MceRegisters& regs) {
  const uint64_t status = regs.status.value_or(0);
  if (!(status & kVal))
    return invalid_verdict();
  if (!(status & kUc))
    return corrected_verdict();
  if (status & kPcc)
    return fatal_verdict();
  // With IA32_MCG_CAP.SER_P (bit 24), the signature of an uncorrected
  // recoverable error is UC=1 PCC=0 and
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
  // SDM vol. 3B, "UCR Error Classification" and the table of architecturally
  // defined SRAO errors: memory scrubbing (MCACOD 0000 0000 1100 CCCC) and
  // L3 explicit writeback (0000 0001 0111 1010) are SRAO, and an SRAO error
  // may be signalled through CMCI, with S=0, instead of #MC.
  if (!s && !ar && ((status & 0xEFF0) == 0x00C0 || (status & 0xEFFF) == 0x017A))
    return {MceSeverity::kSrao,
            "UC=1 PCC=0 S=0 AR=0 with SER_P and an SRAO code (memory scrubbing or L3 writeback): "
            "SRAO signalled through CMCI (SDM: UCR error classification, SRAO errors)"};
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
  ErrorContext context = ErrorContext::kAny;
  Exception exception = Exception::kAny;
  bool skylake_patrol_scrub = false;  // model 0x55 stepping >= 4, banks 13..18
};

// Every row of the kernel's table, in its order, so that the first match is
// the kernel's. Two kinds of row can never match a record and stay only to
// keep the order: "MCIP not set in MCA handler" (a record is graded as in the
// handler exactly when MCIP is set) and the ErrorContext::kKernelRecoverable
// rows (error_context() cannot see the kernel's exception-table lookup).
constexpr KernelRule kKernelRules[] = {
    {KernelSeverity::kNo, "Invalid", kVal, 0, 0, 0},
    {KernelSeverity::kNo, "Not enabled", kEn, 0, 0, 0, Ser::kAny, ErrorContext::kAny,
     Exception::kOnlyInHandler},
    {KernelSeverity::kPanic, "Processor context corrupt", kPcc, kPcc, 0, 0},
    {KernelSeverity::kPanic, "MCIP not set in MCA handler", 0, 0, kMcip, 0, Ser::kAny,
     ErrorContext::kAny, Exception::kOnlyInHandler},
    {KernelSeverity::kPanic, "Neither restart nor error IP", 0, 0, kRipv | kEipv, 0, Ser::kAny,
     ErrorContext::kAny, Exception::kOnlyInHandler},
    {KernelSeverity::kPanic, "In kernel and no restart IP", 0, 0, kRipv, 0, Ser::kAny,
     ErrorContext::kKernel, Exception::kOnlyInHandler},
    {KernelSeverity::kPanic, "In kernel and no restart IP", 0, 0, kRipv, 0, Ser::kAny,
     ErrorContext::kKernelRecoverable, Exception::kOnlyInHandler},
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
     kAddrMisc | 0x001000C0, 0, 0, Ser::kRequired, ErrorContext::kAny, Exception::kAny, true},
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
     ErrorContext::kKernelRecoverable},
    {KernelSeverity::kAr, "Action required: data load error in a user process",
     kOver | kUcSar | kAddrMisc | kMcacod, kUcSar | kAddrMisc | kMcacodData, 0, 0, Ser::kRequired,
     ErrorContext::kUser},
    {KernelSeverity::kAr, "Action required: instruction fetch error in a user process",
     kOver | kUcSar | kAddrMisc | kMcacod, kUcSar | kAddrMisc | kMcacodInstr, 0, 0, Ser::kRequired,
     ErrorContext::kUser},
    {KernelSeverity::kPanic, "Data load in unrecoverable area of kernel",
     kOver | kUcSar | kAddrMisc | kMcacod, kUcSar | kAddrMisc | kMcacodData, 0, 0, Ser::kRequired,
     ErrorContext::kKernel},
    {KernelSeverity::kPanic, "Instruction fetch error in kernel",
     kOver | kUcSar | kAddrMisc | kMcacod, kUcSar | kAddrMisc | kMcacodInstr, 0, 0, Ser::kRequired,
     ErrorContext::kKernel},
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

std::string context_name(ErrorContext c) {
  switch (c) {
    case ErrorContext::kUser:
      return "user";
    case ErrorContext::kKernelRecoverable:
      return "kernel, recoverable";
    default:
      return "kernel";
  }
}

KernelSeverityVerdict grade(const MceRegisters& regs) {
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
  const ErrorContext ctx = error_context(regs, out.notes);
  std::optional<CpuSignature> sig;
  if (regs.cpuid)
    sig = cpu_signature(*regs.cpuid);

  for (const KernelRule& r : kKernelRules) {
    if ((status & r.mask) != r.value)
      continue;
    if ((mcg & r.mcg_mask) != r.mcg_value)
      continue;
    if (r.ser == Ser::kRequired && !ser)
      continue;
    if (r.ser == Ser::kForbidden && ser)
      continue;
    if (r.context != ErrorContext::kAny && r.context != ctx)
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
    if (r.severity >= KernelSeverity::kUc && ctx == ErrorContext::kKernel &&
        r.severity != KernelSeverity::kPanic) {
      out.severity = KernelSeverity::kPanic;
      out.rule += "; uncorrected in kernel context, so panic";
    }
    return out;
  }
  return out;  // unreachable: the last rule always matches
}

// ---------------------------------------------------------------------------
// The rows. Zhaoxin and Centaur CPUs report machine checks in the SDM's
// layout, and Linux grades them with Intel's table: mce_severity() in
// arch/x86/kernel/cpu/mce/severity.c sends AMD and Hygon to
// mce_severity_amd() and every other vendor to mce_severity_intel(). Their
// rows share Intel's rules and differ in their CPU models' tables: a
// Zhaoxin (or Centaur) model's tables go in its own row's `models`.
// ---------------------------------------------------------------------------

constexpr VendorOps sdm_row(CpuVendor vendor, std::span<const CpuModel> models) {
  return {.vendor = vendor,
          .amd_layout = false,
          .mca_ipid = false,
          .status_bits = kStatusBits,
          .decode_fields = decode_fields,
          .classify = classify,
          .grade = grade,
          .cache_level_name = cache_level_name,
          .models = models};
}

constexpr VendorOps kZhaoxin = sdm_row(CpuVendor::kZhaoxin, {});
constexpr VendorOps kCentaur = sdm_row(CpuVendor::kCentaur, {});

}  // namespace

std::optional<KernelSeverity> intel_kernel_message_severity(std::string_view message) {
  for (const KernelRule& r : kKernelRules) {
    std::string_view m = r.message;
    if (m != "No match" && equal_ignoring_case(m, message))
      return r.severity;
  }
  return std::nullopt;
}

const VendorOps& intel_vendor_ops() {
  // Its models are in model_intel.cpp: built on first use, after them.
  static const VendorOps intel_row = sdm_row(CpuVendor::kIntel, intel_cpu_models());
  return intel_row;
}

const VendorOps& zhaoxin_vendor_ops() {
  return kZhaoxin;
}

const VendorOps& centaur_vendor_ops() {
  return kCentaur;
}

}  // namespace pp::mce

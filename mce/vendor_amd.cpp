// AMD's machine-check architecture: AMD's row and Hygon's, which shares it
// (vendor.h).
#include <cstdio>

#include "base/strings.h"
#include "mce/bits.h"
#include "mce/error_code.h"
#include "mce/vendor.h"

namespace pp::mce {
namespace {

using namespace bits;

// MCA_STATUS (AMD64 APM vol. 2 and the family 17h/19h PPRs): bit 55 is TCC,
// not AR; no S bit, whatever MCG_CAP says.
constexpr StatusBit kStatusBits[] = {
    {kTcc, "TCC"},           {kSyndv, "SyndV"},   {kCecc, "CECC"},   {kUecc, "UECC"},
    {kDeferred, "Deferred"}, {kPoison, "Poison"}, {kScrub, "Scrub"},
};

// SMCA: MCA_IPID bits 43:32 are the HardwareID and 63:48 the McaType; the
// pair names the kind of block behind a bank. Pairs and the short names
// Linux uses for them (arch/x86/kernel/cpu/mce/amd.c, the SMCA bank types;
// the same names appear under /sys/devices/system/machinecheck).
struct SmcaType {
  uint16_t hwid, mcatype;
  const char* name;
};
constexpr SmcaType kSmcaTypes[] = {
    {0x00, 0x0, "reserved"},
    {0xB0, 0x0, "load_store"},
    {0xB0, 0x10, "load_store"},
    {0xB0, 0x1, "insn_fetch"},
    {0xB0, 0x2, "l2_cache"},
    {0xB0, 0x3, "decode_unit"},
    {0xB0, 0x5, "execution_unit"},
    {0xB0, 0x6, "floating_point"},
    {0xB0, 0x7, "l3_cache"},
    {0x2E, 0x0, "coherent_slave"},
    {0x2E, 0x1, "pie"},
    {0x2E, 0x2, "coherent_slave"},
    {0x2E, 0x4, "ma_llc"},
    {0x96, 0x0, "umc"},
    {0x96, 0x1, "umc_v2"},
    {0x05, 0x0, "param_block"},
    {0xFF, 0x0, "psp"},
    {0xFF, 0x1, "psp"},
    {0xFF, 0x2, "mpart"},
    {0x01, 0x0, "smu"},
    {0x01, 0x1, "smu"},
    {0x01, 0x2, "mp5"},
    {0x01, 0x3, "mpdma"},
    {0x18, 0x0, "nbio"},
    {0x46, 0x0, "pcie"},
    {0x46, 0x1, "pcie"},
    {0x50, 0x0, "xgmi_pcs"},
    {0x5C, 0x0, "ssbdci"},
    {0x6C, 0x0, "nbif"},
    {0x80, 0x0, "shub"},
    {0xA8, 0x0, "sata"},
    {0xAA, 0x0, "usb"},
    {0x12, 0x0, "mpras"},
    {0xBE, 0x0, "mpdacc"},
    {0xF9, 0x0, "mpm"},
    {0xFD, 0x0, "mpasp"},
    {0xFD, 0x1, "mpasp"},
    {0x157, 0x0, "dacc_fe"},
    {0x164, 0x0, "dacc_be"},
    {0x170, 0x0, "usr_dp"},
    {0x180, 0x0, "usr_cp"},
    {0x1E0, 0x0, "eddr5cmn"},
    {0x1E1, 0x0, "pcie_pl"},
    {0x241, 0x0, "gmi_pcs"},
    {0x259, 0x0, "xgmi_phy"},
    {0x267, 0x0, "wafl_phy"},
    {0x269, 0x0, "gmi_phy"},
};

// AMD's class: the SDM's for VAL, UC and PCC, with AMD's deferred errors.
SeverityVerdict classify(const MceRegisters& regs) {
  const uint64_t status = regs.status.value_or(0);
  if (!(status & kVal))
    return invalid_verdict();
  if (!(status & kUc)) {
    // AMD APM vol. 2, MCA_STATUS: Deferred (bit 44) marks an uncorrectable
    // error that was not consumed and whose handling was deferred; UC is 0.
    if (status & kDeferred)
      return {MceSeverity::kDeferred,
              "UC=0 and Deferred=1: an uncorrectable error not yet consumed, handling deferred "
              "(AMD APM vol. 2, MCA_STATUS bit 44)"};
    return corrected_verdict();
  }
  if (status & kPcc)
    return fatal_verdict();
  return {MceSeverity::kUncorrected,
          "UC=1 and PCC=0 on AMD: uncorrected, the process context may be lost when TCC=1 "
          "(AMD APM vol. 2, MCA_STATUS)"};
}

// mce_severity_amd() in severity.c (AMD and Hygon), in the kernel's order:
// PCC panics; Deferred (checked before UC) is DEFERRED; UC=0 is KEEP; an
// overflowed UC error panics without the CPU's MCA overflow recovery, any UC
// error panics without its SUCCOR; in kernel context it panics; otherwise
// AR (the process is killed). Overflow recovery and SUCCOR are CPUID
// features (0x80000007 EBX bits 0 and 1) that a record does not carry: an
// SMCA CPU (the record has MCA_IPID) has both, older ones are graded
// without. The rule texts are the kernel's own panic messages.
KernelSeverityVerdict grade(const MceRegisters& regs) {
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
  if (error_context(regs, out.notes) == ErrorContext::kKernel)
    return verdict(KernelSeverity::kPanic, "Uncorrected unrecoverable error in kernel context");
  return verdict(KernelSeverity::kAr, "Action required: the process is killed (user context)");
}

// AMD's names of an MCA error code's LL (AMD64 APM vol. 2, "Machine Check
// Architecture", error code fields; Linux's drivers/edac/mce_amd.c ll_msgs
// agrees): 00 reserved, 01 L1, 10 L2, 11 L3 or generic. The SDM's reading
// is one level lower (error_code.h).
std::string_view amd_cache_level_name(uint8_t ll) {
  switch (ll & 3) {
    case 0:
      return "reserved";
    case 1:
      return "L1";
    case 2:
      return "L2";
    default:
      return "L3/generic";
  }
}

// The Zen generations by family and model, as Linux's
// arch/x86/kernel/cpu/amd.c (bsp_init_amd(): the X86_FEATURE_ZEN1..5 model
// ranges) assigns them. Models outside the ranges it names are left out.
// Every SMCA part's machine checks decode the same way (decode_smca()); the
// rows give the name and let a record without a vendor be read as AMD's.
constexpr CpuModel kAmdModels[] = {
    {0x17, 0x00, 0x2F, "Zen/Zen+ (family 17h)"}, {0x17, 0x30, 0x4F, "Zen 2 (family 17h)"},
    {0x17, 0x60, 0x7F, "Zen 2 (family 17h)"},    {0x17, 0x90, 0x91, "Zen 2 (family 17h)"},
    {0x17, 0xA0, 0xAF, "Zen 2 (family 17h)"},    {0x19, 0x00, 0x0F, "Zen 3 (family 19h)"},
    {0x19, 0x10, 0x1F, "Zen 4 (family 19h)"},    {0x19, 0x20, 0x5F, "Zen 3 (family 19h)"},
    {0x19, 0x60, 0xAF, "Zen 4 (family 19h)"},    {0x1A, 0x00, 0x2F, "Zen 5 (family 1Ah)"},
    {0x1A, 0x40, 0x4F, "Zen 5 (family 1Ah)"},    {0x1A, 0x60, 0x7F, "Zen 5 (family 1Ah)"},
};
// Hygon's family 18h (Dhyana), AMD's Zen design (Linux treats it as AMD's).
constexpr CpuModel kHygonModels[] = {{0x18, 0x00, 0xFF, "Dhyana (family 18h)"}};

// The rows. Hygon's CPUs are AMD's family 17h design under another vendor
// id, and Linux treats them as AMD's throughout machine-check handling
// (mce_severity() in severity.c grades both with mce_severity_amd()). The
// rows differ in their CPU models' tables: Hygon's models go in its row.
constexpr VendorOps amd_row(CpuVendor vendor, std::span<const CpuModel> models) {
  return {.vendor = vendor,
          .amd_layout = true,
          .mca_ipid = true,
          .status_bits = kStatusBits,
          .decode_fields = decode_smca,
          .classify = classify,
          .grade = grade,
          .cache_level_name = amd_cache_level_name,
          .models = models};
}

constexpr VendorOps kAmd = amd_row(CpuVendor::kAmd, kAmdModels);
constexpr VendorOps kHygon = amd_row(CpuVendor::kHygon, kHygonModels);

// grade()'s rule texts, the kernel's own messages, and their levels.
struct AmdMessage {
  const char* message;
  KernelSeverity severity;
};
constexpr AmdMessage kAmdMessages[] = {
    {"Processor Context Corrupt", KernelSeverity::kPanic},
    {"Overflowed uncorrected error without MCA Overflow Recovery", KernelSeverity::kPanic},
    {"Uncorrected error without MCA Recovery", KernelSeverity::kPanic},
    {"Uncorrected unrecoverable error in kernel context", KernelSeverity::kPanic},
};

}  // namespace

std::string smca_bank_type_name(uint64_t ipid) {
  uint16_t hwid = (ipid >> 32) & 0xFFF;
  uint16_t mcatype = (ipid >> 48) & 0xFFFF;
  for (const SmcaType& t : kSmcaTypes)
    if (t.hwid == hwid && t.mcatype == mcatype)
      return t.name;
  char buf[64];
  std::snprintf(buf, sizeof buf, "unknown (hwid 0x%x, mcatype 0x%x)", unsigned(hwid),
                unsigned(mcatype));
  return buf;
}

std::span<const CpuModel> amd_cpu_models() {
  return kAmdModels;
}

std::span<const CpuModel> hygon_cpu_models() {
  return kHygonModels;
}

std::optional<KernelSeverity> amd_kernel_message_severity(std::string_view message) {
  for (const AmdMessage& m : kAmdMessages)
    if (equal_ignoring_case(message, m.message))
      return m.severity;
  return std::nullopt;
}

const VendorOps& amd_vendor_ops() {
  return kAmd;
}

const VendorOps& hygon_vendor_ops() {
  return kHygon;
}

}  // namespace pp::mce

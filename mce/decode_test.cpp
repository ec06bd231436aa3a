// The machine-check decoder, rule by rule. Each test names the source of the
// rule it checks: the Intel SDM vol. 3B machine-check chapter ("Sdm"), AMD's
// APM vol. 2 and PPRs ("Amd"), or Linux's arch/x86/kernel/cpu/mce/severity.c
// and amd.c ("Kernel").
#include "mce/decode.h"

#include <gtest/gtest.h>

#include "mce/bits.h"
#include "mce/error_code.h"

namespace pp::mce {
namespace {

using namespace bits;

// MCG_CAP of QEMU's Intel models: 10 banks, CMCI_P, TES_P, SER_P.
constexpr uint64_t kCapSer = 0x100000a | kMcgCmciP | kMcgTesP;
constexpr uint64_t kCapNoSer = 0xa;

MceRegisters regs(uint64_t status, std::optional<uint64_t> mcgcap = std::nullopt,
                  std::optional<uint64_t> mcgstatus = std::nullopt) {
  MceRegisters r;
  r.status = status;
  r.mcgcap = mcgcap;
  r.mcgstatus = mcgstatus;
  return r;
}

std::vector<std::string> v(std::initializer_list<const char*> names) {
  return {names.begin(), names.end()};
}

// ---- IA32_MCi_STATUS bits -------------------------------------------------

// Sdm: IA32_MCi_STATUS bits 63..57 are VAL OVER UC EN MISCV ADDRV PCC.
TEST(MceStatusBits, SdmEachFlagBitByName) {
  const std::pair<uint64_t, const char*> bits[] = {
      {kVal, "VAL"},     {kOver, "OVER"},   {kUc, "UC"},   {kEn, "EN"},
      {kMiscv, "MISCV"}, {kAddrv, "ADDRV"}, {kPcc, "PCC"},
  };
  for (auto [mask, name] : bits) {
    MceDecoded d = decode_mce(regs(mask, kCapSer));
    EXPECT_EQ(d.status_bits, v({name})) << name;
  }
  MceDecoded all = decode_mce(regs(0xFE00000000000000, kCapSer));
  EXPECT_EQ(all.status_bits, v({"VAL", "OVER", "UC", "EN", "MISCV", "ADDRV", "PCC"}));
}

// Sdm: S (56) and AR (55) exist only when IA32_MCG_CAP.SER_P (bit 24) is set;
// otherwise the bits are reserved.
TEST(MceStatusBits, SdmSAndArOnlyWithSerP) {
  const uint64_t status = kVal | kUc | kS | kAr;
  EXPECT_EQ(decode_mce(regs(status, kCapSer)).status_bits, v({"VAL", "UC", "S", "AR"}));

  MceDecoded without = decode_mce(regs(status, kCapNoSer));
  EXPECT_EQ(without.status_bits, v({"VAL", "UC"}));
  ASSERT_FALSE(without.notes.empty());
  EXPECT_NE(without.notes[0].find("SER_P is clear"), std::string::npos) << without.notes[0];

  MceDecoded unknown = decode_mce(regs(status));
  EXPECT_EQ(unknown.status_bits, v({"VAL", "UC"}));
  ASSERT_FALSE(unknown.notes.empty());
  EXPECT_NE(unknown.notes[0].find("--mcgcap"), std::string::npos) << unknown.notes[0];
}

// Sdm: bits 54:53 are the threshold-based error status only with
// MCG_CAP.TES_P (bit 11): 00 none, 01 green, 10 yellow, 11 reserved.
TEST(MceStatusBits, SdmThresholdOnlyWithTesP) {
  const char* names[] = {"none", "green", "yellow", "reserved"};
  for (uint64_t t = 0; t < 4; t++) {
    MceDecoded d = decode_mce(regs(kVal | kEn | (t << 53), kMcgTesP));
    ASSERT_TRUE(d.threshold) << t;
    EXPECT_EQ(*d.threshold, names[t]);
    EXPECT_EQ(mce_json(d)["threshold"], names[t]);
  }
  MceDecoded without = decode_mce(regs(kVal | kEn | (uint64_t{1} << 53), kMcgCmciP));
  EXPECT_FALSE(without.threshold);
  EXPECT_FALSE(mce_json(without).contains("threshold"));
}

// Sdm: bits 52:38 are the corrected error count only with MCG_CAP.CMCI_P
// (bit 10).
TEST(MceStatusBits, SdmCorrectedCountOnlyWithCmciP) {
  MceDecoded d = decode_mce(regs(kVal | kEn | (uint64_t{5} << 38), kMcgCmciP));
  ASSERT_TRUE(d.corrected_count);
  EXPECT_EQ(*d.corrected_count, 5u);
  EXPECT_EQ(mce_json(d)["corrected_count"], 5);
  MceDecoded full = decode_mce(regs(kVal | (uint64_t{0x7FFF} << 38) | kMiscv, kMcgCmciP));
  EXPECT_EQ(full.corrected_count, 0x7FFFu);  // 15 bits, MISCV above untouched
  EXPECT_EQ(full.status_bits, v({"VAL", "MISCV"}));
  MceDecoded without = decode_mce(regs(kVal | (uint64_t{5} << 38), kMcgTesP));
  EXPECT_FALSE(without.corrected_count);
  EXPECT_FALSE(mce_json(without).contains("corrected_count"));
}

// Sdm: bits 31:16 are the model-specific error code, printed raw.
TEST(MceStatusBits, SdmMscodRaw) {
  MceDecoded d = decode_mce(regs(kVal | 0x00A50090, kCapSer));
  EXPECT_EQ(d.mscod, 0x00A5);
  EXPECT_EQ(mce_json(d)["mscod"], "0xa5");
  EXPECT_EQ(mce_json(d)["error_code"], "0x0090");
}

// Sdm: IA32_MCG_STATUS bits 0..3 are RIPV, EIPV, MCIP, LMCE_S.
TEST(MceStatusBits, SdmMcgStatusBits) {
  EXPECT_EQ(decode_mce(regs(kVal, kCapSer, 0xF)).mcg_status_bits,
            v({"RIPV", "EIPV", "MCIP", "LMCE"}));
  EXPECT_EQ(decode_mce(regs(kVal, kCapSer, 0x5)).mcg_status_bits, v({"RIPV", "MCIP"}));
  EXPECT_TRUE(decode_mce(regs(kVal, kCapSer, 0)).mcg_status_bits.empty());
}

// Amd: MCA_STATUS bit 55 is TCC (not AR), 53 SyndV, 44 Deferred, 43 Poison;
// there is no S bit, whatever MCG_CAP says.
TEST(MceStatusBits, AmdTccDeferredPoisonSyndV) {
  MceRegisters r = regs(kVal | kUc | kEn | kS | kTcc | kSyndv | kDeferred | kPoison, kCapSer);
  MceDecoded d = decode_mce(r, CpuVendor::kAmd);
  EXPECT_EQ(d.status_bits, v({"VAL", "UC", "EN", "TCC", "SyndV", "Deferred", "Poison"}));
  EXPECT_TRUE(d.amd_layout);
  EXPECT_EQ(mce_json(d)["vendor"], "amd");
  // The same status on Intel: AR and S, no TCC.
  EXPECT_EQ(decode_mce(r, CpuVendor::kIntel).status_bits, v({"VAL", "UC", "EN", "S", "AR"}));
}

// Kernel: mce_record's cpuvendor is X86_VENDOR_*: 0 Intel, 2 AMD, 9 Hygon.
// An override wins.
TEST(MceVendor, KernelVendorNumbersAndOverride) {
  MceRegisters r = regs(kVal | kTcc);
  r.cpuvendor = 2;
  EXPECT_EQ(decode_mce(r).vendor, CpuVendor::kAmd);
  EXPECT_EQ(decode_mce(r).status_bits, v({"VAL", "TCC"}));
  r.cpuvendor = 9;
  EXPECT_TRUE(decode_mce(r).amd_layout);
  r.cpuvendor = 0;
  EXPECT_EQ(decode_mce(r).vendor, CpuVendor::kIntel);
  EXPECT_EQ(decode_mce(r, CpuVendor::kAmd).vendor, CpuVendor::kAmd);
  r.cpuvendor = 77;
  EXPECT_EQ(decode_mce(r).vendor, CpuVendor::kUnknown);
  EXPECT_EQ(cpu_vendor_from_name("AMD"), CpuVendor::kAmd);
  EXPECT_EQ(cpu_vendor_from_name("via"), std::nullopt);
}

// ---- MCA error codes ------------------------------------------------------

struct CodeCase {
  uint16_t code;
  const char* error_class;
  nlohmann::json fields;  // the sub-fields mce_json() must show
};

// Sdm: the simple codes and each compound form with its sub-fields.
const CodeCase kCodeCases[] = {
    {0x0000, "simple", {{"simple", "no error"}}},
    {0x0001, "simple", {{"simple", "unclassified"}}},
    {0x0002, "simple", {{"simple", "microcode ROM parity error"}}},
    {0x0003, "simple", {{"simple", "external error (BINIT# from another processor)"}}},
    {0x0004, "simple", {{"simple", "FRC error (functional redundancy check)"}}},
    {0x0005, "simple", {{"simple", "internal parity error"}}},
    {0x0006, "simple", {{"simple", "SMM handler code access violation"}}},
    {0x0E0B, "simple", {{"simple", "I/O error"}}},
    {0x2000, "simple", {{"simple", "unknown (not an architectural code)"}}},
    {0x0400, "internal", {{"internal", "timer"}}},
    {0x0405, "internal", {{"internal", "unclassified"}}},
    {0x000C, "generic", {{"ll", "00"}, {"cache", "L1"}, {"f", false}}},
    {0x000F, "generic", {{"ll", "11"}, {"cache", "generic"}}},
    {0x0010, "tlb", {{"tt", "instr"}, {"ll", "00"}}},
    {0x0014, "tlb", {{"tt", "data"}, {"ll", "00"}}},
    {0x0019, "tlb", {{"tt", "generic"}, {"ll", "01"}, {"cache", "L2"}}},
    {0x001D, "tlb", {{"tt", "reserved"}, {"ll", "01"}}},
    {0x0080, "memory-controller", {{"mmm", "generic"}, {"cccc", 0}}},
    {0x0090, "memory-controller", {{"mmm", "read"}, {"cccc", 0}}},
    {0x00A2, "memory-controller", {{"mmm", "write"}, {"cccc", 2}}},
    {0x00B3, "memory-controller", {{"mmm", "addr-cmd"}, {"cccc", 3}}},
    {0x00CF, "memory-controller", {{"mmm", "scrub"}, {"cccc", "unspecified"}}},
    {0x00DE, "memory-controller", {{"mmm", "reserved"}, {"cccc", 14}}},
    {0x0100, "cache", {{"rrrr", "err"}, {"tt", "instr"}, {"ll", "00"}}},
    {0x0111, "cache", {{"rrrr", "rd"}, {"tt", "instr"}, {"ll", "01"}}},
    {0x0126, "cache", {{"rrrr", "wr"}, {"tt", "data"}, {"ll", "10"}, {"cache", "L3"}}},
    {0x0134, "cache", {{"rrrr", "drd"}, {"tt", "data"}, {"ll", "00"}, {"cache", "L1"}}},
    {0x0145, "cache", {{"rrrr", "dwr"}, {"tt", "data"}, {"ll", "01"}}},
    {0x0150, "cache", {{"rrrr", "ird"}, {"tt", "instr"}, {"ll", "00"}}},
    {0x016B, "cache", {{"rrrr", "prefetch"}, {"tt", "generic"}, {"ll", "11"}}},
    {0x017A, "cache", {{"rrrr", "evict"}, {"tt", "generic"}, {"ll", "10"}, {"cache", "L3"}}},
    {0x0189, "cache", {{"rrrr", "snoop"}, {"tt", "generic"}, {"ll", "01"}}},
    {0x0199, "cache", {{"rrrr", "reserved"}}},
    {0x1134, "cache", {{"rrrr", "drd"}, {"f", true}}},  // F (bit 12) masked
    {0x0280, "memory-as-cache", {{"mmm", "generic"}, {"cccc", 0}}},
    {0x0291, "memory-as-cache", {{"mmm", "read"}, {"cccc", 1}}},
    {0x12CF, "memory-as-cache", {{"mmm", "scrub"}, {"cccc", "unspecified"}, {"f", true}}},
    {0x0800, "bus", {{"pp", "src"}, {"t", false}, {"rrrr", "err"}, {"ii", "mem"}, {"ll", "00"}}},
    {0x0A35, "bus", {{"pp", "res"}, {"t", false}, {"rrrr", "drd"}, {"ii", "reserved"}}},
    {0x0D5A, "bus", {{"pp", "obs"}, {"t", true}, {"rrrr", "ird"}, {"ii", "io"}, {"ll", "10"}}},
    {0x0F0F, "bus", {{"pp", "generic"}, {"t", true}, {"ii", "other"}, {"ll", "11"}}},
    {0x1E0F, "bus", {{"pp", "generic"}, {"t", false}, {"f", true}}},
};

TEST(MceErrorCode, SdmEveryClassAndSubField) {
  for (const CodeCase& c : kCodeCases) {
    MceDecoded d = decode_mce(regs(kVal | c.code, kCapSer));
    nlohmann::json j = mce_json(d);
    EXPECT_EQ(j["error_class"], c.error_class) << std::hex << c.code;
    for (auto& [key, value] : c.fields.items())
      EXPECT_EQ(j[key], value) << std::hex << c.code << " " << key;
    // A field the class does not have is absent.
    if (std::string(c.error_class) != "cache" && std::string(c.error_class) != "bus") {
      EXPECT_FALSE(j.contains("rrrr")) << std::hex << c.code;
    }
    if (std::string(c.error_class) != "bus") {
      EXPECT_FALSE(j.contains("pp")) << std::hex << c.code;
    }
  }
}

// Sdm: the "Architecturally Defined SRAR Errors" table gives the data load
// error, MCACOD 0x0134, as a cache hierarchy error with LL=00 in the first
// level data cache; the SRAO table gives the L3 explicit writeback, 0x017A,
// with LL=10. So the raw LL is kept and LL=00 is named L1, LL=10 L3 (mcelog
// prints LL+1, rasdaemon LL; this pins the SDM's reading).
TEST(MceErrorCode, SdmCacheLevelDataLoadIsL1AndL3WritebackIsL3) {
  McaErrorCode load = decode_mca_error_code(0x0134);
  ASSERT_TRUE(load.ll);
  EXPECT_EQ(*load.ll, 0);
  EXPECT_EQ(cache_level_name(*load.ll), "L1");
  McaErrorCode wb = decode_mca_error_code(0x017A);
  ASSERT_TRUE(wb.ll);
  EXPECT_EQ(*wb.ll, 2);
  EXPECT_EQ(cache_level_name(*wb.ll), "L3");

  std::string text;
  print_mce_text(decode_mce(regs(kVal | kUc | kEn | kS | kAr | kAddrv | kMiscv | 0x0134, kCapSer)),
                 text);
  EXPECT_NE(text.find("data read (rrrr=drd), tt=data, ll=00 (L1)"), std::string::npos) << text;
  text.clear();
  print_mce_text(decode_mce(regs(kVal | kUc | kEn | kS | 0x017A, kCapSer)), text);
  EXPECT_NE(text.find("eviction (rrrr=evict), tt=generic, ll=10 (L3)"), std::string::npos) << text;
}

// ---- SDM severity classes -------------------------------------------------

struct SeverityCase {
  const char* what;
  MceRegisters regs;
  CpuVendor vendor;
  MceSeverity severity;
  const char* rule_says;
};

std::vector<SeverityCase> severity_cases() {
  const uint64_t ucr = kVal | kUc | kEn | kMiscv | kAddrv;
  return {
      {"Sdm VAL=0 is invalid", regs(kUc | kEn, kCapSer), CpuVendor::kIntel, MceSeverity::kInvalid,
       "VAL=0"},
      {"Sdm UC=0 is corrected", regs(0x9000000000000000, kCapSer), CpuVendor::kIntel,
       MceSeverity::kCorrected, "UC=0"},
      {"Sdm Deferred is AMD's: on Intel bit 44 leaves it corrected",
       regs(kVal | kEn | kDeferred, kCapSer), CpuVendor::kIntel, MceSeverity::kCorrected, "UC=0"},
      {"Amd UC=0 Deferred=1 is deferred", regs(kVal | kEn | kDeferred), CpuVendor::kAmd,
       MceSeverity::kDeferred, "Deferred=1"},
      {"Sdm UC PCC=0 S=0 AR=0 with SER_P is UCNA", regs(0xb400000000000090, kCapSer),
       CpuVendor::kIntel, MceSeverity::kUcna, "UCNA"},
      {"Sdm UC PCC=0 S=1 AR=0 with SER_P is SRAO", regs(ucr | kS | 0x00C0, kCapSer),
       CpuVendor::kIntel, MceSeverity::kSrao, "SRAO"},
      {"Sdm UC PCC=0 S=1 AR=1 with SER_P is SRAR", regs(ucr | kS | kAr | 0x0134, kCapSer),
       CpuVendor::kIntel, MceSeverity::kSrar, "SRAR"},
      {"Sdm UC PCC=1 is fatal", regs(0xbe00000000000150, kCapSer), CpuVendor::kIntel,
       MceSeverity::kFatal, "PCC=1"},
      {"Sdm UC PCC=1 is fatal on AMD too", regs(kVal | kUc | kPcc), CpuVendor::kAmd,
       MceSeverity::kFatal, "PCC=1"},
      {"Sdm no UCR class without SER_P", regs(ucr | kS, kCapNoSer), CpuVendor::kIntel,
       MceSeverity::kUncorrected, "without MCG_CAP.SER_P"},
      {"Sdm no UCR class with MCG_CAP unknown", regs(ucr), CpuVendor::kIntel,
       MceSeverity::kUncorrected, "MCG_CAP unknown"},
      {"Sdm S=0 AR=1 is no UCR signature", regs(ucr | kAr, kCapSer), CpuVendor::kIntel,
       MceSeverity::kUncorrected, "AR needs S"},
      {"Amd UC PCC=0 is uncorrected", regs(kVal | kUc | kTcc, kCapSer), CpuVendor::kAmd,
       MceSeverity::kUncorrected, "AMD"},
  };
}

TEST(MceSeverity, SdmEachClassWithItsRule) {
  for (const SeverityCase& c : severity_cases()) {
    MceDecoded d = decode_mce(c.regs, c.vendor);
    EXPECT_EQ(mce_severity_name(d.severity), mce_severity_name(c.severity)) << c.what;
    EXPECT_NE(d.severity_rule.find(c.rule_says), std::string::npos)
        << c.what << ": " << d.severity_rule;
    EXPECT_EQ(mce_json(d)["severity"], mce_severity_name(c.severity)) << c.what;
  }
}

// ---- Linux's grader -------------------------------------------------------

struct KernelCase {
  const char* what;
  MceRegisters regs;
  KernelSeverity severity;
  const char* rule;  // the kernel's own message for the rule
};

MceRegisters with(MceRegisters r, std::optional<uint8_t> cs,
                  std::optional<uint32_t> bank = std::nullopt,
                  std::optional<uint32_t> cpuid = std::nullopt) {
  r.cs = cs;
  r.bank = bank;
  r.cpuid = cpuid;
  return r;
}

std::vector<KernelCase> kernel_cases() {
  const uint64_t mc = kMcip, ripv = kRipv | kMcip, both = kRipv | kEipv | kMcip;
  const uint64_t sar = kVal | kUc | kEn | kS | kAr | kAddrv | kMiscv;
  const uint8_t user = 0x33, kernel = 0x10;
  return {
      {"Kernel Invalid", regs(kUc, kCapSer), KernelSeverity::kNo, "Invalid"},
      {"Kernel Not enabled (in the #MC handler)", regs(kVal | kUc, kCapSer, both),
       KernelSeverity::kNo, "Not enabled"},
      {"Kernel Processor context corrupt", regs(0xbe00000000000150, kCapSer, 0x5),
       KernelSeverity::kPanic, "Processor context corrupt"},
      {"Kernel Neither restart nor error IP", regs(sar | 0x0134, kCapSer, mc),
       KernelSeverity::kPanic, "Neither restart nor error IP"},
      {"Kernel In kernel and no restart IP", with(regs(sar, kCapSer, kEipv | kMcip), kernel),
       KernelSeverity::kPanic, "In kernel and no restart IP"},
      {"Kernel Corrected error (no SER)", regs(0x9000000000000000, kCapNoSer),
       KernelSeverity::kKeep, "Corrected error"},
      {"Kernel Non signaled machine check (corrected, SER)", regs(0x9000000000000000, kCapSer),
       KernelSeverity::kKeep, "Non signaled machine check"},
      {"Kernel AO memory scrubbing", regs(kVal | kUc | kEn | kS | kAddrv | 0x00C3, kCapSer, ripv),
       KernelSeverity::kAo, "Action optional: memory scrubbing error"},
      {"Kernel AO last level cache writeback", regs(kVal | kUc | kEn | kS | 0x017A, kCapSer, ripv),
       KernelSeverity::kAo, "Action optional: last level cache writeback error"},
      {"Kernel AO Skylake-SP patrol scrub quirk",
       with(regs(kVal | kEn | kAddrv | kMiscv | 0x001000C2, kCapSer), std::nullopt, 13, 0x50654),
       KernelSeverity::kAo, "Uncorrected Patrol Scrub Error"},
      {"Kernel patrol scrub quirk needs its banks",
       with(regs(kVal | kEn | kAddrv | kMiscv | 0x001000C2, kCapSer), std::nullopt, 1, 0x50654),
       KernelSeverity::kKeep, "Non signaled machine check"},
      {"Kernel UCNA", regs(0xb400000000000090, kCapSer), KernelSeverity::kUcna,
       "Uncorrected no action required"},
      {"Kernel UCNA ignores OVER", regs(0xf400000000000090, kCapSer), KernelSeverity::kUcna,
       "Uncorrected no action required"},
      {"Kernel Illegal combination", regs(kVal | kUc | kEn | kAr, kCapSer), KernelSeverity::kPanic,
       "Illegal combination (UCNA with AR=1)"},
      {"Kernel Action required with lost events", regs(sar | kOver, kCapSer, both),
       KernelSeverity::kPanic, "Action required with lost events"},
      {"Kernel AR unaffected thread continuable", with(regs(sar | 0x0134, kCapSer, ripv), user),
       KernelSeverity::kKeep, "Action required but unaffected thread is continuable"},
      {"Kernel AR data load in a user process", with(regs(sar | 0x0134, kCapSer, both), user),
       KernelSeverity::kAr, "Action required: data load error in a user process"},
      {"Kernel AR instruction fetch in a user process",
       with(regs(sar | 0x0150, kCapSer, both), user), KernelSeverity::kAr,
       "Action required: instruction fetch error in a user process"},
      {"Kernel data load in the kernel", with(regs(sar | 0x0134, kCapSer, both), kernel),
       KernelSeverity::kPanic, "Data load in unrecoverable area of kernel"},
      {"Kernel instruction fetch in the kernel", with(regs(sar | 0x0150, kCapSer, both), kernel),
       KernelSeverity::kPanic, "Instruction fetch error in kernel"},
      {"Kernel AR unknown MCACOD", with(regs(sar | 0x0090, kCapSer, both), user),
       KernelSeverity::kPanic, "Action required: unknown MCACOD"},
      {"Kernel AO unknown MCACOD", regs(kVal | kUc | kEn | kS | 0x0090, kCapSer, ripv),
       KernelSeverity::kSome, "Action optional: unknown MCACOD"},
      {"Kernel AO with lost events", regs(kVal | kOver | kUc | kEn | kS | 0x0090, kCapSer, ripv),
       KernelSeverity::kSome, "Action optional with lost events"},
      {"Kernel Overflowed uncorrected", regs(kVal | kOver | kUc | kEn, kCapNoSer),
       KernelSeverity::kPanic, "Overflowed uncorrected"},
      {"Kernel Uncorrected in user context", with(regs(kVal | kUc | kEn, kCapNoSer), user),
       KernelSeverity::kUc, "Uncorrected"},
      {"Kernel No match", regs(kVal | kEn | kS, kCapSer), KernelSeverity::kSome, "No match"},
  };
}

// Each row of the kernel's Intel table that a record can reach (see
// kIntelRules for the two kinds that cannot).
TEST(MceKernelSeverity, KernelEachReachableRuleOfTheIntelTable) {
  for (const KernelCase& c : kernel_cases()) {
    MceDecoded d = decode_mce(c.regs, CpuVendor::kIntel);
    EXPECT_EQ(kernel_severity_name(d.kernel_severity), kernel_severity_name(c.severity))
        << c.what << ": " << d.kernel_severity_rule;
    EXPECT_EQ(d.kernel_severity_rule.rfind(std::string(c.rule) + " (", 0), 0u)
        << c.what << ": " << d.kernel_severity_rule;
  }
}

// Kernel: a level of UC or above in kernel context is a panic.
TEST(MceKernelSeverity, KernelUncorrectedInKernelContextPanics) {
  MceDecoded d = decode_mce(with(regs(kVal | kUc | kEn, kCapNoSer), 0x10), CpuVendor::kIntel);
  EXPECT_EQ(d.kernel_severity, KernelSeverity::kPanic);
  EXPECT_NE(d.kernel_severity_rule.find("Uncorrected (kernel context"), std::string::npos);
  EXPECT_NE(d.kernel_severity_rule.find("so panic"), std::string::npos);
  EXPECT_EQ(mce_json(d)["kernel_severity"], "panic");
}

// Kernel: mce_severity_amd() for AMD and Hygon.
TEST(MceKernelSeverity, KernelAmdGrader) {
  auto amd = [](MceRegisters r) { return decode_mce(r, CpuVendor::kAmd); };
  EXPECT_EQ(amd(regs(kVal | kUc | kPcc)).kernel_severity, KernelSeverity::kPanic);
  EXPECT_EQ(amd(with(regs(kVal | kUc), 0x10)).kernel_severity, KernelSeverity::kPanic);
  MceRegisters smca = with(regs(kVal | kUc | kTcc), 0x33);
  smca.ipid = 0x000000B000000000;
  EXPECT_EQ(amd(smca).kernel_severity, KernelSeverity::kAr);
  MceRegisters smca_in_kernel = smca;
  smca_in_kernel.cs = 0x10;
  EXPECT_EQ(amd(smca_in_kernel).kernel_severity_rule,
            "Uncorrected unrecoverable error in kernel context");
  // Without MCA_IPID the CPU is graded without SUCCOR and overflow recovery.
  MceDecoded no_succor = amd(with(regs(kVal | kUc), 0x33));
  EXPECT_EQ(no_succor.kernel_severity, KernelSeverity::kPanic);
  EXPECT_EQ(no_succor.kernel_severity_rule, "Uncorrected error without MCA Recovery");
  EXPECT_EQ(amd(with(regs(kVal | kUc | kOver), 0x33)).kernel_severity_rule,
            "Overflowed uncorrected error without MCA Overflow Recovery");
  MceDecoded deferred = amd(regs(kVal | kEn | kDeferred));
  EXPECT_EQ(deferred.kernel_severity, KernelSeverity::kDeferred);
  EXPECT_EQ(mce_json(deferred)["kernel_severity"], "deferred");
  // Deferred is checked before UC: an uncorrected deferred error is deferred.
  EXPECT_EQ(amd(with(regs(kVal | kUc | kDeferred), 0x10)).kernel_severity,
            KernelSeverity::kDeferred);
  EXPECT_EQ(amd(regs(kVal | kEn)).kernel_severity, KernelSeverity::kKeep);
}

// Kernel amd.c: MCA_IPID's HardwareID (43:32) and McaType (63:48) name the
// SMCA bank type.
TEST(MceSmca, KernelBankTypeFromIpid) {
  auto type_of = [](uint64_t ipid) {
    MceRegisters r = regs(kVal | kEn);
    r.ipid = ipid;
    return decode_mce(r, CpuVendor::kAmd).smca_bank_type.value_or("(none)");
  };
  EXPECT_EQ(type_of(0x000000B000000000), "load_store");
  EXPECT_EQ(type_of(0x001000B000000000), "load_store");
  EXPECT_EQ(type_of(0x000700B000000000), "l3_cache");
  EXPECT_EQ(type_of(0x0000009600000000), "umc");
  EXPECT_EQ(type_of(0x0001009600350000), "umc_v2");  // the instance id (low bits) is ignored
  EXPECT_EQ(type_of(0x0000026900000000), "gmi_phy");
  EXPECT_EQ(type_of(0x0042077700000000), "unknown (hwid 0x777, mcatype 0x42)");
  // Only on AMD's layout.
  MceRegisters intel = regs(kVal);
  intel.ipid = 0x000000B000000000;
  EXPECT_FALSE(decode_mce(intel, CpuVendor::kIntel).smca_bank_type);
  MceRegisters r = regs(kVal);
  r.ipid = 0x0000009600000000;
  EXPECT_EQ(mce_json(decode_mce(r, CpuVendor::kAmd))["smca_bank_type"], "umc");
}

// ---- Output ---------------------------------------------------------------

// Registers are "0x..." strings; counts, CPUs and banks numbers; absent
// fields absent.
TEST(MceJson, RegistersAsHexStringsAndMissingFieldsAbsent) {
  MceRegisters r = regs(0xbe00000000000150, kCapSer, 0x5);
  r.addr = 0x1234000;
  r.misc = 0x86;
  r.cpu = 3;
  r.bank = 1;
  r.cs = 0x10;
  r.ip = 0xffffffff9c8592eb;
  r.tsc = 0x5663dac3e;
  r.walltime = 1796285030;
  r.cpuid = 0x50654;
  r.apicid = 2;
  r.socketid = 1;
  r.microcode = 0x2000065;
  r.ppin = 0x1122;
  nlohmann::json j = mce_json(decode_mce(r));
  EXPECT_EQ(j["status"], "0xbe00000000000150");
  EXPECT_EQ(j["mcgstatus"], "0x5");
  EXPECT_EQ(j["addr"], "0x1234000");
  EXPECT_EQ(j["misc"], "0x86");
  EXPECT_EQ(j["ip"], "0xffffffff9c8592eb");
  EXPECT_EQ(j["ppin"], "0x1122");
  EXPECT_EQ(j["walltime"], 0x6b112266) << "seconds since the epoch: a number";
  EXPECT_EQ(j["cpu"], 3);
  EXPECT_EQ(j["bank"], 1);
  EXPECT_EQ(j["cs"], 16);
  EXPECT_EQ(j["cpuid"], "0x50654") << "hex, as the kernel prints it";
  EXPECT_EQ(j["microcode"], "0x2000065");
  EXPECT_EQ(j["apicid"], 2);
  EXPECT_EQ(j["status_bits"], nlohmann::json(v({"VAL", "UC", "EN", "MISCV", "ADDRV", "PCC"})));
  EXPECT_EQ(j["mcg_status_bits"], nlohmann::json(v({"RIPV", "MCIP"})));
  EXPECT_EQ(j["severity"], "fatal");
  EXPECT_EQ(j["kernel_severity"], "panic");

  nlohmann::json bare = mce_json(decode_mce(regs(0x9000000000000000)));
  for (const char* key :
       {"addr",      "misc",          "synd",      "ipid",     "ip",        "tsc",
        "walltime",  "ppin",          "mcgstatus", "mcgcap",   "cpu",       "bank",
        "cs",        "cpuid",         "apicid",    "socketid", "microcode", "corrected_count",
        "threshold", "smca_bank_type"})
    EXPECT_FALSE(bare.contains(key)) << key;
  EXPECT_EQ(bare["vendor"], "unknown");
  EXPECT_EQ(bare["severity"], "corrected");
  EXPECT_EQ(bare["kernel_severity"], "keep");  // graded without SER: "Corrected error"
  EXPECT_TRUE(bare["mcg_status_bits"].empty());
}

TEST(MceJson, NoStatusDecodesAsInvalidWithANote) {
  MceDecoded d = decode_mce(MceRegisters{});
  EXPECT_EQ(d.severity, MceSeverity::kInvalid);
  EXPECT_EQ(d.kernel_severity, KernelSeverity::kNo);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_EQ(d.notes[0], "no status: decoded as 0");
  EXPECT_FALSE(mce_json(d).contains("status"));
}

TEST(MceText, HeadlineAndDetailLines) {
  MceRegisters r = regs(0xbe00000000000150, kCapSer, 0x5);
  r.cpu = 0;
  r.bank = 1;
  r.addr = 0x1234000;
  std::string text;
  print_mce_text(decode_mce(r), text);
  EXPECT_EQ(text.rfind("CPU 0 bank 1: fatal, kernel: panic\n", 0), 0u) << text;
  EXPECT_NE(text.find("  status 0xbe00000000000150: VAL UC EN MISCV ADDRV PCC"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  mcgstatus 0x5: RIPV MCIP\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  error code 0x0150 cache: instruction fetch (rrrr=ird), tt=instr, "
                      "ll=00 (L1); mscod 0x0000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("addr 0x1234000"), std::string::npos) << text;
  EXPECT_NE(text.find("  kernel severity panic: Processor context corrupt"), std::string::npos);
  EXPECT_EQ(text.back(), '\n');

  std::string bare;
  print_mce_text(decode_mce(regs(0)), bare);
  EXPECT_EQ(bare.rfind("CPU ? bank ?: invalid, kernel: no\n", 0), 0u) << bare;
  EXPECT_NE(bare.find("status 0x0: (none)"), std::string::npos) << bare;
}

// mce_json()'s object reads back into the same registers and vendor, so a
// stored record decodes again to the same text; what it lacks stays absent.
TEST(MceJson, ReadsBackIntoTheSameRegisters) {
  MceRegisters regs;
  regs.status = 0xbe00000000000150;
  regs.mcgstatus = 0x5;
  regs.mcgcap = 0x1000c14;
  regs.addr = 0x1234000;
  regs.misc = 0x86;
  regs.walltime = 1796285030;
  regs.cpu = 3;
  regs.bank = 1;
  regs.cs = 0x10;
  regs.socketid = 1;
  regs.cpuvendor = 0;
  // Every other register too, each a different value, so that one the
  // tables leave out is missed here.
  regs.synd = 0x51;
  regs.ipid = 0x1d1;
  regs.ip = 0xffffffff9c8592eb;
  regs.tsc = 0x5663dac3e;
  regs.ppin = 0x9a9a;
  regs.cpuid = 0x50654;
  regs.apicid = 6;
  regs.microcode = 0x2006e05;
  MceDecoded d = decode_mce(regs, CpuVendor::kIntel);
  MceFromJson back = mce_registers_from_json(mce_json(d));
  MceRegisters want = regs;
  want.cpuvendor.reset();  // the object says the vendor by name instead
  EXPECT_EQ(back.regs, want);
  EXPECT_EQ(back.vendor, CpuVendor::kIntel);
  std::string a, b;
  print_mce_text(d, a);
  print_mce_text(decode_mce(back.regs, back.vendor), b);
  EXPECT_EQ(a, b);

  MceFromJson none = mce_registers_from_json(nlohmann::json::object());
  EXPECT_EQ(none.regs, MceRegisters{});
  EXPECT_EQ(none.vendor, CpuVendor::kUnknown);
  // A register of the wrong type is left out, not misread.
  MceFromJson wrong = mce_registers_from_json(nlohmann::json{{"bank", "one"}, {"status", 7}});
  EXPECT_FALSE(wrong.regs.bank);
  // A history written before walltime became a number and cpuid and
  // microcode hex strings reads back the same.
  MceFromJson old = mce_registers_from_json(
      nlohmann::json{{"walltime", "0x6b112266"}, {"cpuid", 0x50654}, {"microcode", 1}});
  EXPECT_EQ(old.regs.walltime, 0x6b112266u);
  EXPECT_EQ(old.regs.cpuid, 0x50654u);
  EXPECT_EQ(old.regs.microcode, 1u);
}

}  // namespace
}  // namespace pp::mce

// The vendor rows: each vendor decodes its own bits, with its own class rule
// and grader; Hygon decodes as AMD, Zhaoxin and Centaur as Intel, an unknown
// vendor by the SDM (Intel's row).
#include "mce/vendor.h"

#include <gtest/gtest.h>

#include "mce/bits.h"

namespace pp::mce {
namespace {

using namespace bits;

// MCG_CAP of QEMU's Intel models: 10 banks, CMCI_P, TES_P, SER_P.
constexpr uint64_t kCapSer = 0x100000a | kMcgCmciP | kMcgTesP;

MceRegisters regs(uint64_t status, std::optional<uint64_t> mcgcap = kCapSer) {
  MceRegisters r;
  r.status = status;
  r.mcgcap = mcgcap;
  r.mcgstatus = kRipv | kEipv | kMcip;
  r.cs = 0x33;
  return r;
}

std::vector<std::string> v(std::initializer_list<const char*> names) {
  return {names.begin(), names.end()};
}

// A decoding's JSON and text without the vendor's name: what must be the
// same for two vendors that share a row's rules.
std::string decoding_without_vendor(const MceRegisters& r, CpuVendor vendor) {
  MceDecoded d = decode_mce(r, vendor);
  nlohmann::json j = mce_json(d);
  j.erase("vendor");
  d.vendor = CpuVendor::kUnknown;  // the text's "vendor NAME" word
  std::string text;
  print_mce_text(d, text);
  return j.dump() + "\n" + text;
}

// Statuses that tell the layouts and the graders apart: AMD's bits (TCC at
// 55 where Intel has AR, Deferred, Poison, SyndV...), Intel's S/AR, SRAO,
// SRAR and UCNA signatures, a deferred error, corrected errors with a
// threshold and a count, and fatal ones.
const uint64_t kStatuses[] = {
    0x9000000000000134,
    0x8c00004000010090,
    0xb400000000000090,
    0xbd000000000000c2,
    0xbd80000000100134,
    0xbe00000000000150,
    kVal | kEn | kDeferred | 0x0134,
    kVal | kUc | kEn | kTcc | kSyndv | kPoison,
    kVal | kEn | kCecc | kScrub | 0x009f,
    kVal | kUc | kUecc | kOver | 0x017a,
    kVal | (uint64_t{3} << 53) | (uint64_t{7} << 38),
};

TEST(MceVendorRow, IntelNamesItsOwnBitsOnly) {
  MceRegisters r = regs(kVal | kUc | kEn | kS | kAr | kTcc | kSyndv | kDeferred | kPoison);
  MceDecoded d = decode_mce(r, CpuVendor::kIntel);
  // Bit 55 is AR (with SER_P); 53, 44 and 43 are no flags of Intel's.
  EXPECT_EQ(d.status_bits, v({"VAL", "UC", "EN", "S", "AR"}));
  EXPECT_FALSE(d.amd_layout);
  // Bits 54:53 and 52:38 are Intel's threshold and corrected count.
  MceDecoded counted =
      decode_mce(regs(kVal | (uint64_t{2} << 53) | (uint64_t{9} << 38)), CpuVendor::kIntel);
  EXPECT_EQ(counted.threshold, "yellow");
  EXPECT_EQ(counted.corrected_count, 9u);
  // MCA_IPID is AMD's: no bank type on Intel.
  r.ipid = 0x0000009600000000;
  EXPECT_FALSE(decode_mce(r, CpuVendor::kIntel).smca_bank_type);
}

TEST(MceVendorRow, AmdNamesItsOwnBitsOnly) {
  MceRegisters r =
      regs(kVal | kUc | kEn | kS | kTcc | kSyndv | kCecc | kUecc | kDeferred | kPoison | kScrub);
  r.ipid = 0x0000009600000000;
  MceDecoded d = decode_mce(r, CpuVendor::kAmd);
  // Bit 55 is TCC, bit 56 nothing, whatever MCG_CAP says.
  EXPECT_EQ(d.status_bits,
            v({"VAL", "UC", "EN", "TCC", "SyndV", "CECC", "UECC", "Deferred", "Poison", "Scrub"}));
  EXPECT_TRUE(d.amd_layout);
  EXPECT_EQ(d.smca_bank_type, "umc");
  // Intel's threshold and count fields are not AMD's.
  MceDecoded counted =
      decode_mce(regs(kVal | (uint64_t{2} << 53) | (uint64_t{9} << 38)), CpuVendor::kAmd);
  EXPECT_FALSE(counted.threshold);
  EXPECT_FALSE(counted.corrected_count);
  // AMD's class and grader: a deferred error.
  MceDecoded deferred = decode_mce(regs(kVal | kEn | kDeferred), CpuVendor::kAmd);
  EXPECT_EQ(deferred.severity, MceSeverity::kDeferred);
  EXPECT_EQ(deferred.kernel_severity, KernelSeverity::kDeferred);
}

TEST(MceVendorRow, HygonDecodesAsAmd) {
  for (uint64_t status : kStatuses) {
    MceRegisters r = regs(status);
    EXPECT_EQ(decoding_without_vendor(r, CpuVendor::kHygon),
              decoding_without_vendor(r, CpuVendor::kAmd))
        << std::hex << status;
    r.ipid = 0x000700B000000000;
    r.cs = 0x10;
    EXPECT_EQ(decoding_without_vendor(r, CpuVendor::kHygon),
              decoding_without_vendor(r, CpuVendor::kAmd))
        << std::hex << status;
  }
  // And not as Intel: bit 55 is TCC.
  EXPECT_EQ(decode_mce(regs(kVal | kTcc), CpuVendor::kHygon).status_bits, v({"VAL", "TCC"}));
  EXPECT_EQ(mce_json(decode_mce(regs(kVal), CpuVendor::kHygon))["vendor"], "hygon");
}

TEST(MceVendorRow, ZhaoxinAndCentaurDecodeAsIntel) {
  for (CpuVendor vendor : {CpuVendor::kZhaoxin, CpuVendor::kCentaur}) {
    for (uint64_t status : kStatuses) {
      for (std::optional<uint64_t> cap :
           {std::optional<uint64_t>(kCapSer), std::optional<uint64_t>(0xa),
            std::optional<uint64_t>()}) {
        MceRegisters r = regs(status, cap);
        EXPECT_EQ(decoding_without_vendor(r, vendor), decoding_without_vendor(r, CpuVendor::kIntel))
            << cpu_vendor_name(vendor) << " " << std::hex << status;
      }
    }
  }
  // Linux grades them with Intel's table: UCNA, not AMD's verdicts.
  MceDecoded ucna = decode_mce(regs(0xb400000000000090), CpuVendor::kZhaoxin);
  EXPECT_EQ(ucna.severity, MceSeverity::kUcna);
  EXPECT_EQ(ucna.kernel_severity, KernelSeverity::kUcna);
  EXPECT_EQ(ucna.kernel_severity_rule.rfind("Uncorrected no action required (", 0), 0u)
      << ucna.kernel_severity_rule;
  EXPECT_EQ(decode_mce(regs(kVal | kS | kAr | kUc), CpuVendor::kCentaur).status_bits,
            v({"VAL", "UC", "S", "AR"}));
}

TEST(MceVendorRow, UnknownVendorDecodesByTheSdm) {
  for (uint64_t status : kStatuses) {
    MceRegisters r = regs(status);
    EXPECT_EQ(decoding_without_vendor(r, CpuVendor::kUnknown),
              decoding_without_vendor(r, CpuVendor::kIntel))
        << std::hex << status;
  }
  EXPECT_EQ(&vendor_ops(CpuVendor::kUnknown), &vendor_ops(CpuVendor::kIntel));
}

// The kernel's X86_VENDOR_* numbers in a record pick the row: 9 Hygon,
// 10 Zhaoxin, 5 Centaur.
TEST(MceVendorRow, RecordVendorPicksTheRow) {
  MceRegisters r = regs(kVal | kEn | kTcc | kDeferred);
  const std::pair<uint8_t, CpuVendor> cases[] = {{0, CpuVendor::kIntel},
                                                 {2, CpuVendor::kAmd},
                                                 {5, CpuVendor::kCentaur},
                                                 {9, CpuVendor::kHygon},
                                                 {10, CpuVendor::kZhaoxin}};
  for (auto [number, vendor] : cases) {
    r.cpuvendor = number;
    MceDecoded d = decode_mce(r);
    EXPECT_EQ(d.vendor, vendor) << int(number);
    EXPECT_EQ(vendor_ops(vendor).vendor, vendor) << int(number);
    const bool amd = vendor == CpuVendor::kAmd || vendor == CpuVendor::kHygon;
    EXPECT_EQ(d.amd_layout, amd) << int(number);
    EXPECT_EQ(d.severity, amd ? MceSeverity::kDeferred : MceSeverity::kCorrected) << int(number);
  }
}

// CPUID leaf 1 EAX: Skylake-SP stepping 4 (0x50654) is family 6 model 0x55;
// an AMD family 17h part (0x800f12) adds the extended family to 15.
TEST(MceCpuModel, SignatureAndModelTables) {
  CpuSignature skx = cpu_signature(0x50654);
  EXPECT_EQ(skx.family, 6u);
  EXPECT_EQ(skx.model, 0x55u);
  EXPECT_EQ(skx.stepping, 4u);
  CpuSignature zen = cpu_signature(0x800f12);
  EXPECT_EQ(zen.family, 0x17u);
  EXPECT_EQ(zen.model, 0x01u);
  EXPECT_EQ(zen.stepping, 2u);
  // A model's tables hang off its vendor's row.
  const CpuModel models[] = {{6, 0x55, 0x55, "Skylake-SP"}, {6, 0x6a, 0x6c, "Ice Lake-SP"}};
  VendorOps ops = intel_vendor_ops();
  ops.models = models;
  const CpuModel* found = find_cpu_model(ops, 0x50654);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->name, "Skylake-SP");
  found = find_cpu_model(ops, 0x606a6);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->name, "Ice Lake-SP");
  EXPECT_EQ(find_cpu_model(ops, 0x306f2), nullptr);                // family 6 model 0x3f: no table
  EXPECT_EQ(find_cpu_model(ops, 0x800f12), nullptr);               // another family
  ASSERT_NE(find_cpu_model(amd_vendor_ops(), 0x800f12), nullptr);  // family 17h model 1: Zen
  EXPECT_EQ(find_cpu_model(amd_vendor_ops(), 0x800f12)->name, "Zen/Zen+ (family 17h)");
}

}  // namespace
}  // namespace pp::mce

#include "mce/vendor.h"

namespace pp::mce {

CpuSignature cpu_signature(uint32_t eax) {
  uint32_t family = (eax >> 8) & 0xF;
  uint32_t model = (eax >> 4) & 0xF;
  if (family == 6 || family == 15)
    model |= ((eax >> 16) & 0xF) << 4;
  if (family == 15)
    family += (eax >> 20) & 0xFF;
  return {family, model, eax & 0xF};
}

const VendorOps& vendor_ops(CpuVendor vendor) {
  switch (vendor) {
    case CpuVendor::kAmd:
      return amd_vendor_ops();
    case CpuVendor::kHygon:
      return hygon_vendor_ops();
    case CpuVendor::kZhaoxin:
      return zhaoxin_vendor_ops();
    case CpuVendor::kCentaur:
      return centaur_vendor_ops();
    case CpuVendor::kIntel:
    case CpuVendor::kUnknown:
      break;
  }
  return intel_vendor_ops();
}

const CpuModel* find_cpu_model(const VendorOps& ops, uint32_t cpuid_eax) {
  const CpuSignature sig = cpu_signature(cpuid_eax);
  for (const CpuModel& m : ops.models)
    if (m.family == sig.family && sig.model >= m.first_model && sig.model <= m.last_model)
      return &m;
  return nullptr;
}

std::optional<VendorModel> vendor_from_cpu_model(uint32_t cpuid_eax) {
  // Each vendor's table holds only its own families (Intel 6, AMD 17h, 19h
  // and 1Ah, Hygon 18h), so at most one names a signature.
  for (CpuVendor vendor : {CpuVendor::kIntel, CpuVendor::kAmd, CpuVendor::kHygon})
    if (const CpuModel* model = find_cpu_model(vendor_ops(vendor), cpuid_eax))
      return VendorModel{vendor, model};
  return std::nullopt;
}

}  // namespace pp::mce

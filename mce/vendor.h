// A CPU vendor's machine-check architecture as one row of a table: what its
// status register's bits are called, how its class is decided, how Linux
// grades it, whether MCA_IPID applies, how it names a cache level, and its
// CPU models' own tables. decode_mce() picks the row from the CpuVendor
// (vendor_ops()) and asks it; nothing else in mce/ tests the vendor.
//
// One file per vendor family holds its rows and everything they point to:
//
//   vendor_intel.cpp  Intel, and Zhaoxin and Centaur, which Linux grades
//                     with Intel's table (the SDM's layout)
//   vendor_amd.cpp    AMD and Hygon (AMD's MCA_STATUS, SMCA, AMD's grader)
//
// A new vendor is a row (and a file when it is a new family) and a case in
// vendor_ops(); a CPU model's tables (bank names, MSCOD meanings, where a
// memory error lies) are a CpuModel in its vendor's `models`.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "mce/decode.h"
#include "mce/severity.h"

namespace pp::mce {

// A status register bit by name. The name applies only when IA32_MCG_CAP
// has `mcg_cap` set (0: always); otherwise the bit is reserved.
struct StatusBit {
  uint64_t mask;
  const char* name;
  uint64_t mcg_cap = 0;
};

// CPUID leaf 1 EAX (SDM vol. 2A, CPUID "Version Information"): stepping
// 3:0, model 7:4, family 11:8, extended model 19:16, extended family 27:20;
// families 6 and 15 add the extended model above the model, family 15 the
// extended family to the family.
struct CpuSignature {
  uint32_t family = 0, model = 0, stepping = 0;
};
CpuSignature cpu_signature(uint32_t cpuid_eax);

// A CPU model's own tables, hung off its vendor's row: the models from
// `first_model` to `last_model` of `family`. The tables a model brings are
// fields of this struct.
struct CpuModel {
  uint32_t family = 0;
  uint32_t first_model = 0, last_model = 0;  // inclusive
  std::string_view name;                     // "Skylake-SP"
  // Every part of the model has IA32_MCG_CAP.SER_P: a record without
  // MCG_CAP (a kernel log, a software-injected record) is classed and
  // graded with it, and the output says so.
  bool ser_p = false;
  // Fills what the model's tables say of a record: MceDecoded::unit,
  // mscod_meaning, location. nullptr: nothing beyond the name.
  void (*decode)(const MceRegisters& regs, MceDecoded& d) = nullptr;
};

struct VendorOps {
  CpuVendor vendor = CpuVendor::kUnknown;
  // MCA_STATUS has AMD's bits (55 TCC, not AR; Deferred, Poison...) rather
  // than the SDM's: MceDecoded::amd_layout.
  bool amd_layout = false;
  // MCA_IPID exists (AMD's Scalable MCA): a record's IPID names the bank's
  // type (MceDecoded::smca_bank_type).
  bool mca_ipid = false;
  // The vendor's own status bits, named after the common ones (VAL to PCC),
  // in this order.
  std::span<const StatusBit> status_bits;
  // Decodes the rest of the status the vendor defines (fields, notes) once
  // the bits are named; nullptr when there is nothing more.
  void (*decode_fields)(const MceRegisters& regs, MceDecoded& d) = nullptr;
  // The architectural class and the rule that decided it.
  SeverityVerdict (*classify)(const MceRegisters& regs) = nullptr;
  // What Linux's grader decides for this vendor's CPUs.
  KernelSeverityVerdict (*grade)(const MceRegisters& regs) = nullptr;
  // Which cache an MCA error code's LL (0..3) names.
  std::string_view (*cache_level_name)(uint8_t ll) = nullptr;
  // The CPU models that have tables of their own (find_cpu_model()).
  std::span<const CpuModel> models;
};

// The row that decodes `vendor`'s machine checks. An unknown vendor decodes
// by the SDM, with Intel's row: Linux grades every vendor but AMD and Hygon
// with Intel's table.
const VendorOps& vendor_ops(CpuVendor vendor);

// The model of `ops`' vendor that `cpuid_eax` (mce_record's cpuid) names, or
// nullptr when it has no table of its own.
const CpuModel* find_cpu_model(const VendorOps& ops, uint32_t cpuid_eax);

// For a record whose vendor is unknown: the vendor whose model table names
// `cpuid_eax`, with the model, or nullopt when none does.
struct VendorModel {
  CpuVendor vendor;
  const CpuModel* model;
};
std::optional<VendorModel> vendor_from_cpu_model(uint32_t cpuid_eax);

// The model tables, each in its vendor's file: model_intel.cpp (Xeon
// Scalable server parts), vendor_amd.cpp (Zen generations).
std::span<const CpuModel> intel_cpu_models();
std::span<const CpuModel> amd_cpu_models();
std::span<const CpuModel> hygon_cpu_models();

// The kernel grader's messages (the text it prints as "Machine check:
// <message>" when it panics, and the rule names this decoder gives) to the
// level the rule decides; nullopt for a text that is none of them. Matched
// without regard to case.
std::optional<KernelSeverity> intel_kernel_message_severity(std::string_view message);
std::optional<KernelSeverity> amd_kernel_message_severity(std::string_view message);

// AMD SMCA: from MCA_IPID (bank type, instance) and STATUS[21:16] (the
// extended error code), the unit, the code's meaning and, for a unified
// memory controller's DRAM error, the channel and chip select. In smca.cpp;
// AMD's and Hygon's decode_fields.
void decode_smca(const MceRegisters& regs, MceDecoded& d);

// The rows, each in its family's file.
const VendorOps& intel_vendor_ops();    // vendor_intel.cpp
const VendorOps& zhaoxin_vendor_ops();  // vendor_intel.cpp
const VendorOps& centaur_vendor_ops();  // vendor_intel.cpp
const VendorOps& amd_vendor_ops();      // vendor_amd.cpp
const VendorOps& hygon_vendor_ops();    // vendor_amd.cpp

// AMD SMCA: the kind of block behind a bank, from MCA_IPID's HardwareID
// (43:32) and McaType (63:48), by the short name Linux gives it ("umc",
// "l3_cache"); "unknown (hwid 0x777, mcatype 0x42)" for a pair it does not
// know. In vendor_amd.cpp.
std::string smca_bank_type_name(uint64_t ipid);

}  // namespace pp::mce

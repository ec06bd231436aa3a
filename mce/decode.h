// The machine-check decoder: from the registers of one machine-check record
// (the fields of the kernel's mce:mce_record tracepoint, a kernel log's
// machine-check lines, or values typed on the command line) to what an
// operator needs: the status bits by name, the MCA error code's class and
// sub-fields, the SDM's severity class and the severity Linux's grader gives.
//
//   MceRegisters regs;
//   regs.status = 0xbe00000000000150;  // VAL UC EN MISCV ADDRV PCC, code 0x0150
//   regs.mcgstatus = 0x5;              // RIPV MCIP
//   regs.bank = 1;
//   MceDecoded d = decode_mce(regs);
//   d.severity == MceSeverity::kFatal;  // UC with PCC
//   std::string text;
//   print_mce_text(d, text);            // "CPU ? bank 1: fatal ..." and detail lines
//   nlohmann::json j = mce_json(d);     // the object of perf-persistent-decode(1)
//
// Each vendor's part (its status bits, class rule, kernel grader, SMCA, cache
// names and CPU models) is its row in vendor.h.
//
// Sources (facts only, each rule cites its own in mce/*.cpp):
// - Intel SDM vol. 3B, chapter "Machine-Check Architecture": IA32_MCG_CAP,
//   IA32_MCG_STATUS, IA32_MCi_STATUS, the MCA error codes and the UCR error
//   classification.
// - AMD64 APM vol. 2, "Machine Check Architecture", and AMD's PPRs: MCA_STATUS
//   bits TCC, SyndV, Deferred, Poison; MCA_IPID's HardwareID and McaType.
// - Linux arch/x86/kernel/cpu/mce/severity.c: the kernel's grading rules;
//   arch/x86/kernel/cpu/mce/amd.c: the SMCA bank types.
//
// The decoder is pure: no kernel access, no allocation beyond its result.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mce/error_code.h"
#include "mce/location.h"

namespace pp::mce {

enum class CpuVendor { kUnknown, kIntel, kAmd, kHygon, kZhaoxin, kCentaur };

// "intel", "amd", "hygon", "zhaoxin", "centaur", "unknown".
std::string_view cpu_vendor_name(CpuVendor vendor);
// The vendor a name names (as above, case-insensitive), or nullopt.
std::optional<CpuVendor> cpu_vendor_from_name(std::string_view name);
// The kernel's X86_VENDOR_* number (as mce_record's cpuvendor carries it:
// 0 Intel, 2 AMD, 5 Centaur, 9 Hygon, 10 Zhaoxin) to a vendor; kUnknown for
// any other number.
CpuVendor cpu_vendor_from_kernel(uint8_t x86_vendor);

// What a record, a log line or the command line gives; absent = nullopt.
struct MceRegisters {
  std::optional<uint64_t> status, mcgstatus, mcgcap, addr, misc, synd, ipid, ip, tsc, walltime,
      ppin;
  std::optional<uint32_t> cpu, cpuid, apicid, socketid, bank, microcode;
  std::optional<uint8_t> cs;
  std::optional<uint8_t> cpuvendor;  // the kernel's X86_VENDOR_* number as mce_record carries it

  bool operator==(const MceRegisters&) const = default;
};

// MceRegisters' fields by the names mce_record's format gives them, which
// mce_json() writes: the u64 ones, then the u32 ones; in JSON a register is
// a hex string and a count, an id or a time a number (mce_json_is_hex()).
// cs and cpuvendor, u8, are not in them.
using MceHexRegister = std::optional<uint64_t> MceRegisters::*;
using MceNumRegister = std::optional<uint32_t> MceRegisters::*;
inline constexpr std::pair<const char*, MceHexRegister> kMceHexRegisters[] = {
    {"status", &MceRegisters::status}, {"mcgstatus", &MceRegisters::mcgstatus},
    {"mcgcap", &MceRegisters::mcgcap}, {"addr", &MceRegisters::addr},
    {"misc", &MceRegisters::misc},     {"synd", &MceRegisters::synd},
    {"ipid", &MceRegisters::ipid},     {"ip", &MceRegisters::ip},
    {"tsc", &MceRegisters::tsc},       {"walltime", &MceRegisters::walltime},
    {"ppin", &MceRegisters::ppin},
};
inline constexpr std::pair<const char*, MceNumRegister> kMceNumRegisters[] = {
    {"cpu", &MceRegisters::cpu},           {"bank", &MceRegisters::bank},
    {"cpuid", &MceRegisters::cpuid},       {"apicid", &MceRegisters::apicid},
    {"socketid", &MceRegisters::socketid}, {"microcode", &MceRegisters::microcode},
};

// Whether mce_json() writes the register of this name as a hex string
// ("0x50654"): every u64 register but walltime (seconds, a number), and of
// the u32 ones cpuid and microcode, which the kernel's log prints in hex.
bool mce_json_is_hex(std::string_view name);

// The SDM's classes (and AMD's deferred), exactly one per record.
enum class MceSeverity {
  kInvalid,      // VAL=0: the bank holds no error
  kCorrected,    // UC=0
  kDeferred,     // AMD: UC=0 with Deferred=1
  kUcna,         // SER_P: UC=1 PCC=0 S=0 AR=0, uncorrected, no action required
  kSrao,         // SER_P: UC=1 PCC=0 S=1 AR=0, software recoverable, action optional
  kSrar,         // SER_P: UC=1 PCC=0 S=1 AR=1, software recoverable, action required
  kFatal,        // UC=1 PCC=1: processor context corrupt
  kUncorrected,  // every other UC=1
};
// "invalid", "corrected", "deferred", "ucna", "srao", "srar", "fatal", "uncorrected".
std::string_view mce_severity_name(MceSeverity severity);
// How bad a machine-check severity is, for comparisons: invalid 0,
// corrected 1, deferred 2, ucna 3, srao 4, srar 5, uncorrected 6, fatal 7;
// -1 for a name that is none of them.
int mce_severity_rank(std::string_view name);
// The machine-check severity names least to most severe: name i has rank i.
std::span<const std::string_view> mce_severities_by_rank();
// Every severity's name, in the enum's order.
std::span<const std::string_view> mce_severity_names();
// The severity a name names, or nullopt.
std::optional<MceSeverity> mce_severity_from_name(std::string_view name);

// Linux's severity levels (arch/x86/kernel/cpu/mce/internal.h), lowest first.
enum class KernelSeverity { kNo, kDeferred, kUcna, kKeep, kSome, kAo, kUc, kAr, kPanic };
// "no", "deferred", "ucna", "keep", "some", "ao", "uc", "ar", "panic".
std::string_view kernel_severity_name(KernelSeverity severity);
// How bad a kernel severity name is, for comparisons: the enum's order, no 0
// ... panic 8; -1 for a name that is none of them.
int kernel_severity_rank(std::string_view name);

// Where a record came from, when the caller knows. The kernel emits the
// mce:mce_record tracepoint from a work item after it has survived the
// error (it panics inside the #MC handler, before any trace record), so a
// tracepoint record is never graded as a panic.
enum class MceOrigin { kUnknown, kTracepoint, kKernelLog };
// "unknown", "tracepoint", "kernel-log".
std::string_view mce_origin_name(MceOrigin origin);

// The kernel's own verdict on a machine check, as its log printed it
// ("Machine check: Processor context corrupt", "Kernel panic - not syncing:
// Fatal machine check"), compared with this decoder's grade
// (compare_kernel_verdict() in severity.h).
struct KernelVerdict {
  std::string text;                        // the line as the log gave it, trimmed
  std::optional<KernelSeverity> severity;  // the level its message names; nullopt: not one of them
  std::string rule;                        // the grader's message the text carries, if any
  bool agrees = true;                      // false: the decode grades it otherwise
};

struct MceDecoded {
  MceRegisters regs;
  MceOrigin origin = MceOrigin::kUnknown;
  CpuVendor vendor = CpuVendor::kUnknown;  // the override, else cpuvendor, else unknown
  bool amd_layout = false;                 // AMD or Hygon: MCA_STATUS has AMD's bits (VendorOps)

  std::vector<std::string> status_bits;       // names of the bits set, high bit first
  std::vector<std::string> mcg_status_bits;   // RIPV, EIPV, MCIP, LMCE
  std::optional<uint32_t> corrected_count;    // bits 52:38, only with MCG_CAP.CMCI_P
  std::optional<std::string> threshold;       // bits 54:53, only with MCG_CAP.TES_P
  uint16_t mscod = 0;                         // bits 31:16, model specific, raw
  McaErrorCode error_code;                    // bits 15:0
  std::optional<std::string> smca_bank_type;  // AMD, from MCA_IPID

  MceSeverity severity = MceSeverity::kInvalid;
  std::string severity_rule;  // the SDM rule that decided it
  KernelSeverity kernel_severity = KernelSeverity::kNo;
  std::string kernel_severity_rule;  // the kernel's rule that matched, and why

  // What could not be decided and what would decide it ("S and AR not
  // decoded: MCG_CAP unknown; give --mcgcap").
  std::vector<std::string> notes;

  // The CPU model's tables (vendor.h: CpuModel), from regs.cpuid.
  std::optional<std::string> cpu_model;      // "Skylake-SP", "Zen 3/4 (family 19h)"
  std::optional<std::string> unit;           // the bank's unit: "PCU", "iMC 0 channel 1", "UMC"
  std::optional<std::string> mscod_meaning;  // Intel: the model's meaning of the MSCOD
  std::optional<uint8_t> xec;                // AMD SMCA: extended error code, STATUS[21:16]
  std::optional<std::string> xec_meaning;    // its meaning for the bank's type
  std::optional<MemoryLocation> location;    // where in memory, as far as the registers say
  // What was taken from the CPU model because the record lacked it, each
  // said in the output: "vendor intel", "MCG_CAP.SER_P".
  std::vector<std::string> assumed;
  std::optional<KernelVerdict> kernel_verdict;  // the log's verdict line, when one was given
  std::string advice;                           // one sentence for the on-call engineer (advice.h)
};

// Says where `d` came from and grades it again as that implies: a record
// from the tracepoint that the rules graded panic was survived (see
// MceOrigin). decode_mce(regs, vendor, origin) does the same; this is for a
// caller that learns the origin after decoding.
void set_mce_origin(MceDecoded& d, MceOrigin origin);

// The memory location a decoded machine check gives, or nullopt when the
// record does not locate one (not a memory error, or a model without a
// table). Same as d.location; the fault model's one entry point.
std::optional<MemoryLocation> memory_location(const MceDecoded& d);

// Decodes `regs`. A missing status decodes as 0 (invalid). `vendor_override`
// wins over regs.cpuvendor when not kUnknown; with neither, the vendor is
// assumed from the CPU model (regs.cpuid) when that names one, and said in
// `assumed`. `origin` kTracepoint: the kernel survived the error.
MceDecoded decode_mce(const MceRegisters& regs, CpuVendor vendor_override = CpuVendor::kUnknown,
                      MceOrigin origin = MceOrigin::kUnknown);

// The MCA error code in words, as print_mce_text() shows it, with the
// vendor's names of cache levels: "cache: data read (rrrr=drd), tt=data,
// ll=00 (L1)".
std::string describe_error_code(const MceDecoded& d);

// Appends the human text, one or more lines each ending in '\n':
//
//   CPU 0 bank 1: fatal, kernel: panic
//     status 0xbe00000000000150: VAL UC EN MISCV ADDRV PCC
//     ...
void print_mce_text(const MceDecoded& d, std::string& out);

// The documented object (Documentation/perf-persistent-decode.txt, JSON).
nlohmann::json mce_json(const MceDecoded& d);

// The registers and vendor back from mce_json()'s object (a stored record's
// "mce"), so that it decodes again to the same text: what the object lacks
// stays absent.
struct MceFromJson {
  MceRegisters regs;
  CpuVendor vendor = CpuVendor::kUnknown;
};
MceFromJson mce_registers_from_json(const nlohmann::ordered_json& object);

}  // namespace pp::mce

#include "mce/decode.h"

#include <array>
#include <cctype>
#include <cstdio>

#include "base/json.h"
#include "base/strings.h"
#include "base/terminal.h"
#include "mce/advice.h"
#include "mce/bits.h"
#include "mce/severity.h"
#include "mce/vendor.h"

namespace pp::mce {
namespace {

using namespace bits;

// IA32_MCi_STATUS flags that every layout has (SDM vol. 3B; AMD APM vol. 2);
// each vendor's own bits are in its row (vendor.h).
constexpr StatusBit kCommonStatusBits[] = {
    {kVal, "VAL"},     {kOver, "OVER"},   {kUc, "UC"},   {kEn, "EN"},
    {kMiscv, "MISCV"}, {kAddrv, "ADDRV"}, {kPcc, "PCC"},
};
// IA32_MCG_STATUS (SDM vol. 3B): RIPV, EIPV, MCIP, LMCE_S (printed LMCE).
constexpr StatusBit kMcgStatusBits[] = {
    {kRipv, "RIPV"}, {kEipv, "EIPV"}, {kMcip, "MCIP"}, {kLmce, "LMCE"}};

// Names in enum order, one table per enum (checked by the static_asserts).
constexpr std::string_view kVendorNames[] = {"unknown", "intel",   "amd",
                                             "hygon",   "zhaoxin", "centaur"};
static_assert(std::size(kVendorNames) == size_t(CpuVendor::kCentaur) + 1);
constexpr std::string_view kSeverityNames[] = {"invalid", "corrected", "deferred", "ucna",
                                               "srao",    "srar",      "fatal",    "uncorrected"};
static_assert(std::size(kSeverityNames) == size_t(MceSeverity::kUncorrected) + 1);
// Least to most severe; the names in that order.
constexpr MceSeverity kSeverityByRank[] = {
    MceSeverity::kInvalid, MceSeverity::kCorrected, MceSeverity::kDeferred,    MceSeverity::kUcna,
    MceSeverity::kSrao,    MceSeverity::kSrar,      MceSeverity::kUncorrected, MceSeverity::kFatal};
static_assert(std::size(kSeverityByRank) == std::size(kSeverityNames));
constexpr auto kSeverityNamesByRank = [] {
  std::array<std::string_view, std::size(kSeverityByRank)> names{};
  for (size_t i = 0; i < names.size(); i++)
    names[i] = kSeverityNames[size_t(kSeverityByRank[i])];
  return names;
}();
constexpr std::string_view kKernelSeverityNames[] = {"no", "deferred", "ucna", "keep", "some",
                                                     "ao", "uc",       "ar",   "panic"};
static_assert(std::size(kKernelSeverityNames) == size_t(KernelSeverity::kPanic) + 1);

// The enum value whose name in `names` is `name`, or nullopt.
template <typename Enum, size_t N>
std::optional<Enum> from_name(const std::string_view (&names)[N], std::string_view name) {
  for (size_t i = 0; i < N; i++)
    if (names[i] == name)
      return Enum(i);
  return std::nullopt;
}

std::string hex16(uint16_t v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%04x", unsigned(v));
  return buf;
}

std::string ll_bits(uint8_t ll) {
  return std::string(1, (ll & 2) ? '1' : '0') + ((ll & 1) ? '1' : '0');
}

std::string join_words(const std::vector<std::string>& words) {
  return words.empty() ? "(none)" : join(words, " ");
}

}  // namespace

std::string_view cpu_vendor_name(CpuVendor vendor) {
  return kVendorNames[size_t(vendor)];
}

std::optional<CpuVendor> cpu_vendor_from_name(std::string_view name) {
  return from_name<CpuVendor>(kVendorNames, ascii_lower(name));
}

// arch/x86/include/asm/processor.h: X86_VENDOR_INTEL 0, _AMD 2, _CENTAUR 5,
// _HYGON 9, _ZHAOXIN 10.
CpuVendor cpu_vendor_from_kernel(uint8_t x86_vendor) {
  switch (x86_vendor) {
    case 0:
      return CpuVendor::kIntel;
    case 2:
      return CpuVendor::kAmd;
    case 5:
      return CpuVendor::kCentaur;
    case 9:
      return CpuVendor::kHygon;
    case 10:
      return CpuVendor::kZhaoxin;
    default:
      return CpuVendor::kUnknown;
  }
}

std::string_view mce_severity_name(MceSeverity severity) {
  return kSeverityNames[size_t(severity)];
}

std::span<const std::string_view> mce_severity_names() {
  return kSeverityNames;
}

std::optional<MceSeverity> mce_severity_from_name(std::string_view name) {
  return from_name<MceSeverity>(kSeverityNames, name);
}

std::string_view kernel_severity_name(KernelSeverity severity) {
  return kKernelSeverityNames[size_t(severity)];
}

int mce_severity_rank(std::string_view name) {
  for (size_t i = 0; i < kSeverityNamesByRank.size(); i++)
    if (kSeverityNamesByRank[i] == name)
      return int(i);
  return -1;
}

std::span<const std::string_view> mce_severities_by_rank() {
  return kSeverityNamesByRank;
}

int kernel_severity_rank(std::string_view name) {
  std::optional<KernelSeverity> severity = from_name<KernelSeverity>(kKernelSeverityNames, name);
  return severity ? int(*severity) : -1;
}

std::string_view mce_origin_name(MceOrigin origin) {
  switch (origin) {
    case MceOrigin::kTracepoint:
      return "tracepoint";
    case MceOrigin::kKernelLog:
      return "kernel-log";
    case MceOrigin::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<MemoryLocation> memory_location(const MceDecoded& d) {
  return d.location;
}

namespace {

// The kernel emits mce:mce_record from a work item after the #MC handler
// returned (arch/x86/kernel/cpu/mce/core.c: mce_log() queues the record,
// the notifier chain traces it); a fatal error panics in the handler first.
// So a tracepoint record graded panic by the rules was survived: the rules
// lacked a fact the kernel had (a recoverable kernel IP, MCG_CAP).
void grade_as_survived(MceDecoded& d) {
  const std::string was = d.kernel_severity_rule;
  const uint64_t status = d.regs.status.value_or(0);
  std::string why;
  if (was.starts_with("Data load in unrecoverable area of kernel") ||
      was.starts_with("Uncorrected unrecoverable error in kernel context")) {
    d.kernel_severity = KernelSeverity::kAr;
    why = "the IP was in a recoverable kernel copy routine, graded ar";
  } else if (status & bits::kUc) {
    d.kernel_severity = KernelSeverity::kUc;
    why = "graded uc (uncorrected, survived)";
  } else {
    d.kernel_severity = KernelSeverity::kKeep;
    why = "graded keep";
  }
  d.kernel_severity_rule =
      "not a panic: the record reached the mce_record tracepoint, which the "
      "kernel emits only after surviving the error; the rules alone say \"" +
      was + "\", so " + why;
}

}  // namespace

MceDecoded decode_mce(const MceRegisters& regs, CpuVendor vendor_override, MceOrigin origin) {
  MceDecoded d;
  d.regs = regs;
  d.vendor = vendor_override;
  if (d.vendor == CpuVendor::kUnknown && regs.cpuvendor)
    d.vendor = cpu_vendor_from_kernel(*regs.cpuvendor);
  const CpuModel* model = nullptr;
  if (d.vendor == CpuVendor::kUnknown && regs.cpuid) {
    if (std::optional<VendorModel> vm = vendor_from_cpu_model(*regs.cpuid)) {
      d.vendor = vm->vendor;
      model = vm->model;
      d.assumed.push_back("vendor " + std::string(cpu_vendor_name(d.vendor)));
    }
  }
  const VendorOps& ops = vendor_ops(d.vendor);
  if (!model && regs.cpuid)
    model = find_cpu_model(ops, *regs.cpuid);
  if (model)
    d.cpu_model = std::string(model->name);
  d.amd_layout = ops.amd_layout;
  if (d.vendor == CpuVendor::kUnknown && (regs.ipid || regs.synd))
    d.notes.push_back("vendor unknown but IPID/SYND given: give --vendor amd for AMD's layout");

  // What the rules read: the record, with MCG_CAP.SER_P taken from the
  // model when the record has no MCG_CAP. A MCG_CAP of 0 was not read: a
  // CPU that logs a machine check has at least one bank (MCG_CAP[7:0]),
  // and the kernel's software injection (mce-inject's "sw") records 0.
  MceRegisters eff = regs;
  if ((!regs.mcgcap || *regs.mcgcap == 0) && model && model->ser_p && !ops.amd_layout) {
    eff.mcgcap = kMcgSerP;
    d.assumed.push_back("MCG_CAP.SER_P");
    if (regs.mcgcap)
      d.notes.push_back("MCG_CAP 0 in the record (not read: no CPU has 0 banks)");
  }

  const uint64_t status = regs.status.value_or(0);
  if (!regs.status)
    d.notes.push_back("no status: decoded as 0");
  for (const StatusBit& b : kCommonStatusBits)
    if (status & b.mask)
      d.status_bits.emplace_back(b.name);
  const uint64_t cap = eff.mcgcap.value_or(0);
  for (const StatusBit& b : ops.status_bits)
    if ((status & b.mask) && (cap & b.mcg_cap) == b.mcg_cap)
      d.status_bits.emplace_back(b.name);
  if (ops.mca_ipid && regs.ipid)
    d.smca_bank_type = smca_bank_type_name(*regs.ipid);
  if (ops.decode_fields)
    ops.decode_fields(eff, d);
  if (model && model->decode)
    model->decode(eff, d);
  if (regs.mcgstatus)
    for (const StatusBit& b : kMcgStatusBits)
      if (*regs.mcgstatus & b.mask)
        d.mcg_status_bits.emplace_back(b.name);

  d.mscod = uint16_t(status >> 16);
  d.error_code = decode_mca_error_code(uint16_t(status));

  SeverityVerdict sev = ops.classify(eff);
  d.severity = sev.severity;
  d.severity_rule = std::move(sev.rule);
  KernelSeverityVerdict ksev = ops.grade(eff);
  d.kernel_severity = ksev.severity;
  d.kernel_severity_rule = std::move(ksev.rule);
  for (auto& n : ksev.notes)
    d.notes.push_back(std::move(n));
  d.advice = mce_advice(d);
  set_mce_origin(d, origin);
  return d;
}

void set_mce_origin(MceDecoded& d, MceOrigin origin) {
  d.origin = origin;
  if (origin == MceOrigin::kTracepoint && d.kernel_severity == KernelSeverity::kPanic) {
    grade_as_survived(d);
    d.advice = mce_advice(d);
  }
}

namespace {

// "socket 0 controller 1 channel 0 slot 0 rank 3 ..." for the layers present.
std::string location_words(const MemoryLocation& l) {
  std::string out;
  auto add = [&](const char* name, const std::optional<uint32_t>& v, bool hex = false) {
    if (v)
      out += std::string(out.empty() ? "" : " ") + name + " " +
             (hex ? hex_u64(*v) : std::to_string(*v));
  };
  if (!l.label.empty())
    out = "DIMM " + l.label;
  add("socket", l.socket);
  add("controller", l.controller);
  add("channel", l.channel);
  add("slot", l.slot);
  add("rank", l.rank);
  add("subrank", l.subrank);
  add("chip-select", l.chip_select);
  add("bank-group", l.bank_group);
  add("bank", l.bank);
  add("row", l.row, true);
  add("column", l.column, true);
  add("device", l.device);
  add("ecc-mode", l.ecc_mode);
  if (l.transient)
    out += std::string(out.empty() ? "" : " ") + (*l.transient ? "transient" : "not-transient");
  if (l.address)
    out += std::string(out.empty() ? "" : " ") + "address " + hex_u64(*l.address);
  return out;
}

}  // namespace

std::string describe_error_code(const MceDecoded& d) {
  return describe_mca_error_code(d.error_code, vendor_ops(d.vendor).cache_level_name);
}

void print_mce_text(const MceDecoded& d, std::string& out) {
  const MceRegisters& r = d.regs;
  // Headline: where, and the two verdicts.
  out += "CPU " + (r.cpu ? std::to_string(*r.cpu) : std::string("?")) + " bank " +
         (r.bank ? std::to_string(*r.bank) : std::string("?")) + ": " +
         std::string(mce_severity_name(d.severity)) +
         ", kernel: " + std::string(kernel_severity_name(d.kernel_severity)) + "\n";
  out += "  status " + hex_u64(r.status.value_or(0)) + ": " + join_words(d.status_bits);
  if (d.threshold)
    out += ", threshold " + *d.threshold;
  if (d.corrected_count)
    out += ", corrected count " + std::to_string(*d.corrected_count);
  out += "\n";
  if (r.mcgstatus)
    out += "  mcgstatus " + hex_u64(*r.mcgstatus) + ": " + join_words(d.mcg_status_bits) + "\n";
  out += "  error code " + hex16(d.error_code.raw) + " " + describe_error_code(d) + "; mscod " +
         hex16(d.mscod) + "\n";
  if (d.smca_bank_type)
    out += "  smca bank type " + *d.smca_bank_type + "\n";
  if (d.cpu_model || !d.assumed.empty()) {
    out += "  cpu model " + d.cpu_model.value_or("unknown");
    if (!d.assumed.empty())
      out += "; assumed from the CPU model: " + join(d.assumed, ", ");
    out += "\n";
  }
  if (d.unit)
    out += "  unit " + *d.unit + "\n";
  if (d.mscod_meaning)
    out += "  mscod " + hex16(d.mscod) + ": " + *d.mscod_meaning + "\n";
  if (d.xec)
    out += "  extended error code " + std::to_string(*d.xec) +
           (d.xec_meaning ? ": " + *d.xec_meaning : std::string()) + "\n";
  if (d.location)
    out += "  memory " + location_words(*d.location) + "\n";
  std::string regs_line;
  auto add = [&](const char* name, const std::optional<uint64_t>& v) {
    if (v)
      regs_line += std::string(regs_line.empty() ? "" : " ") + name + " " + hex_u64(*v);
  };
  add("addr", r.addr);
  add("misc", r.misc);
  add("synd", r.synd);
  add("ipid", r.ipid);
  add("mcgcap", r.mcgcap);
  add("ip", r.ip);
  if (r.cs)
    regs_line += std::string(regs_line.empty() ? "" : " ") + "cs " + hex_u64(*r.cs);
  add("tsc", r.tsc);
  add("ppin", r.ppin);
  if (!regs_line.empty())
    out += "  " + regs_line + "\n";
  std::string where;
  auto addn = [&](const char* name, const std::optional<uint32_t>& v, bool as_hex) {
    if (v)
      where += std::string(where.empty() ? "" : " ") + name + " " +
               (as_hex ? hex_u64(*v) : std::to_string(*v));
  };
  if (d.vendor != CpuVendor::kUnknown)
    where += "vendor " + std::string(cpu_vendor_name(d.vendor));
  addn("cpuid", r.cpuid, true);
  addn("socket", r.socketid, false);
  addn("apic", r.apicid, true);
  addn("microcode", r.microcode, true);
  if (r.walltime)
    where += std::string(where.empty() ? "" : " ") + "time " + std::to_string(*r.walltime);
  if (!where.empty())
    out += "  " + where + "\n";
  out += "  severity " + std::string(mce_severity_name(d.severity)) + ": " + d.severity_rule + "\n";
  out += "  kernel severity " + std::string(kernel_severity_name(d.kernel_severity)) + ": " +
         d.kernel_severity_rule + "\n";
  if (d.kernel_verdict) {
    const KernelVerdict& v = *d.kernel_verdict;
    out += "  kernel said \"";
    append_terminal_safe(out, v.text);  // the log's words: anyone's
    out += "\"";
    if (v.severity)
      out += " (" + std::string(kernel_severity_name(*v.severity)) + ")" +
             (v.agrees ? ", agrees" : ", disagrees with this decode");
    out += "\n";
  }
  for (const auto& n : d.notes)
    out += "  note: " + n + "\n";
  if (!d.advice.empty())
    out += "  advice: " + d.advice + "\n";
}

bool mce_json_is_hex(std::string_view name) {
  if (name == "walltime")
    return false;  // seconds since the epoch: a number ("time" is its ISO form)
  // The kernel prints these in hex ("PROCESSOR 0:50654 ... microcode 2006e05"),
  // and neither is a count.
  if (name == "cpuid" || name == "microcode")
    return true;
  for (const auto& [hex, reg] : kMceHexRegisters)
    if (name == hex)
      return true;
  return false;
}

nlohmann::json mce_json(const MceDecoded& d) {
  const MceRegisters& r = d.regs;
  nlohmann::json j = nlohmann::json::object();
  // Registers as hex strings, counts and ids as numbers (mce_json_is_hex()).
  for (const auto& [name, reg] : kMceHexRegisters)
    if (r.*reg)
      j[name] =
          mce_json_is_hex(name) ? nlohmann::json(hex_u64(*(r.*reg))) : nlohmann::json(*(r.*reg));
  for (const auto& [name, reg] : kMceNumRegisters)
    if (r.*reg)
      j[name] = mce_json_is_hex(name) ? nlohmann::json(hex_u64(*(r.*reg)))
                                      : nlohmann::json(uint64_t(*(r.*reg)));
  if (r.cs)
    j["cs"] = uint64_t(*r.cs);
  j["vendor"] = std::string(cpu_vendor_name(d.vendor));
  j["status_bits"] = d.status_bits;
  j["mcg_status_bits"] = d.mcg_status_bits;
  if (d.corrected_count)
    j["corrected_count"] = *d.corrected_count;
  if (d.threshold)
    j["threshold"] = *d.threshold;
  j["mscod"] = hex_u64(d.mscod);
  j["error_code"] = hex16(d.error_code.raw);
  const McaErrorCode& c = d.error_code;
  j["error_class"] = std::string(mca_error_class_name(c.error_class));
  if (c.simple)
    j["simple"] = *c.simple;
  if (c.internal)
    j["internal"] = *c.internal;
  if (c.tt)
    j["tt"] = *c.tt;
  if (c.ll) {
    j["ll"] = ll_bits(*c.ll);
    j["cache"] = std::string(vendor_ops(d.vendor).cache_level_name(*c.ll));
  }
  if (c.rrrr)
    j["rrrr"] = *c.rrrr;
  if (c.pp)
    j["pp"] = *c.pp;
  if (c.t)
    j["t"] = *c.t;
  if (c.ii)
    j["ii"] = *c.ii;
  if (c.mmm)
    j["mmm"] = *c.mmm;
  if (c.cccc) {
    if (*c.cccc == 0xF)
      j["cccc"] = "unspecified";
    else
      j["cccc"] = *c.cccc;
  }
  if (c.error_class != McaErrorClass::kSimple && c.error_class != McaErrorClass::kInternal)
    j["f"] = c.f;
  if (d.smca_bank_type)
    j["smca_bank_type"] = *d.smca_bank_type;
  if (d.cpu_model)
    j["cpu_model"] = *d.cpu_model;
  if (!d.assumed.empty())
    j["assumed_from_cpu_model"] = d.assumed;
  if (d.unit)
    j["unit"] = *d.unit;
  if (d.mscod_meaning)
    j["mscod_meaning"] = *d.mscod_meaning;
  if (d.xec)
    j["xec"] = *d.xec;
  if (d.xec_meaning)
    j["xec_meaning"] = *d.xec_meaning;
  if (d.location)
    j["location"] = memory_location_json(*d.location);
  if (d.origin != MceOrigin::kUnknown)
    j["origin"] = std::string(mce_origin_name(d.origin));
  j["severity"] = std::string(mce_severity_name(d.severity));
  j["severity_rule"] = d.severity_rule;
  j["kernel_severity"] = std::string(kernel_severity_name(d.kernel_severity));
  j["kernel_severity_rule"] = d.kernel_severity_rule;
  if (d.kernel_verdict) {
    const KernelVerdict& v = *d.kernel_verdict;
    nlohmann::json kv = {{"text", v.text}};
    if (v.severity) {
      kv["severity"] = std::string(kernel_severity_name(*v.severity));
      kv["agrees"] = v.agrees;
    }
    if (!v.rule.empty())
      kv["rule"] = v.rule;
    j["kernel_verdict"] = kv;
  }
  if (!d.notes.empty())
    j["notes"] = d.notes;
  j["advice"] = d.advice;
  return j;
}

MceFromJson mce_registers_from_json(const nlohmann::ordered_json& object) {
  MceFromJson out;
  if (!object.is_object())
    return out;
  auto number = [&](const char* name) -> std::optional<uint64_t> {
    auto f = object.find(name);
    if (f == object.end() || !f->is_number_unsigned())
      return std::nullopt;
    return f->get<uint64_t>();
  };
  for (const auto& [name, reg] : kMceHexRegisters)
    if (auto f = object.find(name); f != object.end())
      out.regs.*reg = u64_from_hex_json(*f);
  // Either form: what mce_json() writes now, and what older histories hold
  // (cpuid and microcode as numbers, walltime as a hex string).
  for (const auto& [name, reg] : kMceNumRegisters)
    if (auto f = object.find(name); f != object.end())
      if (auto v = u64_from_hex_json(*f); v && *v <= UINT32_MAX)
        out.regs.*reg = uint32_t(*v);
  if (auto v = number("cs"); v && *v <= UINT8_MAX)
    out.regs.cs = uint8_t(*v);
  if (auto v = object.find("vendor"); v != object.end() && v->is_string())
    out.vendor = cpu_vendor_from_name(v->get<std::string>()).value_or(CpuVendor::kUnknown);
  return out;
}

}  // namespace pp::mce

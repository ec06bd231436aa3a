// The RAS tracepoints' decoders (ras_events.h): one function per event, each
// reading its fields by name, so a format that gains or loses a field still
// decodes what it has. The tables' sources are named beside each.
#include "mce/ras_events.h"

#include <algorithm>
#include <cstdio>
#include <span>

#include "base/json.h"
#include "base/strings.h"
#include "base/terminal.h"
#include "mce/aer.h"
#include "mce/ras_keys.h"

namespace pp::mce {
namespace {

using ordered_json = nlohmann::ordered_json;

// Longest raw section shown whole, in bytes: a record's data is bounded by
// the tracepoint (a page at most) but a text line should stay readable.
constexpr size_t kRawTextBytes = 64;

std::string hex32(uint64_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08llx", static_cast<unsigned long long>(v & 0xffffffff));
  return buf;
}

// Bytes as lower-case hex digits, two per byte, no separator.
std::string hex_bytes(const std::vector<uint64_t>& bytes, size_t limit = SIZE_MAX) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  size_t n = std::min(bytes.size(), limit);
  out.reserve(n * 2);
  for (size_t i = 0; i < n; i++) {
    out += kDigits[(bytes[i] >> 4) & 0xf];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

class Reader {
 public:
  explicit Reader(const RasFields& fields) : fields_(fields) {}

  std::optional<uint64_t> number(std::string_view name) const {
    const RasValue* v = find(name);
    return v ? v->number : std::nullopt;
  }
  std::string text(std::string_view name) const {
    const RasValue* v = find(name);
    return v && v->text ? *v->text : std::string();
  }
  // An array's elements; a string's bytes when the field was kept as text.
  std::optional<std::vector<uint64_t>> elements(std::string_view name) const {
    const RasValue* v = find(name);
    if (!v)
      return std::nullopt;
    if (v->elements)
      return v->elements;
    if (v->text) {
      std::vector<uint64_t> out;
      for (char c : *v->text)
        out.push_back(uint8_t(c));
      return out;
    }
    return std::nullopt;
  }
  // A byte array, `len` bytes of it when a length field says so.
  std::optional<std::vector<uint64_t>> bytes(std::string_view name,
                                             std::optional<uint64_t> len) const {
    auto e = elements(name);
    if (!e)
      return std::nullopt;
    for (uint64_t& b : *e)
      b &= 0xff;
    if (len && *len < e->size())
      e->resize(size_t(*len));
    return e;
  }

 private:
  const RasValue* find(std::string_view name) const {
    auto it = fields_.find(name);
    return it == fields_.end() ? nullptr : &it->second;
  }
  const RasFields& fields_;
};

// "uncorrected (non-fatal)": the common severity, and the source's own name
// for it when that says more.
std::string severity_words(MceSeverity common, std::string_view own) {
  std::string out(mce_severity_name(common));
  if (!own.empty() && own != out)
    out += " (" + std::string(own) + ")";
  return out;
}

// A decoding of `source`, its JSON's first key set.
RasDecoded start(std::string_view source) {
  RasDecoded d;
  d.source = std::string(source);
  d.json["source"] = d.source;
  return d;
}

void set_severity(RasDecoded& d, MceSeverity s) {
  d.severity = s;
  d.json["severity"] = std::string(mce_severity_name(s));
}

// The CPER severity of a record with a `sev` field (uncorrected when it has
// none) and its "cper_severity" key (null then); returns the raw value.
std::optional<uint64_t> set_cper_severity(RasDecoded& d, const Reader& f) {
  auto sev = f.number("sev");
  set_severity(d, sev ? cper_common_severity(*sev) : MceSeverity::kUncorrected);
  d.json["cper_severity"] = sev ? ordered_json(cper_severity_name(*sev)) : ordered_json(nullptr);
  return sev;
}

// A raw section: its JSON as hex, a text line with its length and the
// first kRawTextBytes bytes.
void raw_section(RasDecoded& d, const Reader& f, std::string_view key, std::string_view label,
                 std::string_view field, std::string_view len_field) {
  auto len = f.number(len_field);
  auto bytes = f.bytes(field, len);
  if (!bytes)
    return;
  d.json[std::string(key)] = hex_bytes(*bytes);
  if (bytes->empty())
    return;
  std::string line = std::string(label) + " (" + std::to_string(bytes->size()) +
                     " bytes): " + hex_bytes(*bytes, kRawTextBytes);
  if (bytes->size() > kRawTextBytes)
    line += "...";
  d.lines.push_back(std::move(line));
}

RasDecoded decode_aer(const Reader& f) {
  RasDecoded d = start("aer");
  AerError e;
  e.device = f.text("dev_name");
  e.status = uint32_t(f.number("status").value_or(0));
  e.raw_severity = uint8_t(f.number("severity").value_or(0));
  if (f.number("tlp_header_valid").value_or(0)) {
    if (auto words = f.elements("tlp_header"); words && words->size() >= 4)
      e.tlp_header = std::array<uint32_t, 4>{uint32_t((*words)[0]), uint32_t((*words)[1]),
                                             uint32_t((*words)[2]), uint32_t((*words)[3])};
  }
  std::optional<AerSeverity> sev = e.severity();
  set_severity(d, sev ? aer_common_severity(*sev) : MceSeverity::kUncorrected);
  std::string sev_name = sev ? std::string(aer_severity_name(*sev))
                             : "unknown (" + std::to_string(e.raw_severity) + ")";
  d.where = e.device;
  d.json["aer_severity"] = sev_name;
  d.json["device"] = e.device;
  d.json["status"] = hex32(e.status);
  std::vector<std::string> bits = aer_status_bits(e.status, e.correctable());
  d.json["status_bits"] = bits;
  if (e.tlp_header) {
    ordered_json words = ordered_json::array();
    for (uint32_t w : *e.tlp_header)
      words.push_back(hex32(w));
    d.json["tlp_header"] = words;
  } else {
    d.json["tlp_header"] = nullptr;
  }
  std::string first = "PCIe AER " + severity_words(d.severity, sev_name) + " on " +
                      (e.device.empty() ? std::string("an unnamed device") : e.device);
  first += ": " + (bits.empty() ? std::string("no status bit set") : join(bits, ", "));
  d.lines.push_back(std::move(first));
  std::string second = "status " + hex32(e.status) + ", TLP header ";
  if (e.tlp_header) {
    for (size_t i = 0; i < 4; i++)
      second += (i ? " " : "") + hex32((*e.tlp_header)[i]);
  } else {
    second += "not available";
  }
  d.lines.push_back(std::move(second));
  return d;
}

// enum mf_action_page_type and enum mf_result as the 6.1 format's print
// format lists them (tests/fixtures/tracefs-debian-6.1/events/ras/
// memory_failure_event/format).
constexpr std::string_view kPageTypes[] = {"reserved kernel page",
                                           "high-order kernel page",
                                           "kernel slab page",
                                           "different compound page after locking",
                                           "huge page",
                                           "free huge page",
                                           "unmapping failed page",
                                           "dirty swapcache page",
                                           "clean swapcache page",
                                           "dirty mlocked LRU page",
                                           "clean mlocked LRU page",
                                           "dirty unevictable LRU page",
                                           "clean unevictable LRU page",
                                           "dirty LRU page",
                                           "clean LRU page",
                                           "already truncated LRU page",
                                           "free buddy page",
                                           "dax page",
                                           "unsplit thp",
                                           "unknown page"};
constexpr std::string_view kResults[] = {"Ignored", "Failed", "Delayed", "Recovered"};

template <size_t N>
std::string table_name(const std::string_view (&table)[N], std::optional<uint64_t> v) {
  if (!v)
    return "unknown";
  // int fields: a negative value arrives sign-extended.
  if (*v < N)
    return std::string(table[*v]);
  return "unknown (" + std::to_string(int64_t(*v)) + ")";
}

RasDecoded decode_memory_failure(const Reader& f) {
  RasDecoded d = start("memory_failure");
  // Every memory failure is an uncorrected error the kernel acted on: its
  // result says whether the page was taken away cleanly.
  set_severity(d, MceSeverity::kUncorrected);
  auto pfn = f.number("pfn");
  std::string type = table_name(kPageTypes, f.number("type"));
  std::string result = table_name(kResults, f.number("result"));
  d.json["pfn"] = pfn ? ordered_json(hex_u64(*pfn)) : ordered_json(nullptr);
  // The page's physical address, 4 KiB pages (memory_failure_event is x86's
  // and arm64's, whose PAGE_SHIFT the record does not carry: 12 on both
  // distributions' kernels).
  d.json["address"] = pfn ? ordered_json(hex_u64(*pfn << 12)) : ordered_json(nullptr);
  d.json["page_type"] = type;
  d.json["result"] = result;
  d.where = pfn ? "pfn " + hex_u64(*pfn) : std::string();
  d.lines.push_back("memory failure at pfn " + (pfn ? hex_u64(*pfn) : std::string("unknown")) +
                    " (" + type + "): " + result);
  return d;
}

std::string_view midr_implementer(uint64_t code) {
  // Arm Architecture Reference Manual, MIDR_EL1.Implementer.
  switch (code) {
    case 0x41:
      return "Arm";
    case 0x42:
      return "Broadcom";
    case 0x43:
      return "Cavium";
    case 0x46:
      return "Fujitsu";
    case 0x48:
      return "HiSilicon";
    case 0x4e:
      return "NVIDIA";
    case 0x50:
      return "Applied Micro";
    case 0x51:
      return "Qualcomm";
    case 0x61:
      return "Apple";
    case 0x69:
      return "Intel";
    case 0xc0:
      return "Ampere";
    default:
      return "unknown";
  }
}

RasDecoded decode_arm(const Reader& f) {
  RasDecoded d = start("arm");
  // 6.1's record has no severity; the kernel traces the section of a record
  // it logged, and GHES logs errors of every severity.
  auto sev = set_cper_severity(d, f);
  if (auto cpu = f.number("cpu")) {
    d.json["cpu"] = int64_t(int32_t(*cpu));
    d.where = "cpu " + std::to_string(int32_t(*cpu));
  }
  uint64_t mpidr = f.number("mpidr").value_or(0);
  uint64_t midr = f.number("midr").value_or(0);
  d.json["mpidr"] = hex_u64(mpidr);
  // MPIDR_EL1: Aff0 [7:0], Aff1 [15:8], Aff2 [23:16], Aff3 [39:32].
  d.json["affinity"] = {mpidr >> 32 & 0xff, mpidr >> 16 & 0xff, mpidr >> 8 & 0xff, mpidr & 0xff};
  d.json["affinity_level"] = f.number("affinity").value_or(0);
  d.json["midr"] = hex_u64(midr);
  // MIDR_EL1: Implementer [31:24], Variant [23:20], Architecture [19:16],
  // PartNum [15:4], Revision [3:0].
  std::string implementer(midr_implementer(midr >> 24 & 0xff));
  d.json["implementer"] = implementer;
  d.json["part"] = hex_u64(midr >> 4 & 0xfff);
  d.json["variant"] = midr >> 20 & 0xf;
  d.json["revision"] = midr & 0xf;
  d.json["running_state"] = f.number("running_state").value_or(0);
  d.json["psci_state"] = hex_u64(f.number("psci_state").value_or(0));
  std::string first = "ARM processor error";
  if (sev)
    first += " " + severity_words(d.severity, cper_severity_name(*sev));
  if (!d.where.empty())
    first += " on " + d.where;
  d.lines.push_back(first);
  char line[160];
  std::snprintf(line, sizeof(line),
                "MPIDR 0x%llx (affinity level %llu), MIDR 0x%llx (%s part 0x%llx)",
                static_cast<unsigned long long>(mpidr),
                static_cast<unsigned long long>(f.number("affinity").value_or(0)),
                static_cast<unsigned long long>(midr), implementer.c_str(),
                static_cast<unsigned long long>(midr >> 4 & 0xfff));
  d.lines.push_back(line);
  raw_section(d, f, "error_info", "error info", "pei_buf", "pei_len");
  raw_section(d, f, "context_info", "context info", "ctx_buf", "ctx_len");
  raw_section(d, f, "vendor_info", "vendor info", "oem_buf", "oem_len");
  return d;
}

RasDecoded decode_non_standard(const Reader& f) {
  RasDecoded d = start("non_standard");
  auto sev = set_cper_severity(d, f);
  // Both GUIDs are printed with %pU (bytes in order) by the print format.
  std::string section = guid_text(f.elements("sec_type").value_or(std::vector<uint64_t>{}), false);
  std::string fru = guid_text(f.elements("fru_id").value_or(std::vector<uint64_t>{}), false);
  std::string fru_text = f.text("fru_text");
  d.json["section_type"] = section;
  d.json["fru_id"] = fru;
  d.json["fru_text"] = fru_text;
  d.where = fru_text;
  d.lines.push_back("vendor error section " + section + " " +
                    severity_words(d.severity, sev ? cper_severity_name(*sev) : "") +
                    (fru_text.empty() ? std::string() : " on " + fru_text));
  d.lines.push_back("FRU " + fru);
  raw_section(d, f, "data", "data", "buf", "len");
  return d;
}

// UEFI specification, appendix N, Memory Error Section, Memory Error Type
// (the kernel's cper_mem_err_type_str(), drivers/firmware/efi/cper.c).
constexpr std::string_view kMemErrorTypes[] = {"unknown",
                                               "no error",
                                               "single-bit ECC",
                                               "multi-bit ECC",
                                               "single-symbol chipkill ECC",
                                               "multi-symbol chipkill ECC",
                                               "master abort",
                                               "target abort",
                                               "parity error",
                                               "watchdog timeout",
                                               "invalid address",
                                               "mirror Broken",
                                               "memory sparing",
                                               "scrub corrected error",
                                               "scrub uncorrected error",
                                               "physical memory map-out event"};

uint64_t le(const std::vector<uint64_t>& b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && at + i < b.size(); i++)
    v |= (b[at + i] & 0xff) << (8 * i);
  return v;
}

// struct cper_mem_err_compact (include/linux/cper.h, 55 bytes, packed):
//   u64 validation_bits @0; u16 node @8, card @10, module @12, bank @14,
//   device @16, row @18, column @20, bit_pos @22; u64 requestor_id @24,
//   responder_id @32, target_id @40; u16 rank @48, mem_array_handle @50,
//   mem_dev_handle @52; u8 extended @54.
// The validation bits are the CPER memory error section's (UEFI appendix
// N; CPER_MEM_VALID_* in include/linux/cper.h): 3 node, 4 card, 5 module,
// 6 bank, 7 device, 8 row, 9 column, 10 bit position, 11 requestor, 12
// responder, 13 target, 15 rank, 16 card handle, 17 module handle, 18 row
// extension, 19 bank group, 20 bank address, 21 chip id. `extended` holds
// row bits 16-17 in its bits 0-1 and the chip id in bits 5-7.
void memory_location(RasDecoded& d, const std::vector<uint64_t>& b) {
  ordered_json loc = ordered_json::object();
  if (b.size() < 55) {
    d.json["location"] = nullptr;
    return;
  }
  uint64_t valid = le(b, 0, 8);
  auto has = [&](unsigned bit) { return (valid >> bit) & 1; };
  uint64_t extended = le(b, 54, 1);
  if (has(3))
    loc["node"] = le(b, 8, 2);
  if (has(4))
    loc["card"] = le(b, 10, 2);
  if (has(5))
    loc["module"] = le(b, 12, 2);
  uint64_t bank = le(b, 14, 2);
  if (has(19))
    loc["bank_group"] = bank >> 8;
  if (has(20))
    loc["bank_address"] = bank & 0xff;
  if (has(6) && !has(19) && !has(20))
    loc["bank"] = bank;
  if (has(7))
    loc["device"] = le(b, 16, 2);
  if (has(8) || has(18)) {
    uint64_t row = le(b, 18, 2);
    if (has(18))
      row |= (extended & 0x3) << 16;
    loc["row"] = row;
  }
  if (has(9))
    loc["column"] = le(b, 20, 2);
  if (has(10))
    loc["bit_position"] = le(b, 22, 2);
  if (has(11))
    loc["requestor_id"] = hex_u64(le(b, 24, 8));
  if (has(12))
    loc["responder_id"] = hex_u64(le(b, 32, 8));
  if (has(13))
    loc["target_id"] = hex_u64(le(b, 40, 8));
  if (has(15))
    loc["rank"] = le(b, 48, 2);
  if (has(16))
    loc["card_handle"] = hex_u64(le(b, 50, 2));
  if (has(17))
    loc["module_handle"] = hex_u64(le(b, 52, 2));
  if (has(21))
    loc["chip_id"] = extended >> 5;
  std::string text;
  for (const auto& [key, value] : loc.items()) {
    text += text.empty() ? "" : ", ";
    text += key + " " + (value.is_string() ? value.get<std::string>() : dump_json(value));
  }
  if (!text.empty())
    d.lines.push_back("location: " + text);
  d.json["location"] = std::move(loc);
}

RasDecoded decode_extlog_mem(const Reader& f) {
  RasDecoded d = start("extlog_mem");
  auto sev = set_cper_severity(d, f);
  if (auto seq = f.number("err_seq"))
    d.json["sequence"] = *seq;
  std::string type = table_name(kMemErrorTypes, f.number("etype"));
  d.json["error_type"] = type;
  uint64_t pa = f.number("pa").value_or(0);
  uint64_t lsb = f.number("pa_mask_lsb").value_or(0);
  d.json["address"] = hex_u64(pa);
  d.json["address_mask_lsb"] = lsb;
  std::string fru = guid_text(f.elements("fru_id").value_or(std::vector<uint64_t>{}), true);
  std::string fru_text = f.text("fru_text");
  d.json["fru_id"] = fru;
  d.json["fru_text"] = fru_text;
  d.where = fru_text;
  d.lines.push_back("eMCA memory error " +
                    severity_words(d.severity, sev ? cper_severity_name(*sev) : "") + ": " + type +
                    " at " + hex_u64(pa) + " (mask lsb " + std::to_string(lsb) + ")" +
                    (fru_text.empty() ? std::string() : " on " + fru_text));
  if (auto data = f.elements("data"))
    memory_location(d, *data);
  d.lines.push_back("FRU " + fru);
  return d;
}

// CXL RAS capability (CXL 3.0 specification, 8.2.4.16): the bits of the
// Uncorrectable and Correctable Error Status registers that
// cxl_aer_uncorrectable_error and cxl_aer_correctable_error trace.
constexpr StatusBit kCxlUncorrectable[] = {
    {0, "Cache Data Parity"},
    {1, "Cache Address Parity"},
    {2, "Cache Byte Enable Parity"},
    {3, "Cache Data ECC"},
    {4, "Memory Data Parity"},
    {5, "Memory Address Parity"},
    {6, "Memory Byte Enable Parity"},
    {7, "Memory Data ECC"},
    {8, "REINIT Threshold"},
    {9, "Rsvd Encoding Violation"},
    {10, "Poison Received"},
    {11, "Receiver Overflow"},
    {14, "Component Specific Error"},
    {15, "IDE Tx Error"},
    {16, "IDE Rx Error"},
};
constexpr StatusBit kCxlCorrectable[] = {
    {0, "Cache Data ECC"},       {1, "Memory Data ECC"},       {2, "CRC Threshold"},
    {3, "Retry Threshold"},      {4, "Cache Poison Received"}, {5, "Memory Poison Received"},
    {6, "Physical Layer Error"},
};
// enum cxl_event_log_type (drivers/cxl/cxlmem.h): the log a CXL event
// record was read from.
constexpr std::string_view kCxlLogs[] = {"informational", "warning", "failure", "fatal"};
// The event records' own codes (CXL 3.0 specification, 8.2.9.2.1.1 General
// Media and 8.2.9.2.1.2 DRAM Event Record: Memory Event Type, Transaction
// Type, Memory Event Descriptor; 8.2.9.2.1.3 Memory Module Event Record:
// Device Event Type), with the values the kernel's print formats give them
// (Debian 12's 6.12: tests/fixtures/tracefs-debian-6.12/events/cxl/).
constexpr std::string_view kCxlMemoryEventTypes[] = {"ECC Error", "Invalid Address",
                                                     "Data Path Error"};
constexpr std::string_view kCxlTransactions[] = {"Unknown",
                                                 "Host Read",
                                                 "Host Write",
                                                 "Host Scan Media",
                                                 "Host Inject Poison",
                                                 "Internal Media Scrub",
                                                 "Internal Media Management"};
constexpr StatusBit kCxlDescriptor[] = {
    {0, "Uncorrectable Event"}, {1, "Threshold Event"}, {2, "Poison List Overflow"}};
constexpr std::string_view kCxlModuleEvents[] = {"Health Status Change", "Media Status Change",
                                                 "Life Used Change",     "Temperature Change",
                                                 "Data Path Error",      "LSA Error"};
// cxl_poison's trace_type (enum cxl_poison_trace_type: why the entry was
// traced) and source (the Media Error Record's Error Source, 8.2.9.8.4.1).
constexpr std::string_view kCxlPoisonTraces[] = {"list", "inject", "clear"};
constexpr std::string_view kCxlPoisonSources[] = {"unknown",  "external", "internal", "injected",
                                                  "reserved", "reserved", "reserved", "vendor"};

RasDecoded decode_cxl(std::string_view tracepoint, const Reader& f) {
  RasDecoded d = start("cxl");
  std::string_view event = tracepoint.substr(tracepoint.find(':') + 1);
  d.json["event"] = std::string(event);
  MceSeverity severity = MceSeverity::kCorrected;
  std::optional<bool> correctable;
  if (event == "cxl_aer_uncorrectable_error") {
    severity = MceSeverity::kUncorrected;
    correctable = false;
  } else if (event == "cxl_aer_correctable_error") {
    correctable = true;
  } else if (event == "cxl_poison") {
    severity = MceSeverity::kUncorrected;
  } else if (auto log = f.number("log")) {
    d.json["log"] = table_name(kCxlLogs, log);
    severity = *log >= 3   ? MceSeverity::kFatal
               : *log == 2 ? MceSeverity::kUncorrected
                           : MceSeverity::kCorrected;
  }
  set_severity(d, severity);
  std::string memdev = f.text("memdev");
  d.where = memdev;
  d.json["memdev"] = memdev;
  d.json["host"] = f.text("host");
  if (auto serial = f.number("serial"))
    d.json["serial"] = hex_u64(*serial);
  std::string first = "CXL " + std::string(event) + " " + std::string(mce_severity_name(severity)) +
                      (memdev.empty() ? std::string() : " on " + memdev);
  if (correctable) {
    uint32_t status = uint32_t(f.number("status").value_or(0));
    d.json["status"] = hex32(status);
    std::vector<std::string> names = status_bit_names(
        status, *correctable ? std::span<const StatusBit>(kCxlCorrectable) : kCxlUncorrectable);
    d.json["status_bits"] = names;
    first += ": " + (names.empty() ? std::string("no status bit set") : join(names, ", "));
    // The First Error Pointer as the kernel traces it: the bit of `status`
    // that came first (a mask, not an index).
    if (auto fe = f.number("first_error")) {
      d.json["first_error"] = hex32(*fe);
      d.json["first_error_bits"] = status_bit_names(uint32_t(*fe), kCxlUncorrectable);
    }
  }
  // What an event record says happened: the memory event's type, the
  // transaction that met it and its descriptor; the module event's type;
  // why a poison entry was traced and where the poison came from.
  std::vector<std::string> what;
  if (event == "cxl_general_media" || event == "cxl_dram") {
    if (auto type = f.number("type")) {
      d.json["error_type"] = table_name(kCxlMemoryEventTypes, type);
      what.push_back(d.json["error_type"].get<std::string>());
    }
    if (auto tt = f.number("transaction_type")) {
      d.json["transaction"] = table_name(kCxlTransactions, tt);
      what.push_back(d.json["transaction"].get<std::string>());
    }
    if (auto desc = f.number("descriptor")) {
      std::vector<std::string> names = status_bit_names(uint32_t(*desc), kCxlDescriptor);
      d.json["descriptor"] = names;
      what.insert(what.end(), names.begin(), names.end());
    }
  } else if (event == "cxl_memory_module") {
    if (auto type = f.number("event_type")) {
      d.json["module_event"] = table_name(kCxlModuleEvents, type);
      what.push_back(d.json["module_event"].get<std::string>());
    }
  } else if (event == "cxl_poison") {
    if (auto trace = f.number("trace_type")) {
      d.json["poison_trace"] = table_name(kCxlPoisonTraces, trace);
      what.push_back("poison " + d.json["poison_trace"].get<std::string>());
    }
    if (auto source = f.number("source")) {
      d.json["poison_source"] = table_name(kCxlPoisonSources, source);
      what.push_back("source " + d.json["poison_source"].get<std::string>());
    }
  }
  if (!what.empty())
    first += ": " + join(what, ", ");
  // An hpa of all ones is the kernel's "no region maps this DPA"
  // (drivers/cxl/core: ULLONG_MAX when it cannot translate): left out.
  for (const char* key : {"dpa", "hpa"})
    if (auto v = f.number(key); v && !(std::string_view(key) == "hpa" && *v == ~uint64_t(0)))
      d.json[key] = hex_u64(*v);
  if (auto len = f.number("dpa_length"))
    d.json["dpa_length"] = *len;
  d.lines.push_back(std::move(first));
  if (d.json.contains("dpa"))
    d.lines.push_back("device physical address " + d.json["dpa"].get<std::string>());
  return d;
}

}  // namespace

RasFields ras_fields_from_json(const nlohmann::ordered_json& fields) {
  RasFields out;
  if (!fields.is_object())
    return out;
  auto number_of = [](const nlohmann::ordered_json& v) -> std::optional<uint64_t> {
    if (v.is_number_unsigned())
      return v.get<uint64_t>();
    if (v.is_number_integer())
      return uint64_t(v.get<int64_t>());
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      if (s.size() > 2 && s[0] == '0' && s[1] == 'x')
        return u64_from_hex_json(nlohmann::json(s));
    }
    return std::nullopt;
  };
  for (const auto& [key, v] : fields.items()) {
    RasValue value;
    if (v.is_array()) {
      std::vector<uint64_t> e;
      for (const auto& x : v)
        e.push_back(number_of(x).value_or(0));
      value.elements = std::move(e);
    } else if (auto n = number_of(v)) {
      value.number = n;
    } else if (v.is_string()) {
      value.text = v.get<std::string>();
    } else {
      continue;
    }
    out.emplace(key, std::move(value));
  }
  return out;
}

const std::vector<std::string_view>& ras_tracepoints() {
  static const std::vector<std::string_view> all = {
      "mce:mce_record",
      "ras:mc_event",
      "ras:aer_event",
      "ras:memory_failure_event",
      "ras:arm_event",
      "ras:non_standard_event",
      "ras:extlog_mem_event",
      "cxl:cxl_aer_uncorrectable_error",
      "cxl:cxl_aer_correctable_error",
      "cxl:cxl_general_media",
      "cxl:cxl_dram",
      "cxl:cxl_memory_module",
      "cxl:cxl_generic_event",
      "cxl:cxl_poison",
  };
  return all;
}

const std::vector<std::string_view>& ras_json_keys() {
  static const std::vector<std::string_view> keys = {"source",
                                                     "severity",
                                                     "aer_severity",
                                                     "device",
                                                     "status",
                                                     "status_bits",
                                                     "tlp_header",
                                                     "pfn",
                                                     "address",
                                                     "page_type",
                                                     "result",
                                                     "cper_severity",
                                                     "cpu",
                                                     "mpidr",
                                                     "affinity",
                                                     "affinity_level",
                                                     "midr",
                                                     "implementer",
                                                     "part",
                                                     "variant",
                                                     "revision",
                                                     "running_state",
                                                     "psci_state",
                                                     "error_info",
                                                     "context_info",
                                                     "vendor_info",
                                                     "section_type",
                                                     "fru_id",
                                                     "fru_text",
                                                     "data",
                                                     "sequence",
                                                     "error_type",
                                                     "address_mask_lsb",
                                                     "location",
                                                     "event",
                                                     "log",
                                                     "memdev",
                                                     "host",
                                                     "serial",
                                                     "first_error",
                                                     "first_error_bits",
                                                     "transaction",
                                                     "descriptor",
                                                     "module_event",
                                                     "poison_trace",
                                                     "poison_source",
                                                     "dpa",
                                                     "hpa",
                                                     "dpa_length"};
  return keys;
}

bool is_ras_event(std::string_view tp) {
  return tp == "ras:aer_event" || tp == "ras:memory_failure_event" || tp == "ras:arm_event" ||
         tp == "ras:non_standard_event" || tp == "ras:extlog_mem_event" ||
         (tp.starts_with("cxl:cxl_") && tp != "cxl:cxl_overflow");
}

std::optional<RasDecoded> decode_ras_event(std::string_view tp, const RasFields& fields) {
  Reader f(fields);
  if (tp == "ras:aer_event")
    return decode_aer(f);
  if (tp == "ras:memory_failure_event")
    return decode_memory_failure(f);
  if (tp == "ras:arm_event")
    return decode_arm(f);
  if (tp == "ras:non_standard_event")
    return decode_non_standard(f);
  if (tp == "ras:extlog_mem_event")
    return decode_extlog_mem(f);
  if (is_ras_event(tp))
    return decode_cxl(tp, f);
  return std::nullopt;
}

void print_ras_text(const RasDecoded& d, std::string& out) {
  for (size_t i = 0; i < d.lines.size(); i++) {
    if (i)
      out += "  ";
    // Device names, FRU texts and labels are what firmware or a driver
    // chose: escaped, so that none can move a reader's cursor.
    append_terminal_safe(out, d.lines[i]);
    out += '\n';
  }
}

std::string_view cper_severity_name(uint64_t sev) {
  switch (sev) {
    case 0:
      return "recoverable";
    case 1:
      return "fatal";
    case 2:
      return "corrected";
    case 3:
      return "informational";
    default:
      return "unknown";
  }
}

MceSeverity cper_common_severity(uint64_t sev) {
  switch (sev) {
    case 1:
      return MceSeverity::kFatal;
    case 2:
    case 3:
      return MceSeverity::kCorrected;
    default:
      return MceSeverity::kUncorrected;
  }
}

std::string guid_text(const std::vector<uint64_t>& bytes, bool little_endian) {
  if (bytes.size() < 16)
    return "";
  // Output byte order: an EFI guid_t stores its u32, u16, u16 little-endian.
  static constexpr int kLittle[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      out += '-';
    uint64_t b = bytes[size_t(little_endian ? kLittle[i] : i)] & 0xff;
    out += kDigits[b >> 4];
    out += kDigits[b & 0xf];
  }
  return out;
}

}  // namespace pp::mce

// The RAS tracepoints other than mce:mce_record and ras:mc_event (those two
// are decode.h's and edac.h's), decoded from their fields by name, pure:
//
//   ras:aer_event             PCIe AER (aer.h): device, severity, status bits
//                             by name, the TLP header when valid
//   ras:memory_failure_event  the kernel's handling of a poisoned page
//                             (mm/memory-failure.c): pfn, page type, result
//   ras:arm_event             an ARM processor error section of a CPER
//                             record: MPIDR, MIDR, the raw sections as hex
//   ras:non_standard_event    a CPER section of a type the kernel does not
//                             know: its section type and FRU, data as hex
//   ras:extlog_mem_event      an eMCA memory error (drivers/acpi/acpi_extlog.c,
//                             a CPER memory error section): address, error
//                             type, FRU, the compact memory location
//   cxl:*                     the CXL memory device events, where the kernel
//                             has them (drivers/cxl/core/trace.h): the fields
//                             every CXL event shares by name
//
// The formats these follow are in tests/fixtures/tracefs-debian-6.1/events/ras/
// and tests/fixtures/tracefs-6.18/events/ras/ (6.18's arm_event adds the raw
// sections, sev and cpu). A field a format lacks is left out of the decoding;
// nothing here reads past what a field holds.
//
//   RasFields f = ras_fields_from_json(record["fields"]);
//   if (auto d = decode_ras_event("ras:aer_event", f)) {
//     d->severity;          // MceSeverity::kUncorrected: the machine checks' scale
//     print_ras_text(*d, out);
//     //   PCIe AER uncorrected (non-fatal) on 0000:01:00.0: Completion Timeout
//     //     status 0x00004000, TLP header not available
//     ras_json(*d);         // {"source":"aer","severity":"uncorrected",...}
//   }
//
// The JSON objects (Documentation/perf-persistent-watch.txt, RAS EVENTS):
// every one has "source" (aer, memory_failure, arm, non_standard, extlog_mem,
// cxl), "severity" (a machine-check severity name: corrected, uncorrected or
// fatal) and the source's own keys; registers, masks, addresses and raw data
// are hex strings, counts numbers.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mce/decode.h"

namespace pp::mce {

// One field of a record as the decoders read it: an integer, a string, or
// an array's elements (a byte array's bytes, a char array's bytes whole).
struct RasValue {
  std::optional<uint64_t> number;
  std::optional<std::string> text;
  std::optional<std::vector<uint64_t>> elements;
};
using RasFields = std::map<std::string, RasValue, std::less<>>;

// A stored record's "fields" object (report --json's rules: integers as
// numbers or "0x..." strings, strings as strings, arrays as arrays of
// numbers or "0x..." strings) as RasFields. A char array the writer kept as
// a string gives its bytes up to the first NUL.
RasFields ras_fields_from_json(const nlohmann::ordered_json& fields);

// Whether decode_ras_event() knows `tracepoint` ("ras:aer_event", "cxl:cxl_poison").
bool is_ras_event(std::string_view tracepoint);

// The RAS tracepoints a host may have, as `system:event`, that the broker's
// default configuration keeps and check(1) looks for, mce_record and
// mc_event included; the CXL events' names are those of Linux 6.1 to 6.18.
const std::vector<std::string_view>& ras_tracepoints();

// A decoded record.
struct RasDecoded {
  std::string source;  // "aer", "memory_failure", "arm", "non_standard", "extlog_mem", "cxl"
  MceSeverity severity = MceSeverity::kUncorrected;  // on the machine checks' scale
  // What it happened on, for a metric's label and the first line: the PCI
  // device, the CXL memory device, the CPU ("cpu 3"), the FRU's text; "" if
  // the record does not say.
  std::string where;
  std::vector<std::string> lines;  // the text form, the first line a summary
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
};

// Decodes a record of `tracepoint`; nullopt when is_ras_event() is false.
std::optional<RasDecoded> decode_ras_event(std::string_view tracepoint, const RasFields& fields);

// The text form: the first line, then the others indented by two spaces,
// each ending in '\n'; control characters a device or firmware put in a
// name are escaped (base/terminal.h).
void print_ras_text(const RasDecoded& decoded, std::string& out);
// The JSON object (above).
inline const nlohmann::ordered_json& ras_json(const RasDecoded& decoded) {
  return decoded.json;
}

// UEFI's CPER error severity (UEFI specification, appendix N, Error Record
// Header: 0 recoverable, 1 fatal, 2 corrected, 3 informational): its name,
// and its place on the machine checks' scale (recoverable is uncorrected,
// informational counts as corrected).
std::string_view cper_severity_name(uint64_t sev);
MceSeverity cper_common_severity(uint64_t sev);

// A 16-byte GUID as text: `little_endian` for an EFI guid_t (its first three
// fields little-endian, the kernel's %pUl), else the bytes in order (%pU).
std::string guid_text(const std::vector<uint64_t>& bytes, bool little_endian);

}  // namespace pp::mce

// A memory error as EDAC reports it: the ras:mc_event tracepoint, or the
// line the EDAC core prints to the kernel log for the same error
// (drivers/edac/edac_mc.c, edac_ce_error() and edac_ue_error()):
//
//   EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0
//   page:0x8a6c1 offset:0xa00 grain:32 syndrome:0x0 - err_code:0x0000:0x009f socket:0 imc:0
//   rank:0 bg:2 ba:1 row:0x1d26 col:0x140)
//
// i.e. "EDAC MC<mc>: <count> <CE|UE> [<message> ]on <label> (<location> page:0x<pfn>
// offset:0x<offset> grain:<bytes>[ syndrome:0x<hex>][ - <driver detail>])", and the
// older form (Linux 3.x and before):
//
//   EDAC MC1: CE row 1, channel 0, label "CPU_SrcID#1_Channel#0_DIMM#1": 1 Unknown error(s):
//   memory scrubbing on FATAL area : cpu=6 Err=0008:00c1 (ch=1), addr = 0x1fb6d78000 =>
//   socket=1, Channel=0(mask=1), rank=5
//
// The tracepoint's fields (its format on Linux 6.1, tests/fixtures/tracefs-debian-6.1/events/
// ras/mc_event/format): u32 error_type, string msg, string label, u16 error_count, u8
// mc_index, s8 top_layer, middle_layer, lower_layer (-1: the layer is not known), long
// address, u8 grain_bits (the grain is 1 << grain_bits bytes), long syndrome, string
// driver_detail.
//
// Where the label is the kernel's own composed name of the DIMM
// ("CPU_SrcID#0_MC#0_Chan#1_DIMM#0", "mc#0csrow#2channel#0") its numbers go into the
// location too; a label the firmware or an administrator set (the DIMM's dimm_label,
// "CPU0_DIMM_A1") stays a label. The location's socket, controller, channel, slot, rank,
// row, column, bank and bank group come from the key:value words the drivers print
// (skx_edac and i10nm_edac: socket, imc, channel, slot, rank, bg, ba, row, col; ghes_edac:
// node, card, module, rank, bank, row, col).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "mce/location.h"

namespace pp::mce {

// include/linux/edac.h, enum hw_event_mc_err_type, in its order (the
// tracepoint's error_type is this number).
enum class EdacErrorType { kCorrected, kUncorrected, kDeferred, kFatal, kInfo };

// "corrected", "uncorrected", "deferred", "fatal", "info".
std::string_view edac_error_type_name(EdacErrorType type);

struct EdacError {
  EdacErrorType type = EdacErrorType::kCorrected;
  uint32_t count = 1;                   // errors this report stands for
  std::optional<uint32_t> mc;           // the EDAC memory controller (mcN)
  std::optional<int32_t> top_layer;     // the EDAC layers (csrow/channel, or socket-level
  std::optional<int32_t> middle_layer;  // branch/channel/slot, as the driver declared
  std::optional<int32_t> lower_layer;   // them); absent: the layer was not known (-1)
  std::optional<uint64_t> grain;        // bytes the address is exact to
  std::optional<uint64_t> syndrome;
  std::string message;      // "memory read error"
  std::string label;        // "CPU_SrcID#0_MC#0_Chan#1_DIMM#0", empty if none
  std::string detail;       // the driver's own detail ("err_code:0x0000:0x009f socket:0 ...")
  MemoryLocation location;  // address and page too, when known

  bool operator==(const EdacError&) const = default;
};

// The raw fields of one ras:mc_event record, by the format's names.
struct McEventFields {
  uint32_t error_type = 0;
  std::string msg, label, driver_detail;
  uint16_t error_count = 1;  // a record that does not say is one error
  uint8_t mc_index = 0;
  int8_t top_layer = -1, middle_layer = -1, lower_layer = -1;
  int64_t address = 0;
  uint8_t grain_bits = 0;
  int64_t syndrome = 0;
};

// ras:mc_event's fields by name, from wherever a record keeps them: `num`
// maps a field's name to an optional integer (std::optional<int64_t> or
// <uint64_t>), `str` to its text ("" when absent). A field that is absent
// keeps McEventFields' default; the s8 layers read their low byte, so -1
// stays -1 whether the reader sign-extended it or not.
template <class Num, class Str>
McEventFields mc_event_fields_by_name(const Num& num, const Str& str) {
  McEventFields f;
  if (auto v = num("error_type"))
    f.error_type = uint32_t(*v);
  if (auto v = num("error_count"))
    f.error_count = uint16_t(*v);
  if (auto v = num("mc_index"))
    f.mc_index = uint8_t(*v);
  if (auto v = num("top_layer"))
    f.top_layer = int8_t(uint8_t(*v));
  if (auto v = num("middle_layer"))
    f.middle_layer = int8_t(uint8_t(*v));
  if (auto v = num("lower_layer"))
    f.lower_layer = int8_t(uint8_t(*v));
  if (auto v = num("address"))
    f.address = int64_t(*v);
  if (auto v = num("grain_bits"))
    f.grain_bits = uint8_t(*v);
  if (auto v = num("syndrome"))
    f.syndrome = int64_t(*v);
  f.msg = str("msg");
  f.label = str("label");
  f.driver_detail = str("driver_detail");
  return f;
}

// The fields of a stored ras:mc_event record (report --json's "fields":
// integers as numbers, longs possibly as "0x..." strings, strings as
// strings) back into McEventFields; a field absent or of another type
// keeps its default.
McEventFields mc_event_fields_from_json(const nlohmann::ordered_json& fields);

// The DIMM labels a host's EDAC sysfs gives, by controller and the layer
// numbers of the DIMM (mcN/dimmM's dimm_label, with dimm_location's "csrow 0
// channel 1" or "channel 1 slot 0" read as the layers in order). The reading
// is sys/'s (sys/edac.h); the decoder takes the result.
struct EdacDimmLabel {
  std::string label;     // dimm_label ("CPU0_DIMM_A1"); the kernel's default name if unset
  std::string location;  // dimm_location as written ("channel 1 slot 0")
};
using EdacLabels = std::map<std::pair<uint32_t, std::string>, EdacDimmLabel>;
// The key of EdacLabels for a record's layers: "1:0" for top 1, middle 0
// (the known layers joined by ':'), the same text edac_label_key_of_location()
// makes of a dimm_location ("channel 1 slot 0" -> "1:0").
std::string edac_layers_key(const EdacError& error);
std::string edac_label_key_of_location(std::string_view dimm_location);

// One ras:mc_event record decoded; `labels` fills the DIMM label when the
// record has none (the kernel leaves "unknown memory" or an empty label
// when it could not tell the DIMM; a label set in sysfs is in the record).
EdacError decode_mc_event(const McEventFields& fields, const EdacLabels* labels = nullptr);

// One "EDAC MC<n>: ..." log line (the text from "EDAC " on), or nullopt when
// it is no error line of the EDAC core (a driver's own message such as
// "EDAC sbridge MC1: HANDLING MCE MEMORY ERROR", "EDAC MC0: Giving out
// device to module skx_edac").
std::optional<EdacError> parse_edac_log_line(std::string_view text);

// The numbers a kernel-composed label carries ("CPU_SrcID#1_Ha#0_Chan#0_DIMM#0":
// socket 1, controller 0, channel 0, slot 0; "mc#0csrow#2channel#0": controller
// 0, rank 2 (csrow), channel 0) into `location`, keeping what it already has.
void location_from_edac_label(std::string_view label, MemoryLocation& location);

// The text form, one or more lines each ending in '\n':
//
//   EDAC MC0: 1 corrected memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0
//     location: socket 0, controller 0, channel 1, slot 0, row 0x1d26, column 0x140
//     address 0x8a6c1a00 (grain 32 bytes), syndrome 0x0
//     driver: err_code:0x0000:0x009f socket:0 imc:0 rank:0
void print_edac_text(const EdacError& error, std::string& out);

// The JSON object (perf-persistent-decode(1), EDAC):
//   {"source": "edac", "type": "corrected", "count": 1, "mc": 0, "message": "...",
//    "label": "...", "layers": [1, 0, null], "address": "0x8a6c1a00", "grain": 32,
//    "syndrome": "0x0", "detail": "...", "location": {...}}
nlohmann::json edac_json(const EdacError& error);

}  // namespace pp::mce

#include "mce/location.h"

#include "base/json.h"

namespace pp::mce {

nlohmann::json memory_location_json(const MemoryLocation& l) {
  nlohmann::json j = nlohmann::json::object();
  auto add = [&](const char* name, const auto& v) {
    if (v)
      j[name] = *v;
  };
  add("socket", l.socket);
  add("controller", l.controller);
  add("channel", l.channel);
  add("slot", l.slot);
  add("chip_select", l.chip_select);
  add("rank", l.rank);
  add("subrank", l.subrank);
  add("bank_group", l.bank_group);
  add("bank", l.bank);
  add("row", l.row);
  add("column", l.column);
  add("device", l.device);
  if (l.address)
    j["address"] = hex_u64(*l.address);
  if (l.page)
    j["page"] = hex_u64(*l.page);
  if (!l.label.empty())
    j["label"] = escape_invalid_utf8(l.label);
  add("ecc_mode", l.ecc_mode);
  add("transient", l.transient);
  return j;
}

std::string describe_memory_location(const MemoryLocation& l) {
  std::string out;
  auto add = [&](const char* name, const std::optional<uint32_t>& v, bool as_hex) {
    if (!v)
      return;
    out += out.empty() ? "" : ", ";
    out += name;
    out += ' ';
    out += as_hex ? hex_u64(*v) : std::to_string(*v);
  };
  add("socket", l.socket, false);
  add("controller", l.controller, false);
  add("channel", l.channel, false);
  add("slot", l.slot, false);
  add("chip select", l.chip_select, false);
  add("rank", l.rank, false);
  add("subrank", l.subrank, false);
  add("bank group", l.bank_group, false);
  add("bank", l.bank, false);
  add("row", l.row, true);
  add("column", l.column, true);
  add("device", l.device, false);
  return out;
}

}  // namespace pp::mce

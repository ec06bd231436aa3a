#include "mce/edac.h"

#include <cctype>
#include <charconv>

#include "base/json.h"
#include "base/strings.h"
#include "base/terminal.h"

namespace pp::mce {
namespace {

constexpr std::string_view kTypeNames[] = {"corrected", "uncorrected", "deferred", "fatal", "info"};

// "0x1d26", "1d26" after a 0x-less hex key, "32", "-1": a number, or nullopt
// (-1, the kernel's "not known", and text that is not a whole number).
std::optional<uint64_t> number_value(std::string_view v) {
  if (v.empty() || v[0] == '-')
    return std::nullopt;
  int base = 10;
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
    v.remove_prefix(2);
    base = 16;
  } else if (v.find_first_of("abcdefABCDEF") != std::string_view::npos) {
    base = 16;  // skx_edac before 5.x printed row and col as %x ("row:dad3")
  }
  uint64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out, base);
  if (ec != std::errc() || end != v.data() + v.size())
    return std::nullopt;
  return out;
}

void set_if_absent(std::optional<uint32_t>& to, std::optional<uint64_t> v) {
  if (!to && v && *v <= UINT32_MAX)
    to = uint32_t(*v);
}

// One "key:value" word of an EDAC line into the location (the keys the
// drivers print; see the header). False when the key is no layer.
bool location_word(std::string_view key, std::string_view value, MemoryLocation& loc) {
  std::string k = ascii_lower(key);
  std::optional<uint64_t> v = number_value(value);
  if (k == "socket" || k == "processorsocketid" || k == "node" || k == "srcid")
    set_if_absent(loc.socket, v);
  else if (k == "imc" || k == "memorycontrollerid" || k == "ha" || k == "card")
    set_if_absent(loc.controller, v);
  else if (k == "channel" || k == "chan" || k == "channelid")
    set_if_absent(loc.channel, v);
  else if (k == "slot" || k == "dimm" || k == "dimmslotid" || k == "module")
    set_if_absent(loc.slot, v);
  else if (k == "rank" || k == "physicalrankid")
    set_if_absent(loc.rank, v);
  else if (k == "csrow" || k == "chipselect" || k == "cs")
    set_if_absent(loc.chip_select, v);
  else if (k == "bg" || k == "bankgroup")
    set_if_absent(loc.bank_group, v);
  else if (k == "ba" || k == "bank")
    set_if_absent(loc.bank, v);
  else if (k == "row")
    set_if_absent(loc.row, v);
  else if (k == "col" || k == "column")
    set_if_absent(loc.column, v);
  else if (k == "device")
    set_if_absent(loc.device, v);
  else if (k == "subrank")
    set_if_absent(loc.subrank, v);
  else if (k == "systemaddress" && v && !loc.address)
    loc.address = v;
  else
    return false;
  return true;
}

// The key:value words of `text` (space separated; "a:b:c" splits at the
// first colon), each to `fn(key, value)`.
template <typename Fn>
void each_word(std::string_view text, Fn fn) {
  for (std::string_view w : split(text, ' ')) {
    w = trim(w);
    while (!w.empty() && (w.back() == ',' || w.back() == ')'))
      w.remove_suffix(1);
    size_t colon = w.find(':');
    if (colon == std::string_view::npos || colon == 0)
      continue;
    fn(w.substr(0, colon), w.substr(colon + 1));
  }
}

void finish_address(MemoryLocation& loc, std::optional<uint64_t> page,
                    std::optional<uint64_t> offset) {
  if (page && !loc.address && (*page != 0 || offset.value_or(0) != 0) && *page < (1ull << 52))
    loc.address = (*page << 12) | offset.value_or(0);
  if (page && !loc.page && (*page != 0 || loc.address))
    loc.page = page;
  if (loc.address && !loc.page)
    loc.page = *loc.address >> 12;
}

// The older EDAC core line: "CE row 1, channel 0, label "X": 1 Unknown
// error(s): memory scrubbing on FATAL area : cpu=6 Err=0008:00c1 (ch=1),
// addr = 0x1fb6d78000 => socket=1, Channel=0(mask=1), rank=5".
std::optional<EdacError> parse_old_form(std::string_view body) {
  EdacError e;
  if (starts_with(body, "CE "))
    e.type = EdacErrorType::kCorrected;
  else if (starts_with(body, "UE "))
    e.type = EdacErrorType::kUncorrected;
  else
    return std::nullopt;
  size_t open = body.find("label \"");
  if (open == std::string_view::npos)
    return std::nullopt;
  size_t close = body.find('"', open + 7);
  if (close == std::string_view::npos)
    return std::nullopt;
  e.label = std::string(body.substr(open + 7, close - open - 7));
  std::string_view head = body.substr(3, open);
  for (std::string_view part : split(head, ',')) {
    part = trim(part);
    size_t sp = part.find(' ');
    if (sp == std::string_view::npos)
      continue;
    std::string_view key = part.substr(0, sp);
    std::optional<uint64_t> v = number_value(trim(part.substr(sp + 1)));
    if (key == "row")
      set_if_absent(e.location.chip_select, v);
    else if (key == "channel")
      set_if_absent(e.location.channel, v);
  }
  std::string_view rest = body.substr(close + 1);
  if (starts_with(rest, ": "))
    rest.remove_prefix(2);
  size_t sp = rest.find(' ');
  if (auto n = number_value(rest.substr(0, sp)); n && *n > 0 && *n <= UINT32_MAX) {
    e.count = uint32_t(*n);
    rest.remove_prefix(sp == std::string_view::npos ? rest.size() : sp + 1);
  }
  e.message = std::string(trim(rest.substr(0, rest.find(" on "))));
  e.detail = std::string(trim(rest));
  if (size_t a = rest.find("addr = "); a != std::string_view::npos) {
    std::string_view v = rest.substr(a + 7);
    e.location.address = number_value(v.substr(0, v.find_first_of(" ,")));
  }
  // "=> socket=1, Channel=0(mask=1), rank=5"
  if (size_t arrow = rest.find("=> "); arrow != std::string_view::npos) {
    for (std::string_view part : split(rest.substr(arrow + 3), ',')) {
      part = trim(part);
      size_t eq = part.find('=');
      if (eq == std::string_view::npos)
        continue;
      std::string_view value = part.substr(eq + 1);
      value = value.substr(0, value.find('('));
      location_word(part.substr(0, eq), value, e.location);
    }
  }
  finish_address(e.location, std::nullopt, std::nullopt);
  location_from_edac_label(e.label, e.location);
  e.location.label = e.label;
  return e;
}

bool composed_label(std::string_view label) {
  return label.find('#') != std::string_view::npos;
}

}  // namespace

std::string_view edac_error_type_name(EdacErrorType type) {
  return kTypeNames[size_t(type)];
}

std::string edac_layers_key(const EdacError& error) {
  std::string key;
  for (const auto& layer : {error.top_layer, error.middle_layer, error.lower_layer}) {
    if (!layer)
      break;
    key += (key.empty() ? "" : ":") + std::to_string(*layer);
  }
  return key;
}

std::string edac_label_key_of_location(std::string_view dimm_location) {
  // "csrow 0 channel 1 " / "channel 1 slot 0 ": every second word a number.
  std::string key;
  bool number = false;
  for (std::string_view w : split(dimm_location, ' ')) {
    w = trim(w);
    if (w.empty())
      continue;
    if (number) {
      auto v = number_value(w);
      if (!v)
        return "";
      key += (key.empty() ? "" : ":") + std::to_string(*v);
    }
    number = !number;
  }
  return key;
}

void location_from_edac_label(std::string_view label, MemoryLocation& location) {
  // Each "<name>#<number>": the name is the letters just before the '#'.
  for (size_t at = label.find('#'); at != std::string_view::npos; at = label.find('#', at + 1)) {
    size_t start = at;
    while (start > 0 && std::isalpha(static_cast<unsigned char>(label[start - 1])))
      start--;
    size_t end = at + 1;
    while (end < label.size() && std::isdigit(static_cast<unsigned char>(label[end])))
      end++;
    std::string name = ascii_lower(label.substr(start, at - start));
    std::optional<uint64_t> v = number_value(label.substr(at + 1, end - at - 1));
    if (name == "srcid" || name == "cpu")
      set_if_absent(location.socket, v);
    else if (name == "mc" || name == "ha")
      set_if_absent(location.controller, v);
    else if (name == "chan" || name == "channel")
      set_if_absent(location.channel, v);
    else if (name == "dimm")
      set_if_absent(location.slot, v);
    else if (name == "csrow")
      set_if_absent(location.chip_select, v);
    else if (name == "rank")
      set_if_absent(location.rank, v);
  }
}

std::optional<EdacError> parse_edac_log_line(std::string_view text) {
  if (!starts_with(text, "EDAC MC"))
    return std::nullopt;
  std::string_view body = text.substr(7);
  size_t colon = body.find(": ");
  if (colon == std::string_view::npos)
    return std::nullopt;
  std::optional<uint64_t> mc = number_value(body.substr(0, colon));
  if (!mc || *mc > UINT32_MAX)
    return std::nullopt;
  body = trim(body.substr(colon + 2));
  if (starts_with(body, "CE row ") || starts_with(body, "UE row ")) {
    auto e = parse_old_form(body);
    if (e)
      e->mc = uint32_t(*mc);
    return e;
  }
  EdacError e;
  e.mc = uint32_t(*mc);
  size_t sp = body.find(' ');
  std::optional<uint64_t> count = number_value(body.substr(0, sp));
  if (!count || sp == std::string_view::npos || *count > UINT32_MAX)
    return std::nullopt;
  e.count = uint32_t(*count);
  body.remove_prefix(sp + 1);
  if (starts_with(body, "CE "))
    e.type = EdacErrorType::kCorrected;
  else if (starts_with(body, "UE "))
    e.type = EdacErrorType::kUncorrected;
  else
    return std::nullopt;
  body.remove_prefix(3);
  size_t on = starts_with(body, "on ") ? 0 : body.find(" on ");
  if (on == std::string_view::npos)
    return std::nullopt;
  e.message = std::string(trim(body.substr(0, on)));
  body.remove_prefix(on == 0 ? 3 : on + 4);
  size_t open = body.find(" (");
  e.label = std::string(trim(body.substr(0, open)));
  std::optional<uint64_t> page, offset;
  if (open != std::string_view::npos) {
    std::string_view inside = body.substr(open + 2);
    if (size_t close = inside.rfind(')'); close != std::string_view::npos)
      inside = inside.substr(0, close);
    size_t dash = inside.find(" - ");
    std::string_view where = inside.substr(0, dash);
    if (dash != std::string_view::npos)
      e.detail = std::string(trim(inside.substr(dash + 3)));
    each_word(where, [&](std::string_view key, std::string_view value) {
      if (key == "page")
        page = number_value(value);
      else if (key == "offset")
        offset = number_value(value);
      else if (key == "grain")
        e.grain = number_value(value);
      else if (key == "syndrome")
        e.syndrome = number_value(value);
      else
        location_word(key, value, e.location);
    });
    each_word(e.detail, [&](std::string_view key, std::string_view value) {
      location_word(key, value, e.location);
    });
  }
  finish_address(e.location, page, offset);
  if (composed_label(e.label))
    location_from_edac_label(e.label, e.location);
  e.location.label = e.label;
  return e;
}

McEventFields mc_event_fields_from_json(const nlohmann::ordered_json& j) {
  if (!j.is_object())
    return McEventFields{};
  auto num = [&](const char* key) -> std::optional<int64_t> {
    auto it = j.find(key);
    if (it == j.end())
      return std::nullopt;
    if (it->is_number_integer())
      return it->get<int64_t>();
    if (it->is_number_unsigned())
      return int64_t(it->get<uint64_t>());
    if (it->is_string()) {
      if (auto v = u64_from_hex_json(*it))
        return int64_t(*v);
    }
    return std::nullopt;
  };
  auto str = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  return mc_event_fields_by_name(num, str);
}

EdacError decode_mc_event(const McEventFields& f, const EdacLabels* labels) {
  EdacError e;
  e.type = f.error_type <= uint32_t(EdacErrorType::kInfo) ? EdacErrorType(f.error_type)
                                                          : EdacErrorType::kInfo;
  e.count = f.error_count;
  e.mc = f.mc_index;
  if (f.top_layer >= 0)
    e.top_layer = f.top_layer;
  if (f.middle_layer >= 0)
    e.middle_layer = f.middle_layer;
  if (f.lower_layer >= 0)
    e.lower_layer = f.lower_layer;
  e.grain = uint64_t(1) << (f.grain_bits & 63);
  e.syndrome = uint64_t(f.syndrome);
  e.message = f.msg;
  e.label = f.label;
  e.detail = f.driver_detail;
  if (f.address != 0) {
    e.location.address = uint64_t(f.address);
    e.location.page = uint64_t(f.address) >> 12;
  }
  each_word(e.detail, [&](std::string_view key, std::string_view value) {
    location_word(key, value, e.location);
  });
  bool known = !e.label.empty() && e.label != "unknown memory" &&
               e.label.find("any memory") == std::string::npos;
  if (!known && labels) {
    auto it = labels->find({f.mc_index, edac_layers_key(e)});
    if (it != labels->end())
      e.label = it->second.label;
  }
  if (composed_label(e.label))
    location_from_edac_label(e.label, e.location);
  e.location.label = e.label;
  return e;
}

void print_edac_text(const EdacError& e, std::string& out) {
  out += "EDAC MC" + (e.mc ? std::to_string(*e.mc) : std::string("?")) + ": " +
         std::to_string(e.count) + " " + std::string(edac_error_type_name(e.type));
  out += e.count == 1 ? " error" : " errors";
  // The strings are the log's or the tracepoint's: any driver's, or
  // anyone's who can write the kernel log; escaped for the terminal.
  if (!e.message.empty()) {
    out += ": ";
    append_terminal_safe(out, e.message);
  }
  if (!e.label.empty()) {
    out += " on ";
    append_terminal_safe(out, e.label);
  }
  out += "\n";
  std::string where = describe_memory_location(e.location);
  if (!where.empty())
    out += "  location: " + where + "\n";
  if (e.top_layer || e.middle_layer || e.lower_layer)
    out += "  EDAC layers: " + edac_layers_key(e) + "\n";
  if (e.location.address || e.syndrome) {
    out += " ";
    if (e.location.address) {
      out += " address " + hex_u64(*e.location.address);
      if (e.grain)
        out += " (grain " + std::to_string(*e.grain) + " bytes)";
    }
    if (e.syndrome)
      out += std::string(e.location.address ? "," : "") + " syndrome " + hex_u64(*e.syndrome);
    out += "\n";
  }
  if (!e.detail.empty()) {
    out += "  driver: ";
    append_terminal_safe(out, e.detail);
    out += "\n";
  }
}

nlohmann::json edac_json(const EdacError& e) {
  nlohmann::json j;
  j["source"] = "edac";
  j["type"] = edac_error_type_name(e.type);
  j["count"] = e.count;
  j["mc"] = e.mc ? nlohmann::json(*e.mc) : nlohmann::json(nullptr);
  j["message"] = escape_invalid_utf8(e.message);
  j["label"] = escape_invalid_utf8(e.label);
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& layer : {e.top_layer, e.middle_layer, e.lower_layer})
    layers.push_back(layer ? nlohmann::json(*layer) : nlohmann::json(nullptr));
  j["layers"] = layers;
  j["address"] =
      e.location.address ? nlohmann::json(hex_u64(*e.location.address)) : nlohmann::json(nullptr);
  j["grain"] = e.grain ? nlohmann::json(*e.grain) : nlohmann::json(nullptr);
  j["syndrome"] = e.syndrome ? nlohmann::json(hex_u64(*e.syndrome)) : nlohmann::json(nullptr);
  j["detail"] = escape_invalid_utf8(e.detail);
  j["location"] = memory_location_json(e.location);
  return j;
}

}  // namespace pp::mce

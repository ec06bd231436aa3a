#include "report/attr_printer.h"

#include <cinttypes>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "base/json.h"
#include "base/strings.h"

namespace pp::report {

using sys::AttrField;
using sys::AttrFormat;

nlohmann::ordered_json attr_json(const sys::EventAttr& attr) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  const perf_event_attr& a = attr.attr;
  for (const AttrField& f : sys::attr_fields()) {
    uint64_t value = f.get(attr);
    std::string_view key = f.json_name;
    if (key == "sample_period") {
      j["sample_period"] = a.freq ? 0 : value;
      j["sample_freq"] = a.freq ? value : 0;
    } else if (key == "wakeup_events") {
      j["wakeup_events"] = a.watermark ? 0 : value;
      j["wakeup_watermark"] = a.watermark ? value : 0;
    } else if (f.format == AttrFormat::kSigned) {
      j[std::string(key)] = int64_t(value);
    } else if (f.format != AttrFormat::kUnsigned) {
      j[std::string(key)] = hex_u64(value);  // a register or bit mask (base/json.h)
    } else {
      j[std::string(key)] = value;
    }
    if (!sys::attr_flag_names(f.format).empty())
      j[std::string(key) + "_names"] = sys::attr_flag_list(f.format, value);
  }
  nlohmann::ordered_json words = nlohmann::ordered_json::array();
  for (uint64_t w : attr.words)
    words.push_back(hex_u64(w));
  j["words"] = std::move(words);
  return j;
}

namespace {

std::string term_text(const std::string& name, const nlohmann::ordered_json& value) {
  if (value.is_boolean())
    return name;
  if (value.is_string())
    return name + "=" + value.get<std::string>();
  if (value.is_array()) {
    std::vector<std::string> parts;
    for (const auto& v : value)
      parts.push_back("@" + v.get<std::string>());
    return join(parts, ",");
  }
  return name + "=" + value.dump();
}

}  // namespace

void print_events(std::ostream& out, std::span<const ListedEvent> events) {
  for (size_t i = 0; i < events.size(); i++) {
    const ListedEvent& e = events[i];
    sys::print_attr_block(out, e.attr);
    out << "event " << i << ": " << e.name << ", group leader " << e.leader;
    if (e.leader == int(i))
      out << " (itself)";
    else if (e.leader >= 0 && size_t(e.leader) < events.size())
      out << " (" << events[size_t(e.leader)].name << ")";
    if (!e.group_name.empty())
      out << ", group " << e.group_name;
    if (!e.pmu.empty())
      out << ", pmu " << e.pmu;
    std::vector<std::string> terms;
    for (const auto& [name, value] : e.terms)
      terms.push_back(term_text(name, value));
    if (!terms.empty())
      out << ", terms " << join(terms, ",");
    if (e.sample_read)
      out << ", sample read (S)";
    if (e.precise_max)
      out << ", highest precise_ip the PMU allows (P)";
    if (e.weak_group)
      out << ", weak group (W)";
    out << '\n';
  }
}

nlohmann::ordered_json events_json(std::span<const ListedEvent> events) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (size_t i = 0; i < events.size(); i++) {
    const ListedEvent& e = events[i];
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    j["index"] = i;
    j["name"] = e.name;
    j["leader"] = e.leader;
    j["group"] = e.group_name.empty() ? nlohmann::ordered_json(nullptr)
                                      : nlohmann::ordered_json(e.group_name);
    j["pmu"] = e.pmu;
    j["tracepoint"] = e.tracepoint.empty() ? nlohmann::ordered_json(nullptr)
                                           : nlohmann::ordered_json(e.tracepoint);
    j["cpus"] = e.cpus;
    j["text"] = e.text;
    j["unit"] = e.unit;
    j["scale"] = e.scale;
    j["per_pkg"] = e.per_pkg;
    j["snapshot"] = e.snapshot;
    j["uncore"] = e.uncore;
    j["sample_read"] = e.sample_read;
    j["precise_max"] = e.precise_max;
    j["weak_group"] = e.weak_group;
    nlohmann::ordered_json terms = nlohmann::ordered_json::object();
    for (const auto& [name, value] : e.terms)
      terms[name] = value;
    j["terms"] = std::move(terms);
    j["attr"] = attr_json(e.attr);
    list.push_back(std::move(j));
  }
  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  doc["events"] = std::move(list);
  return doc;
}

}  // namespace pp::report

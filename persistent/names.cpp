#include "persistent/names.h"

#include <algorithm>
#include <cstdio>

#include "base/strings.h"

namespace pp::persistent {

bool is_id_reference(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Status validate_name(std::string_view name) {
  auto bad = [&](const std::string& why) {
    return usage_error("invalid name '" + std::string(name) + "': " + why +
                       "; a name is 1 to 64 letters, digits, '_', '-' and '.', not '.' or "
                       "'..', and not only digits (those are ids)");
  };
  if (name.empty())
    return bad("it is empty");
  if (name.size() > kMaxNameLength)
    return bad("it is " + std::to_string(name.size()) + " characters long");
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) {
      char shown[8];
      if (c >= 0x20 && c < 0x7f)
        std::snprintf(shown, sizeof(shown), "%c", c);
      else
        std::snprintf(shown, sizeof(shown), "\\x%02x", unsigned(uint8_t(c)));
      return bad("'" + std::string(shown) + "' is not allowed");
    }
  }
  if (name == "." || name == "..")
    return bad("it is a directory name");
  if (is_id_reference(name))
    return bad("it is a number");
  return ok_status();
}

std::string default_name(std::string_view tracepoint, uint64_t id) {
  size_t colon = tracepoint.find(':');
  if (colon != std::string_view::npos && colon + 1 < tracepoint.size()) {
    std::string name(tracepoint.substr(colon + 1));
    if (validate_name(name).ok())
      return name;
  }
  return std::to_string(id);
}

Error not_found(std::string_view reference) {
  return not_found_error("no persistent event '" + std::string(reference) +
                         "'; see 'perf persistent list'");
}

Result<const EventInfo*> find_event(const std::vector<EventInfo>& events,
                                    std::string_view reference) {
  if (is_id_reference(reference)) {
    auto id = parse_u64(reference, "event id");
    if (!id.ok())
      return not_found(reference);
    for (const EventInfo& e : events) {
      if (e.id == *id)
        return &e;
      for (const CpuId& c : e.cpu_ids)
        if (c.id == *id)
          return &e;
    }
    return not_found(reference);
  }
  for (const EventInfo& e : events)
    if (e.name == reference)
      return &e;
  return not_found(reference);
}

std::string_view layout_name(Layout layout) {
  return layout == Layout::kBackward ? "backward" : "forward";
}

}  // namespace pp::persistent

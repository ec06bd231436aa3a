#include "persistent/names.h"

#include <algorithm>
#include <cstdio>

#include "base/strings.h"
#include "parse/grammar.h"

namespace pp::persistent {

bool is_id_reference(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

namespace {

constexpr const char* kNameRule =
    "a name is 1 to 64 letters, digits, '_', '-' and '.', starts with a letter or '_', and is "
    "not a term of the event grammar (config, period, name, ...) nor 'persistent', so that "
    "'persistent/NAME/' means that event";

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

}  // namespace

bool is_safe_file_name(std::string_view name) {
  return !name.empty() && name.size() <= kMaxNameLength && name != "." && name != ".." &&
         std::all_of(name.begin(), name.end(), is_name_char);
}

Status validate_name(std::string_view name) {
  auto bad = [&](const std::string& why) {
    return usage_error("invalid name '" + std::string(name) + "': " + why + "; " + kNameRule);
  };
  if (name.empty())
    return bad("it is empty");
  if (name.size() > kMaxNameLength)
    return bad("it is " + std::to_string(name.size()) + " characters long");
  for (char c : name) {
    if (!is_name_char(c)) {
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
    return bad("it is a number (numbers are ids)");
  char first = name.front();
  if (first == '-')
    return bad("it starts with '-', so a command would take it for an option");
  if (first == '.')
    return bad("it starts with '.', so it would be a hidden file");
  if (first >= '0' && first <= '9')
    return bad("it starts with a digit, so the event grammar would read it as a number");
  if (name == "persistent")
    return bad("it is the persistent PMU's own format term");
  // What `persistent/NAME/` becomes: it must be the bare name and nothing else.
  auto terms = parse::parse_term_list(name, nullptr);
  if (!terms.ok() || terms->size() != 1 || (*terms)[0].type != parse::TermType::kUser ||
      !(*terms)[0].no_value || (*terms)[0].config != name) {
    std::string as = terms.ok() && terms->size() == 1 ? "the term '" + (*terms)[0].label() + "'"
                                                      : "something else";
    return bad("'persistent/" + std::string(name) + "/' would read it as " + as);
  }
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

std::string error_line(std::string_view error) {
  std::string_view first;
  bool have_first = false;
  for (std::string_view line : split(error, '\n')) {
    std::string_view t = trim(line);
    if (starts_with(t, "Error: "))
      return std::string(trim(t.substr(7)));
    if (!have_first && !t.empty()) {
      first = t;
      have_first = true;
    }
  }
  return std::string(first);
}

}  // namespace pp::persistent

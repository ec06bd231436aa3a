#include "broker/config_file.h"

#include <map>
#include <set>

#include "base/ini.h"
#include "base/strings.h"
#include "broker/previous_boot.h"
#include "persistent/create.h"
#include "persistent/limits.h"
#include "persistent/names.h"
#include "sys/tree.h"

namespace pp::broker {
namespace {

// One key of a section into its event; an error says what is wrong (the
// caller adds the file and line).
Status set_key(ConfigEvent& event, const std::string& key, const std::string& value) {
  persistent::CreateRequest& e = event.request;
  if (key == "event") {
    if (value.empty())
      return usage_error("'event' needs an event string, e.g. 'event = mce:mce_record'");
    e.event = value;
  } else if (key == "pages") {
    PP_ASSIGN_OR_RETURN(uint64_t pages, parse_u64(value, "pages"));
    PP_RETURN_IF_ERROR(persistent::validate_pages(pages));
    e.pages = pages;
  } else if (key == "cpus") {
    e.cpus = value;
  } else if (key == "filter") {
    e.filter = value;
  } else if (key == "backend") {
    if (value != persistent::kRingPerf && value != persistent::kRingFtrace)
      return usage_error("'backend' is 'perf' or 'ftrace', not '" + value + "'");
    e.backend = value;
  } else if (key == "optional") {
    if (value != "yes" && value != "no")
      return usage_error("'optional' is 'yes' or 'no', not '" + value + "'");
    event.optional = value == "yes";
  } else {
    return usage_error("unknown key '" + key +
                       "'; the keys are event, pages, cpus, filter, backend and optional");
  }
  return persistent::check_create_limits(e);
}

}  // namespace

Result<std::vector<ConfigEvent>> parse_config(std::string_view text, std::string_view path) {
  PP_ASSIGN_OR_RETURN(IniDocument doc, parse_ini(text, path));
  if (!doc.preamble.empty()) {
    const IniEntry& first = doc.preamble.front();
    return ini_error(path, first.line,
                     "'" + first.key + " = " + first.value + "' comes before any [NAME] section");
  }
  std::vector<ConfigEvent> events;
  std::set<std::string> names;
  auto no_event = [&]() {
    return ini_error(path, events.back().line,
                     "section [" + events.back().request.name + "] has no 'event = ...' line");
  };
  for (const IniSection& section : doc.sections) {
    // The black box's settings (broker/previous_boot.h), not an event.
    if (section.name == kPreviousBootSection)
      continue;
    if (Status s = persistent::validate_name(section.name); !s.ok())
      return ini_error(path, section.line, s.error().message());
    if (!names.insert(section.name).second)
      return ini_error(path, section.line,
                       "a second section [" + section.name + "]; each event has one");
    if (!events.empty() && events.back().request.event.empty())
      return no_event();
    events.push_back({});
    events.back().request.name = section.name;
    events.back().line = section.line;
    std::map<std::string, int> keys_seen;  // key -> line
    for (const IniEntry& entry : section.entries) {
      // A repeated key would silently win over the first: refuse it.
      if (auto [first, inserted] = keys_seen.emplace(entry.key, entry.line); !inserted)
        return ini_error(path, entry.line,
                         "a second '" + entry.key + "' in section [" + section.name +
                             "] (the first is on line " + std::to_string(first->second) +
                             "); each key may appear once");
      if (Status s = set_key(events.back(), entry.key, entry.value); !s.ok())
        return ini_error(path, entry.line, s.error().message());
    }
  }
  if (!events.empty() && events.back().request.event.empty())
    return no_event();
  return events;
}

Result<std::string> read_config_file(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return sys::Tree(dir.empty() ? "/" : dir).read(path.substr(slash + 1), 1 << 20);
}

}  // namespace pp::broker

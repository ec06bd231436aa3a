#include "broker/config_file.h"

#include <map>
#include <set>

#include "base/strings.h"
#include "persistent/create.h"
#include "persistent/limits.h"
#include "persistent/names.h"

namespace pp::broker {
namespace {

std::string_view strip_comment(std::string_view line) {
  if (!line.empty() && line.front() == '#')
    return {};
  for (size_t i = 1; i < line.size(); i++)
    if (line[i] == '#' && (line[i - 1] == ' ' || line[i - 1] == '\t'))
      return line.substr(0, i);
  return line;
}

}  // namespace

Result<std::vector<ConfigEvent>> parse_config(std::string_view text, std::string_view path) {
  std::vector<ConfigEvent> events;
  std::set<std::string> names;
  std::map<std::string, int> keys_seen;  // in the current section: key -> line
  int number = 0, section_line = 0;
  auto fail_at = [&](int line, const std::string& why) {
    return errorf(ErrorKind::kConfig, EINVAL, "%.*s:%d: %s", int(path.size()), path.data(), line,
                  why.c_str());
  };
  auto fail = [&](const std::string& why) { return fail_at(number, why); };
  auto no_event = [&]() {
    return fail_at(section_line,
                   "section [" + events.back().request.name + "] has no 'event = ...' line");
  };
  for (std::string_view raw : split(text, '\n')) {
    number++;
    std::string_view line = trim(strip_comment(raw));
    if (line.empty())
      continue;
    if (line.front() == '[') {
      if (line.back() != ']')
        return fail("a section header is '[NAME]'");
      std::string name(trim(line.substr(1, line.size() - 2)));
      if (Status s = persistent::validate_name(name); !s.ok())
        return fail(s.error().message());
      if (!names.insert(name).second)
        return fail("a second section [" + name + "]; each event has one");
      if (!events.empty() && events.back().request.event.empty())
        return no_event();
      section_line = number;
      keys_seen.clear();
      events.push_back({});
      events.back().request.name = name;
      events.back().line = number;
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos)
      return fail("expected 'key = value' or '[NAME]', not '" + std::string(line) + "'");
    if (events.empty())
      return fail("'" + std::string(line) + "' comes before any [NAME] section");
    std::string key(trim(line.substr(0, eq)));
    std::string value(trim(line.substr(eq + 1)));
    persistent::CreateRequest& e = events.back().request;
    // A repeated key would silently win over the first: refuse it.
    if (auto [first, inserted] = keys_seen.emplace(key, number); !inserted)
      return fail("a second '" + key + "' in section [" + e.name + "] (the first is on line " +
                  std::to_string(first->second) + "); each key may appear once");
    if (key == "event") {
      if (value.empty())
        return fail("'event' needs an event string, e.g. 'event = mce:mce_record'");
      e.event = value;
    } else if (key == "pages") {
      auto pages = parse_u64(value, "pages");
      if (!pages.ok())
        return fail(pages.error().message());
      if (Status s = persistent::validate_pages(*pages); !s.ok())
        return fail(s.error().message());
      e.pages = *pages;
    } else if (key == "cpus") {
      e.cpus = value;
    } else if (key == "filter") {
      e.filter = value;
    } else if (key == "optional") {
      if (value != "yes" && value != "no")
        return fail("'optional' is 'yes' or 'no', not '" + value + "'");
      events.back().optional = value == "yes";
    } else {
      return fail("unknown key '" + key +
                  "'; the keys are event, pages, cpus, filter and optional");
    }
    if (Status s = persistent::check_create_limits(e); !s.ok())
      return fail(s.error().message());
  }
  if (!events.empty() && events.back().request.event.empty())
    return no_event();
  return events;
}

}  // namespace pp::broker

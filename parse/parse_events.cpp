// parse_events(): the grammar (parse/grammar.h) builds the located tree,
// resolution (parse/resolver.h) turns it into EventSpecs, and every error of
// either comes out here in perf's caret form.
#include "parse/parse_events.h"

#include <algorithm>

#include "parse/grammar.h"
#include "parse/resolver.h"

namespace pp::parse {
namespace {

// One block per diagnostic, in order, each said once:
//
//   event syntax error: 'msr/umsk=1/'
//                            \___ unknown term 'umsk' for PMU 'msr'
//   valid terms: event,config,config1,...
Error format_errors(std::string_view text, const std::vector<Diagnostic>& errors) {
  std::string out;
  std::vector<std::string> seen;
  for (const Diagnostic& e : errors) {
    std::string block = "event syntax error: '" + std::string(text) + "'\n";
    block += std::string(21 + std::min(e.col, text.size()), ' ') + "\\___ " + e.message;
    if (!e.help.empty())
      block += "\n" + e.help;
    if (std::find(seen.begin(), seen.end(), block) != seen.end())
      continue;
    seen.push_back(block);
    if (!out.empty())
      out += "\n\n";
    out += block;
  }
  if (errors.empty())
    return usage_error(out);
  return Error(errors.front().kind, errors.front().code, out);
}

}  // namespace

Result<std::vector<EventSpec>> parse_events(std::string_view text, const pmu::Model& model) {
  ParsedList parsed = parse_event_list(text, &model);
  Resolver resolver(model);
  // An error in an event comes before a syntax error after it, as in perf,
  // whose grammar actions resolve each event as it is parsed.
  Status status = resolver.resolve(parsed);
  std::vector<Diagnostic> errors = resolver.errors();
  if (status.ok() && !parsed.errors.empty()) {
    errors = parsed.errors;
    status = usage_error("syntax error");
  }
  if (status.ok() && resolver.events().empty()) {
    errors.push_back({0, EINVAL, "the event list holds no event", {}});
    status = usage_error("no event");
  }
  if (!status.ok())
    return format_errors(text, errors);
  std::vector<EventSpec> specs;
  specs.reserve(resolver.events().size());
  for (Evsel& e : resolver.events())
    specs.push_back(std::move(e.spec));
  return specs;
}

}  // namespace pp::parse

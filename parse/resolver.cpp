// Resolution's walk over the tree and what every event family shares: the
// new event with perf's defaults, parse_events_add_numeric(), and the parts
// set once its attr is built. The families are in their own files (see
// parse/resolver.h).
#include "parse/resolver.h"

#include <linux/perf_event.h>

#include "base/strings.h"
#include "parse/terms.h"

namespace pp::parse {
namespace {

std::string label_for_type(const pmu::Model& model, uint64_t type) {
  if (std::string_view name = sys::builtin_type_name(type); !name.empty())
    return std::string(name);
  if (const pmu::Pmu* pmu = model.find_pmu_by_type(uint32_t(type)))
    return pmu->name;
  return std::to_string(type);
}

}  // namespace

Status Resolver::resolve(const ParsedList& list) {
  for (const Group& group : list.groups) {
    size_t first = out_.size();
    for (const Event& event : group.events) {
      size_t event_first = out_.size();
      PP_RETURN_IF_ERROR(resolve_def(event.def));
      if (event.modifiers)
        PP_RETURN_IF_ERROR(apply_modifiers(event_first, *event.modifiers, /*group=*/false));
      for (size_t i = event_first; i < out_.size(); i++) {
        if (out_[i].spec.name.empty())
          out_[i].spec.name = event.named ? event.event_name : event.text;
        out_[i].spec.text = event.text;
      }
    }
    if (!group.braces)
      continue;
    for (size_t i = first; i < out_.size(); i++) {
      out_[i].spec.leader = int(first);
      out_[i].spec.group_name = group.name;
    }
    if (group.modifiers)
      PP_RETURN_IF_ERROR(apply_modifiers(first, *group.modifiers, /*group=*/true));
  }
  return ok_status();
}

Status Resolver::resolve_def(const EventDef& def) {
  switch (def.kind) {
    case EventKind::kSymbol:
      return add_symbol(def);
    case EventKind::kCache:
      return add_cache(def);
    case EventKind::kRaw:
      return add_raw(def);
    case EventKind::kNumeric:
      return add_type_config(def);
    case EventKind::kBreakpoint:
      return add_breakpoint(def);
    case EventKind::kTracepoint:
      return add_tracepoints(def);
    case EventKind::kPmu:
      return add_pmu_event(def);
    case EventKind::kAlias:
      return add_alias_everywhere(def);
    case EventKind::kUnknown:
      break;
  }
  return unknown_word(def.name);
}

Error Resolver::fail(size_t col, int code, std::string message, std::string help, ErrorKind kind) {
  errors_.push_back({col, code, message, std::move(help), kind});
  return Error(kind, code, std::move(message));
}

Error Resolver::unknown_word(const Word& word) {
  std::vector<std::string> candidates = {
      "cycles",         "instructions",  "cache-references", "cache-misses",
      "branches",       "branch-misses", "bus-cycles",       "ref-cycles",
      "cpu-clock",      "task-clock",    "page-faults",      "context-switches",
      "cpu-migrations", "minor-faults",  "major-faults",     "dummy"};
  for (const pmu::PmuEntry& e : model_.pmus())
    if (e.pmu)
      for (const pmu::Alias& a : e.pmu->aliases)
        candidates.push_back(a.name);
  std::string help =
      "an event is a symbolic name (cycles, cpu-clock, ...), a PMU event alias, "
      "a tracepoint sys:event, pmu/terms/, rNNN, TYPE:CONFIG or mem:ADDR";
  if (std::string near = nearest_word(word.text, candidates); !near.empty())
    help = "did you mean '" + near + "'? " + help;
  if (model_.find_pmu(word.text))
    help = "'" + word.text + "' is a PMU: write " + word.text + "/EVENT/ or " + word.text +
           "/TERM=VALUE,.../";
  return fail(word.col, EINVAL, "unknown event '" + word.text + "'", help);
}

Evsel& Resolver::new_evsel(std::string pmu_label) {
  Evsel e;
  e.spec.leader = int(out_.size());
  e.spec.pmu = std::move(pmu_label);
  e.spec.attr.attr.size = sys::kAttrSizeVer7;
  e.spec.attr.attr.exclude_guest = 1;  // event_attr_init(): perf_guest is false
  out_.push_back(std::move(e));
  return out_.back();
}

// The parts of an event every kind shares once its attr is built.
void Resolver::finish_evsel(Evsel& e, const std::vector<Term>& terms) {
  e.spec.terms = collect_config_terms(terms);
  if (std::string name = first_name_term(terms); !name.empty())
    e.spec.name = name;
  sys::EventAttr& attr = e.spec.attr;
  if (e.spec.terms.period) {
    attr.attr.sample_period = *e.spec.terms.period;
    attr.attr.freq = 0;
    attr.attr.sample_type &= ~uint64_t(PERF_SAMPLE_PERIOD);
  }
  if (e.spec.terms.freq) {
    attr.attr.sample_freq = *e.spec.terms.freq;
    attr.attr.freq = 1;
    attr.attr.sample_type |= PERF_SAMPLE_PERIOD;
  }
  attr.attr.size = e.config3_used ? sys::kAttrSizeVer8 : sys::kAttrSizeVer7;
}

// parse_events_add_numeric(): symbolic, raw and type:config events.
Status Resolver::add_numeric(uint32_t type, uint64_t config, const std::vector<Term>& terms,
                             std::string_view what) {
  sys::EventAttr attr;
  bool config3 = false;
  attr.attr.type = type;
  attr.attr.config = config;
  for (const Term& t : terms)
    PP_RETURN_IF_ERROR(apply_static_term(t, &attr, &config3, what));
  Evsel& e = new_evsel(label_for_type(model_, type));
  attr.attr.exclude_guest = 1;
  e.spec.attr = attr;
  e.config3_used = config3;
  finish_evsel(e, terms);
  return ok_status();
}

}  // namespace pp::parse

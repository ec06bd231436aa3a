// Tracepoint events: sys:event, with globs in either part (sched:sched_*),
// looked up through the model's tracefs interface (perf's
// parse_events_add_tracepoint()). Nothing here reads tracefs itself.
#include <linux/perf_event.h>

#include "parse/glob.h"
#include "parse/resolver.h"

namespace pp::parse {
namespace {

constexpr std::string_view kTracepointTerms =
    "call-graph,stack-size,inherit,no-inherit,max-stack,nr,overwrite,no-overwrite,aux-output,"
    "aux-sample-size";

constexpr uint64_t kTracepointSampleType =
    PERF_SAMPLE_RAW | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;

}  // namespace

// tracepoint_name opt_event_config: every tracepoint the name matches.
Status Resolver::add_tracepoints(const EventDef& def) {
  const std::string& sys = def.name.text;
  const std::string& event = def.second.text;
  size_t col = def.name.col;
  const std::string name = sys + ":" + event;
  for (const Term& t : def.terms) {
    switch (t.type) {
      case TermType::kCallGraph:
      case TermType::kStackSize:
      case TermType::kInherit:
      case TermType::kNoInherit:
      case TermType::kMaxStack:
      case TermType::kMaxEvents:
      case TermType::kOverwrite:
      case TermType::kNoOverwrite:
      case TermType::kAuxOutput:
      case TermType::kAuxSampleSize: {
        sys::EventAttr scratch;
        bool unused = false;
        PP_RETURN_IF_ERROR(apply_static_term(t, &scratch, &unused, "a tracepoint"));
        break;
      }
      default:
        return fail(t.col, EINVAL, "unknown term '" + t.label() + "' for tracepoint '" + name + "'",
                    "valid terms: " + std::string(kTracepointTerms));
    }
  }

  if (has_glob(sys)) {
    auto systems = model_.tracepoint_systems();
    if (!systems.ok())
      return tracepoint_error(col, sys, event, systems.error());
    size_t before = out_.size();
    for (const std::string& s : *systems)
      if (glob_match(s, sys))
        PP_RETURN_IF_ERROR(add_tracepoint_event(col, s, event, def.terms));
    if (out_.size() == before)
      return fail(col, ENOENT, "no tracepoint system matches '" + sys + "'",
                  "the systems are the directories of " + model_.tracefs_events_path(""));
    return ok_status();
  }
  return add_tracepoint_event(col, sys, event, def.terms);
}

Status Resolver::add_tracepoint_event(size_t col, const std::string& sys, const std::string& event,
                                      const std::vector<Term>& terms) {
  if (!has_glob(event))
    return add_tracepoint(col, sys, event, terms);
  auto events = model_.tracepoint_events(sys);
  if (!events.ok())
    return tracepoint_error(col, sys, event, events.error());
  bool found = false;
  for (const std::string& e : *events) {
    if (!glob_match(e, event))
      continue;
    found = true;
    PP_RETURN_IF_ERROR(add_tracepoint(col, sys, e, terms));
  }
  if (!found)
    return tracepoint_error(col, sys, event,
                            Error(ENOENT, "no event of " + model_.tracefs_events_path(sys) +
                                              " matches '" + event + "'"));
  return ok_status();
}

// PERF_TYPE_TRACEPOINT with the id as config; sample_type RAW|TIME|CPU|PERIOD
// and sample_period 1, as perf.
Status Resolver::add_tracepoint(size_t col, const std::string& sys, const std::string& event,
                                const std::vector<Term>& terms) {
  auto id = model_.tracepoint_id(sys, event);
  if (!id.ok())
    return tracepoint_error(col, sys, event, id.error());
  Evsel& e = new_evsel("tracepoint");
  e.spec.attr.attr.type = PERF_TYPE_TRACEPOINT;
  e.spec.attr.attr.config = *id;
  e.spec.attr.attr.sample_type = kTracepointSampleType;
  e.spec.attr.attr.sample_period = 1;
  e.spec.name = sys + ":" + event;
  e.spec.tracepoint = e.spec.name;
  finish_evsel(e, terms);
  return ok_status();
}

Error Resolver::tracepoint_error(size_t col, const std::string& sys, const std::string& event,
                                 const Error& error) {
  std::string tp = sys + ":" + event;
  switch (error.code()) {
    case ENOENT:
      return fail(col, ENOENT, "unknown tracepoint '" + tp + "'",
                  "Error: " + error.message() +
                      ".\nHint: 'perf list tracepoint' lists this kernel's tracepoints; is "
                      "the name right, or does the kernel lack the CONFIG_ option for it?");
    case EACCES:
    case EPERM:
      return fail(col, error.code(), "can't access trace events for '" + tp + "'",
                  "Error: " + error.message() +
                      ".\nHint: run as root, or try 'sudo mount -o "
                      "remount,mode=755 " +
                      model_.tracefs_root() + "'");
    default:
      return fail(col, error.code(), "failed to add tracepoint '" + tp + "'",
                  "Error: " + error.message());
  }
}

}  // namespace pp::parse

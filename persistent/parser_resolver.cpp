#include "persistent/parser_resolver.h"

#include "base/strings.h"
#include "parse/parse_events.h"
#include "pmu/model.h"

namespace pp::persistent {
namespace {

Error already_persistent(std::string_view text) {
  return errorf(ErrorKind::kUsage, EINVAL,
                "'%.*s' is already a persistent event; create takes an ordinary event (a "
                "tracepoint, a software or hardware event, a PMU event)",
                int(text.size()), text.data());
}

// Terms perf applies when it opens an event itself, which a persistent event
// never gets: its sample layout and inheritance are fixed (create.h,
// sampling_attr()) and no tool runs beside it. Accepting them would promise
// what never reaches the attr.
Status refuse_lost_terms(std::string_view text, const parse::ConfigTerms& t) {
  auto refuse = [&](const char* term, const char* why) {
    return errorf(ErrorKind::kUsage, EINVAL,
                  "'%.*s': the term '%s' cannot be used on a persistent event: %s; leave it out",
                  int(text.size()), text.data(), term, why);
  };
  constexpr const char* kFixedSamples =
      "its samples always hold IP, TID, TIME, CPU, PERIOD and IDENTIFIER (and RAW for a "
      "tracepoint), with no call chain, registers or stack";
  if (t.call_graph)
    return refuse("call-graph", kFixedSamples);
  if (t.stack_size)
    return refuse("stack-size", kFixedSamples);
  if (t.max_stack)
    return refuse("max-stack", kFixedSamples);
  if (t.time)
    return refuse("time", kFixedSamples);
  if (t.branch_type)
    return refuse("branch_type", kFixedSamples);
  if (t.inherit)
    return refuse(*t.inherit ? "inherit" : "no-inherit",
                  "it counts on whole CPUs, never on a task and its children");
  if (t.overwrite)
    return refuse(*t.overwrite ? "overwrite" : "no-overwrite",
                  "the broker chooses the direction of the buffer itself");
  if (t.max_events)
    return refuse("nr", "it is for the perf tool that reads an event, and none runs beside it");
  if (t.percore)
    return refuse("percore",
                  "it is for the perf tool that reads an event, and none runs beside it");
  if (t.aux_output || t.aux_sample_size)
    return refuse(t.aux_output ? "aux-output" : "aux-sample-size",
                  "a persistent event is one event, never in a group with an AUX event");
  if (!t.driver_config.empty())
    return refuse("@driver-config",
                  "driver configuration is applied by the perf tool after opening, and none "
                  "opens this event");
  return ok_status();
}

class ParserResolver final : public EventResolver {
 public:
  ParserResolver(std::string sysfs, std::string tracefs)
      : roots_{std::move(sysfs), std::move(tracefs), /*broker_run_dir=*/""} {}

  Result<ResolvedEvent> resolve(std::string_view text) override {
    if (starts_with(trim(text), "persistent/"))
      return already_persistent(text);
    PP_ASSIGN_OR_RETURN(pmu::Model model, pmu::Model::load(roots_));
    auto specs = parse::parse_events(text, model);
    if (!specs.ok())  // the request's fault, even "no persistent event 'x'"
      return std::move(specs).error().with_kind(ErrorKind::kUsage);
    if (specs->size() != 1)
      return errorf(ErrorKind::kUsage, EINVAL,
                    "'%.*s' is %zu events; a persistent event is one event: create them one at a "
                    "time",
                    int(text.size()), text.data(), specs->size());
    const parse::EventSpec& spec = specs->front();
    if (spec.pmu == pmu::kPersistentPmu)
      return already_persistent(text);
    PP_RETURN_IF_ERROR(refuse_lost_terms(text, spec.terms));
    ResolvedEvent event;
    event.attr = spec.attr;
    parse::apply_config_terms(spec.terms, &event.attr);
    event.tracepoint = spec.tracepoint;
    event.pmu = spec.pmu;
    event.pmu_cpus = spec.cpus;
    return event;
  }

 private:
  pmu::Roots roots_;
};

}  // namespace

std::unique_ptr<EventResolver> make_parser_resolver(std::string sysfs_root,
                                                    std::string tracefs_root) {
  return std::make_unique<ParserResolver>(std::move(sysfs_root), std::move(tracefs_root));
}

}  // namespace pp::persistent

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

#include "parse/written_terms.h"

namespace pp::parse {

std::vector<std::pair<std::string, nlohmann::ordered_json>> written_terms(const ConfigTerms& t) {
  std::vector<std::pair<std::string, nlohmann::ordered_json>> out;
  if (t.period)
    out.emplace_back("period", *t.period);
  if (t.freq)
    out.emplace_back("freq", *t.freq);
  if (t.time)
    out.emplace_back("time", *t.time ? 1 : 0);
  if (t.call_graph)
    out.emplace_back("call-graph", *t.call_graph);
  if (t.stack_size)
    out.emplace_back("stack-size", *t.stack_size);
  if (t.max_stack)
    out.emplace_back("max-stack", *t.max_stack);
  if (t.max_events)
    out.emplace_back("nr", *t.max_events);
  if (t.inherit)
    out.emplace_back(*t.inherit ? "inherit" : "no-inherit", true);
  if (t.overwrite)
    out.emplace_back(*t.overwrite ? "overwrite" : "no-overwrite", true);
  if (t.branch_type)
    out.emplace_back("branch_type", *t.branch_type);
  if (t.percore)
    out.emplace_back("percore", *t.percore ? 1 : 0);
  if (t.aux_output)
    out.emplace_back("aux-output", *t.aux_output ? 1 : 0);
  if (t.aux_sample_size)
    out.emplace_back("aux-sample-size", *t.aux_sample_size);
  if (!t.driver_config.empty())
    out.emplace_back("driver-config", t.driver_config);
  if (!t.metric_id.empty())
    out.emplace_back("metric-id", t.metric_id);
  return out;
}

}  // namespace pp::parse

// The terms an event string wrote, by perf's names for them, for printing
// (`perf persistent attr` lists them beside the attr):
//
//   cpu-clock/period=1000,call-graph=fp,no-inherit,@cfg/
//     -> period: 1000, call-graph: "fp", no-inherit: true, driver-config: ["cfg"]
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "parse/parse_events.h"

namespace pp::parse {

// In this order: period, freq, time (0/1), call-graph, stack-size,
// max-stack, nr, inherit or no-inherit (true), overwrite or no-overwrite
// (true), branch_type, percore (0/1), aux-output (0/1), aux-sample-size,
// driver-config (a list), metric-id; only those written.
std::vector<std::pair<std::string, nlohmann::ordered_json>> written_terms(const ConfigTerms& t);

}  // namespace pp::parse

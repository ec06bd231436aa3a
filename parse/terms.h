// The static terms (perf's PARSE_EVENTS__TERM_TYPE_* other than user terms):
// config=, config1-3=, name=, period=, freq=, branch_type=, time=,
// call-graph=, stack-size=, inherit, overwrite, ... What they write into an
// attr when the event is built, and what perf keeps of them for when it
// opens the event (ConfigTerms).
//
// Internal to parse/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "parse/ast.h"
#include "parse/parse_events.h"

namespace pp::parse {

// get_config_terms(): what perf keeps for when it opens the event.
ConfigTerms collect_config_terms(const std::vector<Term>& terms);

// The first name=NAME, or "".
std::string first_name_term(const std::vector<Term>& terms);

// branch_type=NAME (perf's branch_modes, case-insensitive): its
// PERF_SAMPLE_BRANCH_* bits, with ANY added when NAME only selects a
// privilege level (u, k, hv); 0 for a name that is none of them.
uint64_t branch_mode(std::string_view name);

// "u,k,hv,...,priv,": every branch_type name, for messages.
std::string branch_mode_names();

// ASCII case-insensitive equality, as perf's strcasecmp() on term names.
bool iequals(std::string_view a, std::string_view b);

}  // namespace pp::parse

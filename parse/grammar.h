// The event grammar: perf 6.1's parse-events.y, production for production, as
// a recursive-descent parser over the tokens of parse/lexer.h. It builds the
// located tree of parse/ast.h and looks nothing up: what a name means (a PMU,
// an alias, a tracepoint) is resolution's business (parse/resolver.h).
//
//   groups:    (group | event) (',' (group | event))*
//   group:     [PE_NAME] '{' event (',' event)* '}' [':' PE_MODIFIER_EVENT]
//   event:     [PE_EVENT_NAME] event_def [PE_MODIFIER_EVENT]
//   event_def: value_sym ['/' event_config '/'] | cache | PE_RAW opt_config
//            | PE_VALUE ':' PE_VALUE opt_config | mem:ADDR[/LEN][:rwx]
//            | tracepoint_name opt_config | PE_NAME '/' [event_config] '/'
//            | PE_KERNEL_PMU_EVENT [opt_config] | PE_PMU_EVENT_PRE '-' PE_PMU_EVENT_SUF
//   event_config: event_term (',' event_term)*
#pragma once

#include <string_view>
#include <vector>

#include "base/result.h"
#include "parse/ast.h"

namespace pp::pmu {
class Model;
}

namespace pp::parse {

// Parses an event list (`perf stat -e TEXT`). `model` only tells the lexer
// which words are PMU aliases (null: none are). Stops at the first syntax
// error, keeping the tree built so far (see ParsedList).
ParsedList parse_event_list(std::string_view text, const pmu::Model* model);

// Parses a term list as an alias file holds it: "event=0x3c,umask=?". On a
// syntax error, the Error's message is the first diagnostic's.
Result<std::vector<Term>> parse_term_list(std::string_view text, const pmu::Model* model);

}  // namespace pp::parse

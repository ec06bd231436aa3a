// perf's glob matching (__match_glob()), for tracepoint systems and events
// (sched:sched_*) and PMU names with a numeric suffix (uncore_cbox_*).
#pragma once

#include <string_view>

namespace pp::parse {

// '*', '?', '[...]' with ranges and a leading '!', '\' escaping. Iterative,
// backtracking only to the last '*', so a hostile pattern costs
// O(|pattern| * |text|), never exponential time.
bool glob_match(std::string_view text, std::string_view pattern);

// Whether `text` holds '*' or '?': a pattern to expand, not a name.
bool has_glob(std::string_view text);

}  // namespace pp::parse

// Small string helpers shared by every module. Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp {

// Splits on every `sep`; keeps empty fields: split("a,,b", ',') = {"a","","b"}.
std::vector<std::string_view> split(std::string_view text, char sep);

// Removes leading and trailing spaces, tabs and newlines.
std::string_view trim(std::string_view text);

std::string join(const std::vector<std::string>& parts, std::string_view sep);

bool starts_with(std::string_view text, std::string_view prefix);

// ASCII case folding, for names the kernel and users spell either way
// ("CLOCK_MONOTONIC", "intel"); bytes outside A-Z are left as they are.
std::string ascii_lower(std::string_view text);
bool equal_ignoring_case(std::string_view a, std::string_view b);

// A hexadecimal digit's value (0-9, a-f, A-F), or -1.
int hex_digit(char c);

// Parses an unsigned 64-bit number, strictly: the whole text, no sign, no
// spaces. Accepts decimal ("106") and hexadecimal with 0x/0X ("0x6a"); never
// octal, so "010" is ten, as in perf's event syntax. EINVAL for anything
// else, ERANGE when the value does not fit in 64 bits. `what` names the thing
// being parsed in the message ("CPU number", "event id").
Result<uint64_t> parse_u64(std::string_view text, std::string_view what);

// A duration in milliseconds: a number and a unit, ms, s, m, h, d or w
// ("500ms", "90m", "24h", "7d", "2w"; spaces around the unit are fine, "7 d").
// Zero is a duration ("0h"); callers that need a window refuse it. A usage
// error (EINVAL) names the text and the units; one whose milliseconds do not
// fit in 64 bits is a usage error with ERANGE.
Result<uint64_t> parse_duration_ms(std::string_view text);

// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word` when it is close enough to be a plausible
// typo (distance at most max(2, |word|/3), or a prefix), else "".
std::string nearest_word(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace pp

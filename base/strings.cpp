#include "base/strings.h"

#include <algorithm>
#include <cerrno>
#include <limits>
#include <utility>

namespace pp {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (;;) {
    size_t pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z')
      c = char(c - 'A' + 'a');
  return out;
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); i++) {
    char x = a[i] >= 'A' && a[i] <= 'Z' ? char(a[i] - 'A' + 'a') : a[i];
    char y = b[i] >= 'A' && b[i] <= 'Z' ? char(b[i] - 'A' + 'a') : b[i];
    if (x != y)
      return false;
  }
  return true;
}

std::string_view trim(std::string_view text) {
  constexpr std::string_view kSpace = " \t\n\r";
  size_t b = text.find_first_not_of(kSpace);
  if (b == std::string_view::npos)
    return {};
  size_t e = text.find_last_not_of(kSpace);
  return text.substr(b, e - b + 1);
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); i++) {
    if (i)
      out += sep;
    out += parts[i];
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

Result<uint64_t> parse_u64(std::string_view text, std::string_view what) {
  std::string_view digits = text;
  unsigned base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    digits.remove_prefix(2);
    base = 16;
  }
  if (digits.empty())
    return errorf(EINVAL, "%.*s '%.*s' is not a number", int(what.size()), what.data(),
                  int(text.size()), text.data());
  uint64_t value = 0;
  for (char c : digits) {
    int digit = hex_digit(c);
    if (digit < 0 || unsigned(digit) >= base)
      return errorf(EINVAL, "%.*s '%.*s' is not a number", int(what.size()), what.data(),
                    int(text.size()), text.data());
    auto d = unsigned(digit);
    if (value > (std::numeric_limits<uint64_t>::max() - d) / base)
      return errorf(ERANGE, "%.*s '%.*s' does not fit in 64 bits", int(what.size()), what.data(),
                    int(text.size()), text.data());
    value = value * base + d;
  }
  return value;
}

Result<uint64_t> parse_duration_ms(std::string_view text) {
  constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"ms", 1},        {"s", 1000},       {"m", 60'000},
      {"h", 3'600'000}, {"d", 86'400'000}, {"w", 604'800'000},
  };
  std::string_view t = trim(text);
  size_t digits = 0;
  while (digits < t.size() && t[digits] >= '0' && t[digits] <= '9')
    ++digits;
  std::string_view unit = trim(t.substr(digits));
  std::string shown(text);
  auto bad = [&] {
    return usage_error("'" + shown +
                       "' is no duration: a number and a unit, ms, s, m, h, d or w (e.g. 90m, "
                       "24h, 7d)");
  };
  auto too_long = [&] {
    return Error(ErrorKind::kUsage, ERANGE,
                 "'" + shown + "' is too long a duration: its milliseconds do not fit in 64 bits");
  };
  if (digits == 0)
    return bad();
  for (const auto& [name, ms] : kUnits) {
    if (unit != name)
      continue;
    auto n = parse_u64(t.substr(0, digits), "duration");  // digits: only ERANGE
    if (!n.ok())
      return too_long();
    if (*n > std::numeric_limits<uint64_t>::max() / ms)
      return too_long();
    return *n * ms;
  }
  return bad();
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: insertions, deletions, substitutions, and a
  // swap of two neighbours ("lsit" for "list") each cost one edit.
  const size_t w = b.size() + 1;
  std::vector<size_t> d((a.size() + 1) * w);
  for (size_t i = 0; i <= a.size(); i++)
    d[i * w] = i;
  for (size_t j = 0; j <= b.size(); j++)
    d[j] = j;
  for (size_t i = 1; i <= a.size(); i++) {
    for (size_t j = 1; j <= b.size(); j++) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      size_t v =
          std::min({d[(i - 1) * w + j] + 1, d[i * w + j - 1] + 1, d[(i - 1) * w + j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        v = std::min(v, d[(i - 2) * w + j - 2] + 1);
      d[i * w + j] = v;
    }
  }
  return d[a.size() * w + b.size()];
}

std::string nearest_word(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const std::string& c : candidates) {
    size_t d = edit_distance(word, c);
    if (!word.empty() && starts_with(c, word))
      d = std::min<size_t>(d, 1);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  size_t limit = std::max<size_t>(2, word.size() / 3);
  return best_distance <= limit ? best : std::string();
}

}  // namespace pp

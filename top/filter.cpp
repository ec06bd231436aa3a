#include "top/filter.h"

#include <array>
#include <cctype>
#include <cstdlib>

#include "base/strings.h"
#include "mce/decode.h"

namespace pp::top {
namespace {

constexpr std::array<std::string_view, 10> kKeys = {"pid", "tid", "cpu",      "comm", "sym",
                                                    "dso", "ip",  "severity", "bank", "class"};

// Operators, longest first so "<=" is not read as "<".
constexpr std::array<std::pair<std::string_view, TopFilter::Op>, 7> kOps = {{
    {"==", TopFilter::Op::kEq},
    {"!=", TopFilter::Op::kNe},
    {"<=", TopFilter::Op::kLe},
    {">=", TopFilter::Op::kGe},
    {"<", TopFilter::Op::kLt},
    {">", TopFilter::Op::kGt},
    {"~", TopFilter::Op::kContains},
}};

bool key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}

std::optional<uint64_t> read_number(std::string_view text, bool& negative) {
  negative = !text.empty() && text[0] == '-';
  if (negative)
    text.remove_prefix(1);
  auto value = parse_u64(text, "a number");
  if (!value.ok())
    return std::nullopt;
  return negative ? uint64_t(0) - *value : *value;
}

Error filter_error(std::string_view text, size_t at, const std::string& what) {
  return usage_error("filter '" + std::string(text) + "': " + what + " at column " +
                     std::to_string(at + 1) +
                     "; a filter is KEY OP VALUE terms joined by &&, OP one of "
                     "== != < <= > >= ~ (e.g. prev_comm==bash && next_pid>100)");
}

int compare_numbers(const TopValue& v, const TopFilter::Term& t) {
  if (v.is_signed || t.negative) {
    auto a = int64_t(v.number), b = int64_t(*t.number);
    return a < b ? -1 : a > b ? 1 : 0;
  }
  return v.number < *t.number ? -1 : v.number > *t.number ? 1 : 0;
}

bool term_matches(const TopFilter::Term& t, const TopValue& v) {
  if (t.op == TopFilter::Op::kContains)
    return v.text.find(t.value) != std::string::npos;
  int order;
  if (t.key == "severity") {
    int a = mce::mce_severity_rank(v.text), b = mce::mce_severity_rank(t.value);
    order = a < b ? -1 : a > b ? 1 : 0;
  } else if (v.is_number && t.number) {
    order = compare_numbers(v, t);
  } else {
    order = v.text.compare(t.value);
    order = order < 0 ? -1 : order > 0 ? 1 : 0;
  }
  switch (t.op) {
    case TopFilter::Op::kEq:
      return order == 0;
    case TopFilter::Op::kNe:
      return order != 0;
    case TopFilter::Op::kLt:
      return order < 0;
    case TopFilter::Op::kLe:
      return order <= 0;
    case TopFilter::Op::kGt:
      return order > 0;
    case TopFilter::Op::kGe:
      return order >= 0;
    case TopFilter::Op::kContains:
      break;
  }
  return false;
}

}  // namespace

std::span<const std::string_view> top_filter_keys() {
  return kKeys;
}

Result<TopFilter> TopFilter::parse(std::string_view text) {
  TopFilter filter;
  filter.text_ = std::string(trim(text));
  size_t i = 0;
  auto skip_spaces = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
  };
  skip_spaces();
  if (i == text.size())
    return filter;
  for (;;) {
    Term term;
    skip_spaces();
    size_t start = i;
    while (i < text.size() && key_char(text[i]))
      ++i;
    if (i == start)
      return filter_error(text, i, "a field name was expected");
    term.key = std::string(text.substr(start, i - start));
    skip_spaces();
    bool found = false;
    for (const auto& [name, op] : kOps) {
      if (text.substr(i, name.size()) == name) {
        term.op = op;
        i += name.size();
        found = true;
        break;
      }
    }
    if (!found)
      return filter_error(text, i, "an operator was expected after '" + term.key + "'");
    skip_spaces();
    if (i < text.size() && (text[i] == '\'' || text[i] == '"')) {
      char quote = text[i];
      size_t end = text.find(quote, i + 1);
      if (end == std::string_view::npos)
        return filter_error(text, i, "the quote is not closed");
      term.value = std::string(text.substr(i + 1, end - i - 1));
      i = end + 1;
    } else {
      start = i;
      while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])) &&
             text.substr(i, 2) != "&&")
        ++i;
      if (i == start)
        return filter_error(text, i, "a value was expected after the operator");
      term.value = std::string(text.substr(start, i - start));
      term.number = read_number(term.value, term.negative);
    }
    if (term.key == "severity" && term.op != Op::kContains &&
        mce::mce_severity_rank(term.value) < 0)
      return usage_error("filter '" + std::string(text) + "': '" + term.value +
                         "' is no machine-check severity; use one of invalid, corrected, "
                         "deferred, ucna, srao, srar, uncorrected, fatal");
    filter.terms_.push_back(std::move(term));
    skip_spaces();
    if (i == text.size())
      break;
    if (text.substr(i, 2) != "&&")
      return filter_error(text, i, "'&&' or the end was expected");
    i += 2;
  }
  return filter;
}

bool TopFilter::match(
    const std::function<std::optional<TopValue>(std::string_view key)>& get) const {
  for (const Term& t : terms_) {
    std::optional<TopValue> v = get(t.key);
    if (!v || !term_matches(t, *v))
      return false;
  }
  return true;
}

}  // namespace pp::top

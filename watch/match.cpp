#include "watch/match.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "mce/decode.h"
#include "watch/record.h"

namespace pp::watch {
namespace {

constexpr std::string_view kOperators = "(==, !=, <, <=, >, >=, ~)";

// Operators, longest first so "<=" is not read as "<".
constexpr std::pair<std::string_view, Match::Op> kOps[] = {
    {"==", Match::Op::kEq}, {"!=", Match::Op::kNe}, {"<=", Match::Op::kLe},  {">=", Match::Op::kGe},
    {"<", Match::Op::kLt},  {">", Match::Op::kGt},  {"~", Match::Op::kGlob},
};

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c));
}
bool field_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool field_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
// A bare word's characters: anything but spaces, quotes and what the
// grammar uses.
bool word_char(char c) {
  return !is_space(c) && std::string_view("()!&|<>=~'\"").find(c) == std::string_view::npos;
}

bool is_severity_field(std::string_view field) {
  return field == "severity" || field == "kernel_severity";
}
int severity_rank(std::string_view field, std::string_view name) {
  return field == "severity" ? mce::mce_severity_rank(name) : mce::kernel_severity_rank(name);
}

// A severity field's names, least to most severe, for an error.
std::string severity_names(std::string_view field) {
  std::string out;
  auto add = [&](std::string_view name) {
    out += out.empty() ? "" : ", ";
    out += name;
  };
  if (field == "severity") {
    for (std::string_view name : mce::mce_severities_by_rank())
      add(name);
  } else {
    for (int i = 0; i <= int(mce::KernelSeverity::kPanic); i++)
      add(mce::kernel_severity_name(mce::KernelSeverity(i)));
  }
  return out;
}

using Number = Match::Number;

std::optional<Number> parse_number(std::string_view text) {
  bool negative = !text.empty() && text[0] == '-';
  std::string_view digits = negative ? text.substr(1) : text;
  if (digits.empty())
    return std::nullopt;
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  }
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
  if (ec == std::errc() && end == digits.data() + digits.size()) {
    Number n;
    n.i = negative ? -__int128(value) : __int128(value);
    return n;
  }
  if (base == 16)
    return std::nullopt;
  // A decimal fraction ("1.5"): strtod needs a terminated string.
  std::string copy(text);
  char* stop = nullptr;
  double d = std::strtod(copy.c_str(), &stop);
  if (copy.empty() || stop != copy.c_str() + copy.size() || !std::isfinite(d))
    return std::nullopt;
  Number n;
  n.integer = false;
  n.d = d;
  return n;
}

// A JSON scalar as a number, when it is one or a string that reads as one.
std::optional<Number> json_number(const nlohmann::ordered_json& v) {
  Number n;
  if (v.is_number_unsigned()) {
    n.i = __int128(v.get<uint64_t>());
    return n;
  }
  if (v.is_number_integer()) {
    n.i = __int128(v.get<int64_t>());
    return n;
  }
  if (v.is_number_float()) {
    n.integer = false;
    n.d = v.get<double>();
    return n;
  }
  if (v.is_string())
    return parse_number(v.get_ref<const std::string&>());
  return std::nullopt;
}

template <typename T>
int three_way(const T& a, const T& b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

int compare_numbers(const Number& a, const Number& b) {
  if (a.integer && b.integer)
    return three_way(a.i, b.i);
  return three_way(a.as_double(), b.as_double());
}

bool ordered(Match::Op op, int order) {
  switch (op) {
    case Match::Op::kEq:
      return order == 0;
    case Match::Op::kNe:
      return order != 0;
    case Match::Op::kLt:
      return order < 0;
    case Match::Op::kLe:
      return order <= 0;
    case Match::Op::kGt:
      return order > 0;
    case Match::Op::kGe:
      return order >= 0;
    case Match::Op::kGlob:
      break;
  }
  return false;
}

bool is_glob(std::string_view pattern) {
  return pattern.find_first_of("*?[") != std::string_view::npos;
}

// One scalar against one comparison.
bool scalar_matches(const Match::Comparison& c, const nlohmann::ordered_json& v) {
  if (v.is_null() || v.is_object() || v.is_array())
    return false;
  if (c.op == Match::Op::kGlob) {
    std::string text = json_scalar_text(v);
    if (c.glob)
      return ::fnmatch(c.value.c_str(), text.c_str(), 0) == 0;
    return text.find(c.value) != std::string::npos;
  }
  if (c.rank) {
    if (!v.is_string())
      return false;
    int rank = severity_rank(c.field, v.get_ref<const std::string&>());
    return rank >= 0 && ordered(c.op, three_way(rank, *c.rank));
  }
  if (c.number) {
    if (std::optional<Number> have = json_number(v))
      return ordered(c.op, compare_numbers(*have, *c.number));
  }
  return ordered(c.op, three_way(json_scalar_text(v).compare(c.value), 0));
}

bool value_matches(const Match::Comparison& c, const nlohmann::ordered_json& v) {
  if (!v.is_array())
    return scalar_matches(c, v);
  if (c.op == Match::Op::kNe) {
    Match::Comparison equal = c;
    equal.op = Match::Op::kEq;
    return std::none_of(v.begin(), v.end(),
                        [&](const nlohmann::ordered_json& e) { return scalar_matches(equal, e); });
  }
  return std::any_of(v.begin(), v.end(),
                     [&](const nlohmann::ordered_json& e) { return scalar_matches(c, e); });
}

}  // namespace

// The recursive descent: one object per parse, holding where it is.
class MatchParser {
 public:
  MatchParser(std::string_view text, std::string_view what, Match& out)
      : text_(text), what_(what), out_(out) {}

  Status parse() {
    skip_spaces();
    if (pos_ == text_.size())
      return ok_status();
    PP_ASSIGN_OR_RETURN(out_.root_, parse_or(0));
    skip_spaces();
    if (pos_ < text_.size()) {
      if (text_[pos_] == ')')
        return error(pos_, "unbalanced ')': no '(' before it");
      return error(pos_, "expected '&&', '||' or the end");
    }
    return ok_status();
  }

 private:
  // Control characters show as spaces, so that the caret stays under its
  // column and the message on its lines.
  Error error(size_t at, const std::string& message) const {
    std::string shown(text_);
    for (char& c : shown)
      if (static_cast<unsigned char>(c) < ' ' || c == 0x7f)
        c = ' ';
    return usage_error(std::string(what_) + " '" + shown + "': at column " +
                       std::to_string(at + 1) + ": " + message + "\n  " + shown + "\n  " +
                       std::string(at, ' ') + "^");
  }

  void skip_spaces() {
    while (pos_ < text_.size() && is_space(text_[pos_]))
      ++pos_;
  }
  bool take(std::string_view token) {
    skip_spaces();
    if (text_.substr(pos_, token.size()) != token)
      return false;
    pos_ += token.size();
    return true;
  }
  int add(Match::Node node) {
    out_.nodes_.push_back(std::move(node));
    return int(out_.nodes_.size() - 1);
  }
  int join(Match::Kind kind, int left, int right) {
    Match::Node node;
    node.kind = kind;
    node.left = left;
    node.right = right;
    return add(std::move(node));
  }

  Result<int> parse_or(size_t depth) {
    PP_ASSIGN_OR_RETURN(int left, parse_and(depth));
    while (take("||")) {
      PP_ASSIGN_OR_RETURN(int right, parse_and(depth));
      left = join(Match::Kind::kOr, left, right);
    }
    return left;
  }

  Result<int> parse_and(size_t depth) {
    PP_ASSIGN_OR_RETURN(int left, parse_unary(depth));
    while (take("&&")) {
      PP_ASSIGN_OR_RETURN(int right, parse_unary(depth));
      left = join(Match::Kind::kAnd, left, right);
    }
    return left;
  }

  Result<int> parse_unary(size_t depth) {
    skip_spaces();
    if (depth >= kMaxMatchDepth)
      return error(pos_,
                   "nested deeper than " + std::to_string(kMaxMatchDepth) + " parentheses and '!'");
    if (pos_ < text_.size() && text_[pos_] == '!' && text_.substr(pos_, 2) != "!=") {
      ++pos_;
      PP_ASSIGN_OR_RETURN(int inner, parse_unary(depth + 1));
      return join(Match::Kind::kNot, inner, -1);
    }
    if (pos_ < text_.size() && text_[pos_] == '(') {
      size_t open = pos_++;
      PP_ASSIGN_OR_RETURN(int inner, parse_or(depth + 1));
      if (!take(")")) {
        if (pos_ == text_.size())
          return error(pos_, "expected ')' to close the '(' at column " + std::to_string(open + 1));
        return error(pos_, "expected '&&', '||' or ')' (to close the '(' at column " +
                               std::to_string(open + 1) + ")");
      }
      return inner;
    }
    return parse_comparison();
  }

  Result<int> parse_comparison() {
    Match::Comparison c;
    skip_spaces();
    size_t start = pos_;
    if (pos_ < text_.size() && field_start(text_[pos_]))
      while (pos_ < text_.size() && field_char(text_[pos_]))
        ++pos_;
    if (pos_ == start)
      return error(pos_, "expected a field name (severity, bank, cpu, a tracepoint field...)");
    c.field = std::string(text_.substr(start, pos_ - start));

    skip_spaces();
    bool found = false;
    for (const auto& [name, op] : kOps) {
      if (text_.substr(pos_, name.size()) == name) {
        c.op = op;
        pos_ += name.size();
        found = true;
        break;
      }
    }
    if (!found)
      return error(pos_, "expected an operator " + std::string(kOperators));

    skip_spaces();
    size_t value_at = pos_;
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      char quote = text_[pos_++];
      c.quoted = true;
      for (;;) {
        if (pos_ >= text_.size())
          return error(value_at, std::string("the quote ") + quote + " is not closed");
        char ch = text_[pos_++];
        if (ch == quote)
          break;
        if (ch == '\\' && pos_ < text_.size())
          ch = text_[pos_++];
        c.value.push_back(ch);
      }
    } else {
      while (pos_ < text_.size() && word_char(text_[pos_]))
        ++pos_;
      if (pos_ == value_at)
        return error(pos_, "expected a value (a number, a word or a quoted string)");
      c.value = std::string(text_.substr(value_at, pos_ - value_at));
    }

    if (is_severity_field(c.field) && c.op != Match::Op::kGlob) {
      int rank = severity_rank(c.field, c.value);
      if (rank < 0)
        return error(value_at, "unknown " + c.field + " '" + c.value +
                                   "'; least to most severe: " + severity_names(c.field));
      c.rank = rank;
    }
    if (!c.quoted)
      c.number = parse_number(c.value);
    c.glob = c.op == Match::Op::kGlob && is_glob(c.value);
    Match::Node node;
    node.compare = std::move(c);
    return add(std::move(node));
  }

  std::string_view text_;
  std::string_view what_;
  Match& out_;
  size_t pos_ = 0;
};

Result<Match> Match::parse(std::string_view text, std::string_view what) {
  Match m;
  if (text.size() > kMaxMatchLength)
    return usage_error(std::string(what) + ": the expression is longer than " +
                       std::to_string(kMaxMatchLength) + " characters");
  m.text_ = std::string(text);
  MatchParser parser(text, what, m);
  PP_RETURN_IF_ERROR(parser.parse());
  return m;
}

bool Match::matches(const nlohmann::ordered_json& record) const {
  return root_ < 0 || eval(root_, record);
}

bool Match::eval(int index, const nlohmann::ordered_json& record) const {
  const Node& n = nodes_[size_t(index)];
  switch (n.kind) {
    case Kind::kAnd:
      return eval(n.left, record) && eval(n.right, record);
    case Kind::kOr:
      return eval(n.left, record) || eval(n.right, record);
    case Kind::kNot:
      return !eval(n.left, record);
    case Kind::kCompare:
      break;
  }
  const nlohmann::ordered_json* v = record_field(record, n.compare.field);
  return v && value_matches(n.compare, *v);
}

std::vector<std::string> Match::fields() const {
  std::vector<std::string> out;
  for (const Node& n : nodes_)
    if (n.kind == Kind::kCompare && std::find(out.begin(), out.end(), n.compare.field) == out.end())
      out.push_back(n.compare.field);
  return out;
}

}  // namespace pp::watch

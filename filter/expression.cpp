#include "filter/expression.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace pp::filter {
namespace {

constexpr std::string_view kOperators = "(==, !=, <, <=, >, >=, ~)";

// Operators, longest first so "<=" is not read as "<".
constexpr std::pair<std::string_view, Expression::Op> kOps[] = {
    {"==", Expression::Op::kEq},   {"!=", Expression::Op::kNe}, {"<=", Expression::Op::kLe},
    {">=", Expression::Op::kGe},   {"<", Expression::Op::kLt},  {">", Expression::Op::kGt},
    {"~", Expression::Op::kMatch},
};

bool is_space(char c) {
  return std::isspace(static_cast<unsigned char>(c));
}
bool key_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
// A bare word's characters: anything but spaces, quotes and what the
// grammar uses.
bool word_char(char c) {
  return !is_space(c) && std::string_view("()!&|<>=~'\"").find(c) == std::string_view::npos;
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

bool ordered(Expression::Op op, int order) {
  switch (op) {
    case Expression::Op::kEq:
      return order == 0;
    case Expression::Op::kNe:
      return order != 0;
    case Expression::Op::kLt:
      return order < 0;
    case Expression::Op::kLe:
      return order <= 0;
    case Expression::Op::kGt:
      return order > 0;
    case Expression::Op::kGe:
      return order >= 0;
    case Expression::Op::kMatch:
      break;
  }
  return false;
}

bool is_glob(std::string_view pattern) {
  return pattern.find_first_of("*?[") != std::string_view::npos;
}

// A value as a number, when it is one or text that reads as one.
std::optional<Number> value_number(const Value& v) {
  if (v.kind == Value::Kind::kNumber)
    return v.number;
  if (v.kind == Value::Kind::kText)
    return parse_number(v.text);
  return std::nullopt;
}

// One value that is not a list against one comparison.
bool scalar_matches(const Expression::Comparison& c, const Value& v) {
  std::string scratch;
  if (c.op == Expression::Op::kMatch) {
    const std::string& text = v.shown(scratch);
    if (c.glob)
      return ::fnmatch(c.value.c_str(), text.c_str(), 0) == 0;
    return text.find(c.value) != std::string::npos;
  }
  if (c.scale) {
    if (v.kind != Value::Kind::kText)
      return false;
    int rank = c.scale->rank(v.text);
    return rank >= 0 && ordered(c.op, three_way(rank, c.rank));
  }
  if (c.number) {
    if (std::optional<Number> have = value_number(v))
      return ordered(c.op, compare_numbers(*have, *c.number));
  }
  return ordered(c.op, three_way(v.shown(scratch).compare(c.value), 0));
}

bool value_matches(const Expression::Comparison& c, const Value& v) {
  if (v.kind != Value::Kind::kList)
    return scalar_matches(c, v);
  auto scalar = [](const Value& e) { return e.kind != Value::Kind::kList; };
  if (c.op == Expression::Op::kNe) {
    Expression::Comparison equal = c;
    equal.op = Expression::Op::kEq;
    return std::none_of(v.items.begin(), v.items.end(),
                        [&](const Value& e) { return scalar(e) && scalar_matches(equal, e); });
  }
  return std::any_of(v.items.begin(), v.items.end(),
                     [&](const Value& e) { return scalar(e) && scalar_matches(c, e); });
}

}  // namespace

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

std::string Value::shown() const {
  switch (kind) {
    case Kind::kText:
      return text;
    case Kind::kNumber: {
      if (!number.integer) {
        char out[32];
        std::snprintf(out, sizeof out, "%.17g", number.d);
        return out;
      }
      if (number.i < 0)
        return std::to_string(int64_t(number.i));
      return std::to_string(uint64_t(number.i));
    }
    case Kind::kList: {
      std::string out;
      for (const Value& e : items)
        out += (out.empty() ? "" : " ") + e.shown();
      return out;
    }
  }
  return text;
}

const std::string& Value::shown(std::string& scratch) const {
  if (kind == Kind::kText)
    return text;
  scratch = shown();
  return scratch;
}

// The recursive descent: one object per parse, holding where it is.
class Parser {
 public:
  Parser(std::string_view text, const Keys& keys, std::string_view what, Expression& out)
      : text_(text), keys_(keys), what_(what), out_(out) {}

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
  int add(Expression::Node node) {
    out_.nodes_.push_back(std::move(node));
    return int(out_.nodes_.size() - 1);
  }
  int join(Expression::Kind kind, int left, int right) {
    Expression::Node node;
    node.kind = kind;
    node.left = left;
    node.right = right;
    return add(std::move(node));
  }

  Result<int> parse_or(size_t depth) {
    PP_ASSIGN_OR_RETURN(int left, parse_and(depth));
    while (take("||")) {
      PP_ASSIGN_OR_RETURN(int right, parse_and(depth));
      left = join(Expression::Kind::kOr, left, right);
    }
    return left;
  }

  Result<int> parse_and(size_t depth) {
    PP_ASSIGN_OR_RETURN(int left, parse_unary(depth));
    while (take("&&")) {
      PP_ASSIGN_OR_RETURN(int right, parse_unary(depth));
      left = join(Expression::Kind::kAnd, left, right);
    }
    return left;
  }

  Result<int> parse_unary(size_t depth) {
    skip_spaces();
    if (depth >= kMaxDepth)
      return error(pos_,
                   "nested deeper than " + std::to_string(kMaxDepth) + " parentheses and '!'");
    if (pos_ < text_.size() && text_[pos_] == '!' && text_.substr(pos_, 2) != "!=") {
      ++pos_;
      PP_ASSIGN_OR_RETURN(int inner, parse_unary(depth + 1));
      return join(Expression::Kind::kNot, inner, -1);
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
    Expression::Comparison c;
    skip_spaces();
    size_t start = pos_;
    if (pos_ < text_.size() && key_start(text_[pos_]))
      while (pos_ < text_.size() && key_char(text_[pos_]))
        ++pos_;
    if (pos_ == start)
      return error(pos_, "expected a field name (" + keys_.describe() + ")");
    c.key = std::string(text_.substr(start, pos_ - start));
    if (!keys_.has(c.key))
      return error(start, "unknown field '" + c.key + "'; the fields are: " + keys_.describe());

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

    const Scale* scale = keys_.scale(c.key);
    if (scale && c.op != Expression::Op::kMatch) {
      c.rank = scale->rank(c.value);
      if (c.rank < 0)
        return error(value_at, "unknown " + c.key + " '" + c.value +
                                   "'; least to most severe: " + scale->names_text());
      c.scale = scale;
    }
    if (!c.quoted)
      c.number = parse_number(c.value);
    c.glob = c.op == Expression::Op::kMatch && is_glob(c.value);
    Expression::Node node;
    node.compare = std::move(c);
    return add(std::move(node));
  }

  std::string_view text_;
  const Keys& keys_;
  std::string_view what_;
  Expression& out_;
  size_t pos_ = 0;
};

Result<Expression> Expression::parse(std::string_view text, const Keys& keys,
                                     std::string_view what) {
  Expression e;
  if (text.size() > kMaxLength)
    return usage_error(std::string(what) + ": the expression is longer than " +
                       std::to_string(kMaxLength) + " characters");
  e.text_ = std::string(text);
  Parser parser(text, keys, what, e);
  PP_RETURN_IF_ERROR(parser.parse());
  return e;
}

bool Expression::matches(const Record& record) const {
  return root_ < 0 || eval(root_, record);
}

bool Expression::eval(int index, const Record& record) const {
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
  std::optional<Value> v = record.field(n.compare.key);
  return v && value_matches(n.compare, *v);
}

std::vector<std::string> Expression::keys() const {
  std::vector<std::string> out;
  for (const Node& n : nodes_)
    if (n.kind == Kind::kCompare && std::find(out.begin(), out.end(), n.compare.key) == out.end())
      out.push_back(n.compare.key);
  return out;
}

}  // namespace pp::filter

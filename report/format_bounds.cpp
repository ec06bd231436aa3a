#include "report/format_bounds.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <string>

namespace pp::report {
namespace {

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// `print` as libtraceevent's tokenizer reads its code: each string literal
// ("...") and character literal ('...'), its quotes and escapes included
// (a backslash takes the next character), turned into spaces. The same
// length, so an offset means the same in both.
//   print fmt: "a=%d (%s)", REC->a, '"'  ->  print fmt:            , REC->a,
std::string code_of(std::string_view print) {
  std::string code(print);
  char quote = 0;
  for (size_t i = 0; i < code.size(); i++) {
    char c = code[i];
    if (!quote && c != '"' && c != '\'')
      continue;
    if (!quote)
      quote = c;
    else if (c == '\\' && i + 1 < code.size())
      code[i++] = ' ';  // and the escaped character below
    else if (c == quote)
      quote = 0;
    code[i] = ' ';
  }
  return code;
}

size_t skip_space(std::string_view text, size_t i) {
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
    i++;
  return i;
}

// Where the operand at `i` of `code` ends when it is a divisor that cannot
// be 0 (see check_format_divisors()); npos when it is not.
size_t nonzero_divisor_end(std::string_view code, size_t i) {
  size_t end = i;
  if (code.compare(i, 6, "sizeof") == 0) {
    size_t open = skip_space(code, i + 6);
    if (open >= code.size() || code[open] != '(')
      return std::string_view::npos;
    size_t close = code.find(')', open);
    if (close == std::string_view::npos)
      return std::string_view::npos;
    // A type: words only (sizeof(REC->x) is the field's size, maybe 0).
    for (size_t k = open + 1; k < close; k++)
      if (!is_identifier_char(code[k]) && !std::isspace(static_cast<unsigned char>(code[k])))
        return std::string_view::npos;
    if (skip_space(code, open + 1) == close)
      return std::string_view::npos;
    end = close + 1;
  } else {
    if (i >= code.size() || !std::isdigit(static_cast<unsigned char>(code[i])))
      return std::string_view::npos;
    while (end < code.size() && is_identifier_char(code[end]))
      end++;
    // What libtraceevent reads: strtoull() of the token, base 0.
    std::string token(code.substr(i, end - i));
    if (std::strtoull(token.c_str(), nullptr, 0) == 0)
      return std::string_view::npos;
  }
  size_t next = skip_space(code, end);
  if (next >= code.size())
    return end;
  char c = code[next];
  if (c == '-')
    return next + 1 < code.size() && code[next + 1] == '>' ? std::string_view::npos : end;
  return std::string_view(")],:?+*/%&|^<>=!}").find(c) == std::string_view::npos
             ? std::string_view::npos
             : end;
}

}  // namespace

Status check_format_divisors(std::string_view format) {
  size_t at = format.find("print fmt:");
  if (at == std::string_view::npos)
    return ok_status();
  const std::string code = code_of(format.substr(at));
  for (size_t i = 0; i < code.size(); i++) {
    if (code[i] != '/' && code[i] != '%')
      continue;
    size_t operand = skip_space(code, i + 1);
    if (nonzero_divisor_end(code, operand) != std::string_view::npos)
      continue;
    size_t shown = operand;
    while (shown < code.size() && shown - operand < 32 &&
           std::isprint(static_cast<unsigned char>(code[shown])) && code[shown] != ',')
      shown++;
    return Error(EINVAL, std::string("its print fmt divides by '") +
                             std::string(std::string_view(code).substr(operand, shown - operand)) +
                             "', which may be 0 (only a non-zero number or sizeof() of a type "
                             "is a safe divisor)");
  }
  return ok_status();
}

namespace {

// In `code` (of `print`, the same length), the end of the balanced group
// that opens at `i` ("(...)"); npos when it does not close.
size_t group_end(std::string_view code, size_t i) {
  size_t depth = 0;
  for (; i < code.size(); i++) {
    if (code[i] == '(')
      depth++;
    else if (code[i] == ')' && --depth == 0)
      return i + 1;
  }
  return std::string_view::npos;
}

// skip_space() on `code` that stops at a literal's opening quote (`code`
// has spaces where `print` has literals).
size_t skip_space_to_literal(std::string_view print, std::string_view code, size_t i) {
  while (i < code.size() && std::isspace(static_cast<unsigned char>(code[i])) && print[i] != '"' &&
         print[i] != '\'')
    i++;
  return i;
}

// Where the operand that starts at or after `i` ends, as libtraceevent's
// process_arg() reads it; npos for any other shape (nothing to check).
size_t operand_end(std::string_view print, std::string_view code, size_t i) {
  for (;;) {
    i = skip_space_to_literal(print, code, i);
    if (i >= code.size())
      return std::string_view::npos;
    char c = print[i];
    if (c == '"' || c == '\'') {  // a literal: to its closing quote
      for (size_t k = i + 1; k < print.size(); k++) {
        if (print[k] == '\\')
          k++;
        else if (print[k] == c)
          return k + 1;
      }
      return std::string_view::npos;
    }
    if (is_identifier_char(c)) {
      size_t end = i;
      while (end < code.size() && is_identifier_char(code[end]))
        end++;
      size_t next = skip_space(code, end);
      if (code.substr(i, end - i) == "REC" && code.compare(next, 2, "->") == 0) {
        end = skip_space(code, next + 2);
        while (end < code.size() && is_identifier_char(code[end]))
          end++;
        return end;
      }
      // Words in a row are one atom to libtraceevent ("unsigned long").
      while (next < code.size() && is_identifier_char(code[next])) {
        end = next;
        while (end < code.size() && is_identifier_char(code[end]))
          end++;
        next = skip_space(code, end);
      }
      if (next < code.size() && code[next] == '(')
        return group_end(code, next);  // a call
      return end;
    }
    if (c != '(')
      return std::string_view::npos;
    size_t end = group_end(code, i);
    if (end == std::string_view::npos)
      return end;
    size_t next = skip_space_to_literal(print, code, end);
    if (next < code.size() && (is_identifier_char(code[next]) || code[next] == '(' ||
                               print[next] == '"' || print[next] == '\'')) {
      i = next;  // "(type)x": a cast, and its operand
      continue;
    }
    return end;
  }
}

}  // namespace

bool has_foreign_operator(std::string_view format) {
  size_t at = format.find("print fmt:");
  if (at == std::string_view::npos)
    return false;
  return code_of(format.substr(at)).find_first_of("#@$;`\\") != std::string::npos;
}

Status check_format_conditionals(std::string_view format) {
  size_t at = format.find("print fmt:");
  if (at == std::string_view::npos)
    return ok_status();
  std::string_view print = format.substr(at);
  const std::string code = code_of(print);
  for (size_t i = std::string_view("print fmt:").size(); i < code.size(); i++) {
    if (code[i] != ':' && code[i] != ']')
      continue;
    // A subscript's ']' ends its operand as well ("REC->args[0]$" crashes
    // libtraceevent the same way).
    size_t end = code[i] == ']' ? i + 1 : operand_end(print, code, i + 1);
    if (end == std::string_view::npos)
      continue;
    size_t next = skip_space_to_literal(print, code, end);
    if (next >= code.size())
      continue;
    // Only what ends the operand, or an operator libtraceevent ranks, may
    // follow: a word, a literal, '[', '.', "->", '{', a lone '=' may not.
    char c = code[next];
    char after = next + 1 < code.size() ? code[next + 1] : 0;
    bool literal = print[next] == '"' || print[next] == '\'';
    bool bad = literal || (c == '-' && after == '>') || (c == '=' && after != '=') ||
               std::string_view(",)]:*/%+-<>=!&^|?").find(c) == std::string_view::npos;
    if (literal)
      c = print[next];
    if (bad)
      return errorf(
          EINVAL,
          "its print fmt follows the last operand of a %s with '%s', which "
          "libtraceevent cannot parse",
          code[i] == ']' ? "subscript" : "?:", c == '-' ? "->" : std::string(1, c).c_str());
  }
  return ok_status();
}

Status check_format_bounds(std::string_view format) {
  size_t at = format.find("print fmt:");
  std::string_view print = at == std::string_view::npos ? format : format.substr(at);
  if (print.size() > kMaxPrintFormatBytes)
    return Error(EINVAL, "its print fmt is " + std::to_string(print.size()) +
                             " bytes long, more than " + std::to_string(kMaxPrintFormatBytes));
  // A byte that is not ASCII: libtraceevent 1.7 leaks a token when one
  // sits in a string literal that follows an operand ("%d", 5 "\xe6"), and
  // reports the parse a success (found by fuzzing TraceDecoder), so the
  // probe in a child cannot see it. A control byte does the same inside a
  // literal ("\x11'lu %lu", found by a 300 s fuzzing run). Kernels write
  // print formats in printable ASCII: escapes are spelled out ("\n").
  for (size_t i = 0; i < print.size(); i++) {
    auto byte = static_cast<unsigned char>(print[i]);
    if (byte >= 0x80)
      return errorf(EINVAL, "its print fmt holds a byte that is not ASCII (0x%02x, at %zu)", byte,
                    i);
    if ((byte < 0x20 && byte != '\t' && byte != '\n') || byte == 0x7f)
      return errorf(EINVAL, "its print fmt holds a control byte (0x%02x, at %zu)", byte, i);
  }
  // A literal left open: libtraceevent reads it to the end and crashes
  // on what it then holds (found by fuzzing TraceDecoder).
  char quote = 0;
  for (size_t i = 0; i < print.size(); i++) {
    if (!quote && (print[i] == '"' || print[i] == '\''))
      quote = print[i];
    else if (quote && print[i] == '\\')
      i++;
    else if (quote && print[i] == quote)
      quote = 0;
  }
  if (quote)
    return errorf(EINVAL, "its print fmt leaves a %s literal open",
                  quote == '"' ? "string" : "character");
  size_t depth = 0, deepest = 0, operators = 0;
  const std::string code = code_of(print);
  for (size_t i = 0; i < code.size(); i++) {
    char c = code[i];
    switch (c) {
      case '(':
      case '[':
      case '{':
        deepest = std::max(deepest, ++depth);
        break;
      case ')':
      case ']':
      case '}':
        if (depth == 0)
          return errorf(EINVAL, "its print fmt closes a '%c' it never opened", c);
        depth--;
        break;
      case '-':
        if (i + 1 < code.size() && code[i + 1] == '>') {
          i++;  // REC->field: a member, no operator
          break;
        }
        operators++;
        break;
      case '+':
      case '*':
      case '/':
      case '%':
      case '&':
      case '|':
      case '^':
      case '<':
      case '>':
      case '!':
      case '?':
      case '~':
      case '=':
        operators++;
        break;
      default:
        break;
    }
  }
  // libtraceevent leaks a token on the error path of many of its helpers
  // (__get_dynamic_array_len(a ...) when the text ends inside them.
  if (depth > 0)
    return errorf(EINVAL, "its print fmt leaves %zu bracket%s open", depth, depth == 1 ? "" : "s");
  if (deepest > kMaxFormatNesting)
    return Error(EINVAL, "its print fmt nests " + std::to_string(deepest) +
                             " levels deep, more than " + std::to_string(kMaxFormatNesting));
  if (operators > kMaxPrintFormatOperators)
    return Error(EINVAL, "its print fmt holds " + std::to_string(operators) +
                             " operators, more than " + std::to_string(kMaxPrintFormatOperators));
  return ok_status();
}

Status check_format_fields(std::string_view format) {
  size_t at = format.find("print fmt:");
  if (at == std::string_view::npos)
    return ok_status();
  std::set<std::string_view> fields;
  std::string_view head = format.substr(0, at);
  for (size_t pos = head.find("field:"); pos != std::string_view::npos;
       pos = head.find("field:", pos + 6)) {
    size_t end = head.find(';', pos);
    if (end == std::string_view::npos)
      break;
    std::string_view decl = head.substr(pos + 6, end - pos - 6);
    if (size_t bracket = decl.rfind('['); bracket != std::string_view::npos &&
                                          decl.find(']', bracket) != std::string_view::npos &&
                                          bracket > 0 && is_identifier_char(decl[bracket - 1]))
      decl = decl.substr(0, bracket);  // "char name[16]", not "__data_loc char[] str"
    size_t start = decl.size();
    while (start > 0 && is_identifier_char(decl[start - 1]))
      start--;
    if (start < decl.size())
      fields.insert(decl.substr(start));
  }
  // REC->name, spaced as the tokenizer allows ("REC -> name" too).
  const std::string code = code_of(format.substr(at));
  for (size_t i = 0; i < code.size(); i++) {
    if (!is_identifier_char(code[i]) || (i > 0 && is_identifier_char(code[i - 1])))
      continue;  // not the start of a word
    size_t word = i;
    while (i < code.size() && is_identifier_char(code[i]))
      i++;
    if (std::string_view(code).substr(word, i - word) != "REC")
      continue;
    size_t arrow = skip_space(code, i);
    if (code.compare(arrow, 2, "->") != 0)
      continue;
    size_t name = skip_space(code, arrow + 2), end = name;
    while (end < code.size() && is_identifier_char(code[end]))
      end++;
    std::string_view field = std::string_view(code).substr(name, end - name);
    if (!fields.count(field))
      return Error(EINVAL, "its print fmt names REC->" + std::string(field.substr(0, 64)) +
                               ", which is no field of the format");
    i = end - 1;
  }
  return ok_status();
}

}  // namespace pp::report

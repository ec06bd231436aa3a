#include "report/format_bounds.h"

#include <algorithm>
#include <cctype>
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

}  // namespace

Status check_format_bounds(std::string_view format) {
  size_t at = format.find("print fmt:");
  std::string_view print = at == std::string_view::npos ? format : format.substr(at);
  if (print.size() > kMaxPrintFormatBytes)
    return Error(EINVAL, "its print fmt is " + std::to_string(print.size()) +
                             " bytes long, more than " + std::to_string(kMaxPrintFormatBytes));
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
        depth -= depth > 0;
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

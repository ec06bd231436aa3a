#include "report/format_bounds.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

namespace pp::report {

Status check_format_bounds(std::string_view format) {
  size_t at = format.find("print fmt:");
  std::string_view print = at == std::string_view::npos ? format : format.substr(at);
  if (print.size() > kMaxPrintFormatBytes)
    return Error(EINVAL, "its print fmt is " + std::to_string(print.size()) +
                             " bytes long, more than " + std::to_string(kMaxPrintFormatBytes));
  size_t depth = 0, deepest = 0, operators = 0;
  bool quoted = false;
  for (size_t i = 0; i < print.size(); i++) {
    char c = print[i];
    if (quoted) {
      if (c == '\\')
        i++;  // an escaped character, a quote among them
      else if (c == '"')
        quoted = false;
      continue;
    }
    switch (c) {
      case '"':
        quoted = true;
        break;
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
        if (i + 1 < print.size() && print[i + 1] == '>') {
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

namespace {

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

}  // namespace

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
  std::string_view print = format.substr(at);
  bool quoted = false;
  for (size_t i = 0; i < print.size(); i++) {
    char c = print[i];
    if (quoted) {
      if (c == '\\')
        i++;
      else if (c == '"')
        quoted = false;
      continue;
    }
    if (c == '"') {
      quoted = true;
      continue;
    }
    if (print.compare(i, 5, "REC->") != 0 || (i > 0 && is_identifier_char(print[i - 1])))
      continue;
    size_t name = i + 5, end = name;
    while (end < print.size() && is_identifier_char(print[end]))
      end++;
    std::string_view field = print.substr(name, end - name);
    if (!fields.count(field))
      return Error(EINVAL, "its print fmt names REC->" + std::string(field.substr(0, 64)) +
                               ", which is no field of the format");
    i = end - 1;
  }
  return ok_status();
}

}  // namespace pp::report

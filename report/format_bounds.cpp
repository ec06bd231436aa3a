#include "report/format_bounds.h"

#include <algorithm>
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

}  // namespace pp::report

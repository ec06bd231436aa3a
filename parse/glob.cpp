#include "parse/glob.h"

#include <cstddef>

namespace pp::parse {
namespace {

bool match_class(std::string_view pat, size_t* p, char c) {
  size_t i = *p + 1;  // past '['
  bool complement = false;
  if (i < pat.size() && pat[i] == '!') {
    complement = true;
    i++;
  }
  bool matched = false;
  bool first = true;
  while (i < pat.size() && (first || pat[i] != ']')) {
    if (!first && pat[i] == '-' && i + 1 < pat.size() && pat[i + 1] != ']') {
      if (pat[i - 1] <= c && c <= pat[i + 1])
        matched = true;
      i += 2;
      continue;
    }
    if (pat[i] == c)
      matched = true;
    first = false;
    i++;
  }
  if (i >= pat.size()) {
    *p = pat.size() + 1;  // unterminated class: matches nothing
    return false;
  }
  *p = i + 1;
  return complement ? !matched : matched;
}

}  // namespace

bool glob_match(std::string_view text, std::string_view pat) {
  size_t t = 0, p = 0;
  size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pat.size() && pat[p] == '*') {
      star_p = ++p;
      star_t = t;
      continue;
    }
    if (p < pat.size()) {
      size_t next = p + 1;
      bool ok;
      if (pat[p] == '?') {
        ok = true;
      } else if (pat[p] == '[') {
        next = p;
        ok = match_class(pat, &next, text[t]);
      } else if (pat[p] == '\\' && p + 1 < pat.size()) {
        ok = pat[p + 1] == text[t];
        next = p + 2;
      } else {
        ok = pat[p] == text[t];
      }
      if (ok && next <= pat.size()) {
        p = next;
        t++;
        continue;
      }
    }
    if (star_p == std::string_view::npos)
      return false;
    p = star_p;
    t = ++star_t;
  }
  while (p < pat.size() && pat[p] == '*')
    p++;
  return p == pat.size();
}

bool has_glob(std::string_view text) {
  return text.find_first_of("*?") != std::string_view::npos;
}

}  // namespace pp::parse

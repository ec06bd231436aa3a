#include "base/terminal.h"

namespace pp {

void append_terminal_safe(std::string& out, std::string_view text) {
  static constexpr char kDigits[] = "0123456789abcdef";
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  };
  for (size_t i = 0; i < text.size(); i++) {
    auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      escape(c);
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      escape(c);
      escape(static_cast<unsigned char>(text[++i]));
    } else {
      out += char(c);
    }
  }
}

bool is_terminal_safe(std::string_view text) {
  for (size_t i = 0; i < text.size(); i++) {
    auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return false;
    if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9f)
      return false;
  }
  return true;
}

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_terminal_safe(out, text);
  return out;
}

}  // namespace pp

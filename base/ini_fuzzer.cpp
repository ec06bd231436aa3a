// libFuzzer target: any bytes through the config files' INI reader. It must
// never crash or read outside its input; what it returns must hold together:
// every error is "PATH:LINE: ..." with LINE within the text, every section
// and key carries a line within the text, in increasing order, and keys and
// names come back trimmed, never holding a newline. Seeds:
// tests/fuzz/corpus/ini_fuzzer/ (both config files' documented examples,
// and broken ones).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "base/ini.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

constexpr std::string_view kPath = "fuzz.conf";

void check(bool ok) {
  if (!ok)
    std::abort();
}

bool trimmed(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  return s.empty() || (kSpace.find(s.front()) == std::string_view::npos &&
                       kSpace.find(s.back()) == std::string_view::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  int lines = int(std::count(text.begin(), text.end(), '\n')) + 1;
  auto doc = pp::parse_ini(text, kPath);
  if (!doc.ok()) {
    const std::string& message = doc.error().message();
    check(message.starts_with(std::string(kPath) + ":"));
    int line = std::atoi(message.c_str() + kPath.size() + 1);
    check(line >= 1 && line <= lines);
    return 0;
  }
  int last = 0;
  auto entry_ok = [&](const pp::IniEntry& e) {
    check(e.line > last && e.line <= lines);
    last = e.line;
    check(!e.key.empty() && trimmed(e.key) && trimmed(e.value));
    check(e.key.find('\n') == std::string::npos && e.value.find('\n') == std::string::npos);
    check(e.key.find('=') == std::string::npos);
  };
  for (const pp::IniEntry& e : doc->preamble)
    entry_ok(e);
  for (const pp::IniSection& s : doc->sections) {
    check(s.line > last && s.line <= lines);
    last = s.line;
    check(trimmed(s.name) && s.name.find('\n') == std::string::npos);
    for (const pp::IniEntry& e : s.entries)
      entry_ok(e);
  }
  return 0;
}

#include "base/ini.h"

#include "base/strings.h"

namespace pp {
namespace {

// The line up to its comment: '#' first on the line, or after a space or tab.
std::string_view strip_comment(std::string_view line) {
  for (size_t i = 0; i < line.size(); i++)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t'))
      return line.substr(0, i);
  return line;
}

}  // namespace

Error ini_error(std::string_view path, int line, std::string_view what) {
  return Error(ErrorKind::kConfig, EINVAL,
               std::string(path) + ":" + std::to_string(line) + ": " + std::string(what));
}

Result<IniDocument> parse_ini(std::string_view text, std::string_view path) {
  IniDocument doc;
  int number = 0;
  for (std::string_view raw : split(text, '\n')) {
    number++;
    std::string_view line = trim(strip_comment(raw));
    if (line.empty())
      continue;
    if (line.front() == '[') {
      if (line.back() != ']')
        return ini_error(path, number,
                         "a section header is '[NAME]', not '" + std::string(line) + "'");
      doc.sections.push_back({std::string(trim(line.substr(1, line.size() - 2))), number, {}});
      continue;
    }
    size_t eq = line.find('=');
    std::string_view key = eq == std::string_view::npos ? "" : trim(line.substr(0, eq));
    if (key.empty())
      return ini_error(path, number,
                       "expected 'key = value' or '[NAME]', not '" + std::string(line) + "'");
    IniEntry entry{std::string(key), std::string(trim(line.substr(eq + 1))), number};
    (doc.sections.empty() ? doc.preamble : doc.sections.back().entries).push_back(std::move(entry));
  }
  return doc;
}

}  // namespace pp

// The one reader of the program's config files (the broker's
// /etc/perf-persistent.conf, watch's /etc/perf-persistent-watch.conf): INI
// text into its sections and their keys, each with the line it came from.
// Pure: text in, a document out; what a section or a key means, and whether
// one may repeat, is the caller's to say.
//
//   # a comment: a whole line, or '#' after a space or a tab
//   [mce_record]            a section header: its name is what the brackets hold, trimmed
//   event = mce:mce_record  KEY = VALUE, split at the first '=', both trimmed
//   filter = bank == 4      # the value may hold '=', and '#' with no space before it
//
// Keys before the first section header are the document's preamble (the
// callers here refuse them, each in its own words). Lines end at '\n'; a
// '\r' before it is trimmed with the spaces.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp {

// One KEY = VALUE line.
struct IniEntry {
  std::string key;
  std::string value;
  int line = 0;  // from 1
};

// A section header and the keys under it, in the file's order (repeated
// keys too).
struct IniSection {
  std::string name;  // what the brackets hold, trimmed ("trigger ue")
  int line = 0;      // of the header
  std::vector<IniEntry> entries;
};

struct IniDocument {
  std::vector<IniEntry> preamble;    // keys before any section header
  std::vector<IniSection> sections;  // in the file's order (repeated names too)
};

// Reads `text`; `path` names it in errors. The first line that is not blank,
// a comment, a section header or KEY = VALUE (with a key) is an error:
//
//   /etc/perf-persistent.conf:3: a section header is '[NAME]', not '[mce'
//   /etc/perf-persistent.conf:4: expected 'key = value' or '[NAME]', not 'just words'
Result<IniDocument> parse_ini(std::string_view text, std::string_view path);

// The shape of every error about a config file's content, the reader's and
// its callers': kind kConfig, code EINVAL, message "PATH:LINE: what".
Error ini_error(std::string_view path, int line, std::string_view what);

}  // namespace pp

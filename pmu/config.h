// Format application: the terms of a PMU event (cpu/event=0x3c,umask=1,edge/,
// or the terms an alias file stands for) written through the PMU's format
// files into a perf_event_attr, as perf's perf_pmu__config() does.
//
//   format/event  "config:0-7"   event=0x3c  -> attr.config bits 0-7 = 0x3c
//   format/edge   "config:18"    edge        -> attr.config bit 18 = 1
//   format/ldlat  "config1:0-15" ldlat=3     -> attr.config1 bits 0-15 = 3
//   format/umask  "config:8-15"  umask=?     -> the value of another umask=N
//
// Pure: the PMU (pmu/model.h) holds the parsed formats; nothing is read here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pmu/model.h"
#include "sys/perf_attr.h"

namespace pp::pmu {

// A term to write through a format file.
struct FormatTerm {
  std::string name;  // the format file's name: "event", "umask", "edge"
  bool is_num = true;
  uint64_t num = 0;              // the value; 1 for a bare term (whatever the width, as perf 6.1)
  std::string str;               // a value that is a name: "?" asks for a parameter
  bool no_value = false;         // written bare: "edge", "tsc"
  size_t col = 0, val_col = 0;   // where the term and its value start, for errors
  const Alias* alias = nullptr;  // the alias file the term came from, or null
};

// Why the terms could not be applied: a message for the caret at `col`, with
// help below it. When a term names no format file of the PMU, no_format
// points at it and the message is empty: what that name might have meant (a
// static term, a persistent event) is for the caller to say.
struct ConfigError {
  size_t col = 0;
  int code = EINVAL;
  std::string message, help;
  const FormatTerm* no_format = nullptr;
};

// Writes each term's value into the attr word its format names, ORing it in,
// in order; sets *config3_used when one writes config3. Stops at the first
// term that fails: no format file, a format that cannot be used (word 0, a
// word past the attr), a value wider than its bits, "?" with no value, two
// formats writing the same bits. Returns nullopt when all were written.
std::optional<ConfigError> apply_formats(const Pmu& pmu, const std::vector<FormatTerm>& terms,
                                         sys::EventAttr* attr, bool* config3_used);

// " (from event alias 'NAME', PATH: 'TERMS')" for a term from an alias, else "".
std::string alias_note(const FormatTerm& term);

}  // namespace pp::pmu

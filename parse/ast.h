// The located tree the event grammar (parse/grammar.h) builds from an event
// string, before any name is looked up:
//
//   cycles:u,g{msr/tsc/,sched:sched_switch}:k
//
//   Group {lone}      Event kSymbol "cycles" (col 0)      modifiers "u" (col 7)
//   Group "g" (col 9) Event kPmu "msr" (col 11), terms [tsc (col 15)]
//                     Event kTracepoint "sched" "sched_switch" (col 20)
//                     group modifiers "k" (col 40)
//
// Every node keeps the byte offset it starts at, so that resolution (which
// turns the tree into perf_event_attrs, parse/resolver.h) can point its
// errors at the right column.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "parse/lexer.h"

namespace pp::parse {

// A diagnostic in perf's caret form: the message under a caret at `col`,
// and lines of help below it.
struct Diagnostic {
  size_t col;
  int code;
  std::string message, help;
  // The string is the user's to fix, unless it names a persistent event that
  // does not exist.
  ErrorKind kind = ErrorKind::kUsage;
};

// A word of the source, where it stands: a name, a number (its value in
// num), a modifier string.
struct Word {
  std::string text;
  uint64_t num = 0;
  size_t col = 0;
};

// A term, as in cpu/event=0x3c,umask=1,edge,period=1000,name=x,@cfg/ or a
// line of an alias file. A raw term r1a8 is config=0x1a8.
struct Term {
  TermType type = TermType::kUser;
  std::string config;  // a user term's name ("event"), a driver term's text;
                       // empty for static terms
  bool is_num = true;
  uint64_t num = 0;
  std::string str;
  bool no_value = false;  // written bare: "tsc", "inherit" (num is 1)
  bool weak = false;      // from an alias file: a command-line option overrides it
  size_t col = 0, val_col = 0;

  // "event", "period", "@cfg"'s text: how a message names the term.
  std::string label() const {
    return type == TermType::kUser || type == TermType::kDrvCfg ? config
                                                                : std::string(term_name(type));
  }
  // "3", "'fp'": how a message names the value.
  std::string value_text() const { return is_num ? std::to_string(num) : "'" + str + "'"; }
};

enum class EventKind {
  kSymbol,      // cycles, cpu-clock: name (num: the config), hardware
  kCache,       // L1-dcache-load-misses: name is the cache, parts its op and result
  kRaw,         // r1a8: name (num: the config)
  kNumeric,     // 4:0x1a8: name is the type, second the config
  kBreakpoint,  // mem:0x1000/8:rw: name is the address, bp_len, bp_access
  kTracepoint,  // sys:event, sys-x:ev*: name is the system, second the event
  kPmu,         // msr/tsc/: name is the PMU
  kAlias,       // tsc, mem-loads, tsc/period=1/: name is the alias, on every PMU that has it
  kUnknown,     // a word that is none of these: resolution says what it might be
};

// One event_def of perf's grammar.
struct EventDef {
  EventKind kind = EventKind::kUnknown;
  Word name;
  Word second;
  std::vector<Word> parts;
  bool hardware = false;          // kSymbol: PERF_TYPE_HARDWARE, else SOFTWARE
  uint64_t bp_len = 0;            // kBreakpoint: 0 when not written
  std::optional<Word> bp_access;  // kBreakpoint: "rw" after the ':'
  std::vector<Term> terms;        // between the slashes
};

// event: [PE_EVENT_NAME] event_def [modifiers]
struct Event {
  EventDef def;
  std::string event_name;  // the PE_EVENT_NAME text perf names the event by,
  bool named = false;      // when the lexer gave one
  std::optional<Word> modifiers;
  std::string text;  // the source text of the event, trimmed
};

// A {...} group (braces), with its name when written g{...}, or a lone
// event (one entry in events, no braces): perf's `groups: group | event`.
struct Group {
  bool braces = false;
  std::string name;
  std::vector<Event> events;
  std::optional<Word> modifiers;  // the group's, after '}:'
};

// What the grammar returns. On a syntax error, the tree holds what was
// parsed before it (each event whose event_def was complete), and `errors`
// says what went wrong; resolution still runs over that tree first, since
// perf reports an error in an earlier event before a syntax error after it.
struct ParsedList {
  std::vector<Group> groups;
  std::vector<Diagnostic> errors;
  // The last event (kUnknown) ended the parse: its error comes from resolution.
  bool stopped_at_unknown = false;
};

}  // namespace pp::parse

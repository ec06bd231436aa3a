// The event-string lexer: perf 6.1's parse-events.l, rule for rule.
//
// perf's flex scanner has start states, and the tokens it returns depend on
// them; the parser above it is only as faithful as this. The rules, in the
// order flex tries them (longest match wins, the earlier rule on a tie):
//
//   event state (at the start, after '{' and after a top-level ','):
//     a group  [^,{}/]*{[^}]*}[^,{}/]*   re-read from the start in INITIAL
//     an event pmu/terms/mods, x.o..., [^,{}/]+   kEventName, then re-read
//   config state (between '/' and '/'; INITIAL's rules apply too):
//     config config1 config2 config3 name period freq branch_type time
//     call-graph stack-size max-stack nr inherit no-inherit overwrite
//     no-overwrite percore aux-output aux-sample-size metric-id   kTerm
//     rNNN r0xNNN (kRaw)  ,  /  [a-zA-Z_*?][a-zA-Z0-9-_*?.:]* (kName)
//     [all]  [  @drv_cfg
//   mem state (after "mem:"): [rwx]{1,3}  :  /  numbers; anything else
//     goes back to INITIAL
//   INITIAL: symbolic events (cycles, cpu-clock, ...), cycles-t and friends
//     (kKernelPmuEvent), cache types and op/results, mem:, rNNN, numbers,
//     [ukhpPGHSDIWeb]+ (kModifierEvent), names (checked against the PMU
//     aliases, as perf_pmu__parse_check does), 'quoted', / - , : { } =
//
// A kEventName token carries the whole text of the next event (what perf
// names the event); the lexer then reads that text again, token by token.
//
// Deliberate differences from perf: a character outside the syntax is a
// kStray token (perf skips it, or echoes it to stdout in the event state);
// white space is skipped as perf does. bpf objects (x.o, x.c) are never
// loaded: the lexer is pure and does not look for files. config3 is a term,
// as in perf 6.3+.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pp::pmu {
class Model;
}

namespace pp::parse {

enum class Tok {
  kEnd,
  kError,         // a number that does not fit in 64 bits (perf's PE_ERROR)
  kStray,         // a character outside the syntax
  kEventName,     // text: the whole event, as perf names it
  kValue,         // num
  kValueSymHw,    // num: PERF_COUNT_HW_*
  kValueSymSw,    // num: PERF_COUNT_SW_*
  kValueSymTool,  // duration_time
  kRaw,           // num: rNNN
  kTerm,          // num: a TermType
  kName,
  kModifierEvent,
  kModifierBp,
  kCacheType,
  kCacheOpResult,
  kPrefixMem,
  kKernelPmuEvent,  // a word that is some PMU's alias
  kPmuEventPre,     // the part before '-' of an alias with one
  kPmuEventSuf,     // the part after it
  kArrayAll,
  kArrayRange,
  kDrvCfgTerm,  // text: without the '@'
  kSlash,
  kComma,
  kColon,
  kLBrace,
  kRBrace,
  kEquals,
  kDash,
  kLBracket,
  kRBracket,
};

// The terms perf knows by name (parse-events.h's PARSE_EVENTS__TERM_TYPE_*).
enum class TermType {
  kUser,  // a sysfs format or alias: event=0x3c, umask=1, tsc
  kConfig,
  kConfig1,
  kConfig2,
  kConfig3,
  kName,
  kPeriod,
  kFreq,
  kBranchType,
  kTime,
  kCallGraph,
  kStackSize,
  kNoInherit,
  kInherit,
  kMaxStack,
  kMaxEvents,  // nr
  kNoOverwrite,
  kOverwrite,
  kDrvCfg,  // @cfg
  kPercore,
  kAuxOutput,
  kAuxSampleSize,
  kMetricId,
};

// "config", "call-graph", ...; "driver-config" for kDrvCfg, "<sysfs term>"
// for kUser.
std::string_view term_name(TermType type);

struct Token {
  Tok kind = Tok::kEnd;
  size_t begin = 0, end = 0;  // byte offsets into the input
  std::string text;           // the token's text (name_tag: without quotes)
  uint64_t num = 0;
};

// "'cycles'", "',' ", "the end": how a message names a token.
std::string describe(const Token& token);

enum class LexStart {
  kEvents,  // an event list, as perf stat -e reads it
  kTerms,   // a term list, as in an alias file: event=0x3c,umask=0x00
};

// Splits `input` into tokens, ending with one kEnd. `model` answers which
// words are PMU aliases; null means none are. Never fails: what perf rejects
// in the scanner comes out as kError or kStray tokens for the parser to
// report.
std::vector<Token> lex(std::string_view input, const pmu::Model* model, LexStart start);

}  // namespace pp::parse

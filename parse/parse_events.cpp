// A recursive-descent parser over the tokens of parse/lexer.h, following
// perf 6.1's parse-events.y production for production, and the semantic
// actions of its parse-events.c and pmu.c (attr construction, aliases,
// formats, modifiers, groups, names).
#include "parse/parse_events.h"

#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <strings.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "base/strings.h"
#include "parse/lexer.h"
#include "pmu/format.h"

namespace pp::parse {
namespace {

// ---------------------------------------------------------------------------
// Tables

// Every static term, for "valid terms" lists (perf's config_term_names).
constexpr std::string_view kStaticTerms =
    "config,config1,config2,config3,name,period,freq,branch_type,time,call-graph,stack-size,"
    "no-inherit,inherit,max-stack,nr,no-overwrite,overwrite,driver-config,percore,aux-output,"
    "aux-sample-size,metric-id";
constexpr std::string_view kTracepointTerms =
    "call-graph,stack-size,inherit,no-inherit,max-stack,nr,overwrite,no-overwrite,aux-output,"
    "aux-sample-size";
constexpr std::string_view kModifierLetters = "ukhGHpppPSDIWeb";  // check_modifier()'s limit

// The legacy cache family (perf's evsel__hw_cache*), index = config field.
constexpr std::array<std::array<std::string_view, 5>, 7> kCacheTypeNames = {{
    {"L1-dcache", "l1-d", "l1d", "L1-data", ""},
    {"L1-icache", "l1-i", "l1i", "L1-instruction", ""},
    {"LLC", "L2", "", "", ""},
    {"dTLB", "d-tlb", "Data-TLB", "", ""},
    {"iTLB", "i-tlb", "Instruction-TLB", "", ""},
    {"branch", "branches", "bpu", "btb", "bpc"},
    {"node", "", "", "", ""},
}};
constexpr std::array<std::array<std::string_view, 4>, 3> kCacheOpNames = {{
    {"load", "loads", "read", ""},
    {"store", "stores", "write", ""},
    {"prefetch", "prefetches", "speculative-read", "speculative-load"},
}};
constexpr std::array<std::array<std::string_view, 4>, 2> kCacheResultNames = {{
    {"refs", "Reference", "ops", "access"},
    {"misses", "miss", "", ""},
}};
// Which operations each cache type has (perf's evsel__hw_cache_stat).
constexpr unsigned kRead = 1 << PERF_COUNT_HW_CACHE_OP_READ;
constexpr unsigned kWrite = 1 << PERF_COUNT_HW_CACHE_OP_WRITE;
constexpr unsigned kPrefetch = 1 << PERF_COUNT_HW_CACHE_OP_PREFETCH;
constexpr std::array<unsigned, 7> kCacheValidOps = {kRead | kWrite | kPrefetch,
                                                    kRead | kPrefetch,
                                                    kRead | kWrite | kPrefetch,
                                                    kRead | kWrite | kPrefetch,
                                                    kRead,
                                                    kRead,
                                                    kRead | kWrite | kPrefetch};

// branch_type=... (perf's branch_modes).
struct BranchMode {
  std::string_view name;
  uint64_t mode;
};
constexpr BranchMode kBranchModes[] = {
    {"u", PERF_SAMPLE_BRANCH_USER},
    {"k", PERF_SAMPLE_BRANCH_KERNEL},
    {"hv", PERF_SAMPLE_BRANCH_HV},
    {"any", PERF_SAMPLE_BRANCH_ANY},
    {"any_call", PERF_SAMPLE_BRANCH_ANY_CALL},
    {"any_ret", PERF_SAMPLE_BRANCH_ANY_RETURN},
    {"ind_call", PERF_SAMPLE_BRANCH_IND_CALL},
    {"abort_tx", PERF_SAMPLE_BRANCH_ABORT_TX},
    {"in_tx", PERF_SAMPLE_BRANCH_IN_TX},
    {"no_tx", PERF_SAMPLE_BRANCH_NO_TX},
    {"cond", PERF_SAMPLE_BRANCH_COND},
    {"ind_jmp", PERF_SAMPLE_BRANCH_IND_JUMP},
    {"call", PERF_SAMPLE_BRANCH_CALL},
    {"save_type", PERF_SAMPLE_BRANCH_TYPE_SAVE},
    {"stack", PERF_SAMPLE_BRANCH_CALL_STACK},
    {"priv", uint64_t(1) << 18 /* PERF_SAMPLE_BRANCH_PRIV_SAVE, 6.1 */},
};
constexpr uint64_t kBranchPrivilegeOnly =
    PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_KERNEL | PERF_SAMPLE_BRANCH_HV;

constexpr uint64_t kTracepointSampleType =
    PERF_SAMPLE_RAW | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;

// perf's __match_glob(): '*', '?', '[...]' with ranges and a leading '!',
// '\' escaping. Iterative, backtracking only to the last '*', so a hostile
// pattern costs O(|pattern| * |text|), never exponential time.
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

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string hex(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof(buf), "%#llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string word_name(unsigned word) {
  switch (word) {
    case pmu::kConfigWord:
      return "config";
    case pmu::kConfig1Word:
      return "config1";
    case pmu::kConfig2Word:
      return "config2";
    case pmu::kConfig3Word:
      return "config3";
    default:
      return "attr" + std::to_string(word);
  }
}

// ---------------------------------------------------------------------------
// Terms

struct Term {
  TermType type = TermType::kUser;
  std::string config;  // a user term's name ("event"); empty for static terms
  bool is_num = true;
  uint64_t num = 0;
  std::string str;
  bool no_value = false;  // written bare: "tsc", "inherit"
  bool weak = false;      // from an alias
  bool used = false;      // consumed as the value of a "?" parameter
  size_t col = 0, val_col = 0;
  const pmu::Alias* alias = nullptr;  // the alias it came from

  std::string label() const {
    return type == TermType::kUser || type == TermType::kDrvCfg ? config
                                                                : std::string(term_name(type));
  }
  std::string value_text() const { return is_num ? std::to_string(num) : "'" + str + "'"; }
};

bool is_hardcoded(const Term& t) {
  return t.type != TermType::kUser;
}

// ---------------------------------------------------------------------------
// The parser

struct Located {
  size_t col;
  int code;
  std::string message, help;
  ErrorKind kind = ErrorKind::kUsage;  // the string is the user's to fix, unless it names
                                       // a persistent event that does not exist
};

struct Evsel {
  EventSpec spec;
  bool exclude_gh = false;
  bool config3_used = false;
};

struct Modifiers {
  bool eu = false, ek = false, eh = false, eH = false, eG = false, eI = false;
  int precise = 0;
  bool precise_max = false, exclude_gh = false, sample_read = false, pinned = false, weak = false,
       exclusive = false, bpf_counter = false;
};

class Parser {
 public:
  Parser(std::string_view text, const pmu::Model& model, LexStart start = LexStart::kEvents)
      : text_(text), model_(model), tokens_(lex(text, &model, start)) {}

  Result<std::vector<EventSpec>> run() {
    Status status = parse_list();
    if (status.ok() && out_.empty())
      status = fail(0, EINVAL, "the event list holds no event");
    if (!status.ok())
      return format_errors();
    std::vector<EventSpec> specs;
    specs.reserve(out_.size());
    for (Evsel& e : out_)
      specs.push_back(std::move(e.spec));
    return specs;
  }

 private:
  // --- tokens and errors --------------------------------------------------------

  const Token& peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
    return tokens_[i];
  }
  const Token& take() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size())
      pos_++;
    last_end_ = t.end;
    last_kind_ = t.kind;
    return t;
  }
  bool at(Tok kind, size_t ahead = 0) const { return peek(ahead).kind == kind; }

  // A word where the grammar wants a name. perf's lexer turns words that are
  // PMU aliases (or parts of one) into other tokens, so that with a PMU alias
  // called mce_record, perf 6.1 cannot parse the tracepoint mce:mce_record;
  // in name positions perf-persistent takes them as the names they are.
  bool at_name(size_t ahead = 0) const {
    Tok k = peek(ahead).kind;
    return k == Tok::kName || k == Tok::kKernelPmuEvent || k == Tok::kPmuEventPre ||
           k == Tok::kPmuEventSuf;
  }
  bool at_stray(char c, size_t ahead = 0) const {
    return at(Tok::kStray, ahead) && peek(ahead).text == std::string(1, c);
  }
  bool at_close(size_t ahead = 0) const { return at(Tok::kRBrace, ahead) || at_stray('}', ahead); }

  Error fail(size_t col, int code, std::string message, std::string help = {},
             ErrorKind kind = ErrorKind::kUsage) {
    errors_.push_back({col, code, message, std::move(help), kind});
    return Error(kind, code, std::move(message));
  }

  // An error for a token the grammar does not allow here.
  Error unexpected(const Token& t, std::string_view expected) {
    std::string what;
    switch (t.kind) {
      case Tok::kError:
        return fail(t.begin, EINVAL, "number " + t.text + " is out of range (more than 64 bits)");
      case Tok::kStray:
        what = "unexpected character " + describe(t);
        break;
      case Tok::kEnd:
        what = "unexpected end of the event list";
        break;
      default:
        what = "unexpected " + describe(t);
        break;
    }
    return fail(t.begin, EINVAL, what + ", expected " + std::string(expected));
  }

  Status expect(Tok kind, std::string_view expected) {
    if (!at(kind))
      return unexpected(peek(), expected);
    take();
    return ok_status();
  }

  Error format_errors() const {
    std::string out;
    std::vector<std::string> seen;
    for (const Located& e : errors_) {
      std::string block = "event syntax error: '" + std::string(text_) + "'\n";
      block += std::string(21 + std::min(e.col, text_.size()), ' ') + "\\___ " + e.message;
      if (!e.help.empty())
        block += "\n" + e.help;
      if (std::find(seen.begin(), seen.end(), block) != seen.end())
        continue;
      seen.push_back(block);
      if (!out.empty())
        out += "\n\n";
      out += block;
    }
    if (errors_.empty())
      return usage_error(out);
    return Error(errors_.front().kind, errors_.front().code, out);
  }

  // --- the grammar ------------------------------------------------------------------

  // groups: (group | event) (',' (group | event))*
  Status parse_list() {
    if (trim(text_).empty())
      return fail(0, EINVAL, "no event given",
                  "give an event such as 'cycles', "
                  "'sched:sched_switch' or 'persistent/mce_record/'");
    for (;;) {
      if (starts_group())
        PP_RETURN_IF_ERROR(parse_group());
      else
        PP_RETURN_IF_ERROR(parse_event());
      if (at(Tok::kComma)) {
        take();
        continue;
      }
      if (at(Tok::kEnd))
        return ok_status();
      if (at_close())
        return fail(peek().begin, EINVAL, "unbalanced group: '}' without a '{' before it");
      return unexpected(peek(), "',' or the end of the event list");
    }
  }

  bool starts_group() const { return at(Tok::kLBrace) || (at_name() && at(Tok::kLBrace, 1)); }

  // group: [PE_NAME] '{' event (',' event)* '}' [':' PE_MODIFIER_EVENT]
  Status parse_group() {
    std::string name;
    if (at_name())
      name = take().text;
    const Token& open = take();
    size_t first = out_.size();
    for (;;) {
      if (starts_group())
        return fail(peek().begin, EINVAL, "groups cannot be nested");
      if (at_close())
        return fail(peek().begin, EINVAL,
                    out_.size() == first ? "empty group: a group needs at least one event"
                                         : "an event is missing before '}'");
      if (at(Tok::kEnd))
        return fail(open.begin, EINVAL, "unbalanced group: this '{' has no matching '}'");
      PP_RETURN_IF_ERROR(parse_event());
      if (at(Tok::kComma)) {
        take();
        continue;
      }
      if (at(Tok::kRBrace)) {
        take();
        break;
      }
      if (at(Tok::kEnd))
        return fail(open.begin, EINVAL, "unbalanced group: this '{' has no matching '}'");
      return unexpected(peek(), "',' or '}'");
    }
    for (size_t i = first; i < out_.size(); i++) {
      out_[i].spec.leader = int(first);
      out_[i].spec.group_name = name;
    }
    if (at(Tok::kColon)) {
      take();
      if (!at(Tok::kModifierEvent))
        return bad_modifier_token(peek());
      const Token& mods = take();
      PP_RETURN_IF_ERROR(apply_modifiers(first, mods, /*group=*/true));
    }
    return ok_status();
  }

  // event: [PE_EVENT_NAME] event_def [PE_MODIFIER_EVENT]
  Status parse_event() {
    std::string event_name;
    bool named = false;
    size_t start = peek().begin;
    if (at(Tok::kEventName)) {
      event_name = take().text;
      named = true;
      start = peek().begin;
    }
    size_t first = out_.size();
    PP_RETURN_IF_ERROR(parse_event_def());
    if (at(Tok::kModifierEvent)) {
      const Token& mods = take();
      PP_RETURN_IF_ERROR(apply_modifiers(first, mods, /*group=*/false));
    } else if (last_kind_ == Tok::kColon && !at(Tok::kComma) && !at(Tok::kEnd) &&
               !at(Tok::kRBrace)) {
      return bad_modifier_token(peek());
    }
    std::string text(trim(text_.substr(start, last_end_ - start)));
    for (size_t i = first; i < out_.size(); i++) {
      if (out_[i].spec.name.empty())
        out_[i].spec.name = named ? event_name : text;
      out_[i].spec.text = text;
    }
    return ok_status();
  }

  Error bad_modifier_token(const Token& t) {
    if (t.kind == Tok::kEnd || t.kind == Tok::kComma || t.kind == Tok::kRBrace)
      return fail(t.begin, EINVAL, "expected modifiers after ':'",
                  "modifiers: u k h G H I p pp ppp P S D W e b");
    return fail(t.begin, EINVAL, describe(t) + " is not a modifier",
                "modifiers: u k h (user, kernel, hypervisor), G H (guest, host), I (no idle), "
                "p pp ppp P (precise), S (sample read), D (pinned), W (weak group), "
                "e (exclusive), b (bpf counter)");
  }

  Status parse_event_def() {
    const Token& t = peek();
    // An alias word followed by ':' and a name is a tracepoint (see at_name()).
    bool alias_word = t.kind == Tok::kKernelPmuEvent || t.kind == Tok::kPmuEventPre ||
                      t.kind == Tok::kPmuEventSuf;
    if (alias_word && at(Tok::kColon, 1) && at_name(2))
      return parse_tracepoint();
    switch (t.kind) {
      case Tok::kName:
        if (at(Tok::kSlash, 1))
          return parse_pmu_event();
        if (at(Tok::kColon, 1) || at(Tok::kDash, 1))
          return parse_tracepoint();
        return unknown_word(t);
      case Tok::kKernelPmuEvent: {
        take();
        std::vector<Term> terms;
        if (at(Tok::kSlash)) {
          PP_ASSIGN_OR_RETURN(terms, parse_opt_config(/*required=*/true));
        } else {
          sep_dc();
        }
        return add_alias_everywhere(t.text, t.begin, std::move(terms));
      }
      case Tok::kPmuEventPre: {
        take();
        if (!at(Tok::kDash) || !at(Tok::kPmuEventSuf, 1))
          return unknown_word(t);
        take();
        const Token& suffix = take();
        sep_dc();
        return add_alias_everywhere(t.text + "-" + suffix.text, t.begin, {});
      }
      case Tok::kPmuEventSuf:
        return unknown_word(t);
      case Tok::kStray:
        if (t.text == "{")
          return fail(t.begin, EINVAL, "unbalanced group: this '{' has no matching '}'");
        if (t.text == "}")
          return fail(t.begin, EINVAL, "unbalanced group: '}' without a '{' before it");
        return unexpected(t, "an event");
      case Tok::kValueSymHw:
      case Tok::kValueSymSw:
        return parse_legacy_symbol();
      case Tok::kValueSymTool:
        return fail(t.begin, EINVAL,
                    "'" + t.text + "' is a perf stat tool event, not a kernel event",
                    "perf stat measures it with its own clock; there is no counter to open or "
                    "make persistent");
      case Tok::kCacheType:
        return parse_cache();
      case Tok::kPrefixMem:
        return parse_breakpoint();
      case Tok::kValue:
        return parse_numeric();
      case Tok::kRaw:
        return parse_raw();
      case Tok::kComma:
        return fail(t.begin, EINVAL, "an event is missing before ','");
      case Tok::kEnd:
        return fail(t.begin, EINVAL, "an event is missing at the end of the list");
      case Tok::kModifierEvent:
        return fail(t.begin, EINVAL, "modifiers '" + t.text + "' with no event before them",
                    "modifiers follow an event: cycles:u, sched:sched_switch:k, {a,b}:u");
      case Tok::kLBrace:
      case Tok::kRBrace:
        return fail(t.begin, EINVAL, "unbalanced group: unexpected " + describe(t));
      default:
        return unexpected(t, "an event");
    }
  }

  Error unknown_word(const Token& t) {
    std::vector<std::string> candidates = {
        "cycles",         "instructions",  "cache-references", "cache-misses",
        "branches",       "branch-misses", "bus-cycles",       "ref-cycles",
        "cpu-clock",      "task-clock",    "page-faults",      "context-switches",
        "cpu-migrations", "minor-faults",  "major-faults",     "dummy"};
    for (const pmu::PmuEntry& e : model_.pmus())
      if (e.pmu)
        for (const pmu::Alias& a : e.pmu->aliases)
          candidates.push_back(a.name);
    std::string help =
        "an event is a symbolic name (cycles, cpu-clock, ...), a PMU event alias, "
        "a tracepoint sys:event, pmu/terms/, rNNN, TYPE:CONFIG or mem:ADDR";
    if (std::string near = nearest_word(t.text, candidates); !near.empty())
      help = "did you mean '" + near + "'? " + help;
    if (model_.find_pmu(t.text))
      help = "'" + t.text + "' is a PMU: write " + t.text + "/EVENT/ or " + t.text +
             "/TERM=VALUE,.../";
    return fail(t.begin, EINVAL, "unknown event '" + t.text + "'", help);
  }

  void sep_dc() {
    if (at(Tok::kColon))
      take();
  }

  // opt_event_config: ['/' ['/' | event_config '/']]
  Result<std::vector<Term>> parse_opt_config(bool required) {
    if (!at(Tok::kSlash)) {
      if (required)
        return unexpected(peek(), "'/'");
      return std::vector<Term>{};
    }
    const Token& open = take();
    if (at(Tok::kSlash)) {
      take();
      return std::vector<Term>{};
    }
    PP_ASSIGN_OR_RETURN(std::vector<Term> terms, parse_event_config());
    if (!at(Tok::kSlash)) {
      if (at(Tok::kEnd))
        return fail(open.begin, EINVAL, "this '/' opens a term list that has no closing '/'");
      return unexpected(peek(), "',' or '/' after a term");
    }
    take();
    return terms;
  }

  // event_config: event_term (',' event_term)*
  Result<std::vector<Term>> parse_event_config() {
    std::vector<Term> terms;
    for (;;) {
      PP_ASSIGN_OR_RETURN(Term term, parse_term());
      terms.push_back(std::move(term));
      if (!at(Tok::kComma))
        return terms;
      take();
    }
  }

  Result<Term> parse_term() {
    const Token& t = peek();
    Term term;
    term.col = term.val_col = t.begin;
    switch (t.kind) {
      case Tok::kRaw:
        take();
        term.type = TermType::kConfig;
        term.num = t.num;
        return term;
      case Tok::kDrvCfgTerm:
        take();
        term.type = TermType::kDrvCfg;
        term.config = t.text;
        term.is_num = false;
        term.str = t.text;
        return term;
      case Tok::kName:
      case Tok::kTerm:
        break;
      case Tok::kValue:
        return parse_digit_term();
      case Tok::kSlash:
        return fail(t.begin, EINVAL, "a term is missing before '/'");
      case Tok::kComma:
        return fail(t.begin, EINVAL, "a term is missing before ','");
      default:
        return unexpected(t, "a term (name or name=value)");
    }
    take();
    if (t.kind == Tok::kTerm)
      term.type = TermType(t.num);
    else
      term.config = t.text;
    if (at(Tok::kLBracket) || at(Tok::kArrayAll))
      return fail(peek().begin, EINVAL, "array terms (for perf's BPF maps) are not supported");
    if (!at(Tok::kEquals)) {
      term.num = 1;
      term.no_value = true;
      return term;
    }
    take();
    const Token& v = peek();
    term.val_col = v.begin;
    if (v.kind == Tok::kValue) {
      term.num = v.num;
    } else if (v.kind == Tok::kName) {
      term.is_num = false;
      term.str = v.text;
    } else {
      return unexpected(v, "a value (a number or a name) after '='");
    }
    take();
    return term;
  }

  // A term whose name starts with a digit: persistent/7/ names the persistent
  // event 7 (the broker names an event by its id when it was not given a
  // name). perf 6.1 cannot parse these; the name runs on over the tokens that
  // follow it without a gap and make up [A-Za-z0-9_.-].
  Result<Term> parse_digit_term() {
    const Token& first = take();
    Term term;
    term.col = term.val_col = first.begin;
    term.config = first.text;
    size_t end = first.end;
    for (;;) {
      const Token& t = peek();
      bool part = t.kind == Tok::kName || t.kind == Tok::kValue || t.kind == Tok::kDash ||
                  (t.kind == Tok::kStray && t.text == ".");
      if (t.begin != end || !part ||
          t.text.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789_.-") != std::string::npos)
        break;
      term.config += take().text;
      end = t.end;
    }
    if (at(Tok::kEquals))
      return fail(peek().begin, EINVAL,
                  "a term name cannot start with a digit: '" + term.config + "'");
    term.num = 1;
    term.no_value = true;
    return term;
  }

  // --- event kinds ----------------------------------------------------------------

  Evsel& new_evsel(std::string pmu_label) {
    Evsel e;
    e.spec.leader = int(out_.size());
    e.spec.pmu = std::move(pmu_label);
    e.spec.attr.attr.size = sys::kAttrSizeVer7;
    e.spec.attr.attr.exclude_guest = 1;  // event_attr_init(): perf_guest is false
    out_.push_back(std::move(e));
    return out_.back();
  }

  // config_term_common(): a static term applied to a legacy event's attr, or
  // checked for its type when it only matters later.
  Status apply_static_term(const Term& t, sys::EventAttr* attr, bool* config3_used,
                           std::string_view what) {
    auto need_num = [&]() -> Status {
      if (!t.is_num)
        return fail(t.val_col, EINVAL, "'" + t.label() + "' takes a number, not " + t.value_text());
      return ok_status();
    };
    auto need_str = [&]() -> Status {
      if (t.is_num)
        return fail(t.val_col, EINVAL,
                    "'" + t.label() + "' takes a name, not the number " + std::to_string(t.num));
      return ok_status();
    };
    auto need_bool = [&]() -> Status {
      PP_RETURN_IF_ERROR(need_num());
      if (t.num > 1)
        return fail(t.val_col, EINVAL,
                    "'" + t.label() + "' takes 0 or 1, not " + std::to_string(t.num));
      return ok_status();
    };
    switch (t.type) {
      case TermType::kConfig:
        PP_RETURN_IF_ERROR(need_num());
        attr->attr.config = t.num;
        return ok_status();
      case TermType::kConfig1:
        PP_RETURN_IF_ERROR(need_num());
        attr->attr.config1 = t.num;
        return ok_status();
      case TermType::kConfig2:
        PP_RETURN_IF_ERROR(need_num());
        attr->attr.config2 = t.num;
        return ok_status();
      case TermType::kConfig3:
        PP_RETURN_IF_ERROR(need_num());
        attr->config3() = t.num;
        *config3_used = true;
        return ok_status();
      case TermType::kPeriod:
      case TermType::kFreq:
      case TermType::kStackSize:
      case TermType::kInherit:
      case TermType::kNoInherit:
      case TermType::kOverwrite:
      case TermType::kNoOverwrite:
      case TermType::kMaxStack:
      case TermType::kMaxEvents:
      case TermType::kAuxOutput:
        return need_num();
      case TermType::kTime:
      case TermType::kPercore:
        return need_bool();
      case TermType::kAuxSampleSize:
        PP_RETURN_IF_ERROR(need_num());
        if (t.num > std::numeric_limits<uint32_t>::max())
          return fail(t.val_col, EINVAL,
                      "'aux-sample-size' is too big: " + std::to_string(t.num) +
                          " does not fit in 32 bits");
        return ok_status();
      case TermType::kName:
      case TermType::kMetricId:
        return need_str();
      case TermType::kCallGraph:
        PP_RETURN_IF_ERROR(need_str());
        if (t.str != "fp" && t.str != "dwarf" && t.str != "lbr" && t.str != "no")
          return fail(t.val_col, EINVAL, "unknown call-graph mode '" + t.str + "'",
                      "call-graph takes fp, dwarf, lbr or no (the stack size is stack-size=N)");
        return ok_status();
      case TermType::kBranchType: {
        PP_RETURN_IF_ERROR(need_str());
        if (t.str == "no")
          return ok_status();
        uint64_t mode = 0;
        for (const BranchMode& m : kBranchModes)
          if (iequals(m.name, t.str))
            mode = m.mode;
        if (!mode) {
          std::string names;
          for (const BranchMode& m : kBranchModes)
            names += std::string(m.name) + ",";
          return fail(t.val_col, EINVAL, "invalid branch sample type '" + t.str + "'",
                      "branch_type takes one of " + names + "no");
        }
        if ((mode & ~kBranchPrivilegeOnly) == 0)
          mode |= PERF_SAMPLE_BRANCH_ANY;
        attr->attr.branch_sample_type |= mode;
        return ok_status();
      }
      case TermType::kUser:
      case TermType::kDrvCfg:
        break;
    }
    return fail(t.col, EINVAL, "unknown term '" + t.label() + "' for " + std::string(what),
                "valid terms: " + std::string(kStaticTerms));
  }

  // get_config_terms(): what perf keeps for when it opens the event.
  static ConfigTerms collect_config_terms(const std::vector<Term>& terms) {
    ConfigTerms c;
    for (const Term& t : terms) {
      switch (t.type) {
        case TermType::kPeriod:
          c.period = t.num;
          c.period_weak = t.weak;
          c.freq.reset();  // the later of period and freq wins, as in the attr
          break;
        case TermType::kFreq:
          c.freq = t.num;
          c.freq_weak = t.weak;
          c.period.reset();
          break;
        case TermType::kTime:
          c.time = t.num != 0;
          break;
        case TermType::kCallGraph:
          c.call_graph = t.str;
          break;
        case TermType::kBranchType:
          c.branch_type = t.str;
          break;
        case TermType::kStackSize:
          c.stack_size = t.num;
          break;
        case TermType::kInherit:
          c.inherit = t.num != 0;
          break;
        case TermType::kNoInherit:
          c.inherit = t.num == 0;
          break;
        case TermType::kMaxStack:
          c.max_stack = t.num;
          break;
        case TermType::kMaxEvents:
          c.max_events = t.num;
          break;
        case TermType::kOverwrite:
          c.overwrite = t.num != 0;
          break;
        case TermType::kNoOverwrite:
          c.overwrite = t.num == 0;
          break;
        case TermType::kDrvCfg:
          c.driver_config.push_back(t.str);
          break;
        case TermType::kPercore:
          c.percore = t.num != 0;
          break;
        case TermType::kAuxOutput:
          c.aux_output = t.num != 0;
          break;
        case TermType::kAuxSampleSize:
          c.aux_sample_size = t.num;
          break;
        case TermType::kMetricId:
          if (c.metric_id.empty())
            c.metric_id = t.str;
          break;
        default:
          break;
      }
    }
    return c;
  }

  static std::string first_name_term(const std::vector<Term>& terms) {
    for (const Term& t : terms)
      if (t.type == TermType::kName)
        return t.str;
    return {};
  }

  // The parts of an event every kind shares once its attr is built.
  void finish_evsel(Evsel& e, const std::vector<Term>& terms) {
    e.spec.terms = collect_config_terms(terms);
    if (std::string name = first_name_term(terms); !name.empty())
      e.spec.name = name;
    sys::EventAttr& attr = e.spec.attr;
    if (e.spec.terms.period) {
      attr.attr.sample_period = *e.spec.terms.period;
      attr.attr.freq = 0;
      attr.attr.sample_type &= ~uint64_t(PERF_SAMPLE_PERIOD);
    }
    if (e.spec.terms.freq) {
      attr.attr.sample_freq = *e.spec.terms.freq;
      attr.attr.freq = 1;
      attr.attr.sample_type |= PERF_SAMPLE_PERIOD;
    }
    attr.attr.size = e.config3_used ? sys::kAttrSizeVer8 : sys::kAttrSizeVer7;
  }

  std::string label_for_type(uint64_t type) const {
    if (std::string_view name = sys::builtin_type_name(type); !name.empty())
      return std::string(name);
    if (const pmu::Pmu* pmu = model_.find_pmu_by_type(uint32_t(type)))
      return pmu->name;
    return std::to_string(type);
  }

  // parse_events_add_numeric(): symbolic, raw and type:config events.
  Status add_numeric(uint32_t type, uint64_t config, const std::vector<Term>& terms,
                     std::string_view what) {
    sys::EventAttr attr;
    bool config3 = false;
    attr.attr.type = type;
    attr.attr.config = config;
    for (const Term& t : terms)
      PP_RETURN_IF_ERROR(apply_static_term(t, &attr, &config3, what));
    Evsel& e = new_evsel(label_for_type(type));
    attr.attr.size = e.spec.attr.attr.size;
    attr.attr.exclude_guest = 1;
    e.spec.attr = attr;
    e.config3_used = config3;
    finish_evsel(e, terms);
    return ok_status();
  }

  // value_sym '/' event_config '/' | value_sym ['/' '/' | ':']
  Status parse_legacy_symbol() {
    const Token& sym = take();
    std::vector<Term> terms;
    if (at(Tok::kSlash)) {
      PP_ASSIGN_OR_RETURN(terms, parse_opt_config(true));
      if (at(Tok::kColon))
        return fail(peek().begin, EINVAL,
                    "modifiers follow the closing '/' directly: write " + sym.text +
                        "/.../u, "
                        "not " +
                        sym.text + "/.../:u");
    } else {
      sep_dc();
    }
    uint32_t type = sym.kind == Tok::kValueSymHw ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE;
    return add_numeric(type, sym.num, terms, "event '" + sym.text + "'");
  }

  // PE_RAW opt_event_config sep_dc
  Status parse_raw() {
    const Token& raw = take();
    PP_ASSIGN_OR_RETURN(std::vector<Term> terms, parse_opt_config(false));
    sep_dc();
    return add_numeric(PERF_TYPE_RAW, raw.num, terms, "raw event '" + raw.text + "'");
  }

  // PE_VALUE ':' PE_VALUE opt_event_config sep_dc
  Status parse_numeric() {
    const Token& type = take();
    if (!at(Tok::kColon))
      return fail(type.begin, EINVAL, "a number alone is not an event",
                  "write TYPE:CONFIG (4:0x1a8), rNNN for a raw event, or mem:ADDR");
    take();
    if (!at(Tok::kValue))
      return unexpected(peek(), "the config number after '" + type.text + ":'");
    const Token& config = take();
    PP_ASSIGN_OR_RETURN(std::vector<Term> terms, parse_opt_config(false));
    sep_dc();
    if (type.num > std::numeric_limits<uint32_t>::max())
      return fail(type.begin, EINVAL,
                  "type " + type.text + " does not fit in 32 bits (perf_event_attr.type)");
    return add_numeric(uint32_t(type.num), config.num, terms,
                       "event '" + type.text + ":" + config.text + "'");
  }

  // The first entry of `table` with an alias that is a case-insensitive prefix
  // of `word` (perf's parse_aliases), or -1.
  template <size_t N, size_t M>
  static int cache_index(std::string_view word,
                         const std::array<std::array<std::string_view, M>, N>& table) {
    for (size_t i = 0; i < N; i++)
      for (std::string_view alias : table[i])
        if (!alias.empty() && word.size() >= alias.size() &&
            strncasecmp(word.data(), alias.data(), alias.size()) == 0)
          return int(i);
    return -1;
  }

  // PE_NAME_CACHE_TYPE ['-' op_result ['-' op_result]] opt_event_config sep_dc
  Status parse_cache() {
    const Token& type_tok = take();
    std::vector<const Token*> parts;
    while (parts.size() < 2 && at(Tok::kDash) && at(Tok::kCacheOpResult, 1)) {
      take();
      parts.push_back(&take());
    }
    if (at(Tok::kDash) && parts.size() == 2)
      return fail(peek().begin, EINVAL,
                  "a cache event has at most an operation and a result: " + type_tok.text + "-" +
                      parts[0]->text + "-" + parts[1]->text);
    if (at(Tok::kDash) && !at(Tok::kEnd, 1))
      return fail(peek(1).begin, EINVAL, describe(peek(1)) + " is not a cache operation or result",
                  "operations: load, store, prefetch (loads, stores, prefetches, read, write, "
                  "speculative-read, speculative-load); results: refs, misses (access, ops, "
                  "Reference, miss)");
    PP_ASSIGN_OR_RETURN(std::vector<Term> terms, parse_opt_config(false));
    sep_dc();

    int type = cache_index(type_tok.text, kCacheTypeNames);
    if (type < 0)
      return fail(type_tok.begin, EINVAL, "unknown cache '" + type_tok.text + "'");
    std::string name = type_tok.text;
    int op = -1, result = -1;
    for (const Token* part : parts) {
      name += "-" + part->text;
      int as_op = cache_index(part->text, kCacheOpNames);
      int as_result = cache_index(part->text, kCacheResultNames);
      if (as_op >= 0) {
        if (op >= 0)
          return fail(part->begin, EINVAL, "a second cache operation '" + part->text + "'",
                      "a cache event has one operation and one result, e.g. " + type_tok.text +
                          "-load-misses");
        if (!(kCacheValidOps[size_t(type)] & (1u << as_op))) {
          std::string valid;
          for (unsigned o = 0; o < 3; o++)
            if (kCacheValidOps[size_t(type)] & (1u << o))
              valid += (valid.empty() ? "" : ", ") + std::string(kCacheOpNames[o][0]);
          return fail(part->begin, EINVAL,
                      "'" + type_tok.text + "' has no '" + part->text + "' operation",
                      "its operations are: " + valid);
        }
        op = as_op;
      } else if (as_result >= 0) {
        if (result >= 0)
          return fail(part->begin, EINVAL, "a second cache result '" + part->text + "'",
                      "a cache event has one operation and one result, e.g. " + type_tok.text +
                          "-load-misses");
        result = as_result;
      }
    }
    if (op < 0)
      op = PERF_COUNT_HW_CACHE_OP_READ;
    if (result < 0)
      result = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
    uint64_t config = uint64_t(type) | uint64_t(op) << 8 | uint64_t(result) << 16;
    size_t first = out_.size();
    PP_RETURN_IF_ERROR(
        add_numeric(PERF_TYPE_HW_CACHE, config, terms, "cache event '" + name + "'"));
    if (out_[first].spec.name.empty())
      out_[first].spec.name = name;
    return ok_status();
  }

  // PE_PREFIX_MEM PE_VALUE ['/' PE_VALUE] [':' PE_MODIFIER_BP] sep_dc
  Status parse_breakpoint() {
    take();  // mem:
    if (!at(Tok::kValue))
      return unexpected(peek(), "an address after 'mem:'");
    const Token& addr = take();
    uint64_t len = 0;
    if (at(Tok::kSlash)) {
      take();
      if (!at(Tok::kValue))
        return unexpected(peek(), "a length after '/'");
      len = take().num;
    }
    uint32_t bp_type = 0;
    if (at(Tok::kColon) && at(Tok::kModifierBp, 1)) {
      take();
      const Token& access = take();
      for (char c : access.text) {
        uint32_t bit = c == 'r' ? HW_BREAKPOINT_R : c == 'w' ? HW_BREAKPOINT_W : HW_BREAKPOINT_X;
        if (bp_type & bit)
          return fail(access.begin, EINVAL,
                      "'" + std::string(1, c) + "' is given twice in breakpoint access '" +
                          access.text + "'",
                      "the access is r, w, x or a combination such as rw");
        bp_type |= bit;
      }
    }
    sep_dc();
    if (!bp_type)
      bp_type = HW_BREAKPOINT_R | HW_BREAKPOINT_W;
    if (!len)
      len = bp_type == HW_BREAKPOINT_X ? uint64_t(sizeof(long)) : uint64_t(HW_BREAKPOINT_LEN_4);
    Evsel& e = new_evsel("breakpoint");
    e.spec.attr.attr.type = PERF_TYPE_BREAKPOINT;
    e.spec.attr.attr.bp_addr = addr.num;
    e.spec.attr.attr.bp_len = len;
    e.spec.attr.attr.bp_type = bp_type;
    e.spec.attr.attr.sample_period = 1;
    return ok_status();
  }

  // --- tracepoints ------------------------------------------------------------------

  // tracepoint_name opt_event_config sep_dc, where
  // tracepoint_name: PE_NAME ':' PE_NAME | PE_NAME '-' PE_NAME ':' PE_NAME
  Status parse_tracepoint() {
    const Token& first = take();
    std::string sys = first.text;
    if (at(Tok::kDash)) {
      take();
      if (!at_name())
        return unexpected(peek(), "the rest of the tracepoint system name after '-'");
      sys += "-" + take().text;
      if (!at(Tok::kColon))
        return fail(first.begin, EINVAL, "unknown event '" + sys + "'",
                    "an event is a symbolic name (cycles, cpu-clock, ...), a PMU event alias, "
                    "a tracepoint sys:event, pmu/terms/, rNNN, TYPE:CONFIG or mem:ADDR");
    }
    take();  // ':'
    if (!at_name())
      return unexpected(peek(), "a tracepoint event name after '" + sys + ":'");
    const Token& event = take();
    PP_ASSIGN_OR_RETURN(std::vector<Term> terms, parse_opt_config(false));
    sep_dc();

    for (const Term& t : terms) {
      switch (t.type) {
        case TermType::kCallGraph:
        case TermType::kStackSize:
        case TermType::kInherit:
        case TermType::kNoInherit:
        case TermType::kMaxStack:
        case TermType::kMaxEvents:
        case TermType::kOverwrite:
        case TermType::kNoOverwrite:
        case TermType::kAuxOutput:
        case TermType::kAuxSampleSize: {
          sys::EventAttr scratch;
          bool unused = false;
          PP_RETURN_IF_ERROR(apply_static_term(t, &scratch, &unused, "a tracepoint"));
          break;
        }
        default:
          return fail(
              t.col, EINVAL,
              "unknown term '" + t.label() + "' for tracepoint '" + sys + ":" + event.text + "'",
              "valid terms: " + std::string(kTracepointTerms));
      }
    }

    if (has_glob(sys)) {
      auto systems = model_.tracepoint_systems();
      if (!systems.ok())
        return tracepoint_error(first.begin, sys, event.text, systems.error());
      size_t before = out_.size();
      for (const std::string& s : *systems)
        if (glob_match(s, sys))
          PP_RETURN_IF_ERROR(add_tracepoint_event(first.begin, s, event.text, terms));
      if (out_.size() == before)
        return fail(first.begin, ENOENT, "no tracepoint system matches '" + sys + "'",
                    "the systems are the directories of " + model_.tracefs_events_path(""));
      return ok_status();
    }
    return add_tracepoint_event(first.begin, sys, event.text, terms);
  }

  Status add_tracepoint_event(size_t col, const std::string& sys, const std::string& event,
                              const std::vector<Term>& terms) {
    if (!has_glob(event))
      return add_tracepoint(col, sys, event, terms);
    auto events = model_.tracepoint_events(sys);
    if (!events.ok())
      return tracepoint_error(col, sys, event, events.error());
    bool found = false;
    for (const std::string& e : *events) {
      if (!glob_match(e, event))
        continue;
      found = true;
      PP_RETURN_IF_ERROR(add_tracepoint(col, sys, e, terms));
    }
    if (!found)
      return tracepoint_error(col, sys, event,
                              Error(ENOENT, "no event of " + model_.tracefs_events_path(sys) +
                                                " matches '" + event + "'"));
    return ok_status();
  }

  Status add_tracepoint(size_t col, const std::string& sys, const std::string& event,
                        const std::vector<Term>& terms) {
    auto id = model_.tracepoint_id(sys, event);
    if (!id.ok())
      return tracepoint_error(col, sys, event, id.error());
    Evsel& e = new_evsel("tracepoint");
    e.spec.attr.attr.type = PERF_TYPE_TRACEPOINT;
    e.spec.attr.attr.config = *id;
    e.spec.attr.attr.sample_type = kTracepointSampleType;
    e.spec.attr.attr.sample_period = 1;
    e.spec.name = sys + ":" + event;
    e.spec.tracepoint = e.spec.name;
    finish_evsel(e, terms);
    return ok_status();
  }

  Error tracepoint_error(size_t col, const std::string& sys, const std::string& event,
                         const Error& error) {
    std::string tp = sys + ":" + event;
    switch (error.code()) {
      case ENOENT:
        return fail(col, ENOENT, "unknown tracepoint '" + tp + "'",
                    "Error: " + error.message() +
                        ".\nHint: 'perf list tracepoint' lists this kernel's tracepoints; is "
                        "the name right, or does the kernel lack the CONFIG_ option for it?");
      case EACCES:
      case EPERM:
        return fail(col, error.code(), "can't access trace events for '" + tp + "'",
                    "Error: " + error.message() +
                        ".\nHint: run as root, or try 'sudo mount -o "
                        "remount,mode=755 " +
                        model_.tracefs_root() + "'");
      default:
        return fail(col, error.code(), "failed to add tracepoint '" + tp + "'",
                    "Error: " + error.message());
    }
  }

  // --- PMU events -------------------------------------------------------------------

  // PE_NAME opt_pmu_config
  Status parse_pmu_event() {
    const Token& name = take();
    PP_ASSIGN_OR_RETURN(std::vector<Term> terms, parse_opt_config(true));
    if (at(Tok::kColon) && (at(Tok::kModifierEvent, 1)))
      return fail(peek().begin, EINVAL,
                  "modifiers follow a PMU event's closing '/' directly: write " + name.text +
                      "/.../" + peek(1).text + ", not " + name.text + "/.../:" + peek(1).text);
    return add_pmu_event(name, terms);
  }

  Status add_pmu_event(const Token& name, const std::vector<Term>& terms) {
    size_t mark = errors_.size();
    const pmu::PmuEntry* entry = model_.find_pmu(name.text);
    if (entry) {
      if (add_pmu(*entry, terms, name.begin).ok())
        return ok_status();
    }
    // perf then tries every PMU whose name is this one with a numeric suffix:
    // uncore_cbox/.../ stands for uncore_cbox_0, uncore_cbox_1, ...
    size_t matched = 0, added = 0;
    size_t wildcard_mark = errors_.size();
    for (const pmu::PmuEntry& e : model_.pmus()) {
      if (&e == entry || !e.pmu || !pmu_name_matches(e.name, name.text))
        continue;
      matched++;
      if (add_pmu(e, terms, name.begin).ok())
        added++;
    }
    if (added) {
      errors_.resize(mark);
      return ok_status();
    }
    if (entry) {
      errors_.resize(wildcard_mark);  // the named PMU's own errors say it best
      return Error(errors_.empty() ? EINVAL : errors_.back().code, "PMU event failed");
    }
    if (matched)
      return Error(errors_.back().code, "PMU event failed");
    if (name.text == pmu::kPersistentPmu)
      return fail(name.begin, ENOENT, "no persistent events on this machine",
                  "the kernel has no 'persistent' PMU (" + model_.sysfs_root() + "/" +
                      pmu::kDevicesDir + "/persistent) and no broker publishes one (" +
                      model_.broker_run_dir() +
                      "/devices/persistent); create an event with 'perf persistent create -e "
                      "EVENT --name NAME', see 'perf persistent list'",
                  ErrorKind::kNotFound);
    std::vector<std::string> names;
    for (const pmu::PmuEntry& e : model_.pmus())
      names.push_back(e.name);
    std::string help = "the PMUs here are: " + join(names, ", ");
    if (std::string near = nearest_word(name.text, names); !near.empty())
      help = "did you mean '" + near + "'? " + help;
    return fail(name.begin, ENOENT, "unknown PMU '" + name.text + "' (missing kernel support?)",
                help);
  }

  // perf_pmu__match(): "<name>*" with only a numeric suffix after <name>;
  // uncore_ is optional in front.
  static bool pmu_name_matches(std::string_view pmu_name, std::string_view name) {
    if (starts_with(pmu_name, "uncore_") && !starts_with(name, "uncore_"))
      pmu_name.remove_prefix(7);
    if (!glob_match(pmu_name, std::string(name) + "*"))
      return false;
    if (pmu_name.substr(0, name.size()) != name)
      return false;
    std::string_view rest = pmu_name.substr(name.size());
    if (rest.empty())
      return true;
    if (rest[0] == '_')
      rest.remove_prefix(1);
    if (rest.empty())
      return false;
    return std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; });
  }

  // PE_KERNEL_PMU_EVENT [opt_pmu_config]: the alias on every PMU that has it.
  Status add_alias_everywhere(const std::string& alias, size_t col, std::vector<Term> user_terms) {
    size_t mark = errors_.size();
    size_t added = 0, tried = 0;
    for (const pmu::PmuEntry& e : model_.pmus()) {
      if (!e.pmu || !e.pmu->find_alias(alias))
        continue;
      tried++;
      std::vector<Term> terms;
      Term t;
      t.config = alias;
      t.num = 1;
      t.col = t.val_col = col;
      terms.push_back(t);
      terms.insert(terms.end(), user_terms.begin(), user_terms.end());
      if (add_pmu(e, terms, col).ok())
        added++;
    }
    if (added) {
      errors_.resize(mark);
      return ok_status();
    }
    if (tried)
      return Error(errors_.back().code, "alias failed");
    return fail(col, ENOENT, "no PMU here has an event called '" + alias + "'",
                "'perf list' shows the events of this machine's PMUs");
  }

  // An alias standing for a term (perf's pmu_find_alias()).
  static const pmu::Alias* alias_for_term(const pmu::Pmu& pmu, const Term& t) {
    if (is_hardcoded(t))
      return nullptr;
    if (t.is_num) {
      if (t.num != 1 || pmu.find_format(t.config))
        return nullptr;
      return pmu.find_alias(t.config);
    }
    if (!iequals(t.config, "event"))
      return nullptr;
    return pmu.find_alias(t.str);
  }

  // The terms of an alias file, parsed as perf does (the term lexer and
  // grammar), located at the user's term for messages.
  Result<std::vector<Term>> alias_terms(const pmu::Alias& alias, const Term& user_term,
                                        const pmu::Pmu& pmu) {
    Parser sub(alias.terms, model_, LexStart::kTerms);
    auto terms = sub.parse_event_config();
    if (terms.ok() && !sub.at(Tok::kEnd))
      terms = sub.unexpected(sub.peek(), "',' or the end of the alias");
    if (!terms.ok()) {
      std::string reason =
          sub.errors_.empty() ? terms.error().message() : sub.errors_.front().message;
      return fail(user_term.col, EINVAL,
                  "event alias '" + alias.name + "' of PMU '" + pmu.name + "' is malformed",
                  "the alias file " + alias.path + " holds '" + alias.terms + "': " + reason);
    }
    for (Term& t : *terms) {
      t.weak = true;
      t.col = t.val_col = user_term.col;
      t.alias = &alias;
    }
    return std::move(terms).value();
  }

  std::string alias_note(const Term& t) const {
    if (!t.alias)
      return {};
    return " (from event alias '" + t.alias->name + "', " + t.alias->path + ": '" + t.alias->terms +
           "')";
  }

  std::string valid_terms(const pmu::Pmu& pmu) const {
    std::string out = "valid terms: ";
    for (const pmu::FormatFile& f : pmu.formats)
      out += f.name + ",";
    return out + std::string(kStaticTerms);
  }

  // parse_events_add_pmu(): one event on one PMU.
  Status add_pmu(const pmu::PmuEntry& entry, const std::vector<Term>& terms, size_t col) {
    if (!entry.pmu)
      return fail(col, entry.problem ? entry.problem->code() : EINVAL,
                  "PMU '" + entry.name + "' cannot be used",
                  entry.problem ? entry.problem->message() : std::string());
    const pmu::Pmu& pmu = *entry.pmu;

    // perf_pmu__check_alias(): aliases become their terms, in place.
    std::vector<Term> expanded;
    const pmu::Alias* info_alias = nullptr;
    std::string unit;
    double scale = 1.0;
    bool per_pkg = false, snapshot = false;
    for (const Term& t : terms) {
      const pmu::Alias* alias = alias_for_term(pmu, t);
      if (!alias) {
        expanded.push_back(t);
        continue;
      }
      if (alias->problem)
        return fail(t.col, alias->problem->code(),
                    "event alias '" + alias->name + "' of PMU '" + pmu.name + "' cannot be used",
                    alias->problem->message());
      PP_ASSIGN_OR_RETURN(std::vector<Term> more, alias_terms(*alias, t, pmu));
      if (info_alias)  // perf's check_info_data(): the scale is always set
        return fail(t.col, EINVAL,
                    "'" + info_alias->name + "' and '" + alias->name +
                        "' are both event aliases; an event can use only one alias",
                    "give each alias as its own event: " + pmu.name + "/" + info_alias->name +
                        "/," + pmu.name + "/" + alias->name + "/");
      info_alias = alias;
      unit = alias->unit;
      scale = alias->scale;
      per_pkg = alias->per_pkg;
      snapshot = alias->snapshot;
      expanded.insert(expanded.end(), more.begin(), more.end());
    }

    sys::EventAttr attr;
    bool config3 = false;
    attr.attr.type = pmu.type;
    // config_term_pmu(): the static terms first.
    for (const Term& t : expanded)
      if (t.type != TermType::kUser && t.type != TermType::kDrvCfg)
        PP_RETURN_IF_ERROR(apply_static_term(t, &attr, &config3, "PMU '" + pmu.name + "'"));

    // perf_pmu__config(): the format terms.
    struct Written {
      unsigned word;
      uint64_t bits;
      const pmu::FormatFile* file;
      const Term* term;
    };
    std::vector<Written> written;
    for (Term& t : expanded) {
      if (t.used || is_hardcoded(t))
        continue;
      const pmu::FormatFile* file = pmu.find_format(t.config);
      if (!file) {
        if (pmu.name == pmu::kPersistentPmu && t.no_value && !t.alias)
          return no_persistent_event(pmu, t);
        if (t.alias)
          return fail(t.col, EINVAL,
                      "event alias '" + t.alias->name + "' uses term '" + t.config +
                          "', which PMU '" + pmu.name + "' has no format file for",
                      "the alias file " + t.alias->path + " holds '" + t.alias->terms + "'; " +
                          valid_terms(pmu));
        return fail(t.col, EINVAL, "unknown term '" + t.config + "' for PMU '" + pmu.name + "'",
                    valid_terms(pmu));
      }
      // The words of an error, built only when there is one.
      auto where = [&] {
        return "term '" + t.config + "' of PMU '" + pmu.name + "'" + alias_note(t);
      };
      if (file->problem)
        return fail(t.col, file->problem->code(), where() + " cannot be used",
                    file->problem->message());
      const pmu::Format& format = file->format;
      auto spelled = [&] {
        return "format file " + file->path + " says '" + format_string(format) + "'";
      };
      if (format.word == 0)
        return fail(t.col, EINVAL, where() + " writes word 0 of perf_event_attr",
                    spelled() + ", but word 0 (type and size) is for perf-persistent to set");
      if (format.word >= sys::kAttrWords)
        return fail(t.col, EINVAL, where() + " writes past the end of perf_event_attr",
                    spelled() + ", but perf_event_attr has " + std::to_string(sys::kAttrWords) +
                        " u64 words (0-" + std::to_string(sys::kAttrWords - 1) +
                        ", 136 bytes): word " + std::to_string(format.word) + " does not exist");

      uint64_t value = 0;
      if (t.is_num) {
        value = t.num;  // a bare term is 1, whatever its width, as in perf 6.1
      } else if (t.str == "?") {
        // A parameter: its value is another term of the same name.
        const Term* param = nullptr;
        for (Term& other : expanded)
          if (other.is_num && other.type == TermType::kUser && other.config == t.config) {
            other.used = true;
            param = &other;
            break;
          }
        if (!param)
          return fail(
              t.col, EINVAL, "required parameter '" + t.config + "' not specified" + alias_note(t),
              "give it a value: " + pmu.name + "/" +
                  (t.alias ? t.alias->name : std::string("...")) + "," + t.config + "=VALUE/");
        value = param->num;
      } else {
        return fail(t.val_col, EINVAL, where() + " takes a number, not '" + t.str + "'", spelled());
      }
      uint64_t max = pmu::format_max_value(format.bits);
      if (value > max)
        return fail(t.val_col, EINVAL,
                    "value " + hex(value) + " too big for format, maximum is " +
                        std::to_string(max) + " (" + hex(max) + "): " + where(),
                    spelled());
      for (const Written& w : written) {
        if (w.file == file || w.word != format.word || !(w.bits & format.bits))
          continue;
        return fail(t.col, EINVAL,
                    "formats '" + w.file->name + "' and '" + file->name + "' of PMU '" + pmu.name +
                        "' both write bits " + pmu::format_bits_string(w.bits & format.bits) +
                        " of " + word_name(format.word),
                    "'" + w.term->config + "' and '" + t.config +
                        "' cannot go together in one event: " + w.file->path + " says '" +
                        pmu::format_string(w.file->format) + "', " + file->path + " says '" +
                        pmu::format_string(format) + "'");
      }
      written.push_back({format.word, format.bits, file, &t});
      pmu::format_scatter(format.bits, value, &attr.words[format.word]);
      if (format.word == pmu::kConfig3Word)
        config3 = true;
    }

    Evsel& e = new_evsel(pmu.name);
    attr.attr.size = e.spec.attr.attr.size;
    attr.attr.exclude_guest = 1;  // event_attr_init() comes after the formats
    e.spec.attr = attr;
    e.config3_used = config3;
    e.spec.cpus = pmu.cpus;
    e.spec.uncore = pmu.is_uncore;
    e.spec.unit = unit;
    e.spec.scale = scale;
    e.spec.per_pkg = per_pkg;
    e.spec.snapshot = snapshot;
    finish_evsel(e, expanded);
    return ok_status();
  }

  Error no_persistent_event(const pmu::Pmu& pmu, const Term& t) {
    std::vector<std::string> names;
    for (const pmu::Alias& a : pmu.aliases)
      names.push_back(a.name);
    std::string help = names.empty() ? "there are no persistent events"
                                     : "the persistent events are: " + join(names, ", ");
    if (std::string near = nearest_word(t.config, names); !near.empty())
      help = "did you mean '" + near + "'? " + help;
    return fail(t.col, ENOENT, "no persistent event '" + t.config + "'",
                help + " (" + pmu.path +
                    "/events); see 'perf persistent list', or create it "
                    "with 'perf persistent create -e EVENT --name " +
                    t.config + "'",
                ErrorKind::kNotFound);
  }

  // --- modifiers ------------------------------------------------------------------------

  // check_modifier() and get_event_modifier(); `group` applies to every
  // member, starting from what each has (perf's add = true).
  Status apply_modifiers(size_t first, const Token& tok, bool group) {
    const std::string& str = tok.text;
    if (str.size() > kModifierLetters.size())
      return fail(tok.begin, EINVAL, "bad modifier '" + str + "': too many letters",
                  "give each modifier once (p up to three times)");
    for (size_t i = 0; i < str.size(); i++)
      if (str[i] != 'p' && str.find(str[i], i + 1) != std::string::npos)
        return fail(tok.begin + str.find(str[i], i + 1), EINVAL,
                    "bad modifier '" + str + "': '" + std::string(1, str[i]) + "' is given twice");
    for (size_t i = first; i < out_.size(); i++) {
      Evsel& e = out_[i];
      perf_event_attr& a = e.spec.attr.attr;
      Modifiers m;
      if (group) {
        m.eu = a.exclude_user;
        m.ek = a.exclude_kernel;
        m.eh = a.exclude_hv;
        m.eH = a.exclude_host;
        m.eG = a.exclude_guest;
        m.eI = a.exclude_idle;
        m.precise = int(a.precise_ip);
        m.pinned = a.pinned;
        m.exclusive = a.exclusive;
        m.exclude_gh = e.exclude_gh;
      }
      bool exclude = m.eu || m.ek || m.eh;
      for (char c : str) {
        switch (c) {
          case 'u':
            if (!exclude)
              exclude = m.eu = m.ek = m.eh = true;
            if (!m.exclude_gh)
              m.eG = true;  // perf_guest is false
            m.eu = false;
            break;
          case 'k':
            if (!exclude)
              exclude = m.eu = m.ek = m.eh = true;
            m.ek = false;
            break;
          case 'h':
            if (!exclude)
              exclude = m.eu = m.ek = m.eh = true;
            m.eh = false;
            break;
          case 'G':
            if (!m.exclude_gh)
              m.exclude_gh = m.eG = m.eH = true;
            m.eG = false;
            break;
          case 'H':
            if (!m.exclude_gh)
              m.exclude_gh = m.eG = m.eH = true;
            m.eH = false;
            break;
          case 'I':
            m.eI = true;
            break;
          case 'p':
            m.precise++;
            if (!m.exclude_gh)
              m.eG = true;  // precise needs exclude_guest
            break;
          case 'P':
            m.precise_max = true;
            break;
          case 'S':
            m.sample_read = true;
            break;
          case 'D':
            m.pinned = true;
            break;
          case 'e':
            m.exclusive = true;
            break;
          case 'W':
            m.weak = true;
            break;
          case 'b':
            m.bpf_counter = true;
            break;
          default:
            break;
        }
      }
      if (m.precise > 3)
        return fail(tok.begin, EINVAL,
                    "bad modifier '" + str + "': precise level " + std::to_string(m.precise) +
                        " is more than 3",
                    "p, pp and ppp ask for precise levels 1 to 3; P asks for the most the PMU has");
      a.exclude_user = m.eu;
      a.exclude_kernel = m.ek;
      a.exclude_hv = m.eh;
      a.precise_ip = unsigned(m.precise);
      a.exclude_host = m.eH;
      a.exclude_guest = m.eG;
      a.exclude_idle = m.eI;
      e.exclude_gh = m.exclude_gh;
      e.spec.sample_read = m.sample_read;
      e.spec.precise_max = m.precise_max;
      e.spec.weak_group = m.weak;
      e.spec.bpf_counter = m.bpf_counter;
      if (e.spec.leader == int(i)) {
        a.pinned = m.pinned;
        a.exclusive = m.exclusive;
      }
    }
    return ok_status();
  }

  std::string_view text_;
  const pmu::Model& model_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  size_t last_end_ = 0;
  Tok last_kind_ = Tok::kEnd;
  std::vector<Evsel> out_;
  std::vector<Located> errors_;
};

}  // namespace

Result<std::vector<EventSpec>> parse_events(std::string_view text, const pmu::Model& model) {
  return Parser(text, model).run();
}

void apply_config_terms(const ConfigTerms& terms, sys::EventAttr* attr) {
  perf_event_attr& a = attr->attr;
  if (terms.period) {
    a.sample_period = *terms.period;
    a.freq = 0;
    a.sample_type &= ~uint64_t(PERF_SAMPLE_PERIOD);
  }
  if (terms.freq) {
    a.sample_freq = *terms.freq;
    a.freq = 1;
    a.sample_type |= PERF_SAMPLE_PERIOD;
  }
  if (terms.time) {
    if (*terms.time)
      a.sample_type |= PERF_SAMPLE_TIME;
    else
      a.sample_type &= ~uint64_t(PERF_SAMPLE_TIME);
  }
  if (terms.branch_type) {
    if (*terms.branch_type != "no") {
      a.sample_type |= PERF_SAMPLE_BRANCH_STACK;
      for (const BranchMode& m : kBranchModes)
        if (iequals(m.name, *terms.branch_type)) {
          uint64_t mode = m.mode;
          if ((mode & ~kBranchPrivilegeOnly) == 0)
            mode |= PERF_SAMPLE_BRANCH_ANY;
          a.branch_sample_type |= mode;
        }
    } else {
      a.sample_type &= ~uint64_t(PERF_SAMPLE_BRANCH_STACK);
    }
  }
  if (terms.inherit)
    a.inherit = *terms.inherit ? 1 : 0;
  if (terms.overwrite)
    a.write_backward = *terms.overwrite ? 1 : 0;
  if (terms.aux_output)
    a.aux_output = *terms.aux_output ? 1 : 0;
}

}  // namespace pp::parse

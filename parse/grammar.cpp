// The event grammar (see parse/grammar.h): perf 6.1's parse-events.y as a
// recursive-descent parser that builds the located tree of parse/ast.h.
#include "parse/grammar.h"

#include <algorithm>

#include "base/strings.h"
#include "parse/lexer.h"

namespace pp::parse {
namespace {

Word word(const Token& t) {
  return Word{t.text, t.num, t.begin};
}

class Grammar {
 public:
  Grammar(std::string_view text, const pmu::Model* model, LexStart start)
      : text_(text), tokens_(lex(text, model, start)) {}

  ParsedList parse_list() {
    Status status = parse_groups();
    (void)status;  // its diagnostic is in out_.errors
    return std::move(out_);
  }

  Result<std::vector<Term>> parse_terms() {
    auto terms = parse_event_config();
    if (terms.ok() && !at(Tok::kEnd))
      terms = unexpected(peek(), "',' or the end of the alias");
    if (!terms.ok() && !out_.errors.empty())
      return Error(terms.error().code(), out_.errors.front().message);
    return terms;
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

  // Every syntax error is made here.
  Error fail(size_t col, int code, std::string message, std::string help = {}) {
    out_.errors.push_back({col, code, message, std::move(help)});
    return Error(ErrorKind::kUsage, code, std::move(message));
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

  // An event_def that is a word resolution must explain; it ends the parse.
  Error stop_at_unknown(const Token& t, EventDef* def) {
    def->kind = EventKind::kUnknown;
    def->name = word(t);
    out_.stopped_at_unknown = true;
    return Error(EINVAL, "unknown event '" + t.text + "'");
  }

  // --- the lists ----------------------------------------------------------------------

  // groups: (group | event) (',' (group | event))*
  Status parse_groups() {
    if (trim(text_).empty())
      return fail(0, EINVAL, "no event given",
                  "give an event such as 'cycles', "
                  "'sched:sched_switch' or 'persistent/mce_record/'");
    for (;;) {
      if (starts_group()) {
        PP_RETURN_IF_ERROR(parse_group());
      } else {
        out_.groups.emplace_back();
        PP_RETURN_IF_ERROR(parse_event(&out_.groups.back().events));
      }
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
    out_.groups.emplace_back();
    Group& group = out_.groups.back();
    group.braces = true;
    if (at_name())
      group.name = take().text;
    const Token& open = take();
    for (;;) {
      if (starts_group())
        return fail(peek().begin, EINVAL, "groups cannot be nested");
      if (at_close())
        return fail(peek().begin, EINVAL,
                    group.events.empty() ? "empty group: a group needs at least one event"
                                         : "an event is missing before '}'");
      if (at(Tok::kEnd))
        return fail(open.begin, EINVAL, "unbalanced group: this '{' has no matching '}'");
      PP_RETURN_IF_ERROR(parse_event(&group.events));
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
    if (at(Tok::kColon)) {
      take();
      if (!at(Tok::kModifierEvent))
        return bad_modifier_token(peek());
      group.modifiers = word(take());
    }
    return ok_status();
  }

  // event: [PE_EVENT_NAME] event_def [PE_MODIFIER_EVENT]
  // The event joins `into` once its event_def is complete.
  Status parse_event(std::vector<Event>* into) {
    Event event;
    size_t start = peek().begin;
    if (at(Tok::kEventName)) {
      event.event_name = take().text;
      event.named = true;
      start = peek().begin;
    }
    Status def = parse_event_def(&event.def);
    if (!def.ok()) {
      if (out_.stopped_at_unknown)
        into->push_back(std::move(event));
      return def;
    }
    into->push_back(std::move(event));
    Event& e = into->back();
    if (at(Tok::kModifierEvent)) {
      e.modifiers = word(take());
    } else if (last_kind_ == Tok::kColon && !at(Tok::kComma) && !at(Tok::kEnd) &&
               !at(Tok::kRBrace)) {
      return bad_modifier_token(peek());
    }
    e.text = std::string(trim(text_.substr(start, last_end_ - start)));
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

  Status parse_event_def(EventDef* def) {
    const Token& t = peek();
    // An alias word followed by ':' and a name is a tracepoint (see at_name()).
    bool alias_word = t.kind == Tok::kKernelPmuEvent || t.kind == Tok::kPmuEventPre ||
                      t.kind == Tok::kPmuEventSuf;
    if (alias_word && at(Tok::kColon, 1) && at_name(2))
      return parse_tracepoint(def);
    switch (t.kind) {
      case Tok::kName:
        if (at(Tok::kSlash, 1))
          return parse_pmu_event(def);
        if (at(Tok::kColon, 1) || at(Tok::kDash, 1))
          return parse_tracepoint(def);
        return stop_at_unknown(t, def);
      case Tok::kKernelPmuEvent: {
        take();
        def->kind = EventKind::kAlias;
        def->name = word(t);
        if (at(Tok::kSlash)) {
          PP_ASSIGN_OR_RETURN(def->terms, parse_opt_config(/*required=*/true));
        } else {
          sep_dc();
        }
        return ok_status();
      }
      case Tok::kPmuEventPre: {
        take();
        if (!at(Tok::kDash) || !at(Tok::kPmuEventSuf, 1))
          return stop_at_unknown(t, def);
        take();
        const Token& suffix = take();
        sep_dc();
        def->kind = EventKind::kAlias;
        def->name = Word{t.text + "-" + suffix.text, 0, t.begin};
        return ok_status();
      }
      case Tok::kPmuEventSuf:
        return stop_at_unknown(t, def);
      case Tok::kStray:
        if (t.text == "{")
          return fail(t.begin, EINVAL, "unbalanced group: this '{' has no matching '}'");
        if (t.text == "}")
          return fail(t.begin, EINVAL, "unbalanced group: '}' without a '{' before it");
        return unexpected(t, "an event");
      case Tok::kValueSymHw:
      case Tok::kValueSymSw:
        return parse_legacy_symbol(def);
      case Tok::kValueSymTool:
        return fail(t.begin, EINVAL,
                    "'" + t.text + "' is a perf stat tool event, not a kernel event",
                    "perf stat measures it with its own clock; there is no counter to open or "
                    "make persistent");
      case Tok::kCacheType:
        return parse_cache(def);
      case Tok::kPrefixMem:
        return parse_breakpoint(def);
      case Tok::kValue:
        return parse_numeric(def);
      case Tok::kRaw:
        return parse_raw(def);
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

  void sep_dc() {
    if (at(Tok::kColon))
      take();
  }

  // --- terms --------------------------------------------------------------------------

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

  // value_sym '/' event_config '/' | value_sym ['/' '/' | ':']
  Status parse_legacy_symbol(EventDef* def) {
    const Token& sym = take();
    def->kind = EventKind::kSymbol;
    def->name = word(sym);
    def->hardware = sym.kind == Tok::kValueSymHw;
    if (at(Tok::kSlash)) {
      PP_ASSIGN_OR_RETURN(def->terms, parse_opt_config(true));
      if (at(Tok::kColon))
        return fail(peek().begin, EINVAL,
                    "modifiers follow the closing '/' directly: write " + sym.text +
                        "/.../u, "
                        "not " +
                        sym.text + "/.../:u");
    } else {
      sep_dc();
    }
    return ok_status();
  }

  // PE_RAW opt_event_config sep_dc
  Status parse_raw(EventDef* def) {
    def->kind = EventKind::kRaw;
    def->name = word(take());
    PP_ASSIGN_OR_RETURN(def->terms, parse_opt_config(false));
    sep_dc();
    return ok_status();
  }

  // PE_VALUE ':' PE_VALUE opt_event_config sep_dc
  Status parse_numeric(EventDef* def) {
    const Token& type = take();
    if (!at(Tok::kColon))
      return fail(type.begin, EINVAL, "a number alone is not an event",
                  "write TYPE:CONFIG (4:0x1a8), rNNN for a raw event, or mem:ADDR");
    take();
    if (!at(Tok::kValue))
      return unexpected(peek(), "the config number after '" + type.text + ":'");
    def->kind = EventKind::kNumeric;
    def->name = word(type);
    def->second = word(take());
    PP_ASSIGN_OR_RETURN(def->terms, parse_opt_config(false));
    sep_dc();
    return ok_status();
  }

  // PE_NAME_CACHE_TYPE ['-' op_result ['-' op_result]] opt_event_config sep_dc
  Status parse_cache(EventDef* def) {
    const Token& type_tok = take();
    def->kind = EventKind::kCache;
    def->name = word(type_tok);
    while (def->parts.size() < 2 && at(Tok::kDash) && at(Tok::kCacheOpResult, 1)) {
      take();
      def->parts.push_back(word(take()));
    }
    if (at(Tok::kDash) && def->parts.size() == 2)
      return fail(peek().begin, EINVAL,
                  "a cache event has at most an operation and a result: " + type_tok.text + "-" +
                      def->parts[0].text + "-" + def->parts[1].text);
    if (at(Tok::kDash) && !at(Tok::kEnd, 1))
      return fail(peek(1).begin, EINVAL, describe(peek(1)) + " is not a cache operation or result",
                  "operations: load, store, prefetch (loads, stores, prefetches, read, write, "
                  "speculative-read, speculative-load); results: refs, misses (access, ops, "
                  "Reference, miss)");
    PP_ASSIGN_OR_RETURN(def->terms, parse_opt_config(false));
    sep_dc();
    return ok_status();
  }

  // PE_PREFIX_MEM PE_VALUE ['/' PE_VALUE] [':' PE_MODIFIER_BP] sep_dc
  Status parse_breakpoint(EventDef* def) {
    take();  // mem:
    if (!at(Tok::kValue))
      return unexpected(peek(), "an address after 'mem:'");
    def->kind = EventKind::kBreakpoint;
    def->name = word(take());
    if (at(Tok::kSlash)) {
      take();
      if (!at(Tok::kValue))
        return unexpected(peek(), "a length after '/'");
      def->bp_len = take().num;
    }
    if (at(Tok::kColon) && at(Tok::kModifierBp, 1)) {
      take();
      def->bp_access = word(take());
    }
    sep_dc();
    return ok_status();
  }

  // tracepoint_name opt_event_config sep_dc, where
  // tracepoint_name: PE_NAME ':' PE_NAME | PE_NAME '-' PE_NAME ':' PE_NAME
  Status parse_tracepoint(EventDef* def) {
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
    def->kind = EventKind::kTracepoint;
    def->name = Word{sys, 0, first.begin};
    def->second = word(take());
    PP_ASSIGN_OR_RETURN(def->terms, parse_opt_config(false));
    sep_dc();
    return ok_status();
  }

  // PE_NAME opt_pmu_config
  Status parse_pmu_event(EventDef* def) {
    const Token& name = take();
    def->kind = EventKind::kPmu;
    def->name = word(name);
    PP_ASSIGN_OR_RETURN(def->terms, parse_opt_config(true));
    if (at(Tok::kColon) && (at(Tok::kModifierEvent, 1)))
      return fail(peek().begin, EINVAL,
                  "modifiers follow a PMU event's closing '/' directly: write " + name.text +
                      "/.../" + peek(1).text + ", not " + name.text + "/.../:" + peek(1).text);
    return ok_status();
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  size_t last_end_ = 0;
  Tok last_kind_ = Tok::kEnd;
  ParsedList out_;
};

}  // namespace

ParsedList parse_event_list(std::string_view text, const pmu::Model* model) {
  return Grammar(text, model, LexStart::kEvents).parse_list();
}

Result<std::vector<Term>> parse_term_list(std::string_view text, const pmu::Model* model) {
  return Grammar(text, model, LexStart::kTerms).parse_terms();
}

}  // namespace pp::parse

// The event-string lexer: perf 6.1's parse-events.l, its start states and rules
// in flex's order (see parse/lexer.h); its vocabulary is parse/names.h.
#include "parse/lexer.h"

#include <algorithm>
#include <optional>

#include "parse/names.h"
#include "pmu/model.h"

namespace pp::parse {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_lower(char c) {
  return c >= 'a' && c <= 'z';
}
bool in_set(char c, std::string_view set) {
  return set.find(c) != std::string_view::npos;
}
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

// name        [a-zA-Z_*?\[\]][a-zA-Z0-9_*?.\[\]!]*
bool name_first(char c) {
  return is_alpha(c) || in_set(c, "_*?[]");
}
bool name_rest(char c) {
  return is_alpha(c) || is_digit(c) || in_set(c, "_*?.[]!");
}
// name_minus  [a-zA-Z_*?][a-zA-Z0-9\-_*?.:]*
bool name_minus_first(char c) {
  return is_alpha(c) || in_set(c, "_*?");
}
bool name_minus_rest(char c) {
  return is_alpha(c) || is_digit(c) || in_set(c, "-_*?.:");
}
// name_tag    [\'][a-zA-Z_*?\[\]][a-zA-Z0-9_*?\-,\.\[\]:=]*[\']
bool tag_rest(char c) {
  return is_alpha(c) || is_digit(c) || in_set(c, "_*?-,.[]:=");
}
bool is_modifier(char c) {
  return in_set(c, "ukhpPGHSDIWeb");
}
bool drv_key(char c) {
  return is_alpha(c) || is_digit(c) || c == '_' || c == '.';
}
bool drv_value(char c) {
  return is_alpha(c) || is_digit(c) || in_set(c, "_*?.:");
}
bool not_event_delim(char c) {  // [^,{}/]
  return c != ',' && c != '{' && c != '}' && c != '/';
}
bool not_bpf_delim(char c) {  // [^,{}]
  return c != ',' && c != '{' && c != '}';
}
bool bpf_tail(char c) {  // [a-zA-Z0-9._]
  return is_alpha(c) || is_digit(c) || c == '.' || c == '_';
}

// Parses digits in `base` (the text holds only valid digits); false when the
// value does not fit in 64 bits, as strtoull's ERANGE.
bool to_u64(std::string_view digits, unsigned base, uint64_t* out) {
  uint64_t value = 0;
  for (char c : digits) {
    unsigned d = is_digit(c) ? unsigned(c - '0') : unsigned((c | 0x20) - 'a' + 10);
    if (value > (UINT64_MAX - d) / base)
      return false;
    value = value * base + d;
  }
  *out = value;
  return true;
}

class Lexer {
 public:
  Lexer(std::string_view input, const pmu::Model* model, LexStart start)
      : in_(input), model_(model), state_(start == LexStart::kEvents ? kEvent : kConfig) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    for (;;) {
      Token t = next();
      bool end = t.kind == Tok::kEnd;
      out.push_back(std::move(t));
      if (end)
        return out;
    }
  }

 private:
  enum State { kInitial, kConfig, kMem, kEvent, kArray };

  // Candidate rules in file order; the action of the winner makes the token.
  enum Rule {
    kNone,
    // config state
    kRTermKeyword,
    kRRawConfig,
    kRRaw0xConfig,
    kRCommaConfig,
    kRSlashConfig,
    kRNameMinus,
    kRArrayAll,
    kRLBracket,
    kRDrvCfg,
    // INITIAL (also active in the config state)
    kRSymbol,
    kRKernelPmu,
    kRCacheType,
    kRCacheOp,
    kRMem,
    kRRaw,
    kRDec,
    kRHex,
    kRModifier,
    kRName,
    kRNameTag,
    kRChar,
  };

  struct Best {
    size_t len = 0;
    Rule rule = kNone;
    uint64_t num = 0;
    Tok kind = Tok::kEnd;
    void consider(size_t l, Rule r, uint64_t n = 0, Tok k = Tok::kEnd) {
      if (l > len) {
        len = l;
        rule = r;
        num = n;
        kind = k;
      }
    }
  };

  char at(size_t i) const { return i < in_.size() ? in_[i] : '\0'; }
  bool has(size_t i) const { return i < in_.size(); }

  size_t match_literal(size_t p, std::string_view lit) const {
    // The first byte decides for almost every literal: check it before
    // comparing the rest (this is the lexer's hot loop).
    if (p >= in_.size() || in_[p] != lit[0])
      return 0;
    return in_.substr(p, lit.size()) == lit ? lit.size() : 0;
  }

  // The longest name of a table of names (parse/names.h) at p, or 0.
  template <typename Table>
  size_t longest_name(size_t p, const Table& table) const {
    size_t len = 0;
    for (const auto& names : table)
      for (std::string_view name : names)
        if (!name.empty())
          len = std::max(len, match_literal(p, name));
    return len;
  }

  size_t run_of(size_t p, bool (*pred)(char)) const {
    size_t i = p;
    while (has(i) && pred(in_[i]))
      i++;
    return i - p;
  }

  Token make(Tok kind, size_t begin, size_t len, uint64_t num = 0) const {
    Token t;
    t.kind = kind;
    t.begin = begin;
    t.end = begin + len;
    t.text = std::string(in_.substr(begin, len));
    t.num = num;
    return t;
  }

  // The length of a "0x..." number at p with its prefix, or 0.
  size_t hex_run(size_t p) const {
    size_t digits = (at(p) == '0' && at(p + 1) == 'x') ? run_of(p + 2, is_hex) : 0;
    return digits ? digits + 2 : 0;
  }

  // Consumes the longer of the decimal and the hex run at p (flex takes the
  // longest match): "0x1f" is hex, "0" alone decimal.
  Token take_number(size_t p, size_t dec, size_t hex) {
    if (hex > dec) {
      pos_ += hex;
      return number(p, hex, in_.substr(p + 2, hex - 2), 16, Tok::kValue);
    }
    pos_ += dec;
    return number(p, dec, in_.substr(p, dec), 10, Tok::kValue);
  }

  Token number(size_t begin, size_t len, std::string_view digits, unsigned base, Tok kind) const {
    uint64_t value = 0;
    if (!to_u64(digits, base, &value))
      return make(Tok::kError, begin, len);
    return make(kind, begin, len, value);
  }

  // perf_pmu__parse_check(): is this word (part of) a PMU alias?
  pmu::AliasSymbol alias(std::string_view word) const {
    return model_ ? model_->alias_symbol(word) : pmu::AliasSymbol::kNone;
  }

  // raw(): rNNN is an alias when some PMU has one of that name.
  Token raw(size_t begin, size_t len) const {
    std::string_view text = in_.substr(begin, len);
    if (alias(text) == pmu::AliasSymbol::kEvent)
      return make(Tok::kName, begin, len);
    std::string_view digits = text.substr(1);
    if (digits.size() > 2 && digits[0] == '0' && digits[1] == 'x')
      digits.remove_prefix(2);
    return number(begin, len, digits, 16, Tok::kRaw);
  }

  // --- the event state ------------------------------------------------------

  size_t match_group(size_t p) const {
    size_t i = p + run_of(p, not_event_delim);
    if (at(i) != '{' || !has(i))
      return 0;
    i++;
    while (has(i) && in_[i] != '}')
      i++;
    if (!has(i))
      return 0;
    i++;
    return i + run_of(i, not_event_delim) - p;
  }

  size_t match_event_pmu(size_t p) const {
    size_t head = run_of(p, not_event_delim);
    if (!head || at(p + head) != '/' || !has(p + head))
      return 0;
    size_t i = p + head + 1;
    while (has(i) && in_[i] != '/')
      i++;
    if (!has(i))
      return 0;
    i++;
    return i + run_of(i, not_event_delim) - p;
  }

  // [^,{}]+\.(o|bpf)[a-zA-Z0-9._]*  or  [^,{}]+\.c[a-zA-Z0-9._]*
  size_t match_bpf(size_t p, bool source) const {
    size_t run = run_of(p, not_bpf_delim);
    size_t best = 0;
    for (size_t d = p + 1; d < p + run; d++) {
      if (in_[d] != '.')
        continue;
      size_t suffix = 0;
      if (source) {
        suffix = at(d + 1) == 'c' ? 1 : 0;
      } else if (at(d + 1) == 'o') {
        suffix = 1;
      } else if (in_.substr(d + 1, 3) == "bpf") {
        suffix = 3;
      }
      if (!suffix || d + 1 + suffix > p + run)
        continue;
      size_t end = d + 1 + suffix;
      end += run_of(end, bpf_tail);
      best = std::max(best, end - p);
    }
    return best;
  }

  std::optional<Token> lex_event() {
    size_t p = pos_;
    size_t group = match_group(p);
    size_t event = std::max(
        {match_event_pmu(p), match_bpf(p, false), match_bpf(p, true), run_of(p, not_event_delim)});
    size_t comma = at(p) == ',' ? 1 : 0;
    if (group && group >= event && group >= comma) {
      state_ = kInitial;  // REWIND(0): the group is read again in INITIAL
      return std::nullopt;
    }
    if (event && event >= comma) {
      state_ = kInitial;  // REWIND(1): the event's text, then the event again
      return make(Tok::kEventName, p, event);
    }
    if (comma) {
      pos_++;
      return make(Tok::kComma, p, 1);
    }
    pos_++;  // flex would echo it to stdout
    return make(Tok::kStray, p, 1);
  }

  // --- the mem and array states ----------------------------------------------

  std::optional<Token> lex_mem() {
    size_t p = pos_;
    size_t bp = 0;
    while (bp < 3 && in_set(at(p + bp), "rwx") && has(p + bp))
      bp++;
    size_t dec = run_of(p, is_digit);
    size_t hex = hex_run(p);
    char c = in_[p];
    if (bp) {
      pos_ += bp;
      return make(Tok::kModifierBp, p, bp);
    }
    if (hex || dec)
      return take_number(p, dec, hex);
    if (c == ':' || c == '/') {
      pos_++;
      return make(c == ':' ? Tok::kColon : Tok::kSlash, p, 1);
    }
    state_ = kInitial;  // unput(*yytext); BEGIN(INITIAL)
    return std::nullopt;
  }

  Token lex_array() {
    size_t p = pos_;
    char c = in_[p];
    size_t dec = run_of(p, is_digit);
    size_t hex = hex_run(p);
    if (hex || dec)
      return take_number(p, dec, hex);
    if (in_.substr(p, 3) == "...") {
      pos_ += 3;
      return make(Tok::kArrayRange, p, 3);
    }
    pos_++;
    if (c == ']') {
      state_ = kConfig;
      return make(Tok::kRBracket, p, 1);
    }
    if (c == ',')
      return make(Tok::kComma, p, 1);
    return make(Tok::kStray, p, 1);
  }

  // --- INITIAL and config -------------------------------------------------------

  void config_rules(size_t p, Best* best) const {
    for (const TermKeyword& k : kTermKeywords)
      best->consider(match_literal(p, k.text), kRTermKeyword, uint64_t(k.type));
    if (at(p) == 'r') {
      size_t hex = run_of(p + 1, is_hex);
      best->consider(hex ? hex + 1 : 0, kRRawConfig);
      if (at(p + 1) == '0' && at(p + 2) == 'x') {
        size_t hex0x = run_of(p + 3, is_hex);
        best->consider(hex0x ? hex0x + 3 : 0, kRRaw0xConfig);
      }
    }
    best->consider(at(p) == ',' ? 1 : 0, kRCommaConfig);
    best->consider(at(p) == '/' ? 1 : 0, kRSlashConfig);
    if (name_minus_first(at(p)) && has(p))
      best->consider(1 + run_of(p + 1, name_minus_rest), kRNameMinus);
    best->consider(match_literal(p, "[all]"), kRArrayAll);
    best->consider(at(p) == '[' ? 1 : 0, kRLBracket);
    if (at(p) == '@') {
      size_t key = run_of(p + 1, drv_key);
      if (key) {
        size_t len = 1 + key;
        if (at(p + len) == '=') {
          size_t value = run_of(p + len + 1, drv_value);
          if (value)
            len += 1 + value;
        }
        best->consider(len, kRDrvCfg);
      }
    }
  }

  void initial_rules(size_t p, Best* best) const {
    {
      Best sym;
      for (const SymbolicEvent& s : kSymbolicEvents)
        sym.consider(match_literal(p, s.text), kRSymbol, s.num, s.kind);
      best->consider(sym.len, kRSymbol, sym.num, sym.kind);
    }
    {
      size_t len = 0;
      for (std::string_view lit : kKernelPmuLiterals)
        len = std::max(len, match_literal(p, lit));
      for (std::string_view prefix : kKernelPmuPrefixes) {
        size_t head = match_literal(p, prefix);
        if (!head)
          continue;
        size_t tail = run_of(p + head, [](char c) { return is_lower(c) || c == '-'; });
        if (tail)
          len = std::max(len, head + tail);
      }
      best->consider(len, kRKernelPmu);
    }
    best->consider(longest_name(p, kCacheTypeNames), kRCacheType);
    {
      size_t len = std::max(longest_name(p, kCacheOpNames), longest_name(p, kCacheResultNames));
      best->consider(len, kRCacheOp);
    }
    best->consider(match_literal(p, "mem:"), kRMem);
    if (at(p) == 'r') {
      size_t hex = run_of(p + 1, is_hex);
      best->consider(hex ? hex + 1 : 0, kRRaw);
    }
    best->consider(run_of(p, is_digit), kRDec);
    if (at(p) == '0' && at(p + 1) == 'x') {
      size_t hex = run_of(p + 2, is_hex);
      best->consider(hex ? hex + 2 : 0, kRHex);
    }
    best->consider(run_of(p, is_modifier), kRModifier);
    if (name_first(at(p)) && has(p))
      best->consider(1 + run_of(p + 1, name_rest), kRName);
    if (at(p) == '\'' && name_first(at(p + 1)) && has(p + 1)) {
      size_t rest = run_of(p + 2, tag_rest);
      if (at(p + 2 + rest) == '\'' && has(p + 2 + rest))
        best->consider(rest + 3, kRNameTag);
    }
    if (in_set(at(p), "/-,:{}=") && has(p))
      best->consider(1, kRChar);
  }

  std::optional<Token> lex_initial() {
    size_t p = pos_;
    Best best;
    if (state_ == kConfig)
      config_rules(p, &best);
    initial_rules(p, &best);
    if (best.rule == kNone) {
      pos_++;
      if (is_space(in_[p]))
        return std::nullopt;  // skipped, as perf does
      return make(Tok::kStray, p, 1);
    }
    size_t len = best.len;
    pos_ += len;
    std::string_view text = in_.substr(p, len);
    switch (best.rule) {
      case kRTermKeyword:
        return make(Tok::kTerm, p, len, best.num);
      case kRRawConfig:
      case kRRaw0xConfig:
      case kRRaw:
        return raw(p, len);
      case kRCommaConfig:
        return make(Tok::kComma, p, 1);
      case kRSlashConfig:
        state_ = kInitial;
        return make(Tok::kSlash, p, 1);
      case kRNameMinus:
        return make(Tok::kName, p, len);
      case kRArrayAll:
        return make(Tok::kArrayAll, p, len);
      case kRLBracket:
        state_ = kArray;
        return make(Tok::kLBracket, p, 1);
      case kRDrvCfg: {
        Token t = make(Tok::kDrvCfgTerm, p, len);
        t.text.erase(0, 1);
        return t;
      }
      case kRSymbol:
        return make(best.kind, p, len, best.num);
      case kRKernelPmu:
        return make(Tok::kKernelPmuEvent, p, len);
      case kRCacheType:
        return make(Tok::kCacheType, p, len);
      case kRCacheOp:
        return make(Tok::kCacheOpResult, p, len);
      case kRMem:
        state_ = kMem;
        return make(Tok::kPrefixMem, p, len);
      case kRDec:
        return number(p, len, text, 10, Tok::kValue);
      case kRHex:
        return number(p, len, text.substr(2), 16, Tok::kValue);
      case kRModifier:
        return make(Tok::kModifierEvent, p, len);
      case kRName:
        switch (alias(text)) {
          case pmu::AliasSymbol::kPrefix:
            return make(Tok::kPmuEventPre, p, len);
          case pmu::AliasSymbol::kSuffix:
            return make(Tok::kPmuEventSuf, p, len);
          case pmu::AliasSymbol::kEvent:
            return make(Tok::kKernelPmuEvent, p, len);
          case pmu::AliasSymbol::kNone:
            return make(Tok::kName, p, len);
        }
        return make(Tok::kName, p, len);
      case kRNameTag: {
        Token t = make(Tok::kName, p, len);
        t.text = std::string(text.substr(1, len - 2));
        return t;
      }
      case kRChar:
        switch (text[0]) {
          case '/':
            state_ = kConfig;
            return make(Tok::kSlash, p, 1);
          case '-':
            return make(Tok::kDash, p, 1);
          case ',':
            state_ = kEvent;
            return make(Tok::kComma, p, 1);
          case ':':
            return make(Tok::kColon, p, 1);
          case '{':
            state_ = kEvent;
            return make(Tok::kLBrace, p, 1);
          case '}':
            return make(Tok::kRBrace, p, 1);
          default:
            return make(Tok::kEquals, p, 1);
        }
      case kNone:
        break;
    }
    return make(Tok::kStray, p, len);
  }

  // The next token; rules that return none (a rewind, a skipped blank, a
  // state change) loop. Each such step either consumes input or changes to a
  // state that then consumes, so this terminates.
  Token next() {
    for (;;) {
      if (pos_ >= in_.size()) {
        state_ = kInitial;
        return Token{Tok::kEnd, in_.size(), in_.size(), {}, 0};
      }
      std::optional<Token> t;
      switch (state_) {
        case kEvent:
          t = lex_event();
          break;
        case kMem:
          t = lex_mem();
          break;
        case kArray:
          t = lex_array();
          break;
        case kInitial:
        case kConfig:
          t = lex_initial();
          break;
      }
      if (t)
        return std::move(*t);
    }
  }

  std::string_view in_;
  const pmu::Model* model_;
  State state_;
  size_t pos_ = 0;
};

}  // namespace

std::string_view term_name(TermType type) {
  switch (type) {
    case TermType::kUser:
      return "<sysfs term>";
    case TermType::kDrvCfg:
      return "driver-config";
    default:
      break;
  }
  for (const TermKeyword& k : kTermKeywords)
    if (k.type == type)
      return k.text;
  return "?";
}

std::string describe(const Token& token) {
  if (token.kind == Tok::kEnd)
    return "the end of the event list";
  return "'" + token.text + "'";
}

std::vector<Token> lex(std::string_view input, const pmu::Model* model, LexStart start) {
  return Lexer(input, model, start).run();
}

}  // namespace pp::parse

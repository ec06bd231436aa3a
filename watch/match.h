// watch's match expressions: which records a trigger rule (or --match) takes.
//
//   severity >= ucna && bank == 7
//   tracepoint == "mce:mce_record" && (cpu == 0 || cpu == 2)
//   status_bits ~ PCC || !(error_class ~ "*cache*")
//   status > 0xbe00000000000000
//
//   PP_ASSIGN_OR_RETURN(Match m, Match::parse("severity >= ucna && bank == 7"));
//   if (m.matches(record_json(r))) ...
//
// Grammar (a hand-written recursive descent; || binds loosest, ! tightest):
//
//   expr       := and ( "||" and )*
//   and        := unary ( "&&" unary )*
//   unary      := "!" unary | "(" expr ")" | comparison
//   comparison := FIELD OP VALUE
//   FIELD      := [A-Za-z_][A-Za-z0-9_.]*   any name record_field() resolves:
//                 the machine check's decoding first (severity, bank, status,
//                 addr, error_class, ...), then the tracepoint's fields,
//                 then the record's own (cpu, pid, event, tracepoint, origin)
//   OP         := == | != | < | <= | > | >= | ~
//   VALUE      := a number (decimal, negative, or hex with 0x), a word (no
//                 spaces, none of ( ) ! & | < > = ~ ' "), or a string quoted
//                 with ' or " (\ escapes the next character)
//
// How a comparison decides:
// - A record without FIELD (or with it null) matches no comparison on it,
//   `!=` included: `bank != 7` means "has a bank, and it is not 7";
//   `!(bank == 7)` also takes records without a bank.
// - `severity` and `kernel_severity` compare by rank, not alphabet (`~`
//   still matches text). severity: invalid < corrected < deferred < ucna <
//   srao < srar < uncorrected < fatal (mce::mce_severity_rank(): the
//   SDM's classes from no error through corrected to the uncorrected ones by
//   how much software must do, worst last; "uncorrected", a UC error the
//   SER classes do not name, below "fatal", where the processor context is
//   corrupt). kernel_severity: Linux's levels no < deferred < ucna < keep <
//   some < ao < uc < ar < panic. A VALUE that is no such name is a parse
//   error listing the names.
// - An unquoted numeric VALUE against a number, or against a string that
//   is a number (registers are hex strings, "0xbe00000000000150"), compares
//   as numbers; otherwise the texts compare (byte order).
// - `~` matches text: a glob (fnmatch) when VALUE holds * ? or [, else
//   "contains VALUE". A number's text is its decimal form.
// - An array (status_bits) matches when one of its elements does; with `!=`,
//   when none is equal.
//
// The empty expression matches every record. A parse error is a usage error
// in perf's caret form, naming the option (or rule) the text came from:
//
//   --match 'bank = 7': at column 6: expected an operator (==, !=, <, <=, >, >=, ~)
//     bank = 7
//          ^
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp::watch {

// Limits a parse enforces, so that no text makes it recurse without bound.
inline constexpr size_t kMaxMatchLength = 4096;
inline constexpr size_t kMaxMatchDepth = 64;  // nested ( and !

class Match {
 public:
  enum class Op { kEq, kNe, kLt, kLe, kGt, kGe, kGlob };

  // `what` names the text's origin in an error: "--match", "trigger rule
  // 'ue' match".
  static Result<Match> parse(std::string_view text, std::string_view what = "--match");

  // Whether `record` (record_json()'s object, or any object record_field()
  // can look into) matches. The empty expression matches everything.
  bool matches(const nlohmann::ordered_json& record) const;

  const std::string& text() const { return text_; }
  bool empty() const { return nodes_.empty(); }
  // The fields the expression names, in order, each once.
  std::vector<std::string> fields() const;

  // A number as a comparison sees it: an integer exactly (64 bits, either
  // sign), else a double.
  struct Number {
    bool integer = true;
    __int128 i = 0;
    double d = 0;
    double as_double() const { return integer ? double(i) : d; }
  };

  // One comparison, with what its VALUE means worked out at parse.
  struct Comparison {
    std::string field;
    Op op = Op::kEq;
    std::string value;             // as written, quotes removed
    bool quoted = false;           // quoted values always compare as text
    std::optional<int> rank;       // severity fields: the value's rank
    std::optional<Number> number;  // an unquoted VALUE that reads as a number
    bool glob = false;             // `~` with * ? or [ in VALUE: fnmatch, not "contains"
  };

 private:
  enum class Kind { kCompare, kAnd, kOr, kNot };
  struct Node {
    Kind kind = Kind::kCompare;
    int left = -1, right = -1;  // children (kNot: left only)
    Comparison compare;
  };
  friend class MatchParser;

  bool eval(int node, const nlohmann::ordered_json& record) const;

  std::string text_;
  std::vector<Node> nodes_;
  int root_ = -1;
};

}  // namespace pp::watch

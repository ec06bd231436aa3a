// The filter language of `top --filter` and `watch --match` (and a
// trigger's `match`): which records a command takes.
//
//   severity >= ucna && bank == 7
//   error_class ~ cache || bank == 7
//   tracepoint == "mce:mce_record" && (cpu == 0 || cpu == 2)
//   status_bits ~ PCC || !(error_class ~ "*cache*")
//   status > 0xbe00000000000000
//
//   filter::Keys keys;                             // the fields the caller offers
//   keys.add("bank").add("error_class").add("severity", &filter::mce_severity_scale());
//   PP_ASSIGN_OR_RETURN(auto e, filter::Expression::parse(text, keys, "--match"));
//   if (e.matches(record)) ...                     // record: a filter::Record
//
// Grammar (a hand-written recursive descent; || binds loosest, ! tightest):
//
//   expr       := and ( "||" and )*
//   and        := unary ( "&&" unary )*
//   unary      := "!" unary | "(" expr ")" | comparison
//   comparison := FIELD OP VALUE
//   FIELD      := [A-Za-z_][A-Za-z0-9_.]*   a name the caller declared (Keys)
//   OP         := == | != | < | <= | > | >= | ~
//   VALUE      := a number (decimal, negative, or hex with 0x), a word (no
//                 spaces, none of ( ) ! & | < > = ~ ' "), or a string quoted
//                 with ' or " (\ escapes the next character)
//
// How a comparison decides:
// - A record without FIELD matches no comparison on it, `!=` included:
//   `bank != 7` means "has a bank, and it is not 7"; `!(bank == 7)` also
//   takes records without a bank.
// - A ranked field (Keys::add with a Scale: `severity`, `kernel_severity`)
//   compares by rank, not alphabet; a record's value that is not on the
//   scale matches nothing. A VALUE that is not on the scale is a parse error
//   listing the scale. `~` still matches the text.
// - An unquoted numeric VALUE against a number, or against text that reads
//   as a number (registers are hex text, "0xbe00000000000150"), compares as
//   numbers; otherwise the texts compare (byte order). A quoted VALUE is
//   always text.
// - `~` matches text: VALUE with * ? or [ is a glob (fnmatch) the whole text
//   must match; VALUE without them matches when the text contains it
//   (`sym ~ lock` is `sym ~ '*lock*'`). A number's text is its decimal form.
// - A list (an array such as status_bits) matches when one of its elements
//   does; with `!=`, when none is equal.
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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "filter/keys.h"

namespace pp::filter {

// Limits a parse enforces, so that no text makes it recurse without bound.
inline constexpr size_t kMaxLength = 4096;
inline constexpr size_t kMaxDepth = 64;  // nested ( and !

// A number as a comparison sees it: an integer exactly (64 bits, either
// sign), else a double.
struct Number {
  bool integer = true;
  __int128 i = 0;
  double d = 0;
  double as_double() const { return integer ? double(i) : d; }
};

// "7", "-1", "0x1F", "1.5" as a number; nullopt for anything else.
std::optional<Number> parse_number(std::string_view text);

// A field's value in one record: text, a number, or a list of values.
struct Value {
  enum class Kind { kText, kNumber, kList };
  Kind kind = Kind::kText;
  std::string text;          // kText
  Number number;             // kNumber
  std::vector<Value> items;  // kList

  // Inline: top builds one per field a filter or a table asks of a sample.
  static Value of_text(std::string text) {
    Value v;
    v.text = std::move(text);
    return v;
  }
  static Value of_unsigned(uint64_t n) {
    Value v;
    v.kind = Kind::kNumber;
    v.number.i = __int128(n);
    return v;
  }
  static Value of_signed(int64_t n) {
    Value v;
    v.kind = Kind::kNumber;
    v.number.i = __int128(n);
    return v;
  }
  static Value of_list(std::vector<Value> items) {
    Value v;
    v.kind = Kind::kList;
    v.items = std::move(items);
    return v;
  }

  // As `~` matches it: text as is, an integer in decimal, a fraction as
  // %.17g writes it; a list's elements joined by spaces.
  std::string shown() const;
  // The same without copying text (per sample, that copy shows): the text
  // itself, else shown() written into `scratch`.
  const std::string& shown(std::string& scratch) const;
};

// What an expression is evaluated against: a record's fields by name.
class Record {
 public:
  virtual ~Record() = default;
  // The value of the field `key` (a name the expression's Keys accepted), or
  // nullopt when this record has none.
  virtual std::optional<Value> field(std::string_view key) const = 0;
};

// A Record over a callable: std::optional<Value>(std::string_view key).
template <typename Lookup>
class LookupRecord final : public Record {
 public:
  explicit LookupRecord(Lookup lookup) : lookup_(std::move(lookup)) {}
  std::optional<Value> field(std::string_view key) const override { return lookup_(key); }

 private:
  Lookup lookup_;
};

class Expression {
 public:
  enum class Op { kEq, kNe, kLt, kLe, kGt, kGe, kMatch };

  // `what` names the text's origin in an error: "--filter", "--match",
  // "trigger rule 'ue' match". The keys' scales must outlive the expression.
  static Result<Expression> parse(std::string_view text, const Keys& keys, std::string_view what);

  // Whether `record` matches. The empty expression matches everything.
  bool matches(const Record& record) const;

  const std::string& text() const { return text_; }
  bool empty() const { return nodes_.empty(); }
  // The fields the expression names, in order, each once.
  std::vector<std::string> keys() const;

  // One comparison, with what its VALUE means worked out at parse.
  struct Comparison {
    std::string key;
    Op op = Op::kEq;
    std::string value;             // as written, quotes removed
    bool quoted = false;           // quoted values always compare as text
    const Scale* scale = nullptr;  // a ranked key's scale
    int rank = -1;                 // with a scale: the value's rank
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
  friend class Parser;

  bool eval(int node, const Record& record) const;

  std::string text_;
  std::vector<Node> nodes_;
  int root_ = -1;
};

}  // namespace pp::filter

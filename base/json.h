// The one JSON module: reading and writing every JSON this program
// exchanges (`--json` output, broker protocol payloads, the broker's state
// file) without exceptions. nlohmann::json throws on a type mismatch and on
// invalid UTF-8, and neither may escape a module: every accessor here checks
// the type first, and the writer is this file's own, which never throws.
//
//   PP_ASSIGN_OR_RETURN(json doc, parse_json(text, "a broker reply"));
//   JsonFields f(doc, "a broker reply");
//   PP_ASSIGN_OR_RETURN(uint64_t id, f.u64("id"));
//   PP_ASSIGN_OR_RETURN(std::string name, f.str_or("name", ""));
//
//   std::cout << dump_json(json{{"config", hex_u64(attr.config)}, {"count", n}}) << '\n';
//   std::cout << dump_json(error_json(error)) << '\n';
//
// Two rules every JSON output follows (Documentation/perf-persistent.txt, JSON):
// - Strings are UTF-8. A byte that is not part of valid UTF-8 (a name, an
//   event string or a path can hold any byte) is written as the four
//   characters \xNN, NN its value in lower-case hex: nothing is lost, and
//   the output is always valid JSON. (In JSON text: "\\xff".) A string that
//   held the text \xff itself reads back the same: the rule is for people
//   and scripts to see every byte, not a reversible encoding.
// - Registers and bit masks (attr config words, sample_type, read_format...)
//   are strings "0x<hex>" (hex_u64): jq and JavaScript keep 53 bits of a
//   number. Counts, ids, sizes and CPU numbers stay numbers.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace pp {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;  // keys in insertion order

// Deepest nesting accepted: the formats here nest three levels; a hostile
// "[[[[..." must not reach a recursive parser.
inline constexpr int kMaxJsonDepth = 16;

// Parses `text`; EINVAL names `what` and says what was wrong.
Result<json> parse_json(std::string_view text, std::string_view what);

// Serialises without throwing, in nlohmann's layout (`indent` < 0: one line;
// else pretty-printed with that many spaces), invalid UTF-8 escaped as above.
std::string dump_json(const json& value, int indent = -1);
std::string dump_json(const ordered_json& value, int indent = -1);

// `text` as valid UTF-8: each byte that is not part of a valid sequence
// becomes the four characters \xNN (the rule above).
std::string escape_invalid_utf8(std::string_view text);

// A register or bit mask as its JSON string: "0x8000000000000001".
std::string hex_u64(uint64_t value);
// The value of a hex_u64() string, or of a JSON number (what was written
// before registers became strings); nullopt for anything else.
std::optional<uint64_t> u64_from_hex_json(const json& value);
std::optional<uint64_t> u64_from_hex_json(const ordered_json& value);

// The one error shape, for every command's --json and the broker protocol:
//
//   {"error": {"kind": "not-found", "exit_status": 4, "errno": "ENOENT",
//              "message": "no persistent event 'ctxsw'; see 'perf persistent list'"}}
//
// error_object() is the inner object; error_json() wraps it in "error".
json error_object(const Error& error);
json error_json(const Error& error);
// The Error an error_object() describes, or, when `object` is not one, an
// EPROTO refusal saying what is wrong. `what` names it ("the broker's reply").
Error error_from_json(const json& object, std::string_view what);

class JsonFields {
 public:
  // `object` must outlive this; `what` names it in errors ("a create request").
  JsonFields(const json& object, std::string what);

  bool has(std::string_view key) const;

  Result<uint64_t> u64(std::string_view key) const;
  Result<int64_t> i64(std::string_view key) const;
  Result<bool> boolean(std::string_view key) const;
  Result<std::string> str(std::string_view key) const;
  Result<const json*> array(std::string_view key) const;
  Result<const json*> object(std::string_view key) const;

  // The same, with a value for a missing (or null) key.
  Result<uint64_t> u64_or(std::string_view key, uint64_t fallback) const;
  Result<int64_t> i64_or(std::string_view key, int64_t fallback) const;
  Result<bool> boolean_or(std::string_view key, bool fallback) const;
  Result<std::string> str_or(std::string_view key, std::string fallback) const;

 private:
  Result<const json*> field(std::string_view key) const;
  Error wrong_type(std::string_view key, const char* wanted) const;

  const json& object_;
  std::string what_;
};

}  // namespace pp

namespace pp {

// A streaming writer of one JSON value into a string, for output that is
// written per record (report's --json prints a million lines): no tree, no
// allocation beyond the string's growth. Same rules as dump_json(): strings
// as nlohmann escapes them, bytes that are not valid UTF-8 as \xNN; the
// caller writes keys and values in a valid order.
//
//   JsonWriter w(line);
//   w.begin_object();
//   w.key("cpu"); w.number(3);
//   w.key("status"); w.hex(0x9c00000000010135);
//   w.end_object();
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) {}

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  void key(std::string_view name);
  void number(uint64_t value);
  void signed_number(int64_t value);
  void hex(uint64_t value);  // "0x..." (hex_u64)
  void string(std::string_view value);
  void boolean(bool value);
  void null();
  // Text that is already one JSON value (dump_json's output).
  void raw(std::string_view json_text);

 private:
  void open(char c);
  void close(char c);
  void separate();

  std::string& out_;
  uint64_t first_ = 0;  // bit per depth: nothing written at this depth yet
  int depth_ = 0;
  bool after_key_ = false;
};

// Appends `text` as a JSON string (quotes included) under dump_json()'s rules.
void append_json_string(std::string& out, std::string_view text);

}  // namespace pp

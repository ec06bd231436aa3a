// Reading and writing the JSON this module exchanges (broker protocol
// payloads, the broker's state file, `--json` output) without exceptions:
// nlohmann::json throws on a type mismatch and on invalid UTF-8, and neither
// may escape (STYLE.md 5). Every accessor checks the type first.
//
//   PP_ASSIGN_OR_RETURN(json doc, parse_json(text, "a broker reply"));
//   JsonFields f(doc, "a broker reply");
//   PP_ASSIGN_OR_RETURN(uint64_t id, f.u64("id"));
//   PP_ASSIGN_OR_RETURN(std::string name, f.str_or("name", ""));
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/result.h"

namespace pp::persistent {

using json = nlohmann::json;

// Deepest nesting accepted: the formats here nest three levels; a hostile
// "[[[[..." must not reach a recursive parser.
inline constexpr int kMaxJsonDepth = 16;

// Parses `text`; EINVAL names `what` and says what was wrong.
Result<json> parse_json(std::string_view text, std::string_view what);

// Serialises without throwing: invalid UTF-8 in a string becomes U+FFFD.
std::string dump_json(const json& value, int indent = -1);

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

}  // namespace pp::persistent

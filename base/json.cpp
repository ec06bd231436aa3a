#include "base/json.h"

#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "base/strings.h"

namespace pp {
namespace {

// The nesting depth of JSON text, strings skipped; -1 when it passes `limit`.
int nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit)
        return -1;
      deepest = std::max(deepest, depth);
    } else if (c == ']' || c == '}') {
      depth--;
    }
  }
  return deepest;
}

}  // namespace

Result<json> parse_json(std::string_view text, std::string_view what) {
  if (nesting_depth(text, kMaxJsonDepth) < 0)
    return errorf(EINVAL, "%.*s nests deeper than %d levels", int(what.size()), what.data(),
                  kMaxJsonDepth);
  // nlohmann keeps the last of two equal keys; a request whose "op" reads
  // one way to a log or a proxy and another way here must not pass.
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string duplicate;
  auto check_keys = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!keys.empty())
        keys.pop_back();
    } else if (event == json::parse_event_t::key && !keys.empty() && parsed.is_string()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(key).second && duplicate.empty())
        duplicate = key;
    }
    return true;
  };
  json doc = json::parse(text.begin(), text.end(), check_keys, false);
  if (doc.is_discarded())
    return errorf(EINVAL, "%.*s is not valid JSON", int(what.size()), what.data());
  if (!duplicate.empty())
    return errorf(EINVAL, "%.*s has the key \"%s\" twice; each key may appear once",
                  int(what.size()), what.data(),
                  escape_invalid_utf8(duplicate.substr(0, 64)).c_str());
  return doc;
}

namespace {

// The length of the valid UTF-8 sequence at text[i] (Unicode 15, table 3-7:
// no overlong forms, no surrogates, nothing above U+10FFFF), or 0.
size_t utf8_sequence(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return k < text.size() ? uint8_t(text[k]) : 0; };
  uint8_t b0 = byte(i);
  if (b0 < 0x80)
    return 1;
  auto cont = [&](size_t k, uint8_t lo = 0x80, uint8_t hi = 0xbf) {
    uint8_t b = byte(k);
    return k < text.size() && b >= lo && b <= hi;
  };
  if (b0 >= 0xc2 && b0 <= 0xdf)
    return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    uint8_t lo = b0 == 0xe0 ? 0xa0 : 0x80, hi = b0 == 0xed ? 0x9f : 0xbf;
    return cont(i + 1, lo, hi) && cont(i + 2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    uint8_t lo = b0 == 0xf0 ? 0x90 : 0x80, hi = b0 == 0xf4 ? 0x8f : 0xbf;
    return cont(i + 1, lo, hi) && cont(i + 2) && cont(i + 3) ? 4 : 0;
  }
  return 0;
}

void append_hex_byte(std::string& out, uint8_t b) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += kHex[b >> 4];
  out += kHex[b & 0xf];
}

// `value` with every key and string made valid UTF-8 (escape_invalid_utf8),
// so that nlohmann's dump, which throws on invalid UTF-8, cannot throw.
template <typename Json>
Json with_valid_utf8(const Json& value) {
  if (value.is_string())
    return escape_invalid_utf8(value.template get_ref<const std::string&>());
  if (value.is_array()) {
    Json out = Json::array();
    for (const Json& element : value)
      out.push_back(with_valid_utf8(element));
    return out;
  }
  if (value.is_object()) {
    Json out = Json::object();
    for (auto it = value.begin(); it != value.end(); ++it)
      out[escape_invalid_utf8(it.key())] = with_valid_utf8(it.value());
    return out;
  }
  return value;
}

// Whether every key of `value`, at any depth, is valid UTF-8.
template <typename Json>
bool keys_valid_utf8(const Json& value) {
  if (value.is_array()) {
    for (const Json& element : value)
      if (!keys_valid_utf8(element))
        return false;
  } else if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string& key = it.key();
      for (size_t i = 0; i < key.size();) {
        size_t n = utf8_sequence(key, i);
        if (n == 0)
          return false;
        i += n;
      }
      if (!keys_valid_utf8(it.value()))
        return false;
    }
  }
  return true;
}

// with_valid_utf8(value).dump() written straight into `out`, without the
// copy of the tree: strings by append_json_string() (the same escapes, and
// \xNN for bytes that are not UTF-8), integers by to_chars (nlohmann's
// digits), other scalars (floats, booleans, null, binary) by nlohmann itself.
// Keys are written as they are: the caller has checked keys_valid_utf8().
template <typename Json>
void append_compact(std::string& out, const Json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!first)
          out += ',';
        first = false;
        append_json_string(out, it.key());
        out += ':';
        append_compact(out, it.value());
      }
      out += '}';
      return;
    }
    case nlohmann::json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& element : value) {
        if (!first)
          out += ',';
        first = false;
        append_compact(out, element);
      }
      out += ']';
      return;
    }
    case nlohmann::json::value_t::string:
      append_json_string(out, value.template get_ref<const std::string&>());
      return;
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_integer: {
      char buf[24];
      char* end = value.is_number_unsigned()
                      ? std::to_chars(buf, buf + sizeof(buf), value.template get<uint64_t>()).ptr
                      : std::to_chars(buf, buf + sizeof(buf), value.template get<int64_t>()).ptr;
      out.append(buf, size_t(end - buf));
      return;
    }
    default:
      out += value.dump();
      return;
  }
}

template <typename Json>
std::string dump(const Json& value, int indent) {
  // A key that is not UTF-8 takes the tree's copy: two keys could escape
  // to the same text, and the copy keeps one of them, as before.
  if (indent >= 0 || !keys_valid_utf8(value))
    return with_valid_utf8(value).dump(indent);
  std::string out;
  append_compact(out, value);
  return out;
}

}  // namespace

std::string dump_json(const json& value, int indent) {
  return dump(value, indent);
}

std::string dump_json(const ordered_json& value, int indent) {
  return dump(value, indent);
}

std::string escape_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += "\\x";
      append_hex_byte(out, uint8_t(text[i]));
      i++;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string hex_u64(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, value);
  return buf;
}

namespace {

template <typename Json>
std::optional<uint64_t> u64_from(const Json& value) {
  if (value.is_number_unsigned() ||
      (value.is_number_integer() && value.template get<int64_t>() >= 0))
    return value.template get<uint64_t>();
  if (!value.is_string())
    return std::nullopt;
  const std::string& text = value.template get_ref<const std::string&>();
  if (!text.starts_with("0x") && !text.starts_with("0X"))
    return std::nullopt;
  Result<uint64_t> parsed = parse_u64(text, "register");
  if (!parsed.ok())
    return std::nullopt;
  return *parsed;
}

}  // namespace

std::optional<uint64_t> u64_from_hex_json(const json& value) {
  return u64_from(value);
}

std::optional<uint64_t> u64_from_hex_json(const ordered_json& value) {
  return u64_from(value);
}

json error_object(const Error& error) {
  return {{"kind", std::string(kind_name(error.kind()))},
          {"exit_status", exit_status_of(error.kind())},
          {"errno", errno_name(error.code())},
          {"message", error.message()}};
}

json error_json(const Error& error) {
  return {{"error", error_object(error)}};
}

Error error_from_json(const json& object, std::string_view what) {
  auto bad = [&](const char* why) {
    return errorf(EPROTO, "%.*s: %s", int(what.size()), what.data(), why);
  };
  JsonFields f(object, std::string(what));
  auto kind_text = f.str("kind");
  auto errno_text = f.str("errno");
  auto message = f.str("message");
  if (!kind_text.ok() || !errno_text.ok() || !message.ok())
    return bad("an error needs \"kind\", \"errno\" and \"message\" strings");
  std::optional<ErrorKind> kind = kind_from_name(*kind_text);
  if (!kind)
    return bad("unknown error \"kind\"");
  int code = errno_from_name(*errno_text);
  if (code <= 0 || code >= 4096)
    return bad("unknown \"errno\"");
  return Error(*kind, code, *message);
}

JsonFields::JsonFields(const json& object, std::string what)
    : object_(object), what_(std::move(what)) {}

bool JsonFields::has(std::string_view key) const {
  if (!object_.is_object())
    return false;
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

Error JsonFields::wrong_type(std::string_view key, const char* wanted) const {
  return errorf(EINVAL, "%s: \"%.*s\" must be %s", what_.c_str(), int(key.size()), key.data(),
                wanted);
}

Result<const json*> JsonFields::field(std::string_view key) const {
  if (!object_.is_object())
    return errorf(EINVAL, "%s is not a JSON object", what_.c_str());
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null())
    return errorf(EINVAL, "%s has no \"%.*s\"", what_.c_str(), int(key.size()), key.data());
  return &*it;
}

Result<uint64_t> JsonFields::u64(std::string_view key) const {
  PP_ASSIGN_OR_RETURN(const json* v, field(key));
  if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0))
    return wrong_type(key, "a non-negative integer");
  return v->get<uint64_t>();
}

Result<int64_t> JsonFields::i64(std::string_view key) const {
  PP_ASSIGN_OR_RETURN(const json* v, field(key));
  if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX))
    return wrong_type(key, "an integer that fits in 64 signed bits");
  if (!v->is_number_integer())
    return wrong_type(key, "an integer");
  return v->get<int64_t>();
}

Result<bool> JsonFields::boolean(std::string_view key) const {
  PP_ASSIGN_OR_RETURN(const json* v, field(key));
  if (!v->is_boolean())
    return wrong_type(key, "true or false");
  return v->get<bool>();
}

Result<std::string> JsonFields::str(std::string_view key) const {
  PP_ASSIGN_OR_RETURN(const json* v, field(key));
  if (!v->is_string())
    return wrong_type(key, "a string");
  return v->get<std::string>();
}

Result<const json*> JsonFields::array(std::string_view key) const {
  PP_ASSIGN_OR_RETURN(const json* v, field(key));
  if (!v->is_array())
    return wrong_type(key, "an array");
  return v;
}

Result<const json*> JsonFields::object(std::string_view key) const {
  PP_ASSIGN_OR_RETURN(const json* v, field(key));
  if (!v->is_object())
    return wrong_type(key, "an object");
  return v;
}

Result<uint64_t> JsonFields::u64_or(std::string_view key, uint64_t fallback) const {
  return has(key) ? u64(key) : Result<uint64_t>(fallback);
}

Result<int64_t> JsonFields::i64_or(std::string_view key, int64_t fallback) const {
  return has(key) ? i64(key) : Result<int64_t>(fallback);
}

Result<bool> JsonFields::boolean_or(std::string_view key, bool fallback) const {
  return has(key) ? boolean(key) : Result<bool>(fallback);
}

Result<std::string> JsonFields::str_or(std::string_view key, std::string fallback) const {
  return has(key) ? str(key) : Result<std::string>(std::move(fallback));
}

}  // namespace pp

namespace pp {

namespace {

// Whether one of the eight bytes of `w` is one append_json_string() does not
// copy as it is: below 0x20, '"', '\\' or 0x80 and above (UTF-8's lead and
// continuation bytes). The bit tricks are exact for "any": a byte below n
// (n <= 0x80) sets its high bit in (w - n * ones) & ~w unless a lower byte
// borrowed, and one that borrowed was below n itself.
bool any_special_byte(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighs = kOnes * 0x80;
  auto below = [](uint64_t v, uint64_t n) { return (v - kOnes * n) & ~v & kHighs; };
  return ((w & kHighs) | below(w, 0x20) | below(w ^ (kOnes * '"'), 1) |
          below(w ^ (kOnes * '\\'), 1)) != 0;
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t i = 0;
  while (i < text.size()) {
    // The common run of plain ASCII in one append, found eight bytes at a
    // time (byte by byte, this loop was a twelfth of watch --db's CPU).
    size_t start = i;
    for (uint64_t w; i + sizeof(w) <= text.size(); i += sizeof(w)) {
      std::memcpy(&w, text.data() + i, sizeof(w));
      if (any_special_byte(w))
        break;
    }
    while (i < text.size()) {
      auto c = uint8_t(text[i]);
      if (c < 0x20 || c == '"' || c == '\\' || c >= 0x80)
        break;
      i++;
    }
    out.append(text.data() + start, i - start);
    if (i == text.size())
      break;
    auto c = uint8_t(text[i]);
    if (c >= 0x80) {
      size_t n = utf8_sequence(text, i);
      if (n == 0) {
        out += "\\\\x";
        out += kHex[c >> 4];
        out += kHex[c & 15];
        i++;
      } else {
        out.append(text.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
        break;
    }
    i++;
  }
  out += '"';
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (depth_ == 0)
    return;
  uint64_t bit = uint64_t(1) << (depth_ % 64);
  if (first_ & bit)
    first_ &= ~bit;
  else
    out_ += ',';
}

void JsonWriter::open(char c) {
  separate();
  out_ += c;
  depth_++;
  first_ |= uint64_t(1) << (depth_ % 64);
}

void JsonWriter::close(char c) {
  out_ += c;
  depth_--;
}

void JsonWriter::key(std::string_view name) {
  separate();
  append_json_string(out_, name);
  out_ += ':';
  after_key_ = true;
}

void JsonWriter::number(uint64_t value) {
  separate();
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  (void)ec;
  out_.append(buf, size_t(end - buf));
}

void JsonWriter::signed_number(int64_t value) {
  separate();
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  (void)ec;
  out_.append(buf, size_t(end - buf));
}

void JsonWriter::hex(uint64_t value) {
  separate();
  char buf[24] = {'"', '0', 'x'};
  auto [end, ec] = std::to_chars(buf + 3, buf + sizeof(buf) - 1, value, 16);
  (void)ec;
  *end++ = '"';
  out_.append(buf, size_t(end - buf));
}

void JsonWriter::string(std::string_view value) {
  separate();
  append_json_string(out_, value);
}

void JsonWriter::boolean(bool value) {
  separate();
  out_ += value ? "true" : "false";
}

void JsonWriter::null() {
  separate();
  out_ += "null";
}

void JsonWriter::raw(std::string_view json_text) {
  separate();
  out_ += json_text;
}

}  // namespace pp

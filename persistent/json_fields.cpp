#include "persistent/json_fields.h"

namespace pp::persistent {
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
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded())
    return errorf(EINVAL, "%.*s is not valid JSON", int(what.size()), what.data());
  return doc;
}

std::string dump_json(const json& value, int indent) {
  return value.dump(indent, ' ', false, json::error_handler_t::replace);
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

}  // namespace pp::persistent

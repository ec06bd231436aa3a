#include "watch/match.h"

#include "watch/record.h"

namespace pp::watch {

const filter::Keys& match_keys() {
  static const filter::Keys keys = filter::Keys::open("severity, bank, cpu, a tracepoint field...")
                                       .add("severity", &filter::mce_severity_scale())
                                       .add("kernel_severity", &filter::kernel_severity_scale());
  return keys;
}

Result<filter::Expression> parse_match(std::string_view text, std::string_view what) {
  return filter::Expression::parse(text, match_keys(), what);
}

std::optional<filter::Value> json_value(const nlohmann::ordered_json& v) {
  if (v.is_string())
    return filter::Value::of_text(v.get<std::string>());
  if (v.is_number_unsigned())
    return filter::Value::of_unsigned(v.get<uint64_t>());
  if (v.is_number_integer())
    return filter::Value::of_signed(v.get<int64_t>());
  if (v.is_number_float() || v.is_boolean())
    return filter::Value::of_text(json_scalar_text(v));
  if (v.is_array()) {
    std::vector<filter::Value> items;
    for (const nlohmann::ordered_json& e : v)
      if (!e.is_array())
        if (std::optional<filter::Value> item = json_value(e))
          items.push_back(std::move(*item));
    return filter::Value::of_list(std::move(items));
  }
  return std::nullopt;
}

std::optional<filter::Value> JsonRecord::field(std::string_view key) const {
  const nlohmann::ordered_json* v = record_field(record_, key);
  return v ? json_value(*v) : std::nullopt;
}

bool record_matches(const filter::Expression& match, const nlohmann::ordered_json& record) {
  return match.matches(JsonRecord(record));
}

}  // namespace pp::watch

#include "watch/match.h"

#include "mce/decode.h"
#include "mce/ras_events.h"
#include "mce/ras_keys.h"
#include "report/trace_decoder.h"
#include "watch/record.h"

namespace pp::watch {

const filter::Keys& match_keys() {
  static const filter::Keys keys = filter::Keys::open("severity, bank, cpu, a tracepoint field...")
                                       .add("severity", &filter::mce_severity_scale())
                                       .add("kernel_severity", &filter::kernel_severity_scale());
  return keys;
}

filter::Keys record_keys(std::span<const report::TraceEvent* const> formats, bool machine_checks) {
  filter::Keys keys;
  for (const char* own : {"origin", "event", "tracepoint", "time", "wall_time", "cpu", "pid", "tid",
                          "comm", "key", "common_pid"})
    keys.add(own);
  bool ras = false;
  for (const report::TraceEvent* format : formats) {
    machine_checks = machine_checks || format->is_mce;
    ras = ras || mce::is_ras_event(format->name);
    for (const report::TraceField& f : format->fields)
      keys.add(f.name);
  }
  // Another RAS record's decoding ("ras": source, aer_severity, device...),
  // its severity on the machine checks' scale.
  if (ras) {
    for (std::string_view name : mce::ras_json_keys())
      keys.add(std::string(name));
    keys.add("severity", &filter::mce_severity_scale());
  }
  if (machine_checks) {
    // Every name mce_json() writes: the registers, then what the decoding
    // gives (some only for some banks and vendors).
    for (const auto& [name, reg] : mce::kMceHexRegisters)
      keys.add(name);
    for (const auto& [name, reg] : mce::kMceNumRegisters)
      keys.add(name);
    for (const char* decoded : {"cs",
                                "vendor",
                                "status_bits",
                                "mcg_status_bits",
                                "corrected_count",
                                "threshold",
                                "mscod",
                                "mscod_meaning",
                                "error_code",
                                "error_class",
                                "simple",
                                "internal",
                                "tt",
                                "ll",
                                "cache",
                                "rrrr",
                                "pp",
                                "t",
                                "ii",
                                "mmm",
                                "cccc",
                                "f",
                                "smca_bank_type",
                                "xec",
                                "xec_meaning",
                                "unit",
                                "location",
                                "cpu_model",
                                "assumed_from_cpu_model",
                                "kernel_verdict",
                                "severity_rule",
                                "kernel_severity_rule",
                                "advice",
                                "notes"})
      keys.add(decoded);
    keys.add("severity", &filter::mce_severity_scale());
    keys.add("kernel_severity", &filter::kernel_severity_scale());
  }
  return keys;
}

Status check_match_fields(std::string_view text, const filter::Keys& keys, std::string_view what) {
  PP_ASSIGN_OR_RETURN(filter::Expression checked, filter::Expression::parse(text, keys, what));
  (void)checked;
  return ok_status();
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

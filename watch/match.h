// What watch's match expressions (--match, a trigger rule's `match`) see of
// a record: the filter language (filter/expression.h, the one `top
// --filter` speaks) over the fields of the record's JSON object
// (record_json()), found as record_field() finds them: the machine check's
// decoding first (severity, bank, status, addr, error_class, ...), then the
// tracepoint's fields, then the record's own (cpu, pid, event, tracepoint,
// origin).
//
//   PP_ASSIGN_OR_RETURN(filter::Expression m, parse_match("severity >= ucna && bank == 7"));
//   if (record_matches(m, record_json(r))) ...
//
// Every name is a field (which tracepoints a watcher reads is not known
// when a rule is read); `severity` and `kernel_severity` are ranked.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string_view>

#include "base/result.h"
#include "filter/expression.h"

namespace pp::report {
struct TraceEvent;
}

namespace pp::watch {

// The fields a match expression may name: any; severity and
// kernel_severity ranked (filter::mce_severity_scale(),
// filter::kernel_severity_scale()).
const filter::Keys& match_keys();

// The fields a record of watch's can have once the formats of the events
// it reads are known: every record's own (origin, event, cpu, pid, ...),
// each format's fields, common_pid (the record's pid: every tracepoint's
// format has it), and a machine check's decoding (severity, bank, status,
// ...) when `machine_checks` (mce:mce_record is read, or the kernel's logs
// are harvested). severity and kernel_severity ranked.
filter::Keys record_keys(std::span<const report::TraceEvent* const> formats, bool machine_checks);

// EINVAL, with the filter's located message listing `keys`, when the
// match `text` names a field that no record has: a match that could never
// be true is refused when watch starts, as top refuses its --filter.
Status check_match_fields(std::string_view text, const filter::Keys& keys, std::string_view what);

// `what` names the text's origin in an error: "--match", "trigger rule
// 'ue' match".
Result<filter::Expression> parse_match(std::string_view text, std::string_view what = "--match");

// A JSON value as an expression sees it: a string as text, a whole number
// as a number, a fraction or a bool as its text (json_scalar_text()), an
// array as the list of its scalar elements; nullopt for null and objects.
std::optional<filter::Value> json_value(const nlohmann::ordered_json& value);

// A record's object (record_json()'s, or any object record_field() can
// look into) as a filter::Record. The object must outlive it.
class JsonRecord final : public filter::Record {
 public:
  explicit JsonRecord(const nlohmann::ordered_json& record) : record_(record) {}
  std::optional<filter::Value> field(std::string_view key) const override;

 private:
  const nlohmann::ordered_json& record_;
};

// Whether `record` (an object as JsonRecord takes) matches.
bool record_matches(const filter::Expression& match, const nlohmann::ordered_json& record);

}  // namespace pp::watch

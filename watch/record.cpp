#include "watch/record.h"

#include <charconv>

#include "base/json.h"
#include "base/wall_time.h"
#include "report/trace_report.h"

namespace pp::watch {

std::string_view origin_name(Origin origin) {
  switch (origin) {
    case Origin::kLive:
      return "live";
    case Origin::kKmsg:
      return "kmsg";
    case Origin::kPstore:
      return "pstore";
    case Origin::kErst:
      return "erst";
    case Origin::kPreviousBoot:
      return "previous-boot";
  }
  return "live";
}

namespace {

// A JSON number, as JsonWriter::number() and signed_number() write it.
template <typename Integer>
void append_number(std::string& out, Integer value) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  (void)ec;
  out.append(buf, size_t(end - buf));
}

// record_json() with `fields` as its "fields".
nlohmann::ordered_json object_of(const WatchRecord& r, const nlohmann::ordered_json& fields) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["origin"] = std::string(origin_name(r.origin));
  if (!r.event.empty())
    j["event"] = r.event;
  j["tracepoint"] = r.tracepoint;
  if (r.time)
    j["time"] = r.time;
  if (r.wall_ns)
    j["wall_time"] = format_wall_time(r.wall_ns);
  if (r.cpu >= 0)
    j["cpu"] = r.cpu;
  if (r.pid >= 0 || r.origin == Origin::kLive) {
    j["pid"] = r.pid;
    j["tid"] = r.tid;
  }
  if (!r.comm.empty())
    j["comm"] = r.comm;
  j["fields"] = fields;
  if (r.mce)
    j["mce"] = nlohmann::ordered_json(mce::mce_json(*r.mce));
  if (r.ras)
    j["ras"] = mce::ras_json(*r.ras);
  j["key"] = r.key;
  return j;
}

}  // namespace

nlohmann::ordered_json record_json(const WatchRecord& r) {
  return object_of(r, r.fields);
}

const nlohmann::ordered_json& RecordJson::tree() const {
  if (!tree_) {
    if (event_)
      tree_ = object_of(record_, report::fields_json(*event_, raw_));
    else
      tree_ = record_json(record_);
  }
  return *tree_;
}

void append_decimal(std::string& out, uint64_t value) {
  append_number(out, value);
}

void append_stream_key_prefix(std::string& out, std::string_view boot_id, std::string_view event,
                              int32_t cpu) {
  out += "live:";
  out += boot_id;
  out += ':';
  out += event;
  out += ':';
  append_number(out, int64_t(cpu));
  out += ':';
}

void append_stream_key(std::string& out, std::string_view boot_id, std::string_view event,
                       int32_t cpu, uint64_t time, uint32_t ordinal) {
  append_stream_key_prefix(out, boot_id, event, cpu);
  append_number(out, time);
  if (ordinal) {
    out += ':';
    append_number(out, ordinal);
  }
}

// The object's keys are this file's literals, none of which JSON escapes:
// each is written with its quotes, colon and the comma before it as one
// piece (the writer's key() scanned each for bytes to escape, a fifth of
// --ndjson's CPU); the values go through the one escaper,
// append_json_string(). The layout is record_json()'s, key for key.
void append_record_head(std::string& out, Origin origin, std::string_view event,
                        std::string_view tracepoint, uint64_t time, uint64_t wall_ns, int32_t cpu) {
  out += R"({"origin":)";
  append_json_string(out, origin_name(origin));
  if (!event.empty()) {
    out += R"(,"event":)";
    append_json_string(out, event);
  }
  out += R"(,"tracepoint":)";
  append_json_string(out, tracepoint);
  if (time) {
    out += R"(,"time":)";
    append_number(out, time);
  }
  if (wall_ns) {
    out += R"(,"wall_time":")";  // the time's characters need no escape
    append_wall_time(out, wall_ns);
    out += '"';
  }
  if (cpu >= 0) {
    out += R"(,"cpu":)";
    append_number(out, int64_t(cpu));
  }
}

void append_record_tail(std::string& out, std::string_view key) {
  out += R"(,"key":)";
  append_json_string(out, key);
  out += '}';
}

void RecordJson::write_body(std::string& out) const {
  const WatchRecord& r = record_;
  if (r.pid >= 0 || r.origin == Origin::kLive) {
    out += R"(,"pid":)";
    append_number(out, int64_t(r.pid));
    out += R"(,"tid":)";
    append_number(out, int64_t(r.tid));
  }
  if (!r.comm.empty()) {
    out += R"(,"comm":)";
    append_json_string(out, r.comm);
  }
  out += R"(,"fields":)";
  report::append_fields_json(*event_, raw_, out);
}

void RecordJson::append_body(std::string& out) const {
  if (text_)
    out.append(*text_, body_begin_, body_end_ - body_begin_);
  else
    write_body(out);
}

const std::string& RecordJson::text() const {
  if (text_)
    return *text_;
  // Machine checks, the other RAS records and harvested records are rare:
  // their text is the tree's.
  if (!has_body()) {
    text_ = dump_json(tree());
    return *text_;
  }
  const WatchRecord& r = record_;
  std::string& out = text_.emplace();
  out.reserve(256 + raw_.size() * 4);
  append_record_head(out, r.origin, r.event, r.tracepoint, r.time, r.wall_ns, r.cpu);
  body_begin_ = out.size();
  write_body(out);
  body_end_ = out.size();
  append_record_tail(out, r.key);
  return out;
}

std::string json_scalar_text(const nlohmann::ordered_json& v) {
  if (v.is_string())
    return v.get<std::string>();
  if (v.is_boolean())
    return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned())
    return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer())
    return std::to_string(v.get<int64_t>());
  if (v.is_number_float())
    return dump_json(v);
  return "";
}

const nlohmann::ordered_json* record_field(const nlohmann::ordered_json& record,
                                           std::string_view name) {
  // Every tracepoint's format begins with common_pid, which the record
  // carries as its own "pid".
  if (name == "common_pid")
    name = "pid";
  std::string key(name);
  for (const char* part : {"mce", "ras", "fields"}) {
    auto it = record.find(part);
    if (it != record.end() && it->is_object()) {
      auto f = it->find(key);
      if (f != it->end())
        return &*f;
    }
  }
  auto f = record.find(key);
  if (f != record.end() && !f->is_object())
    return &*f;
  return nullptr;
}

}  // namespace pp::watch

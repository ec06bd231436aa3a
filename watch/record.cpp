#include "watch/record.h"

#include "base/json.h"
#include "base/wall_time.h"

namespace pp::watch {

std::string_view origin_name(Origin origin) {
  switch (origin) {
    case Origin::kLive:
      return "live";
    case Origin::kKmsg:
      return "kmsg";
    case Origin::kPstore:
      return "pstore";
  }
  return "live";
}

nlohmann::ordered_json record_json(const WatchRecord& r) {
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
  j["fields"] = r.fields;
  if (r.mce)
    j["mce"] = nlohmann::ordered_json(mce::mce_json(*r.mce));
  j["key"] = r.key;
  return j;
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
  std::string key(name);
  for (const char* part : {"mce", "fields"}) {
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

#include "persistent/event_json.h"

#include "base/cpu_list.h"

namespace pp::persistent {

json event_to_json(const EventInfo& e) {
  json j = json::object();
  j["id"] = e.id;
  j["name"] = e.name;
  j["event"] = e.event;
  j["backend"] = e.backend;
  j["state"] = e.state;
  if (!e.error.empty())
    j["error"] = e.error;
  j["cpus"] = e.cpus;
  j["pages"] = e.pages;
  j["page_size"] = e.page_size;
  j["buffer_bytes"] = e.buffer_bytes();
  j["layout"] = std::string(layout_name(e.layout));
  j["filter"] = e.filter;
  j["clock"] = e.clock().empty() ? json(nullptr) : json(e.clock());
  j["created"] = e.created;
  j["buffer_start"] = e.buffer_start;
  j["restarted"] = e.restarted();
  // When and why the buffers restarted: what samples were lost.
  if (e.restarted())
    j["buffers_lost"] = {{"time", e.buffer_start},
                         {"reason", e.lost_reason.empty() ? "broker restart" : e.lost_reason}};
  else
    j["buffers_lost"] = nullptr;
  if (e.backend == "broker") {
    j["origin"] = e.origin;
    j["optional"] = e.optional;
  }
  j["ring"] = e.ring;
  j["instance"] = e.instance.empty() ? json(nullptr) : json(e.instance);
  j["creator"] = {{"uid", e.creator_uid}, {"pid", e.creator_pid}};
  j["attr"] = json::array();
  for (uint64_t w : e.attr.words)
    j["attr"].push_back(hex_u64(w));
  j["role"] = e.is_context ? "context" : "event";
  j["context"] = e.context ? json(e.context) : json(nullptr);
  if (!e.cpu_ids.empty()) {
    j["cpu_ids"] = json::array();
    for (const CpuId& c : e.cpu_ids)
      j["cpu_ids"].push_back({{"cpu", c.cpu}, {"id", c.id}});
  }
  if (!e.perf_ids.empty()) {
    j["perf_ids"] = json::array();
    for (const CpuId& c : e.perf_ids)
      j["perf_ids"].push_back({{"cpu", c.cpu}, {"id", c.id}});
  }
  if (e.tamper_count) {
    j["tamper_count"] = e.tamper_count;
    j["tampered"] = json::array();
    for (const Tampering& t : e.tampered)
      j["tampered"].push_back(
          {{"time", t.time}, {"cpu", t.cpu}, {"what", t.what}, {"holders", t.holders}});
  }
  if (e.counts) {
    j["counts"] = json::array();
    for (const CpuCount& c : *e.counts)
      j["counts"].push_back({{"cpu", c.cpu}, {"count", c.count}});
    j["readers"] = e.readers ? json(*e.readers) : json(nullptr);
    if (e.kept)
      j["kept"] = *e.kept;
  }
  return j;
}

namespace {

Result<int> cpu_number(const json& v, std::string_view what) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxCpu)
    return errorf(EINVAL, "%.*s: a CPU number must be an integer from 0 to %d", int(what.size()),
                  what.data(), kMaxCpu - 1);
  return int(v.get<int64_t>());
}

}  // namespace

Result<EventInfo> event_from_json(const json& value, std::string_view what) {
  std::string where = std::string(what) + ", event";
  JsonFields f(value, where);
  EventInfo e;
  PP_ASSIGN_OR_RETURN(e.id, f.u64("id"));
  where += " " + std::to_string(e.id);
  JsonFields g(value, where);
  PP_ASSIGN_OR_RETURN(e.name, g.str("name"));
  PP_ASSIGN_OR_RETURN(e.event, g.str_or("event", ""));
  PP_ASSIGN_OR_RETURN(e.backend, g.str_or("backend", "broker"));
  PP_ASSIGN_OR_RETURN(e.state, g.str_or("state", "running"));
  PP_ASSIGN_OR_RETURN(e.error, g.str_or("error", ""));
  PP_ASSIGN_OR_RETURN(const json* cpus, g.array("cpus"));
  for (const json& c : *cpus) {
    PP_ASSIGN_OR_RETURN(int cpu, cpu_number(c, where));
    e.cpus.push_back(cpu);
  }
  PP_ASSIGN_OR_RETURN(e.pages, g.u64("pages"));
  PP_ASSIGN_OR_RETURN(e.page_size, g.u64_or("page_size", 0));
  PP_ASSIGN_OR_RETURN(std::string layout, g.str_or("layout", "backward"));
  if (layout == "backward")
    e.layout = Layout::kBackward;
  else if (layout == "forward")
    e.layout = Layout::kForward;
  else
    return errorf(EINVAL, "%s: \"layout\" must be \"backward\" or \"forward\"", where.c_str());
  PP_ASSIGN_OR_RETURN(e.filter, g.str_or("filter", ""));
  PP_ASSIGN_OR_RETURN(e.created, g.i64("created"));
  PP_ASSIGN_OR_RETURN(e.buffer_start, g.i64_or("buffer_start", e.created));
  if (g.has("creator")) {
    PP_ASSIGN_OR_RETURN(const json* creator, g.object("creator"));
    JsonFields c(*creator, where + ", creator");
    PP_ASSIGN_OR_RETURN(uint64_t uid, c.u64_or("uid", 0));
    PP_ASSIGN_OR_RETURN(int64_t pid, c.i64_or("pid", 0));
    e.creator_uid = uid_t(uid);
    e.creator_pid = pid_t(pid);
  }
  if (g.has("attr")) {
    PP_ASSIGN_OR_RETURN(const json* attr, g.array("attr"));
    if (attr->size() > sys::kAttrWords)
      return errorf(EINVAL, "%s: \"attr\" has %zu words; struct perf_event_attr has %u",
                    where.c_str(), attr->size(), sys::kAttrWords);
    for (size_t i = 0; i < attr->size(); i++) {
      std::optional<uint64_t> w = u64_from_hex_json((*attr)[i]);
      if (!w)
        return errorf(EINVAL, "%s: \"attr\" word %zu is not a u64 (\"0x...\")", where.c_str(), i);
      e.attr.words[i] = *w;
    }
  }
  PP_ASSIGN_OR_RETURN(std::string role, g.str_or("role", "event"));
  if (role != "event" && role != "context")
    return errorf(EINVAL, "%s: \"role\" must be \"event\" or \"context\"", where.c_str());
  e.is_context = role == "context";
  if (g.has("context") && !value.at("context").is_null()) {
    PP_ASSIGN_OR_RETURN(e.context, g.u64("context"));
  }
  for (auto [key, ids] : {std::pair{"cpu_ids", &e.cpu_ids}, std::pair{"perf_ids", &e.perf_ids}}) {
    if (!g.has(key))
      continue;
    PP_ASSIGN_OR_RETURN(const json* items, g.array(key));
    for (const json& item : *items) {
      JsonFields c(item, where + ", " + key);
      PP_ASSIGN_OR_RETURN(int64_t cpu, c.i64("cpu"));
      PP_ASSIGN_OR_RETURN(uint64_t id, c.u64("id"));
      if (cpu < 0 || cpu >= kMaxCpu)
        return errorf(EINVAL, "%s: %s has CPU %lld", where.c_str(), key, (long long)cpu);
      ids->push_back({int(cpu), id});
    }
  }
  PP_ASSIGN_OR_RETURN(e.origin, g.str_or("origin", kOriginCreate));
  if (e.origin != kOriginCreate && e.origin != kOriginConfig)
    return errorf(EINVAL, "%s: \"origin\" must be \"create\" or \"config\"", where.c_str());
  PP_ASSIGN_OR_RETURN(e.optional, g.boolean_or("optional", false));
  PP_ASSIGN_OR_RETURN(e.ring, g.str_or("ring", kRingPerf));
  if (e.ring != kRingPerf && e.ring != kRingFtrace)
    return errorf(EINVAL, "%s: \"ring\" must be \"perf\" or \"ftrace\"", where.c_str());
  if (g.has("instance") && !value.at("instance").is_null()) {
    PP_ASSIGN_OR_RETURN(e.instance, g.str("instance"));
  }
  if (g.has("buffers_lost") && !value.at("buffers_lost").is_null()) {
    PP_ASSIGN_OR_RETURN(const json* lost, g.object("buffers_lost"));
    PP_ASSIGN_OR_RETURN(e.lost_reason,
                        JsonFields(*lost, where + ", buffers_lost").str_or("reason", ""));
  }
  if (g.has("tampered")) {
    PP_ASSIGN_OR_RETURN(e.tamper_count, g.u64_or("tamper_count", 0));
    PP_ASSIGN_OR_RETURN(const json* tampered, g.array("tampered"));
    for (const json& item : *tampered) {
      JsonFields t(item, where + ", tampered");
      Tampering entry;
      PP_ASSIGN_OR_RETURN(entry.time, t.i64("time"));
      PP_ASSIGN_OR_RETURN(int64_t cpu, t.i64("cpu"));
      if (cpu < 0 || cpu >= kMaxCpu)
        return errorf(EINVAL, "%s: tampered has CPU %lld", where.c_str(), (long long)cpu);
      entry.cpu = int(cpu);
      PP_ASSIGN_OR_RETURN(entry.what, t.str("what"));
      PP_ASSIGN_OR_RETURN(entry.holders, t.str_or("holders", ""));
      e.tampered.push_back(std::move(entry));
    }
    e.tamper_count = std::max<uint64_t>(e.tamper_count, e.tampered.size());
  }
  if (g.has("counts")) {
    PP_ASSIGN_OR_RETURN(const json* counts, g.array("counts"));
    e.counts.emplace();
    for (const json& item : *counts) {
      JsonFields c(item, where + ", counts");
      PP_ASSIGN_OR_RETURN(int64_t cpu, c.i64("cpu"));
      PP_ASSIGN_OR_RETURN(uint64_t count, c.u64("count"));
      if (cpu < 0 || cpu >= kMaxCpu)
        return errorf(EINVAL, "%s: counts has CPU %lld", where.c_str(), (long long)cpu);
      e.counts->push_back({int(cpu), count});
    }
    if (g.has("readers") && !value.at("readers").is_null()) {
      PP_ASSIGN_OR_RETURN(uint64_t readers, g.u64("readers"));
      e.readers = int(std::min<uint64_t>(readers, INT32_MAX));
    }
    if (g.has("kept")) {
      PP_ASSIGN_OR_RETURN(bool kept, g.boolean("kept"));
      e.kept = kept;
    }
  }
  return e;
}

}  // namespace pp::persistent

// The broker's config file at start and at reload (persistent/broker.h):
// which config events to kill, create, re-create or leave, and the failed
// events tried again.
#include <unistd.h>

#include <algorithm>
#include <set>

#include "base/cpu_list.h"
#include "broker/broker.h"
#include "persistent/event_json.h"
#include "persistent/tracking.h"

namespace pp::broker {
namespace {

// Whether `saved` is what `wanted` asks for: the same event string, filter,
// pages and CPUs ("" asks for every online CPU, which it has).
bool same_definition(const persistent::EventInfo& saved, const persistent::CreateRequest& wanted) {
  if (saved.event != wanted.event || saved.filter != wanted.filter ||
      saved.ring != wanted.backend ||
      saved.pages != (wanted.pages ? wanted.pages : persistent::kDefaultPages))
    return false;
  if (wanted.cpus.empty())
    return true;
  auto cpus = parse_cpu_list(wanted.cpus);
  return cpus.ok() && *cpus == saved.cpus;
}

void add_names(json& j, const char* key, const std::vector<std::string>& names) {
  j[key] = names;
}

}  // namespace

json Broker::ReloadReport::to_json() const {
  json j = json::object();
  add_names(j, "created", created);
  add_names(j, "killed", killed);
  add_names(j, "recreated", recreated);
  add_names(j, "retried", retried);
  add_names(j, "unchanged", unchanged);
  add_names(j, "left_alone", left_alone);
  j["failed"] = json::array();
  for (const auto& [name, why] : failed)
    j["failed"].push_back({{"name", name}, {"error", why}});
  j["unavailable"] = json::array();
  for (const auto& [name, why] : unavailable)
    j["unavailable"].push_back({{"name", name}, {"error", why}});
  return j;
}

std::string Broker::ReloadReport::summary() const {
  std::string out;
  auto part = [&](size_t n, const char* what) {
    if (n)
      out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  part(created.size(), "created");
  part(killed.size(), "killed");
  part(recreated.size(), "re-created (changed)");
  part(retried.size(), "created after failing before");
  part(failed.size(), "failed");
  part(unavailable.size(), "unavailable (optional)");
  part(left_alone.size(), "left alone (made by create)");
  part(unchanged.size(), "unchanged");
  return out;
}

Result<std::vector<ConfigEvent>> Broker::read_config() const {
  const std::string& path = config_.config_file;
  if (path.empty())
    return std::vector<ConfigEvent>{};
  auto text = read_config_file(path);
  if (!text.ok()) {
    if (text.error().code() == ENOENT && !config_.config_required)
      return std::vector<ConfigEvent>{};
    return Error(ErrorKind::kConfig, text.error().code(),
                 "cannot read the config file: " + text.error().message());
  }
  return parse_config(*text, path);
}

void Broker::add_failed(const ConfigEvent& wanted, const Error& why) {
  size_t held = size_t(std::count_if(events_.begin(), events_.end(),
                                     [](const auto& e) { return !e.second.info.is_context; }));
  if (held >= config_.max_events || next_id_ == 0 || next_id_ > persistent::kMaxEventId) {
    log("config event '" + wanted.request.name + "' failed (" + why.message() +
        ") and the registry is full: not listed");
    return;
  }
  LiveEvent event;
  persistent::EventInfo& info = event.info;
  info.id = next_id_++;
  info.name = wanted.request.name;
  info.event = wanted.request.event;
  info.backend = "broker";
  info.pages = wanted.request.pages ? wanted.request.pages : persistent::kDefaultPages;
  info.filter = wanted.request.filter;
  info.ring = wanted.request.backend;
  if (auto cpus = parse_cpu_list(wanted.request.cpus); cpus.ok())
    info.cpus = *cpus;
  info.origin = persistent::kOriginConfig;
  info.optional = wanted.optional;
  info.state = unmade_state(wanted.optional, why);
  info.error = why.message();
  info.created = info.buffer_start = now();
  info.creator_uid = ::geteuid();
  info.creator_pid = ::getpid();
  if (Status s = dir_.publish_event(info.name, info.id); !s.ok())
    log("cannot publish '" + info.name + "': " + s.error().message());
  log("config event " + std::to_string(info.id) + " '" + info.name + "' (" + info.event +
      ") could not be created: " + info.error + "; listed as " + info.state +
      ", tried again at every reload");
  event.json = dump_json(persistent::event_to_json(info));
  events_.emplace(info.id, std::move(event));
}

Status Broker::retry(LiveEvent& event) {
  persistent::EventInfo& info = event.info;
  bool never_ran = info.perf_ids.empty();
  Status opened = ok_status();
  if (info.is_context) {
    opened = open_context(event);
  } else if (info.ring == persistent::kRingFtrace) {
    auto plan = persistent::plan_recreate(info, create_context());
    opened = plan.ok() ? open_ftrace(event, *plan, true) : Status(plan.error());
  } else {
    auto plan = persistent::plan_recreate(info, create_context());
    opened = plan.ok() ? open_buffers(event, *plan, nullptr) : Status(plan.error());
  }
  if (opened.ok() && !info.is_context &&
      (info.origin == persistent::kOriginConfig || info.context != 0) &&
      !events_.count(info.context) && persistent::wants_context(info.attr)) {
    sys::PeerCredentials self{::getpid(), ::geteuid(), ::getegid()};
    auto context = context_for(info.attr, self);
    if (context.ok())
      info.context = *context;
    else
      opened = context.error();
  }
  if (!opened.ok()) {
    event.buffers.clear();
    info.state = unmade_state(info.optional, opened.error());
    info.error = opened.error().message();
    event.json = dump_json(persistent::event_to_json(info));
    return opened;
  }
  info.state = "running";
  info.error.clear();
  if (never_ran) {
    info.created = info.buffer_start;
    info.lost_reason.clear();
  } else {
    info.lost_reason = "created again at a reload: it had failed";
  }
  store_fds(event);
  event.json = dump_json(persistent::event_to_json(info));
  log("event " + std::to_string(info.id) + " '" + info.name + "' works now: created on CPUs " +
      format_cpu_list(info.cpus));
  return ok_status();
}

Result<Broker::ReloadReport> Broker::apply_config(const std::vector<ConfigEvent>& wanted,
                                                  bool retry_failed) {
  ReloadReport report;
  sys::PeerCredentials self{::getpid(), ::geteuid(), ::getegid()};
  std::set<std::string> wanted_names, touched;
  for (const ConfigEvent& w : wanted)
    wanted_names.insert(w.request.name);
  auto by_name = [&](const std::string& name) -> LiveEvent* {
    for (auto& [id, event] : events_)
      if (!event.info.is_context && event.info.name == name)
        return &event;
    return nullptr;
  };
  // Config events the file no longer has.
  std::vector<std::pair<uint64_t, std::string>> gone;
  for (const auto& [id, event] : events_)
    if (!event.info.is_context && event.info.origin == persistent::kOriginConfig &&
        !wanted_names.count(event.info.name))
      gone.emplace_back(id, event.info.name);
  for (const auto& [id, name] : gone) {
    still_busy();
    auto killed = kill_event(std::to_string(id));
    if (!killed.ok())
      return killed.error().with_context("killing '" + name + "', gone from the config file");
    log("killed event " + std::to_string(id) + " '" + name + "': it is gone from " +
        config_.config_file);
    report.killed.push_back(name);
  }
  for (const ConfigEvent& w : wanted) {
    still_busy();
    const std::string& name = w.request.name;
    touched.insert(name);
    bool changed = false;
    if (LiveEvent* existing = by_name(name)) {
      persistent::EventInfo& info = existing->info;
      if (info.origin != persistent::kOriginConfig) {
        report.left_alone.push_back(name);
        continue;
      }
      if (same_definition(info, w.request)) {
        if (info.optional != w.optional) {
          info.optional = w.optional;
          if (info.state != "running")
            info.state = w.optional ? "unavailable" : "failed";
          existing->json = dump_json(persistent::event_to_json(info));
        }
        if (info.state == "running") {
          report.unchanged.push_back(name);
        } else if (Status again = retry(*existing); again.ok()) {
          report.retried.push_back(name);
        } else {
          (info.state == "unavailable" ? report.unavailable : report.failed)
              .emplace_back(name, again.error().message());
        }
        continue;
      }
      uint64_t old_id = info.id;
      auto killed = kill_event(std::to_string(old_id));
      if (!killed.ok())
        return killed.error().with_context("killing '" + name + "' to create it as changed");
      log("killed event " + std::to_string(old_id) + " '" + name + "': its definition in " +
          config_.config_file + " changed; creating it again under a new id");
      changed = true;
    }
    auto created = create_event(w.request, self, nullptr, &w);
    if (created.ok()) {
      (changed ? report.recreated : report.created).push_back(name);
      continue;
    }
    add_failed(w, created.error());
    (unmade_state(w.optional, created.error()) == "unavailable" ? report.unavailable
                                                                : report.failed)
        .emplace_back(name, created.error().message());
  }
  // Failed events that `create` made are tried again as well.
  for (auto& [id, event] : events_) {
    if (!retry_failed || event.info.is_context || touched.count(event.info.name) ||
        event.info.state == "running")
      continue;
    still_busy();
    if (Status again = retry(event); again.ok())
      report.retried.push_back(event.info.name);
    else
      (event.info.state == "unavailable" ? report.unavailable : report.failed)
          .emplace_back(event.info.name, again.error().message());
  }
  hold_ras_gate();
  PP_RETURN_IF_ERROR(save());
  return report;
}

Result<Broker::ReloadReport> Broker::reload() {
  notify("RELOADING=1\nSTATUS=reloading " + config_.config_file);
  auto wanted = read_config();
  if (!wanted.ok()) {
    log("reload: " + wanted.error().message() + "; nothing was changed");
    notify("READY=1\nSTATUS=serving " + std::to_string(event_count()) +
           " event(s); the last reload failed: " + wanted.error().message());
    return wanted.error();
  }
  auto report = apply_config(*wanted, true);
  std::string status = report.ok() ? report->summary() : report.error().message();
  log("reloaded " + config_.config_file + ": " + (status.empty() ? "no config events" : status));
  notify("READY=1\nSTATUS=serving " + std::to_string(event_count()) +
         " event(s); reloaded: " + status);
  return report;
}

Result<Broker::Answer> Broker::handle_reload(Client& /*client*/,
                                             const persistent::Request& /*request*/) {
  PP_RETURN_IF_ERROR(check_not_frozen("reload"));
  PP_ASSIGN_OR_RETURN(ReloadReport report, reload());
  return Answer{.body = {{"reload", report.to_json()}, {"config_file", config_.config_file}}};
}

}  // namespace pp::broker

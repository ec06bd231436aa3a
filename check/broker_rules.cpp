// The rules that ask who holds the events and how they fare: the broker
// (running, enabled, under systemd), each event's state, tampering, lost
// buffers, and whether any event holds mce:mce_record. check/checker.h lists
// every group.
#include <linux/perf_event.h>

#include <algorithm>

#include "base/strings.h"
#include "check/checker.h"
#include "mce/ras_events.h"

namespace pp::check {

namespace {

constexpr const char* kUnit = "perf-persistent.service";

}  // namespace

// The broker's pid from its lock file, when a process with that pid runs
// a daemon.
void Checker::broker() {
  if (persistent::kernel_has_persistent_pmu(sysfs_)) {
    kernel_backend_ = true;
    std::string path = sysfs_.path("bus/event_source/devices/persistent");
    add("broker-not-running", CheckStatus::kOk,
        "the kernel holds persistent events itself: no broker is needed", path);
    add("broker-not-enabled", CheckStatus::kOk, "not needed: the kernel holds the events", path);
    add("broker-not-under-systemd", CheckStatus::kOk, "not needed: the kernel holds the events",
        path);
    return;
  }
  std::string lock = run_dir_.lock();
  auto text = sys::Tree(run_dir_.root()).read("broker.lock");
  if (text.ok()) {
    auto pid = parse_u64(trim(*text), lock);
    if (pid.ok() && *pid > 0 && *pid < (1u << 22)) {
      std::string dir = std::to_string(*pid);
      auto cmdline = proc_.read(dir + "/cmdline");
      if (cmdline.ok() && cmdline->find(std::string("daemon") + '\0') != std::string::npos)
        broker_pid_ = pid_t(*pid);
    }
  }
  if (broker_pid_ > 0)
    add("broker-not-running", CheckStatus::kOk,
        "the broker runs as pid " + std::to_string(broker_pid_), lock);
  else
    add("broker-not-running", CheckStatus::kCritical,
        "no broker runs for " + run_dir_.root() + " (" +
            (text.ok() ? "the pid in its lock file is no running broker"
                       : "no lock file: " + text.error().message()) +
            "): no event is held",
        lock,
        "start it: 'systemctl start perf-persistent', or 'perf persistent daemon --run-dir " +
            run_dir_.root() + "'");
  enabled();
  under_systemd();
}

void Checker::enabled() {
  std::string dir = "systemd/system";
  if (!systemd_booted_) {
    add("broker-not-enabled", CheckStatus::kOk,
        "not applicable: systemd does not run this host (no " + run_.path("systemd/system") +
            "); the init system must start 'perf persistent daemon' at boot, which check "
            "cannot see",
        run_.path("systemd/system"));
    return;
  }
  auto entries = etc_.list(dir);
  if (entries.ok())
    for (const std::string& e : *entries) {
      std::string link = dir;
      link.append("/").append(e).append("/").append(kUnit);
      if (e.size() > 6 && e.substr(e.size() - 6) == ".wants" && etc_.exists(link)) {
        add("broker-not-enabled", CheckStatus::kOk, std::string(kUnit) + " is enabled",
            etc_.path(link));
        return;
      }
    }
  add("broker-not-enabled", CheckStatus::kWarning,
      std::string(kUnit) +
          " is not enabled: no broker starts at boot, and machine checks "
          "before someone starts one are missed",
      etc_.path(dir + "/*.wants/" + kUnit),
      std::string("enable it: 'systemctl enable ") + kUnit +
          "' (without systemd: start 'perf persistent daemon' from the init system)");
}

void Checker::under_systemd() {
  if (broker_pid_ <= 0) {
    add("broker-not-under-systemd", CheckStatus::kOk,
        "not applicable: no broker runs (see broker-not-running)", run_dir_.lock());
    return;
  }
  std::string path = std::to_string(broker_pid_) + "/cgroup";
  if (!systemd_booted_) {
    add("broker-not-under-systemd", CheckStatus::kOk,
        "not applicable: systemd does not run this host (no " + run_.path("systemd/system") +
            "); the broker (pid " + std::to_string(broker_pid_) +
            ") is restarted only if the init system does it",
        run_.path("systemd/system"));
    return;
  }
  auto text = proc_.read(path);
  if (!text.ok()) {
    add("broker-not-under-systemd", CheckStatus::kUnknown,
        "cannot read the broker's cgroup: " + text.error().message(), proc_.path(path),
        "run check as root");
    return;
  }
  std::string group;
  for (std::string_view line : split(*text, '\n')) {
    // "0::/system.slice/perf-persistent.service" (cgroup v2), or the
    // "name=systemd" hierarchy of v1.
    size_t colon = line.rfind(':');
    if (colon == std::string_view::npos)
      continue;
    std::string_view g = line.substr(colon + 1);
    if (starts_with(line, "0::") || line.find(":name=systemd:") != std::string_view::npos)
      if (group.empty() || g.size() > group.size())
        group = std::string(g);
  }
  if (group.size() > 8 && group.substr(group.size() - 8) == ".service")
    add("broker-not-under-systemd", CheckStatus::kOk,
        "the broker runs in the service cgroup " + group, proc_.path(path));
  else
    add("broker-not-under-systemd", CheckStatus::kWarning,
        "the broker (pid " + std::to_string(broker_pid_) + ") runs in cgroup '" + group +
            "', not as a systemd service: nothing restarts it when it dies",
        proc_.path(path),
        std::string("stop it ('kill ") + std::to_string(broker_pid_) + "') and run it as " + kUnit +
            ": 'systemctl start perf-persistent'");
}

void Checker::events() {
  std::string source = kernel_backend_ ? "the kernel's persistent PMU (list -v)"
                                       : "the broker's list -v reply (" + run_dir_.socket() + ")";
  if (!in_.backend) {
    add("event-failed", CheckStatus::kUnknown, "no backend to ask for the events", source);
    add("event-tampered", CheckStatus::kUnknown, "no backend to ask for the events", source);
    add("buffers-lost", CheckStatus::kUnknown, "no backend to ask for the events", source);
  } else {
    std::string note;
    auto listed = in_.backend->list(true, &note);
    if (!listed.ok() && listed.error().kind() == ErrorKind::kBrokerDown) {
      // broker-not-running says it; its saved events are down, held by nobody.
      listed_ = true;
      events_ = in_.backend->down_events();
      failed(source);
      tampered(source);
      buffers_lost(source);
    } else if (!listed.ok()) {
      add("event-failed", CheckStatus::kUnknown,
          "cannot list the events: " + listed.error().message(), source,
          "run check as root (or as the broker's user)");
      add("event-tampered", CheckStatus::kUnknown,
          "cannot list the events: " + listed.error().message(), source,
          "run check as root (or as the broker's user)");
      add("buffers-lost", CheckStatus::kUnknown,
          "cannot list the events: " + listed.error().message(), source,
          "run check as root (or as the broker's user)");
    } else {
      listed_ = true;
      events_ = std::move(*listed);
      failed(source);
      tampered(source);
      buffers_lost(source);
    }
  }
  for (const persistent::EventInfo& e : events_)
    if (!e.is_context)
      report_.events++;
  no_mce_event(source);
  ras_event_unkept(source);
}

std::string Checker::label(const persistent::EventInfo& e) {
  std::string s = "event " + std::to_string(e.id);
  if (!e.name.empty())
    s += " '" + e.name + "'";
  if (!e.event.empty() && e.event != e.name)
    s += " (" + e.event + ")";
  return s;
}

void Checker::failed(const std::string& source) {
  size_t bad = 0, held = 0;
  for (const persistent::EventInfo& e : events_) {
    held += !e.is_context;
    if (e.state == "down") {
      bad++;
      add("event-failed", CheckStatus::kCritical,
          label(e) + " is down: " + e.error + "; nothing records it", source,
          "start the broker: 'systemctl start perf-persistent', or 'perf persistent daemon'");
    } else if (e.state == "failed") {
      bad++;
      add("event-failed", CheckStatus::kWarning,
          label(e) + " failed: " + (e.error.empty() ? "no reason given" : e.error), source,
          "fix the cause, then create it again: 'perf persistent kill " + std::to_string(e.id) +
              "' and 'perf persistent create -e " + (e.event.empty() ? "EVENT" : e.event) + "'");
    }
  }
  if (bad == 0)
    add("event-failed", CheckStatus::kOk, std::to_string(held) + " event(s), none failed", source);
}

void Checker::tampered(const std::string& source) {
  size_t bad = 0;
  for (const persistent::EventInfo& e : events_)
    if (e.tamper_count > 0) {
      bad++;
      std::string last;
      if (!e.tampered.empty()) {
        const persistent::Tampering& t = e.tampered.back();
        last = "; the last on CPU " + std::to_string(t.cpu) + ": " + t.what;
        if (!t.holders.empty())
          last += ", held by " + t.holders;
      }
      add("event-tampered", CheckStatus::kWarning,
          label(e) + " was changed behind the broker's back " + std::to_string(e.tamper_count) +
              " time(s)" + last + ": its buffer may have gaps",
          source,
          "find who holds its fds ('perf persistent list -v' shows readers) and stop them; "
          "see TRUST MODEL in perf-persistent-daemon(1)");
    }
  if (bad == 0)
    add("event-tampered", CheckStatus::kOk, "no event was tampered with", source);
}

// Buffers that restarted (a broker restart that kept the events but not
// their samples, or re-created them) within kBuffersLostWindowSeconds.
void Checker::buffers_lost(const std::string& source) {
  size_t bad = 0;
  for (const persistent::EventInfo& e : events_) {
    if (e.is_context || e.state != "running" || !e.restarted() || e.created <= 0)
      continue;
    int64_t ago = in_.now > 0 ? in_.now - e.buffer_start : 0;
    if (ago >= kBuffersLostWindowSeconds)
      continue;
    bad++;
    add("buffers-lost", CheckStatus::kWarning,
        label(e) + " lost the samples its buffers held before " + std::to_string(ago) + " s ago (" +
            (e.lost_reason.empty() ? "broker restart" : e.lost_reason) + ")",
        source,
        "run the broker under systemd with the keeper (perf-persistent-keeper.service), and "
        "upgrade with 'perf persistent daemon --replace'; see RESTARTS in "
        "perf-persistent-daemon(1)");
  }
  if (bad == 0)
    add("buffers-lost", CheckStatus::kOk,
        "no event lost its buffers in the last " +
            std::to_string(kBuffersLostWindowSeconds / 3600) + " h",
        source);
}

void Checker::no_mce_event(const std::string& source) {
  if (!mce_id_) {
    add("no-mce-event", CheckStatus::kOk,
        "not applicable: no mce:mce_record tracepoint (see mce-tracepoint-absent)",
        tracefs_.path("events/mce/mce_record/id"));
    return;
  }
  for (const persistent::EventInfo& e : events_)
    if (e.state == "running" &&
        ((e.attr.attr.type == PERF_TYPE_TRACEPOINT && e.attr.attr.config == *mce_id_) ||
         e.event == "mce:mce_record")) {
      add("no-mce-event", CheckStatus::kOk, label(e) + " holds mce:mce_record", source);
      return;
    }
  if (!listed_ && in_.backend) {
    add("no-mce-event", CheckStatus::kUnknown,
        "cannot tell whether an event holds mce:mce_record: the events could not be listed", source,
        "run check as root");
    return;
  }
  add("no-mce-event", CheckStatus::kCritical,
      "no persistent event holds mce:mce_record: machine checks are not recorded", source,
      "create one: 'perf persistent create -e mce:mce_record' (or add it to the broker's "
      "config)");
}

}  // namespace pp::check

namespace pp::check {

// The RAS tracepoints other than mce_record (no-mce-event's) that this
// kernel has (tracefs events/<system>/<name>/id) and no running event
// keeps: their errors are lost while nothing reads them.
void Checker::ras_event_unkept(const std::string& source) {
  std::string where = tracefs_.path("events/ras");
  if (!tracefs_mounted_) {
    add("ras-event-unkept", CheckStatus::kUnknown,
        "cannot tell which RAS tracepoints exist: tracefs is not mounted", where,
        "mount tracefs (see tracefs-not-mounted)");
    return;
  }
  std::vector<std::string> present, unkept;
  for (std::string_view tp : mce::ras_tracepoints()) {
    if (tp == "mce:mce_record")
      continue;
    size_t colon = tp.find(':');
    std::string dir =
        "events/" + std::string(tp.substr(0, colon)) + "/" + std::string(tp.substr(colon + 1));
    auto id_text = tracefs_.read(dir + "/id");
    if (!id_text.ok())
      continue;
    present.emplace_back(tp);
    auto id = parse_u64(trim(*id_text), dir);
    bool kept = std::any_of(events_.begin(), events_.end(), [&](const persistent::EventInfo& e) {
      return e.state == "running" &&
             (e.event == tp ||
              (id.ok() && e.attr.attr.type == PERF_TYPE_TRACEPOINT && e.attr.attr.config == *id));
    });
    if (!kept)
      unkept.emplace_back(tp);
  }
  if (present.empty()) {
    add("ras-event-unkept", CheckStatus::kOk,
        "not applicable: this kernel has no RAS tracepoint besides mce:mce_record", where);
    return;
  }
  if (!listed_ && in_.backend) {
    add("ras-event-unkept", CheckStatus::kUnknown,
        "cannot tell whether events keep the RAS tracepoints: the events could not be listed",
        source, "run check as root");
    return;
  }
  if (unkept.empty()) {
    add("ras-event-unkept", CheckStatus::kOk,
        "every RAS tracepoint this kernel has is kept (" + join(present, ", ") + ")", source);
    return;
  }
  add("ras-event-unkept", CheckStatus::kWarning,
      "this kernel has " + std::to_string(unkept.size()) + " RAS tracepoint" +
          (unkept.size() == 1 ? "" : "s") + " that no persistent event keeps: " +
          join(unkept, ", ") + "; errors they report are not recorded",
      source,
      "keep each in the broker's config (the packaged /etc/perf-persistent.conf lists them, "
      "each optional), or 'perf persistent create -e " +
          unkept.front() + "'");
}

}  // namespace pp::check

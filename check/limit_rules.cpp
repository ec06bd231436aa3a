// The rules that ask what the kernel lets the holder keep:
// perf_event_paranoid against the broker's capabilities, locked memory,
// open files, and buffers that wrap before an hour of history.
// check/checker.h lists every group.
#include <linux/perf_event.h>

#include <cstdlib>

#include "base/cpu_list.h"
#include "base/strings.h"
#include "check/checker.h"

namespace pp::check {

void Checker::broker_status() {
  if (status_read_ || broker_pid_ <= 0)
    return;
  status_read_ = true;
  auto status = sys::read_process_status(proc_, broker_pid_);
  if (status.ok())
    broker_status_ = *status;
}

void Checker::paranoid() {
  std::string path = proc_.path("sys/kernel/perf_event_paranoid");
  auto text = proc_.read("sys/kernel/perf_event_paranoid");
  if (!text.ok()) {
    add("perf-event-paranoid", CheckStatus::kUnknown,
        "cannot read perf_event_paranoid: " + text.error().message(), path);
    return;
  }
  std::string value = first_line(*text);
  broker_status();
  if (!broker_status_) {
    add("perf-event-paranoid", CheckStatus::kOk,
        "perf_event_paranoid is " + value +
            "; it matters only to a broker without CAP_PERFMON or CAP_SYS_ADMIN",
        path);
    return;
  }
  // Debian's and Android's level 3 asks for CAP_SYS_ADMIN itself:
  // CAP_PERFMON alone opens nothing there.
  long level = std::strtol(value.c_str(), nullptr, 10);
  if (broker_status_->perfmon_capable() &&
      !sys::perf_capable_at(broker_status_->cap_effective, level)) {
    add("perf-event-paranoid", CheckStatus::kCritical,
        "perf_event_paranoid is " + value +
            ": this kernel lets only CAP_SYS_ADMIN open perf "
            "events, and the broker (pid " +
            std::to_string(broker_pid_) +
            ") has CAP_PERFMON without it: every event it creates is refused",
        path,
        "give the broker CAP_SYS_ADMIN (its unit: CapabilityBoundingSet=CAP_PERFMON "
        "CAP_SYS_ADMIN), or set 'sysctl kernel.perf_event_paranoid=2'");
    return;
  }
  if (broker_status_->perfmon_capable() || value == "-1") {
    add("perf-event-paranoid", CheckStatus::kOk,
        "perf_event_paranoid is " + value + ", and the broker " +
            (broker_status_->perfmon_capable() ? "has CAP_PERFMON or CAP_SYS_ADMIN"
                                               : "needs no capability at -1"),
        path);
    return;
  }
  add("perf-event-paranoid", CheckStatus::kWarning,
      "perf_event_paranoid is " + value + " and the broker (pid " + std::to_string(broker_pid_) +
          ") has neither CAP_PERFMON nor CAP_SYS_ADMIN: the kernel refuses its system-wide "
          "events and raw tracepoint data",
      path,
      "run the broker as root or with CAP_PERFMON (as the unit does), or set "
      "'sysctl kernel.perf_event_paranoid=-1'");
}

// The limit the kernel puts on locked ring-buffer memory: perf_event_mlock_kb
// per online CPU for each user, then the process's RLIMIT_MEMLOCK; none for a
// process with CAP_IPC_LOCK.
void Checker::mlock() {
  std::string path = proc_.path("sys/kernel/perf_event_mlock_kb");
  auto text = proc_.read("sys/kernel/perf_event_mlock_kb");
  if (!text.ok()) {
    add("mlock-limit", CheckStatus::kUnknown,
        "cannot read perf_event_mlock_kb: " + text.error().message(), path);
    return;
  }
  auto kb = parse_u64(trim(*text), path);
  if (!kb.ok()) {
    add("mlock-limit", CheckStatus::kUnknown, kb.error().message(), path);
    return;
  }
  uint64_t used = 0;
  for (const persistent::EventInfo& e : events_)
    used += (e.pages + 1) * e.page_size * e.cpus.size();
  broker_status();
  constexpr int kCapIpcLock = 14;
  if (kernel_backend_ || !broker_status_ || broker_status_->has_capability(kCapIpcLock)) {
    add("mlock-limit", CheckStatus::kOk,
        "perf_event_mlock_kb is " + std::to_string(*kb) + "; " +
            (kernel_backend_   ? std::string("the kernel holds the buffers")
             : !broker_status_ ? std::string("no broker to limit")
                               : "the broker has CAP_IPC_LOCK, so no limit applies to its " +
                                     std::to_string(used) + " bytes of buffers"),
        path);
    return;
  }
  uint64_t cpus = 1;
  if (auto online = sysfs_.read("devices/system/cpu/online"); online.ok())
    if (auto list = parse_cpu_list(*online); list.ok())
      cpus = list->size();
  uint64_t limit = *kb * 1024 * cpus + memlock_limit();
  if (used * 100 >= limit * kLimitWarnPercent)
    add("mlock-limit", CheckStatus::kWarning,
        "the buffers lock " + std::to_string(used) + " of the " + std::to_string(limit) +
            " bytes the broker may lock (perf_event_mlock_kb " + std::to_string(*kb) +
            " per CPU, plus its RLIMIT_MEMLOCK): the next event or a larger -m is refused",
        path,
        "raise 'sysctl kernel.perf_event_mlock_kb', or give the broker CAP_IPC_LOCK (as the "
        "unit does)");
  else
    add("mlock-limit", CheckStatus::kOk,
        "the buffers lock " + std::to_string(used) + " of " + std::to_string(limit) + " bytes",
        path);
}

// The soft "Max locked memory" or "Max open files" of the broker's limits.
std::optional<uint64_t> Checker::limit_of(std::string_view name) {
  auto text = proc_.read(std::to_string(broker_pid_) + "/limits");
  if (!text.ok())
    return std::nullopt;
  for (std::string_view line : split(*text, '\n')) {
    if (!starts_with(line, name))
      continue;
    std::string_view rest = trim(line.substr(name.size()));
    std::string_view soft = rest.substr(0, rest.find(' '));
    if (soft == "unlimited")
      return UINT64_MAX / 4;
    auto v = parse_u64(soft, "a limit");
    if (v.ok())
      return *v;
  }
  return std::nullopt;
}

uint64_t Checker::memlock_limit() {
  return limit_of("Max locked memory").value_or(0);
}

void Checker::fds() {
  if (kernel_backend_ || broker_pid_ <= 0) {
    add("fd-limit", CheckStatus::kOk,
        kernel_backend_ ? "the kernel holds the events: no fd is held for them"
                        : "not applicable: no broker runs",
        proc_.root());
    return;
  }
  std::string limits = proc_.path(std::to_string(broker_pid_) + "/limits");
  auto soft = limit_of("Max open files");
  auto open = proc_.list(std::to_string(broker_pid_) + "/fd");
  if (!soft || !open.ok()) {
    add("fd-limit", CheckStatus::kUnknown, "cannot read the broker's open files or its limit",
        limits, "run check as root");
    return;
  }
  uint64_t used = open->size();
  if (used * 100 >= *soft * kLimitWarnPercent)
    add("fd-limit", CheckStatus::kWarning,
        "the broker holds " + std::to_string(used) + " fds of its limit of " +
            std::to_string(*soft) + ": the next event (one fd per CPU) or reader is refused",
        limits, "raise its limit (LimitNOFILE= in the unit, or 'ulimit -n' before it starts)");
  else
    add("fd-limit", CheckStatus::kOk,
        "the broker holds " + std::to_string(used) + " fds of its limit of " +
            std::to_string(*soft),
        limits);
}

void Checker::losing() {
  std::string source = "the counts of list -v";
  if (!listed_) {
    add("events-losing", CheckStatus::kUnknown, "no counts: the events could not be listed",
        source);
    return;
  }
  size_t bad = 0, recorders = 0;
  for (const persistent::EventInfo& e : events_) {
    if (e.is_context || e.state == "failed" || !e.counts || e.page_size == 0)
      continue;
    int64_t elapsed = in_.now - e.buffer_start;
    if (elapsed <= 0)
      continue;
    uint64_t raw = 0;
    if (e.attr.attr.type == PERF_TYPE_TRACEPOINT && e.event.find(':') != std::string::npos) {
      std::string tp = e.event.substr(0, e.event.find_first_of("/ "));
      tp[tp.find(':')] = '/';
      if (auto format = tracefs_.read("events/" + tp + "/format"); format.ok())
        raw = tracepoint_raw_bytes(*format);
    }
    uint64_t capacity = e.buffer_bytes() / estimated_sample_bytes(e.attr, raw);
    for (const persistent::CpuCount& c : *e.counts) {
      if (c.count <= capacity || capacity == 0)
        continue;
      // It has wrapped: how much time its capacity covers at this rate.
      uint64_t history = uint64_t(double(capacity) * double(elapsed) / double(c.count));
      if (int64_t(history) >= kMinHistorySeconds)
        continue;
      // A flight recorder (any event but the RAS tracepoints) overwrites
      // its oldest records by design: the buffer keeps the last stretch
      // before whatever someone will look at. That is a note.
      bool ras = starts_with(e.event, "mce:") || starts_with(e.event, "ras:") ||
                 (e.event.empty() && e.name == "mce_record");
      if (!ras) {
        recorders++;
        add("events-losing", CheckStatus::kOk,
            label(e) + " is a flight recorder: on CPU " + std::to_string(c.cpu) +
                " its buffer keeps about " + seconds_text(history) +
                " of records at this rate, and overwrites older ones by design",
            source);
        break;
      }
      bad++;
      add("events-losing", CheckStatus::kWarning,
          label(e) + " on CPU " + std::to_string(c.cpu) + ": " + std::to_string(c.count) +
              " records in " + seconds_text(uint64_t(elapsed)) + ", and its buffer holds about " +
              std::to_string(capacity) + ", " + seconds_text(history) +
              " of history at this rate: older records are overwritten before anyone reads "
              "them",
          source,
          "create it again with a larger buffer (-m, now " + std::to_string(e.pages) +
              " pages) or a filter, or record it more often (its buffer keeps " +
              seconds_text(history) + ")");
      break;  // one finding per event
    }
  }
  if (bad == 0 && report_.events == 0)
    add("events-losing", CheckStatus::kOk, "no event to measure", source);
  else if (bad == 0 && recorders == 0)
    add("events-losing", CheckStatus::kOk,
        "every buffer holds at least " + seconds_text(kMinHistorySeconds) +
            " of records at the rate it sees",
        source);
}

}  // namespace pp::check

// The broker's side of the ftrace backend (broker/ftrace_event.h): making
// or taking over an event's instance, draining every instance into its
// shared rings, checking its settings, and handing a shared ring to a
// reader.
#include <linux/perf_event.h>

#include <algorithm>

#include "base/cpu_list.h"
#include "broker/broker.h"
#include "persistent/event_json.h"
#include "sys/clock.h"

namespace pp::broker {
namespace {

Result<FtraceSpec> ftrace_spec(const persistent::EventInfo& info,
                               const persistent::CreatePlan& plan) {
  const perf_event_attr& a = plan.attr.attr;
  if (plan.tracepoint.empty() || a.type != PERF_TYPE_TRACEPOINT)
    return errorf(ErrorKind::kUsage, EINVAL,
                  "'%s' is no tracepoint: the ftrace backend holds tracepoint events only (an "
                  "ftrace instance records tracepoints, not PMU or software events); create it "
                  "without --backend ftrace",
                  plan.event.c_str());
  if (a.freq || a.sample_period != 1)
    return errorf(ErrorKind::kUsage, EINVAL,
                  "'%s' asks for a sampling period or frequency: an ftrace instance records "
                  "every hit of a tracepoint; leave the period out, or create it without "
                  "--backend ftrace",
                  plan.event.c_str());
  FtraceSpec spec;
  spec.instance = kInstancePrefix + info.name;
  spec.tracepoint = plan.tracepoint;
  spec.tracepoint_id = a.config;
  spec.cpus = plan.cpus;
  spec.buffer_kb = std::max<uint64_t>(1, plan.pages * sys::page_size() / 1024);
  spec.filter = plan.filter;
  spec.clockid = a.use_clockid ? a.clockid : sys::kDefaultClockId;
  spec.event_id = info.id;
  return spec;
}

}  // namespace

Status Broker::open_ftrace(LiveEvent& event, const persistent::CreatePlan& plan, bool adopt) {
  persistent::EventInfo& info = event.info;
  PP_ASSIGN_OR_RETURN(FtraceSpec spec, ftrace_spec(info, plan));
  std::unique_ptr<FtraceEvent> made;
  bool took_over = false;
  if (adopt) {
    std::vector<std::string> changed;
    auto adopted = FtraceEvent::adopt(tracefs_, spec, &changed);
    if (adopted.ok()) {
      made = std::move(*adopted);
      took_over = true;
      for (const std::string& what : changed)
        record_tampering(event, 0, "while no broker ran: " + what);
    } else if (adopted.error().kind() != ErrorKind::kNotFound) {
      return adopted.error().with_context("taking over ftrace instance " + spec.instance);
    }
  }
  if (!made) {
    auto created = FtraceEvent::create(tracefs_, spec);
    if (!created.ok()) {
      if (created.error().kind() == ErrorKind::kNameTaken)
        return Error(ErrorKind::kNameTaken, EEXIST,
                     created.error().message() +
                         ", and the broker's registry has no event that made it: another tool "
                         "made it, or a broker whose registry is gone; remove it (rmdir " +
                         tracefs_.path("instances/" + spec.instance) +
                         ") or choose another --name");
      return created.error();
    }
    made = std::move(*created);
  }
  info.ring = persistent::kRingFtrace;
  info.instance = spec.instance;
  info.attr = made->attr();
  info.layout = persistent::Layout::kBackward;
  info.cpus = spec.cpus;
  info.pages = plan.pages;
  info.page_size = sys::page_size();
  if (!took_over) {
    if (adopt)
      info.lost_reason =
          "broker restart: ftrace instance " + spec.instance + " was gone, so it was made again";
    info.buffer_start = now();
  }
  event.ftrace = std::move(made);
  return ok_status();
}

int64_t Broker::next_ftrace_ms() const {
  bool any = std::any_of(events_.begin(), events_.end(),
                         [](const auto& entry) { return bool(entry.second.ftrace); });
  if (!any)
    return -1;
  return std::min(next_ftrace_drain_ms_, next_ftrace_check_ms_);
}

void Broker::serve_ftrace(int64_t now_ms, const std::vector<uint64_t>& woken) {
  bool all = now_ms >= next_ftrace_drain_ms_;
  bool check = now_ms >= next_ftrace_check_ms_;
  for (auto& [id, event] : events_) {
    if (!event.ftrace || event.info.state != "running")
      continue;
    // Drained only while someone reads it (and at each open): unread, the
    // instance is the flight recorder by itself, overwriting its oldest
    // page, and the traced tasks pay a bare instance's cost; drained, each
    // page taken from a CPU's ring costs its writer (perf-persistent-create(1),
    // FTRACE BACKEND).
    if ((all || std::find(woken.begin(), woken.end(), id) != woken.end()) && readers_of(id) > 0) {
      auto drained = event.ftrace->drain();
      if (!drained.ok())
        log_.write("ftrace " + event.info.instance, "draining event " + std::to_string(id) + " '" +
                                                        event.info.name +
                                                        "': " + drained.error().message());
      else if (drained->foreign)
        log_.write("ftrace " + event.info.instance, std::to_string(drained->foreign) +
                                                        " records of other tracepoints in " +
                                                        event.info.instance + " were dropped");
    }
    if (check)
      for (const std::string& what : event.ftrace->check())
        record_tampering(event, 0, what);
  }
  if (all)
    next_ftrace_drain_ms_ = now_ms + config_.ftrace_drain_ms;
  if (check)
    next_ftrace_check_ms_ = now_ms + config_.ftrace_check_ms;
}

Result<Broker::Answer> Broker::open_shared_ring(Client& client, LiveEvent& event,
                                                const persistent::Request& request) {
  const sys::SharedRing* ring = event.ftrace->ring(request.cpu);
  if (!ring)
    return errorf(ErrorKind::kNotFound, ENOENT,
                  "persistent event %llu '%s' has no buffer on CPU %d (its CPUs: %s)",
                  (unsigned long long)event.info.id, event.info.name.c_str(), request.cpu,
                  format_cpu_list(event.info.cpus).c_str());
  if (client.opened.empty() && !request.keep && !client.keeper)
    PP_RETURN_IF_ERROR(admit_reader(client));
  // What the instance holds now is in the ring before the reader looks.
  if (auto drained = event.ftrace->drain(request.cpu); !drained.ok())
    log_.write("ftrace " + event.info.instance, "draining event " + std::to_string(event.info.id) +
                                                    " on CPU " + std::to_string(request.cpu) +
                                                    ": " + drained.error().message());
  PP_ASSIGN_OR_RETURN(sys::Fd copy, ring->reader_fd());
  // The hangup pipe only to a client that asks for it: a client before it
  // takes exactly one descriptor.
  sys::Fd hangup;
  if (request.hangup) {
    PP_ASSIGN_OR_RETURN(hangup, event.ftrace->hangup_fd());
  }
  client.opened.insert(event.info.id);
  Answer answer{.body = {{"id", event.info.id},
                         {"cpu", request.cpu},
                         {"mmap_bytes", ring->mmap_bytes()},
                         {"layout", std::string(persistent::layout_name(event.info.layout))},
                         {"sample_id", event.ftrace->sample_id(request.cpu)},
                         {"pollable", false}}};
  answer.fds.push_back(std::move(copy));
  if (hangup) {
    answer.body["hangup"] = true;
    answer.fds.push_back(std::move(hangup));
  }
  return answer;
}

}  // namespace pp::broker

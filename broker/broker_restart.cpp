// The broker across restarts (persistent/broker.h, top): what it hands to
// systemd's fd store, what it takes back at start, and the handover to the
// broker that replaces it (daemon --replace, Documentation/protocol.txt).
#include <sys/mman.h>

#include <algorithm>
#include <set>

#include "broker/broker.h"
#include "persistent/event_json.h"
#include "sys/clock.h"
#include "sys/ring.h"

namespace pp::broker {

void Broker::read_perf_ids(LiveEvent& event) {
  event.info.perf_ids.clear();
  for (const persistent::CpuBuffer& buffer : event.buffers) {
    auto id = sys::event_id(*config_.kernel, buffer.fd.get());
    if (id.ok())
      event.info.perf_ids.push_back({buffer.cpu, *id});
  }
}

void Broker::store_fds(const LiveEvent& event) {
  if (!notifying())
    return;
  for (const persistent::CpuBuffer& buffer : event.buffers)
    if (Status s =
            config_.systemd->store_fd(event_fd_name(event.info.id, buffer.cpu), buffer.fd.get());
        !s.ok())
      log_.write("systemd", "cannot store event " + std::to_string(event.info.id) +
                                "'s fd in systemd's fd store: " + s.error().message() +
                                "; a restart creates it again");
}

void Broker::remove_stored_fds(const LiveEvent& event) {
  if (!notifying())
    return;
  for (const persistent::CpuBuffer& buffer : event.buffers)
    (void)config_.systemd->remove_fds(event_fd_name(event.info.id, buffer.cpu));
}

Result<Broker::Adoption> Broker::adopt(LiveEvent& event) {
  persistent::EventInfo& info = event.info;
  if (inherited_.size() == 0 || info.cpus.empty() || info.perf_ids.size() != info.cpus.size())
    return Adoption::kNone;
  struct Taken {
    std::string name;
    int cpu = 0;
    sys::Fd fd;
    bool from_store = false;
  };
  std::vector<Taken> taken;
  std::set<std::string> from_store_names, stale_names;
  for (int cpu : info.cpus) {
    auto saved = std::find_if(info.perf_ids.begin(), info.perf_ids.end(),
                              [&](const persistent::CpuId& c) { return c.cpu == cpu; });
    if (saved == info.perf_ids.end())
      return Adoption::kNone;
    uint64_t want = saved->id;
    Taken t{.name = event_fd_name(info.id, cpu), .cpu = cpu, .fd = {}, .from_store = false};
    t.fd = inherited_.take(
        t.name,
        [&](int fd) {
          auto id = sys::event_id(*config_.kernel, fd);
          return id.ok() && *id == want;
        },
        &t.from_store);
    if (t.from_store)
      from_store_names.insert(t.name);
    // Anything else under this name is stale: an older event's fd, or a
    // second copy. FDSTOREREMOVE drops every fd of a name, so the one
    // adopted is stored again afterwards.
    for (bool extra_from_store = false;;) {
      sys::Fd extra = inherited_.take(t.name, {}, &extra_from_store);
      if (!extra.valid())
        break;
      stale_names.insert(t.name);
      if (extra_from_store)
        from_store_names.insert(t.name);
    }
    taken.push_back(std::move(t));
  }
  auto forget = [&](const std::string& why) {
    for (const std::string& name : from_store_names)
      if (notifying())
        (void)config_.systemd->remove_fds(name);
    return why;
  };
  if (std::any_of(taken.begin(), taken.end(), [](const Taken& t) { return !t.fd.valid(); })) {
    bool any = std::any_of(taken.begin(), taken.end(), [](const Taken& t) { return t.fd.valid(); });
    if (any || !stale_names.empty())
      log(forget("event " + std::to_string(info.id) + " '" + info.name +
                 "': not every CPU's fd came back as this event; its fds are dropped"));
    return Adoption::kNone;
  }
  size_t length = (1 + info.pages) * sys::page_size();
  std::vector<persistent::CpuBuffer> buffers;
  bool samples_kept = true;
  for (Taken& t : taken) {
    auto mapping = config_.kernel->mmap(t.fd.get(), length, PROT_READ);
    if (!mapping.ok()) {
      forget("");
      return mapping.error().with_context("mapping the buffer of CPU " + std::to_string(t.cpu) +
                                          " again");
    }
    // A buffer the kernel made anew (nobody kept it mapped) starts with
    // data_head 0; one that survived has moved, unless nothing ever fired.
    uint64_t head =
        sys::load_data_head(reinterpret_cast<const perf_event_mmap_page*>(mapping->data()));
    if (head == 0) {
      auto reading = sys::read_event(*config_.kernel, t.fd.get(), info.attr.attr.read_format);
      if (info.is_context || !reading.ok() || reading->value > 0)
        samples_kept = false;
    }
    buffers.push_back({t.cpu, std::move(t.fd), std::move(*mapping)});
  }
  event.buffers = std::move(buffers);
  event.broker_filter = !info.is_context && !guarded_filter(info.attr, info.filter).empty();
  event.guard.assign(event.buffers.size(), GuardState{});
  event.guard_schedule = {};
  info.page_size = sys::page_size();
  if (!samples_kept) {
    info.buffer_start = now();
    info.lost_reason =
        "broker restart: the event came back with its fds, but nothing kept its buffers mapped "
        "meanwhile (no keeper, no reader)";
  }
  // The broker before this one may have handed these fds out: guarded from
  // the start (context streams are not guarded, as when first opened).
  for (size_t i = 0; i < event.buffers.size() && !info.is_context; i++)
    guard_from_now(event, i);
  if (notifying()) {
    for (const std::string& name : stale_names)
      (void)config_.systemd->remove_fds(name);
    for (const persistent::CpuBuffer& buffer : event.buffers) {
      std::string name = event_fd_name(info.id, buffer.cpu);
      bool in_store = from_store_names.count(name) && !stale_names.count(name);
      if (!in_store)
        (void)config_.systemd->store_fd(name, buffer.fd.get());
    }
  }
  return samples_kept ? Adoption::kWithSamples : Adoption::kEventOnly;
}

void Broker::drop_leftovers() {
  std::set<std::string> names;
  size_t n = 0;
  for (InheritedFds::Leftover& left : inherited_.take_rest()) {
    n++;
    if (left.from_store)
      names.insert(left.name);
  }
  for (const std::string& name : names)
    if (notifying())
      (void)config_.systemd->remove_fds(name);
  if (n)
    log("closed " + std::to_string(n) +
        " handed-back descriptor(s) of events that are gone or were not taken back" +
        (names.empty() ? "" : " and removed them from systemd's fd store"));
}

Status Broker::check_not_frozen(std::string_view what) const {
  if (!handover_client_)
    return ok_status();
  return errorf(EAGAIN,
                "the broker is handing its events over to a new broker (daemon --replace); the "
                "%.*s was not carried out: try again in a moment, when the new broker serves",
                int(what.size()), what.data());
}

Result<Broker::Answer> Broker::handle_handover(Client& client, const persistent::Request& request) {
  if (handover_client_ && handover_client_ != &client)
    return Error(EBUSY, "another broker is taking over already");
  if (handover_done_)
    return Error(EBUSY, "this broker has handed over already");
  // systemd would restart a main process that exits, and that broker would
  // find the run directory taken: under systemd, systemd restarts it.
  if (notifying())
    return Error(EPERM,
                 "this broker runs under systemd, which would start another one when it exits: "
                 "restart it with 'systemctl restart perf-persistent' instead (the fd store and "
                 "the keeper keep its events and samples)");
  if (!handover_client_) {
    // From now on the registry is frozen and nothing new is accepted: the
    // new broker takes exactly what state.json says.
    handover_client_ = &client;
    handover_fds_.clear();
    handover_sizes_.clear();
    size_t events = 0;
    for (const auto& [id, event] : events_) {
      events += !event.buffers.empty();
      for (const persistent::CpuBuffer& buffer : event.buffers) {
        PP_ASSIGN_OR_RETURN(sys::Fd copy, sys::duplicate(buffer.fd.get()));
        handover_fds_.emplace_back(event_fd_name(id, buffer.cpu), std::move(copy));
        handover_sizes_.push_back(buffer.mapping.size());
      }
    }
    PP_ASSIGN_OR_RETURN(sys::Fd listener, sys::duplicate(listener_.fd()));
    handover_fds_.emplace_back(kListenerFdName, std::move(listener));
    handover_sizes_.push_back(0);
    log("handing " + std::to_string(events) + " event(s) and context stream(s) (" +
        std::to_string(handover_fds_.size()) + " descriptors with the socket) over to " +
        describe_peer(client.request_senders.empty() ? client.peer
                                                     : client.request_senders.back().creds));
  }
  if (request.after > handover_fds_.size())
    return usage_error("the handover has " + std::to_string(handover_fds_.size()) +
                       " descriptors; 'after' " + std::to_string(request.after) + " is past them");
  size_t from = request.after;
  size_t n = std::min(sys::kMaxFdsPerMessage, handover_fds_.size() - from);
  Answer answer;
  answer.body["fds"] = json::array();
  for (size_t i = from; i < from + n; i++) {
    answer.body["fds"].push_back(
        {{"name", handover_fds_[i].first}, {"mmap_bytes", handover_sizes_[i]}});
    PP_ASSIGN_OR_RETURN(sys::Fd copy, sys::duplicate(handover_fds_[i].second.get()));
    answer.fds.push_back(std::move(copy));
  }
  answer.body["more"] = from + n < handover_fds_.size();
  answer.body["state"] = dir_.state();
  return answer;
}

Result<Broker::Answer> Broker::handle_handover_done(Client& client,
                                                    const persistent::Request& /*request*/) {
  if (handover_client_ != &client)
    return usage_error("no handover is under way on this connection");
  handover_done_ = true;
  handover_fds_.clear();
  // The lock goes now, so the new broker takes it while this one sends its
  // last replies and exits.
  lock_.reset();
  log("handed over to " + describe_peer(client.peer) + "; exiting, the new broker serves " +
      dir_.socket());
  return Answer{.body = {{"pid", ::getpid()}}};
}

}  // namespace pp::broker

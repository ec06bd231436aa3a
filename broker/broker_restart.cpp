// The broker across restarts (persistent/broker.h, top): what it hands to
// systemd's fd store, what it takes back at start, and the handover to the
// broker that replaces it (daemon --replace, Documentation/protocol.txt).
#include <sys/mman.h>

#include <algorithm>
#include <set>

#include "broker/broker.h"
#include "persistent/event_json.h"
#include "sys/clock.h"
#include "sys/process.h"
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
  // the start, context streams too.
  for (size_t i = 0; i < event.buffers.size(); i++)
    guard_from_now(
        event, i, {.who = "a reader of the broker before this one (restarted: unknown)", .pid = 0});
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

Status Broker::check_successor(const Client& client, const std::string& token) const {
  // Only what could be the broker itself may take its events and its socket
  // over: a process of the broker's uid (root), running the broker's
  // program, that read the token in the run directory (mode 0600, in a
  // directory only the broker's uid may enter).
  auto refuse = [&](const sys::PeerCredentials& who, const std::string& why) {
    log_from(who, "refused a handover to " + describe_peer(who) + ": " + why);
    return errorf(EACCES,
                  "%s may not take this broker over: only a new broker (perf persistent daemon "
                  "--replace, run as the broker's user) may (%s)",
                  describe_peer(who).c_str(), why.c_str());
  };
  if (client.request_senders.empty())
    return refuse(client.peer, "the request came with no sender credentials");
  auto own = sys::executable_path(proc_, ::getpid());
  for (const Sender& sender : client.request_senders) {
    const sys::PeerCredentials& who = sender.creds;
    if (who.uid != ::geteuid())
      return refuse(who, "it runs as uid " + std::to_string(who.uid) + ", the broker as uid " +
                             std::to_string(::geteuid()));
    auto program = sys::executable_path(proc_, who.pid);
    if (!own.ok() || !program.ok())
      return refuse(who, "cannot tell which program it runs: " +
                             (own.ok() ? program.error() : own.error()).message());
    if (*program != *own)
      return refuse(who, "it runs " + *program + ", not " + *own);
  }
  // Compared in constant time: the token is a secret.
  unsigned char differ = token.size() != handover_token_.size();
  for (size_t i = 0; i < token.size() && i < handover_token_.size(); i++)
    differ |= static_cast<unsigned char>(token[i] ^ handover_token_[i]);
  if (handover_token_.empty() || differ)
    return refuse(client.request_senders.back().creds,
                  "its token is not the one in " + dir_.handover_token());
  return ok_status();
}

bool Broker::abandon_handover(const std::string& why) {
  handover_client_ = nullptr;
  handover_fds_.clear();
  if (!handover_done_) {
    log("the handover was abandoned (" + why + "); serving on");
    return true;
  }
  // The lock was released for the new broker: take it back, unless the new
  // broker holds it (then it serves, on a socket of its own).
  auto lock = sys::LockFile::acquire(dir_.lock());
  if (!lock.ok()) {
    log("the handover was abandoned (" + why + ") after this broker released its lock, which " +
        lock.error().message() + "; exiting, the new broker serves");
    handover_complete_ = true;
    return false;
  }
  lock_.emplace(std::move(*lock));
  handover_done_ = false;
  log("the handover was abandoned (" + why + "); the lock is taken back, serving on");
  return true;
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
  PP_RETURN_IF_ERROR(check_successor(client, request.token));
  if (!handover_client_) {
    // From now on the registry is frozen and nothing new is accepted: the
    // new broker takes exactly what state.json says. The listening socket is
    // not among the fds: it goes only to the lock's next holder.
    handover_client_ = &client;
    handover_deadline_ms_ = sys::monotonic_ms() + config_.handover_timeout_ms;
    handover_fds_.clear();
    size_t events = 0;
    for (auto& [id, event] : events_) {
      events += !event.buffers.empty();
      for (size_t i = 0; i < event.buffers.size(); i++) {
        const persistent::CpuBuffer& buffer = event.buffers[i];
        handover_fds_.push_back(
            {event_fd_name(id, buffer.cpu), buffer.fd.get(), buffer.mapping.size()});
        // Out of the broker now, whatever becomes of the handover.
        guard_from_now(event, i, holder_of(client, "a new broker, daemon --replace"));
      }
    }
    log("handing " + std::to_string(events) + " event(s) and context stream(s) (" +
        std::to_string(handover_fds_.size()) + " descriptors) over to " +
        describe_peer(client.request_senders.back().creds));
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
        {{"name", handover_fds_[i].name}, {"mmap_bytes", handover_fds_[i].mmap_bytes}});
    PP_ASSIGN_OR_RETURN(sys::Fd copy, sys::duplicate(handover_fds_[i].fd));
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
  if (handover_done_)
    return usage_error("the handover is done already; ask for the listening socket");
  handover_done_ = true;
  handover_fds_.clear();
  // The lock goes now, so the new broker takes it; the listening socket
  // follows when it asks as the lock's holder (handover-listener).
  lock_.reset();
  log("released the lock to " + describe_peer(client.peer) +
      ", which takes the socket over once it holds it");
  return Answer{.body = {{"pid", ::getpid()}}};
}

Result<Broker::Answer> Broker::handle_handover_listener(Client& client,
                                                        const persistent::Request& /*request*/) {
  if (handover_client_ != &client || !handover_done_)
    return usage_error("no handover is done on this connection");
  // The socket goes to the lock's new holder alone.
  auto holder = sys::LockFile::holder(dir_.lock());
  const sys::PeerCredentials& who =
      client.request_senders.empty() ? client.peer : client.request_senders.back().creds;
  if (!holder.ok() || *holder != who.pid)
    return errorf(EACCES,
                  "%s asked for the listening socket, but does not hold %s (%s): it goes to the "
                  "new broker once it holds the lock",
                  describe_peer(who).c_str(), dir_.lock().c_str(),
                  holder.ok() ? ("pid " + std::to_string(*holder) + " does").c_str()
                              : holder.error().message().c_str());
  PP_ASSIGN_OR_RETURN(sys::Fd listener, sys::duplicate(listener_.fd()));
  handover_complete_ = true;
  log("handed over to " + describe_peer(who) + "; exiting, the new broker serves " + dir_.socket());
  Answer answer{.body = {{"pid", ::getpid()}}};
  answer.fds.push_back(std::move(listener));
  return answer;
}

}  // namespace pp::broker

// The broker's core: start, the loop, the protocol's handlers and the guard.
// Restarts (adoption of handed-back fds, the fd store, the handover) are in
// broker_restart.cpp and the config file and reload in broker_config.cpp;
// this file is long because the loop and its handlers share every member.
#include "broker/broker.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <tuple>

#include "base/cpu_list.h"
#include "broker/config_file.h"
#include "persistent/backend.h"
#include "persistent/event_json.h"
#include "persistent/event_open.h"
#include "persistent/limits.h"
#include "persistent/names.h"
#include "persistent/tracking.h"
#include "sys/atomic_file.h"
#include "sys/clock.h"
#include "sys/explain.h"
#include "sys/process.h"
#include "sys/ras_daemon.h"
#include "sys/tree.h"

namespace pp::broker {

std::string unmade_state(bool optional, const Error& why) {
  bool absent = why.code() == ENOENT || why.code() == ENODEV || why.code() == EOPNOTSUPP;
  return optional && absent ? "unavailable" : "failed";
}

namespace {

BrokerLogOptions log_options(const BrokerConfig& config) {
  BrokerLogOptions options = config.log_limits;
  options.out = config.log;
  return options;
}

}  // namespace

Broker::Broker(BrokerConfig config)
    : config_(std::move(config)),
      dir_(config_.run_dir),
      sysfs_(config_.sysfs_root),
      proc_(config_.proc_root),
      tracefs_(config_.tracefs_root.empty() ? sys::default_tracefs_root() : config_.tracefs_root),
      log_(log_options(config_)) {}

Broker::~Broker() {
  notify("STOPPING=1\nSTATUS=stopping");
  clients_.clear();
  events_.clear();
  // The listening socket lives on in systemd's fd store, or in the broker
  // that took over: its file stays for them.
  if (listener_stored_ || handover_done_)
    listener_.keep_path();  // the lock, and so the socket's path, is the new broker's
  if (lock_ && !handover_done_) {
    if (Status s = dir_.unpublish_all(); !s.ok())
      log("cannot remove the published events: " + s.error().message());
  }
}

void Broker::still_busy() {
  if (!notifying())
    return;
  int64_t now = sys::monotonic_ms();
  if (now < next_busy_notify_ms_)
    return;
  std::string state = "EXTEND_TIMEOUT_USEC=" + std::to_string(kBusyExtendUsec);
  int64_t every = config_.busy_notify_ms;
  if (watchdog_interval_ms_ > 0) {
    state += "\nWATCHDOG=1";
    every = std::min(every, watchdog_interval_ms_);
    next_watchdog_ms_ = now + watchdog_interval_ms_;
  }
  notify(state);
  next_busy_notify_ms_ = now + every;
}

void Broker::notify(const std::string& state) const {
  if (!notifying())
    return;
  if (Status s = config_.systemd->notify(state); !s.ok())
    log_.write("systemd", "cannot notify systemd: " + s.error().message());
}

sys::ExplainEnv Broker::explain_env() const {
  return {.proc_root = config_.proc_root,
          .sysfs_root = config_.sysfs_root,
          .service = notifying() ? persistent::kBrokerUnit : ""};
}

int64_t Broker::now() const {
  return config_.clock ? config_.clock() : int64_t(::time(nullptr));
}

void Broker::log(const std::string& line) const {
  log_.write_always(line);
}

void Broker::log_from(const sys::PeerCredentials& peer, const std::string& line) const {
  log_.write("uid " + std::to_string(peer.uid), line);
}

Result<std::unique_ptr<Broker>> Broker::start(BrokerConfig config) {
  if (!config.kernel || !config.resolver)
    return internal_error("a broker needs a kernel and an event resolver");
  std::unique_ptr<Broker> broker(new Broker(std::move(config)));
  const persistent::RunDir& dir = broker->dir_;
  PP_RETURN_IF_ERROR(dir.prepare());
  auto lock = sys::LockFile::acquire(dir.lock());
  // A predecessor that handed over exits at once: its lock goes with it.
  for (int waited = 0;
       !lock.ok() && lock.error().code() == EBUSY && waited < broker->config_.lock_wait_ms;
       waited += 10) {
    ::usleep(10000);
    lock = sys::LockFile::acquire(dir.lock());
  }
  if (!lock.ok()) {
    if (lock.error().code() == EBUSY)
      return Error(EBUSY, lock.error().message() + ": a broker already serves " + dir.root());
    return lock.error();
  }
  broker->lock_.emplace(std::move(*lock));
  PP_RETURN_IF_ERROR(dir.remove_temporaries());  // a killed broker's half-written files
  // The listening socket of the broker this one replaces: handed over only
  // now that the lock is this broker's.
  if (broker->config_.take_listener) {
    auto listener = broker->config_.take_listener();
    if (listener.ok()) {
      std::vector<sys::NamedFd> named;
      named.push_back({kListenerFdName, std::move(*listener)});
      broker->inherited_.add(std::move(named), false);
    } else {
      broker->log("the broker replaced did not hand its listening socket over (" +
                  listener.error().message() + "); listening anew");
    }
  }
  // What a broker that replaces this one must show (daemon --replace).
  PP_ASSIGN_OR_RETURN(broker->handover_token_, sys::random_hex(16));
  PP_RETURN_IF_ERROR(
      sys::write_file_atomically(dir.handover_token(), broker->handover_token_ + "\n", 0600));
  // What systemd's fd store gives back, and what a predecessor handed over.
  if (broker->notifying()) {
    auto stored = broker->config_.systemd->take_listen_fds();
    if (stored.ok())
      broker->inherited_.add(std::move(*stored), true);
    else
      broker->log("cannot take the fds systemd kept: " + stored.error().message() +
                  "; the events are created again");
  }
  if (broker->config_.handed_over) {
    broker->inherited_.add(std::move(*broker->config_.handed_over), false);
    broker->config_.handed_over->clear();
    broker->config_.handed_over = nullptr;
  }
  int64_t watchdog_usec =
      broker->notifying() ? int64_t(broker->config_.systemd->watchdog_usec()) : 0;
  broker->watchdog_interval_ms_ =
      watchdog_usec > 0 ? std::max<int64_t>(1, watchdog_usec / 2000) : 0;
  broker->notify("STATUS=restoring the registry");
  // A fresh publication: whatever a dead broker left in events/ goes.
  PP_RETURN_IF_ERROR(dir.publish_pmu());
  PP_RETURN_IF_ERROR(broker->restore());
  PP_RETURN_IF_ERROR(broker->save());
  // The listening socket the store kept or the predecessor handed over:
  // connections made meanwhile wait in its backlog and are served now.
  bool from_store = false;
  sys::Fd kept_listener = broker->inherited_.take(kListenerFdName, {}, &from_store);
  if (kept_listener.valid() && ::access(dir.socket().c_str(), F_OK) == 0) {
    auto adopted = sys::UnixListener::adopt(std::move(kept_listener), dir.socket());
    if (adopted.ok())
      broker->listener_ = std::move(*adopted);
    else
      broker->log(adopted.error().message() + "; listening anew");
  }
  if (broker->listener_.fd() < 0) {
    from_store = false;
    // The lock is ours, so a socket already there is a dead broker's.
    PP_RETURN_IF_ERROR(sys::remove_file_durably(dir.socket()));
    PP_ASSIGN_OR_RETURN(broker->listener_, sys::UnixListener::listen(dir.socket(), 0666));
  }
  broker->drop_leftovers();
  // Before the first connection: a request sent before accept() carries its
  // sender too.
  PP_RETURN_IF_ERROR(broker->listener_.pass_credentials());
  broker->spare_fd_.take();
  if (broker->notifying()) {
    Status stored =
        from_store ? ok_status()
                   : broker->config_.systemd->store_fd(kListenerFdName, broker->listener_.fd());
    if (stored.ok())
      broker->listener_stored_ = true;
    else
      broker->log("cannot store the socket in systemd's fd store: " + stored.error().message());
  }
  broker->notify("READY=1\nSTATUS=serving " + std::to_string(broker->event_count()) +
                 " event(s); " + broker->start_summary_);
  broker->next_watchdog_ms_ = sys::monotonic_ms();
  return broker;
}

Status Broker::restore() {
  auto loaded = persistent::load_state(dir_);
  if (!loaded.ok()) {
    return Error(loaded.error().code(), "cannot restore the registry: " + loaded.error().message() +
                                            "; move " + dir_.state() +
                                            " away to start with an empty one");
  }
  persistent::RegistryState state = std::move(*loaded);
  next_id_ = state.next_id;
  size_t restored = 0, failed = 0, adopted = 0, samples_kept = 0;
  for (persistent::EventInfo& info : state.events) {
    still_busy();
    LiveEvent event;
    event.info = std::move(info);
    event.info.backend = "broker";
    // An event that failed before it ever ran has no samples to lose.
    bool never_ran = event.info.state != "running" && event.info.perf_ids.empty();
    event.info.state = "running";
    event.info.error.clear();
    Status opened = ok_status();
    auto took = adopt(event);
    if (!took.ok())
      log("could not take back the fds of event " + std::to_string(event.info.id) + " '" +
          event.info.name + "': " + took.error().message() + "; creating it again");
    bool adopted_now = took.ok() && *took != Adoption::kNone;
    if (event.info.ring == persistent::kRingFtrace) {
      // The instance outlives the broker: taken over with what it holds
      // (nobody consumed it meanwhile), or made anew when it is gone.
      int64_t started = event.info.buffer_start;
      auto plan = persistent::plan_recreate(event.info, create_context());
      opened = plan.ok() ? open_ftrace(event, *plan, true) : Status(plan.error());
      if (opened.ok() && event.info.buffer_start == started) {  // taken over
        adopted++;
        samples_kept++;
      }
      adopted_now = true;  // neither re-created as a perf event nor stored
    } else if (adopted_now) {
      adopted += !event.info.is_context;
      samples_kept += !event.info.is_context && *took == Adoption::kWithSamples;
    } else if (event.info.is_context) {
      opened = open_context(event);
    } else {
      auto plan = persistent::plan_recreate(event.info, create_context());
      opened = plan.ok() ? open_buffers(event, *plan, nullptr) : Status(plan.error());
    }
    if (opened.ok() && !adopted_now) {
      event.info.lost_reason =
          "broker restart: its fds did not come back (no fd store, no --replace) or were not "
          "this event any more, so it was created again";
      if (never_ran) {
        event.info.created = event.info.buffer_start;
        event.info.lost_reason.clear();
      }
      store_fds(event);
    }
    if (!event.info.is_context)
      restored++;  // the start summary says so, once for all
    if (!opened.ok()) {
      failed += !event.info.is_context;
      event.info.state = unmade_state(event.info.optional, opened.error());
      event.info.error = opened.error().message();
      log("could not re-create event " + std::to_string(event.info.id) + " '" + event.info.name +
          "': " + event.info.error + "; it stays listed as " + event.info.state +
          " and is tried again at every reload");
    }
    uint64_t id = event.info.id;
    if (!event.info.is_context)  // a context stream is read through its events, never named
      PP_RETURN_IF_ERROR(dir_.publish_event(event.info.name, id));
    event.json = dump_json(persistent::event_to_json(event.info));
    events_.emplace(id, std::move(event));
  }
  PP_ASSIGN_OR_RETURN(std::vector<ConfigEvent> wanted, read_config());
  PP_ASSIGN_OR_RETURN(ReloadReport configured, apply_config(wanted, false));
  start_summary_ = std::to_string(restored) + " event" + (restored == 1 ? "" : "s") + " restored";
  if (adopted)
    start_summary_ += " (" + std::to_string(adopted) + " taken back with their fds, " +
                      std::to_string(samples_kept) + " with their samples)";
  if (failed)
    start_summary_ += " (" + std::to_string(failed) + " could not be re-created)";
  configured.unchanged.clear();  // the restored count says those
  std::string changes = configured.summary();
  if (!changes.empty())
    start_summary_ += ", " + changes + " from " + config_.config_file;
  return ok_status();
}

Status Broker::save() const {
  persistent::RegistryState state;
  state.next_id = next_id_;
  for (const auto& [id, event] : events_)
    state.events.push_back(event.info);
  return persistent::save_state(dir_, state);
}

persistent::FdRoom Broker::fd_room(const std::string& name, size_t cpus, bool new_context) const {
  sys::ExplainEnv env = explain_env();
  persistent::FdRoom room{
      .event = name, .cpus = cpus, .events = event_count(), .service = env.service};
  if (new_context) {
    auto online = persistent::online_cpus(sysfs_);
    room.context_cpus = online.ok() ? online->size() : cpus;
  }
  if (auto usage = sys::fd_usage(env))
    room.usage = *usage;
  size_t connected = 0;
  for (const auto& c : clients_)
    connected += c->socket.valid();
  room.client_room = config_.max_clients > connected ? config_.max_clients - connected : 0;
  return room;
}

persistent::CreateContext Broker::create_context() const {
  return {.resolver = config_.resolver,
          .sysfs = &sysfs_,
          .layout = persistent::Layout::kBackward,
          .existing = [this]() -> Result<std::vector<persistent::EventInfo>> { return infos(); }};
}

Result<persistent::OpenedEvent> Broker::open_guarded(const sys::EventAttr& attr,
                                                     const std::vector<int>& cpus, uint32_t pages,
                                                     const std::string& filter,
                                                     const std::string& what) {
  // A kernel before 6.0 refuses PERF_FORMAT_LOST: open_per_cpu() opens
  // without it then.
  return persistent::open_per_cpu(*config_.kernel, guarded_attr(attr), cpus, pages, filter, what,
                                  explain_env());
}

Status Broker::open_buffers(LiveEvent& event, const persistent::CreatePlan& plan,
                            std::string* note) {
  std::string filter = guarded_filter(plan.attr, plan.filter);
  PP_ASSIGN_OR_RETURN(persistent::OpenedEvent opened,
                      open_guarded(plan.attr, plan.cpus, plan.pages, filter, plan.event));
  event.broker_filter = !filter.empty();
  event.guard.assign(opened.buffers.size(), GuardState{});
  event.guard_schedule = {};
  if (!opened.note.empty() && note)
    *note = opened.note;
  event.info.attr = opened.attr;
  event.info.layout = opened.layout;
  event.info.cpus = plan.cpus;
  event.info.page_size = sys::page_size();
  event.info.buffer_start = now();
  event.buffers = std::move(opened.buffers);
  read_perf_ids(event);
  // No fd has left the broker: the guard takes its baseline when one does.
  return ok_status();
}

const Broker::LiveEvent* Broker::same_event(const persistent::CreateRequest& request) const {
  persistent::CreateContext unnamed = create_context();
  unnamed.existing = nullptr;
  auto plan = persistent::plan_create(request, unnamed);
  if (!plan.ok() || plan->name.empty())
    return nullptr;
  for (const auto& [id, event] : events_) {
    const persistent::EventInfo& info = event.info;
    if (info.name == plan->name && info.state == "running" && info.event == plan->event &&
        info.filter == plan->filter && info.pages == plan->pages && info.cpus == plan->cpus &&
        info.ring == request.backend)
      return &event;
  }
  return nullptr;
}

Result<persistent::EventInfo> Broker::create_event(const persistent::CreateRequest& request,
                                                   const sys::PeerCredentials& creator,
                                                   std::string* note,
                                                   const ConfigEvent* from_config) {
  PP_RETURN_IF_ERROR(persistent::check_create_limits(request));
  auto planned = persistent::plan_create(request, create_context());
  if (!planned.ok() && planned.error().code() == EEXIST) {
    // Asking again for what exists (a retry after a lost reply) is no error.
    if (const LiveEvent* existing = same_event(request)) {
      if (note)
        *note = "persistent event " + std::to_string(existing->info.id) + " '" +
                existing->info.name + "' exists already with this definition; nothing was created";
      return snapshot(*existing, false);
    }
  }
  PP_ASSIGN_OR_RETURN(persistent::CreatePlan plan, std::move(planned));
  // Context streams come and go with their events: only events count.
  size_t held = event_count();
  if (held >= config_.max_events)
    return errorf(ENOSPC,
                  "the broker holds %zu persistent events, the most it keeps; kill some first "
                  "('perf persistent kill')",
                  held);
  // Ids never wrap: a wrapped counter would hand out a live event's id.
  if (next_id_ == 0 || next_id_ > persistent::kMaxEventId)
    return errorf(ENOSPC,
                  "no event ids are left (the next would be %llu, the last is %llu); ids are "
                  "never reused, so move %s away and restart the broker to count from 1 again",
                  (unsigned long long)next_id_, (unsigned long long)persistent::kMaxEventId,
                  dir_.state().c_str());
  uint64_t id = next_id_;
  std::string name = plan.name.empty() ? std::to_string(id) : plan.name;
  const bool ftrace = request.backend == persistent::kRingFtrace;
  // Refused before anything is opened when the fds would run out midway.
  bool new_context = request.context && persistent::wants_context(plan.attr) &&
                     !persistent::find_context(infos(), guarded_attr(plan.attr));
  persistent::FdRoom room = fd_room(name, plan.cpus.size(), new_context);
  PP_RETURN_IF_ERROR(persistent::check_fd_room(room));
  // Out of fds anyway in a file the broker writes (what it opens meanwhile
  // is not all counted): the same figures. A refused open already says them
  // (sys::explain).
  auto explained = [&](Error error) {
    if (error.code() != EMFILE || room.usage.limit <= 0)
      return error;
    return Error(error.kind(), EMFILE, error.message() + "; " + persistent::describe_fd_use(room));
  };

  LiveEvent event;
  persistent::EventInfo& info = event.info;
  info.id = id;
  info.name = name;
  info.event = plan.event;
  info.backend = "broker";
  info.pages = plan.pages;
  info.filter = plan.filter;
  info.creator_uid = creator.uid;
  info.creator_pid = creator.pid;
  if (from_config) {
    info.origin = persistent::kOriginConfig;
    info.optional = from_config->optional;
  }
  if (ftrace) {
    PP_RETURN_IF_ERROR(open_ftrace(event, plan, false));
  } else {
    PP_RETURN_IF_ERROR(open_buffers(event, plan, note));
  }
  info.created = info.buffer_start;
  if (request.context && persistent::wants_context(info.attr)) {
    auto context = context_for(info.attr, creator);
    if (!context.ok())
      return context.error().with_context(
          "opening the context stream of '" + name +
          "' (what names its tasks after they exit); create it with --no-context to go without");
    info.context = *context;
  }

  if (Status published = dir_.publish_event(name, id); !published.ok()) {
    drop_unused_contexts();
    if (event.ftrace)
      (void)event.ftrace->remove();
    return explained(published.error());
  }
  event.json = dump_json(persistent::event_to_json(event.info));
  events_.emplace(id, std::move(event));
  next_id_ = id + 1;
  if (Status saved = save(); !saved.ok()) {
    if (events_.at(id).ftrace)
      (void)events_.at(id).ftrace->remove();
    events_.erase(id);
    next_id_ = id;
    (void)dir_.unpublish_event(name);
    drop_unused_contexts();
    return explained(saved.error().with_context("saving the registry"));
  }
  store_fds(events_.at(id));
  hold_ras_gate();
  const persistent::EventInfo& made = events_.at(id).info;
  log("created event " + std::to_string(id) + " '" + name + "' (" + plan.event + ") on CPUs " +
      format_cpu_list(made.cpus) + ", " + std::to_string(plan.pages) + " pages each" +
      (ftrace ? ", in ftrace instance " + made.instance : std::string()) + ", for " +
      describe_peer(creator));
  return snapshot(events_.at(id), false);
}

Result<persistent::EventInfo> Broker::kill_event(std::string_view reference) {
  std::vector<persistent::EventInfo> all = infos();
  PP_ASSIGN_OR_RETURN(const persistent::EventInfo* found, persistent::find_event(all, reference));
  if (found->is_context) {
    std::string users;
    for (const persistent::EventInfo& e : all)
      if (!e.is_context && e.context == found->id)
        users += (users.empty() ? "" : ", ") + e.name;
    return errorf(ErrorKind::kUsage, EINVAL,
                  "'%s' (id %llu) is the context stream of %s: it goes when the last of them is "
                  "killed; kill those events instead",
                  found->name.c_str(), (unsigned long long)found->id,
                  users.empty() ? "no event" : users.c_str());
  }
  persistent::EventInfo killed = *found;
  // Disabled first: readers holding its fds keep the buffer, and nothing
  // made after the kill may reach them.
  for (const persistent::CpuBuffer& buffer : events_.at(killed.id).buffers)
    if (Status s = sys::disable_event(*config_.kernel, buffer.fd.get()); !s.ok())
      log("cannot disable event " + std::to_string(killed.id) + " on CPU " +
          std::to_string(buffer.cpu) + ": " + s.error().message());
  LiveEvent gone = std::move(events_.at(killed.id));
  events_.erase(killed.id);
  // The context stream goes with the last event it serves.
  std::optional<LiveEvent> context_gone;
  if (killed.context && !persistent::context_in_use(infos(), killed.context) &&
      events_.count(killed.context)) {
    context_gone.emplace(std::move(events_.at(killed.context)));
    events_.erase(killed.context);
  }
  if (Status saved = save(); !saved.ok()) {
    for (const persistent::CpuBuffer& buffer : gone.buffers)
      (void)sys::enable_event(*config_.kernel, buffer.fd.get());
    events_.emplace(killed.id, std::move(gone));
    if (context_gone)
      events_.emplace(killed.context, std::move(*context_gone));
    return saved.error().with_context("saving the registry");
  }
  remove_stored_fds(gone);
  if (gone.ftrace) {
    // Readers that hold its shared rings keep what those hold.
    if (Status s = gone.ftrace->remove(); !s.ok())
      log("cannot remove ftrace instance " + gone.info.instance + " of event " +
          std::to_string(killed.id) + ": " + s.error().message() +
          "; remove it with rmdir once nothing holds it open");
  }
  if (context_gone) {
    remove_stored_fds(*context_gone);
    log("removed context stream " + std::to_string(killed.context) + " '" +
        context_gone->info.name + "': its last event is gone");
    for (auto& client : clients_)
      client->opened.erase(killed.context);
  }
  if (Status s = dir_.unpublish_event(killed.name); !s.ok())
    log("cannot remove the published entry of '" + killed.name + "': " + s.error().message());
  for (auto& client : clients_)
    client->opened.erase(killed.id);
  hold_ras_gate();
  return killed;  // `gone` closes its fds and mappings here
}

void Broker::hold_ras_gate() {
  // The tracepoint's name, with or without a filter or modifiers after it.
  constexpr std::string_view kExtlog = "ras:extlog_mem_event";
  bool wanted = std::any_of(events_.begin(), events_.end(), [&](const auto& entry) {
    const persistent::EventInfo& info = entry.second.info;
    return info.state == "running" && info.event.starts_with(kExtlog) &&
           (info.event.size() == kExtlog.size() ||
            std::string_view(":/").find(info.event[kExtlog.size()]) != std::string_view::npos);
  });
  if (wanted == bool(ras_gate_))
    return;
  if (!wanted) {
    ras_gate_.reset();
    log("released " + sys::Tree(config_.sysfs_root).path(sys::kRasDaemonActive) +
        ": no event keeps ras:extlog_mem_event any more");
    return;
  }
  auto gate = sys::open_ras_daemon_active(config_.sysfs_root);
  if (!gate.ok()) {
    log("an event keeps ras:extlog_mem_event, but " + gate.error().message());
    return;
  }
  ras_gate_ = std::move(*gate);
  log("holding " + sys::Tree(config_.sysfs_root).path(sys::kRasDaemonActive) +
      " open: the kernel emits ras:extlog_mem_event while it is held");
}

Status Broker::open_context(LiveEvent& context) {
  PP_ASSIGN_OR_RETURN(std::vector<int> cpus, persistent::online_cpus(sysfs_));
  sys::EventAttr attr = persistent::context_attr(persistent::key_of_context(context.info.attr),
                                                 persistent::Layout::kBackward);
  PP_ASSIGN_OR_RETURN(persistent::OpenedEvent opened,
                      open_guarded(attr, cpus, context.info.pages, "", context.info.name));
  context.guard.assign(opened.buffers.size(), GuardState{});
  context.guard_schedule = {};
  context.info.attr = opened.attr;
  context.info.layout = opened.layout;
  context.info.cpus = cpus;
  context.info.page_size = sys::page_size();
  context.info.buffer_start = now();
  context.buffers = std::move(opened.buffers);
  read_perf_ids(context);
  return ok_status();
}

Result<uint64_t> Broker::context_for(const sys::EventAttr& served,
                                     const sys::PeerCredentials& creator) {
  std::vector<persistent::EventInfo> all = infos();
  if (const persistent::EventInfo* found = persistent::find_context(all, served))
    return found->id;
  LiveEvent context;
  persistent::EventInfo& info = context.info;
  info.attr =
      persistent::context_attr(persistent::context_key(served), persistent::Layout::kBackward);
  info.id = persistent::next_context_id(all);
  info.name = persistent::context_name(info.attr);
  info.event = "dummy";
  info.backend = "broker";
  info.is_context = true;
  info.pages = persistent::kContextPages;
  info.creator_uid = creator.uid;
  info.creator_pid = creator.pid;
  PP_RETURN_IF_ERROR(open_context(context));
  info.created = info.buffer_start;
  uint64_t id = info.id;
  context.json = dump_json(persistent::event_to_json(info));
  log("created context stream " + std::to_string(id) + " '" + info.name + "' on CPUs " +
      format_cpu_list(info.cpus) + ", " + std::to_string(info.pages) + " pages each");
  store_fds(context);
  events_.emplace(id, std::move(context));
  return id;
}

void Broker::drop_unused_contexts() {
  std::vector<persistent::EventInfo> all = infos();
  std::erase_if(events_, [&](const auto& entry) {
    bool unused = entry.second.info.is_context && !persistent::context_in_use(all, entry.first);
    if (unused)
      remove_stored_fds(entry.second);
    return unused;
  });
}

int Broker::readers_of(uint64_t id) const {
  int n = 0;
  for (const auto& client : clients_)
    n += !client->keeper && client->opened.count(id) ? 1 : 0;
  return n;
}

bool Broker::kept(uint64_t id) const {
  return std::any_of(clients_.begin(), clients_.end(), [&](const auto& client) {
    return client->keeper && client->socket.valid() && client->opened.count(id);
  });
}

std::string Broker::holders_text(const GuardState& state) {
  std::string out;
  for (const GuardHolder& h : state.holders)
    out += (out.empty() ? "" : ", ") + h.who;
  return out;
}

GuardHolder Broker::holder_of(const Client& client, std::string_view role) const {
  const sys::PeerCredentials& who =
      client.request_senders.empty() ? client.peer : client.request_senders.back().creds;
  std::string text = describe_peer(who);
  if (!role.empty())
    text.insert(text.size() - 1, ", " + std::string(role));  // "uid 0 (pid 42, the keeper)"
  return {.who = std::move(text), .pid = who.pid};
}

void Broker::record_tampering(LiveEvent& event, size_t index, const std::string& what) {
  persistent::EventInfo& info = event.info;
  // An ftrace-backend event's findings are the instance's, of no one CPU:
  // they are filed under its first.
  int cpu = index < event.buffers.size() ? event.buffers[index].cpu
            : info.cpus.empty()          ? 0
                                         : info.cpus.front();
  persistent::Tampering entry{
      .time = now(),
      .cpu = cpu,
      .what = what,
      .holders = index < event.guard.size() ? holders_text(event.guard[index]) : std::string()};
  log("event " + std::to_string(info.id) + " '" + info.name + "' on CPU " + std::to_string(cpu) +
      " was tampered with: " + what +
      (entry.holders.empty() ? "" : "; its fd was held by " + entry.holders));
  info.tampered.push_back(std::move(entry));
  if (info.tampered.size() > persistent::kMaxTamperings)
    info.tampered.erase(info.tampered.begin());
  info.tamper_count++;
  event.json = dump_json(persistent::event_to_json(info));
}

void Broker::guard_from_now(LiveEvent& event, size_t index, GuardHolder holder) {
  if (index >= event.buffers.size() || index >= event.guard.size())
    return;
  int64_t now_ns = sys::monotonic_ns();
  GuardState& state = event.guard[index];
  if (!state.handed_out) {
    state = GuardState{};
    state.handed_out = true;
    (void)check_buffer(*config_.kernel, event.buffers[index], event.info.attr, event.info.layout,
                       event.broker_filter, event.info.is_context, state, now_ns);
  }
  // The same process again (a reader's second open) is named once.
  auto same = std::find_if(state.holders.begin(), state.holders.end(), [&](const GuardHolder& h) {
    return h.pid == holder.pid && h.who == holder.who;
  });
  if (same == state.holders.end()) {
    state.holders.push_back(std::move(holder));
    if (state.holders.size() > kMaxGuardHolders)
      state.holders.erase(state.holders.begin());
  }
  event.guard_schedule.tighten(now_ns / 1'000'000, config_.guard_interval_ms);
}

void Broker::guard_events(int64_t now_ns) {
  int64_t now_ms = now_ns / 1'000'000;
  for (auto& [id, event] : events_) {
    if (event.info.state != "running" || !event.guard_schedule.due(now_ms))
      continue;
    bool found = false;
    for (size_t i = 0; i < event.buffers.size() && i < event.guard.size(); i++) {
      GuardState& state = event.guard[i];
      if (!state.handed_out)
        continue;
      for (const std::string& what :
           check_buffer(*config_.kernel, event.buffers[i], event.info.attr, event.info.layout,
                        event.broker_filter, event.info.is_context, state, now_ns)) {
        record_tampering(event, i, what);
        found = true;
      }
      // A holder that has exited can change nothing from now on (its fds
      // closed with it); it was named in what this check found.
      std::erase_if(state.holders,
                    [](const GuardHolder& h) { return h.pid > 0 && !sys::process_exists(h.pid); });
    }
    if (found)
      event.guard_schedule.tighten(now_ms, config_.guard_interval_ms);
    else
      event.guard_schedule.relax(now_ms, config_.guard_max_interval_ms);
  }
}

int64_t Broker::next_guard_ms() const {
  int64_t next = -1;
  for (const auto& [id, event] : events_)
    if (event.info.state == "running" && event.guard_schedule.active())
      next = next < 0 ? event.guard_schedule.due_ms : std::min(next, event.guard_schedule.due_ms);
  return next;
}

persistent::EventInfo Broker::snapshot(const LiveEvent& event, bool verbose) const {
  persistent::EventInfo info = event.info;
  if (verbose) {
    info.counts.emplace();
    if (event.ftrace)  // records republished: what the instance's tracepoint wrote and was read
      for (int cpu : event.info.cpus)
        info.counts->push_back({cpu, event.ftrace->published(cpu)});
    for (const persistent::CpuBuffer& buffer : event.buffers) {
      auto count =
          sys::read_event(*config_.kernel, buffer.fd.get(), event.info.attr.attr.read_format);
      info.counts->push_back({buffer.cpu, count.ok() ? count->value : 0});
    }
    info.readers = readers_of(info.id);
    info.kept = kept(info.id);
  }
  return info;
}

std::vector<persistent::EventInfo> Broker::infos() const {
  std::vector<persistent::EventInfo> out;
  for (const auto& [id, event] : events_)
    out.push_back(event.info);
  return out;
}

std::string Broker::judge(const sys::PeerCredentials& who, const sys::Fd& pidfd) const {
  if (who.pid <= 0)
    return "the kernel passed no sender process with the request";
  auto status = sys::read_process_status(proc_, who.pid);
  if (!status.ok())
    return "cannot read its capabilities: " + status.error().message();
  auto namespaces = sys::user_namespace_difference(proc_, who.pid);
  if (!namespaces.ok())
    return "cannot read its user namespace: " + namespaces.error().message();
  // Read first, then ask the pidfd: a live process still owns the pid, so
  // the readings were its own.
  if (pidfd.valid() && !sys::pidfd_alive(pidfd.get()))
    return "it exited before its request was checked";
  if (status->real_uid != who.uid)
    return "pid " + std::to_string(who.pid) + " now belongs to another user";
  if (!namespaces->empty())
    return *namespaces;
  // A set-user-ID program's capabilities are the file owner's, not its
  // caller's: one exec'd after sending would speak with them.
  if (status->set_user_id())
    return "it runs a set-user-ID program (real uid " + std::to_string(status->real_uid) +
           ", effective " + std::to_string(status->effective_uid) + ", saved " +
           std::to_string(status->saved_uid) + "), whose rights are not its caller's";
  if (!status->perfmon_capable())
    return who.uid == 0 ? "it is root, but without CAP_PERFMON and CAP_SYS_ADMIN in its effective "
                          "capabilities"
                        : "it has neither CAP_PERFMON nor CAP_SYS_ADMIN";
  return "";
}

Status Broker::authorise(const Client& client, std::string_view what) const {
  auto refuse = [&](const sys::PeerCredentials& who, const std::string& why) {
    log_from(who, "refused to " + std::string(what) + " for " + describe_peer(who) + ": " + why);
    return errorf(EACCES,
                  "%s may not %.*s persistent events: only a process with CAP_PERFMON or "
                  "CAP_SYS_ADMIN in its effective set, in the initial user namespace, may create, "
                  "kill or open them (%s)",
                  describe_peer(who).c_str(), int(what.size()), what.data(), why.c_str());
  };
  if (client.request_senders.empty())
    return refuse(client.peer, "the request came with no sender credentials");
  // Every process whose bytes make up the request, as it was when its bytes
  // arrived: a socket handed to a child, or kept across an exec, speaks with
  // the rights of whoever wrote.
  for (const Sender& sender : client.request_senders)
    if (!sender.refused.empty())
      return refuse(sender.creds, sender.refused);
  return ok_status();
}

void Broker::reply(Client& client, const std::string& payload, std::vector<sys::Fd> fds) {
  client.out = persistent::encode_frame(persistent::FrameKind::kReply, payload);
  client.out_sent = 0;
  client.out_fds = std::move(fds);
  flush(client);
}

void Broker::flush(Client& client) {
  while (client.out_sent < client.out.size()) {
    std::vector<int> raw;
    if (client.out_sent == 0)
      for (const sys::Fd& fd : client.out_fds)
        raw.push_back(fd.get());
    std::span<const uint8_t> rest(
        reinterpret_cast<const uint8_t*>(client.out.data()) + client.out_sent,
        client.out.size() - client.out_sent);
    auto sent = client.socket.send_some(rest, raw);
    if (!sent.ok()) {
      client.socket.close();  // the peer went away mid-reply
      return;
    }
    if (*sent == 0) {  // full: poll waits for POLLOUT
      if (client.stalled_since_ms < 0)
        client.stalled_since_ms = sys::monotonic_ms();
      return;
    }
    client.out_sent += *sent;
  }
  client.out.clear();
  client.out_sent = 0;
  client.out_fds.clear();
  client.stalled_since_ms = -1;
  client.last_active_ms = sys::monotonic_ms();
  if (client.close_after_reply)
    client.socket.close();
}

const Broker::Operation Broker::kOperations[] = {
    {persistent::Op::kPing, Privilege::kAnyone, &Broker::handle_ping},
    {persistent::Op::kList, Privilege::kAnyone, &Broker::handle_list},
    {persistent::Op::kCreate, Privilege::kPerfmon, &Broker::handle_create},
    {persistent::Op::kKill, Privilege::kPerfmon, &Broker::handle_kill},
    {persistent::Op::kOpen, Privilege::kPerfmon, &Broker::handle_open},
    {persistent::Op::kReload, Privilege::kPerfmon, &Broker::handle_reload},
    {persistent::Op::kHandover, Privilege::kPerfmon, &Broker::handle_handover},
    {persistent::Op::kHandoverDone, Privilege::kPerfmon, &Broker::handle_handover_done},
    {persistent::Op::kHandoverListener, Privilege::kPerfmon, &Broker::handle_handover_listener},
};

void Broker::handle_request(Client& client, std::string_view payload) {
  Result<Answer> answered = answer_request(client, payload);
  if (!answered.ok()) {
    reply(client, persistent::encode_error_reply(answered.error()));
    return;
  }
  if (!answered->serialised_events) {
    reply(client, persistent::encode_ok_reply(std::move(answered->body)), std::move(answered->fds));
    return;
  }
  std::string list = "{\"ok\":true,\"events\":[";
  for (const std::string* event : *answered->serialised_events) {
    if (list.back() != '[')
      list += ',';
    list += *event;
  }
  list += answered->more ? "],\"more\":true}" : "]}";
  reply(client, list, std::move(answered->fds));
}

Result<Broker::Answer> Broker::answer_request(Client& client, std::string_view payload) {
  PP_ASSIGN_OR_RETURN(persistent::Request request, persistent::decode_request(payload));
  const Operation* operation = std::find_if(std::begin(kOperations), std::end(kOperations),
                                            [&](const Operation& o) { return o.op == request.op; });
  if (operation == std::end(kOperations))  // decode_request() knows no other op
    return internal_error("no handler for op '" + std::string(persistent::op_name(request.op)) +
                          "'");
  if (request.deadline_ms > 0) {
    // The deadline's own millisecond counts as past: the client sends
    // its clock's millisecond plus its timeout and gives up within it, so
    // a request run then may be one its client has already reported as
    // not done.
    int64_t late = int64_t(sys::realtime_ns() / 1000000) - request.deadline_ms;
    if (late >= 0) {
      log_from(client.peer, std::string(persistent::op_name(request.op)) + " request of " +
                                describe_peer(client.peer) + " expired " + std::to_string(late) +
                                " ms before the broker got to it; not carried out");
      return errorf(ETIMEDOUT,
                    "the %s request reached the broker %lld ms after its deadline, when its "
                    "client no longer waited; it was not carried out",
                    std::string(persistent::op_name(request.op)).c_str(), (long long)late);
    }
  }
  if (operation->privilege == Privilege::kPerfmon)
    PP_RETURN_IF_ERROR(authorise(client, persistent::op_name(request.op)));
  return (this->*operation->handle)(client, request);
}

Result<Broker::Answer> Broker::handle_ping(Client& /*client*/,
                                           const persistent::Request& /*request*/) {
  return Answer{.body = {{"pid", ::getpid()},
                         {"protocol", persistent::kProtocolVersion},
                         {"run_dir", dir_.root()},
                         {"events", event_count()}}};
}

Result<Broker::Answer> Broker::handle_list(Client& /*client*/, const persistent::Request& request) {
  // One page: the events after request.after, up to list_page_bytes (at
  // least one), so that no reply nears the frame limit however many events
  // there are and however large each is.
  Answer answer;
  answer.serialised_events.emplace();
  if (request.verbose) {
    for (auto it = events_.upper_bound(request.after); it != events_.end(); ++it)
      answer.serialised_storage.push_back(
          dump_json(persistent::event_to_json(snapshot(it->second, true))));
  }
  size_t bytes = 0, index = 0;
  for (auto it = events_.upper_bound(request.after); it != events_.end(); ++it, ++index) {
    const std::string* text =
        request.verbose ? &answer.serialised_storage[index] : &it->second.json;
    if (!answer.serialised_events->empty() && bytes + text->size() > config_.list_page_bytes) {
      answer.more = true;
      break;
    }
    bytes += text->size() + 1;
    answer.serialised_events->push_back(text);
  }
  return answer;
}

Result<Broker::Answer> Broker::handle_create(Client& client, const persistent::Request& request) {
  PP_RETURN_IF_ERROR(check_not_frozen("create"));
  std::string note;
  const sys::PeerCredentials& creator =
      client.request_senders.empty() ? client.peer : client.request_senders.back().creds;
  auto created = create_event(request.create, creator, &note);
  if (!created.ok()) {
    log_from(client.peer, "create '" + request.create.event.substr(0, 200) + "' for " +
                              describe_peer(creator) + " failed: " + created.error().message());
    return created.error();
  }
  Answer answer{.body = {{"event", persistent::event_to_json(*created)}}};
  if (!note.empty())
    answer.body["note"] = note;
  return answer;
}

Result<Broker::Answer> Broker::handle_kill(Client& client, const persistent::Request& request) {
  PP_RETURN_IF_ERROR(check_not_frozen("kill"));
  PP_ASSIGN_OR_RETURN(persistent::EventInfo killed, kill_event(request.reference));
  log("killed event " + std::to_string(killed.id) + " '" + killed.name + "' for " +
      describe_peer(client.peer));
  return Answer{.body = {{"event", persistent::event_to_json(killed)}}};
}

Result<Broker::Answer> Broker::handle_open(Client& client, const persistent::Request& request) {
  auto it = events_.find(request.id);
  if (it == events_.end())
    return persistent::not_found(std::to_string(request.id));
  LiveEvent& event = it->second;
  if (event.info.state != "running")
    return errorf(
        ENODEV, "persistent event %llu '%s' has no buffers: %s; kill it and create it again",
        (unsigned long long)event.info.id, event.info.name.c_str(), event.info.error.c_str());
  if (event.ftrace)
    return open_shared_ring(client, event, request);
  auto buffer = std::find_if(event.buffers.begin(), event.buffers.end(),
                             [&](const persistent::CpuBuffer& b) { return b.cpu == request.cpu; });
  if (buffer == event.buffers.end())
    return errorf(ErrorKind::kNotFound, ENOENT,
                  "persistent event %llu '%s' has no buffer on CPU %d (its CPUs: %s)",
                  (unsigned long long)event.info.id, event.info.name.c_str(), request.cpu,
                  format_cpu_list(event.info.cpus).c_str());
  bool keeping = request.keep || client.keeper;
  if (client.opened.empty())
    PP_RETURN_IF_ERROR(admit_reader(client));
  PP_ASSIGN_OR_RETURN(sys::Fd copy, sys::duplicate(buffer->fd.get()));
  // The hangup pipe only to a reader that asks by "hangup_perf" (a client
  // that sent "hangup" alone takes exactly one fd here), never to the
  // keeper, which reads nothing and outlives the broker.
  sys::Fd hangup;
  if (request.hangup_perf && !keeping)
    hangup = hangup_fd(client, event);
  // Every fd that leaves is guarded from now, the keeper's too: "keep" is
  // any perfmon client's to claim, and nothing shows what its holder does.
  guard_from_now(event, size_t(buffer - event.buffers.begin()),
                 holder_of(client, keeping ? "the keeper" : ""));
  client.opened.insert(event.info.id);
  if (request.keep && !client.keeper) {
    client.keeper = true;
    log("the keeper " + describe_peer(client.peer) +
        " holds buffers mapped across restarts (it counts as no reader)");
  }
  Answer answer{.body = {{"id", event.info.id},
                         {"cpu", buffer->cpu},
                         {"mmap_bytes", buffer->mapping.size()},
                         {"layout", std::string(persistent::layout_name(event.info.layout))}}};
  answer.fds.push_back(std::move(copy));
  if (hangup) {
    answer.body["hangup"] = true;
    answer.fds.push_back(std::move(hangup));
  }
  return answer;
}

sys::Fd Broker::hangup_fd(const Client& client, LiveEvent& event) {
  auto fd = [&]() -> Result<sys::Fd> {
    if (!event.hangup.valid()) {
      PP_ASSIGN_OR_RETURN(event.hangup, sys::HangupPipe::create());
    }
    return event.hangup.reader_fd();
  }();
  if (fd.ok())
    return std::move(*fd);
  log_from(client.peer, "event " + std::to_string(event.info.id) + " '" + event.info.name +
                            "' was opened for " + describe_peer(client.peer) +
                            " without its hangup pipe, so that reader will not see a kill: " +
                            fd.error().message());
  return sys::Fd();
}

void Broker::handle_frames(Client& client) {
  while (client.socket.valid() && client.out.empty()) {
    uint64_t begin = client.reader.consumed();
    auto frame = client.reader.next();
    if (!frame.ok()) {
      log_from(client.peer, "closing the connection of " + describe_peer(client.peer) + ": " +
                                frame.error().message());
      client.close_after_reply = true;
      reply(client, persistent::encode_error_reply(frame.error()));
      return;
    }
    if (!frame->has_value()) {
      if (client.reader.pending() == 0)
        client.stalled_since_ms = -1;
      else if (client.stalled_since_ms < 0)
        client.stalled_since_ms = sys::monotonic_ms();
      return;
    }
    client.stalled_since_ms = -1;
    // The senders of this request's bytes; those of later bytes stay.
    uint64_t end = client.reader.consumed();
    client.request_senders.clear();
    for (const Sender& sender : client.senders)
      if (sender.begin < end && sender.end > begin)
        client.request_senders.push_back(sender);
    while (!client.senders.empty() && client.senders.front().end <= end)
      client.senders.pop_front();
    handle_request(client, **frame);
  }
}

void Broker::read_from(Client& client) {
  uint8_t buf[16384];
  auto message = client.socket.receive_message(buf);  // descriptors from clients are closed unread
  if (!message.ok() || message->bytes == 0) {
    client.socket.close();
    return;
  }
  client.last_active_ms = sys::monotonic_ms();
  if (message->fds_truncated) {
    Error error = errorf(ErrorKind::kUsage, EINVAL,
                         "a request came with more descriptors than the broker receives (at most "
                         "%zu; requests need none), so its stream was cut: the connection is "
                         "closed",
                         sys::kMaxFdsPerMessage);
    log_from(client.peer,
             "closing the connection of " + describe_peer(client.peer) + ": " + error.message());
    if (!client.out.empty()) {
      client.socket.close();
      return;
    }
    client.close_after_reply = true;
    reply(client, persistent::encode_error_reply(error));
    return;
  }
  // Judged now, on arrival: what the sender may do is what it was when its
  // bytes came, whenever the request is carried out.
  Sender sender{.creds = message->sender.value_or(sys::PeerCredentials{}),
                .begin = client.reader.received(),
                .end = client.reader.received() + message->bytes,
                .refused = ""};
  sender.refused = judge(sender.creds, message->sender_pidfd);
  client.senders.push_back(std::move(sender));
  client.reader.append(std::span<const uint8_t>(buf, message->bytes));
  if (client.reader.pending() > persistent::kMaxUnansweredRequestBytes) {
    log_from(client.peer, "closing the connection of " + describe_peer(client.peer) + ": " +
                              std::to_string(client.reader.pending()) +
                              " bytes of requests ahead of the replies it has not read (at most " +
                              std::to_string(persistent::kMaxUnansweredRequestBytes) + ")");
    client.socket.close();
    return;
  }
  handle_frames(client);
}

bool Broker::idle(const Client& client) const {
  return client.socket.valid() && client.out.empty() && client.reader.pending() == 0 &&
         client.opened.empty();
}

Status Broker::admit(const sys::PeerCredentials& peer, bool privileged) {
  std::map<uid_t, size_t> per_uid;
  for (const auto& c : clients_)
    if (c->socket.valid())
      per_uid[c->peer.uid]++;
  size_t mine = per_uid[peer.uid];
  if (!privileged && mine >= config_.max_clients_per_uid)
    return errorf(EAGAIN,
                  "uid %u has %zu connections to the broker already, the most one user may "
                  "hold; close some and try again",
                  unsigned(peer.uid), mine);
  size_t open = 0;
  for (const auto& [uid, n] : per_uid)
    open += n;
  if (open < config_.max_clients)
    return ok_status();
  // Full: a privileged newcomer is always served: any connection that holds
  // no buffer makes room for it, an idle one before one stuck mid-message,
  // an unprivileged one before a privileged one, the longest inactive first.
  // For others, the longest-idle connection of a user who holds more.
  Client* victim = nullptr;
  if (privileged) {
    auto rank = [&](const Client& c) {
      return std::tuple(!idle(c), c.privileged, c.last_active_ms);
    };
    for (const auto& c : clients_)
      if (c->socket.valid() && c->opened.empty() && (!victim || rank(*c) < rank(*victim)))
        victim = c.get();
  } else {
    for (const auto& c : clients_) {
      if (!idle(*c) || c->privileged || c->peer.uid == peer.uid)
        continue;
      if (per_uid[c->peer.uid] <= mine + 1)
        continue;
      if (!victim || per_uid[c->peer.uid] > per_uid[victim->peer.uid] ||
          (per_uid[c->peer.uid] == per_uid[victim->peer.uid] &&
           c->last_active_ms < victim->last_active_ms))
        victim = c.get();
    }
  }
  if (!victim)
    return errorf(EAGAIN, "the broker serves %zu clients already, the most it serves; try again",
                  open);
  log_from(victim->peer, std::string(idle(*victim) ? "closing the idle connection of "
                                                   : "closing the unfinished connection of ") +
                             describe_peer(victim->peer) + " to make room for " +
                             describe_peer(peer) + " (" + std::to_string(open) +
                             " connections, the most)");
  victim->socket.close();
  return ok_status();
}

Status Broker::admit_reader(const Client& client) const {
  size_t readers = 0, mine = 0;
  for (const auto& c : clients_) {
    if (!c->socket.valid() || c->opened.empty())
      continue;
    readers++;
    mine += c->peer.uid == client.peer.uid;
  }
  size_t most = config_.max_clients > config_.reserved_clients
                    ? config_.max_clients - config_.reserved_clients
                    : 0;
  if (mine >= config_.max_readers_per_uid)
    return errorf(EAGAIN,
                  "uid %u holds %zu connections that read event buffers already, the most one "
                  "user may hold; end some of its records, tops or watches and try again",
                  unsigned(client.peer.uid), mine);
  if (readers >= most)
    return errorf(EAGAIN,
                  "the broker serves %zu connections that read event buffers already, the most "
                  "(%zu connections less %zu kept for list, kill and check); end some records, "
                  "tops or watches and try again",
                  readers, config_.max_clients, config_.reserved_clients);
  return ok_status();
}

void Broker::refuse_for_want_of_fds() {
  if (!spare_fd_.held())
    return;
  // The figures need an fd or two of their own (/proc/self): read with
  // the spare freed, which the first accept then takes.
  spare_fd_.release();
  std::string why = "the broker is out of file descriptors";
  if (auto usage = sys::fd_usage(explain_env()))
    why += " (" + std::to_string(usage->open + 1) + " open of its limit of " +
           std::to_string(usage->limit) + ", for " + std::to_string(clients_.size()) +
           " connections and " + std::to_string(events_.size()) + " events)";
  why +=
      " and cannot serve this connection; try again when other clients have ended, or kill "
      "events you no longer need; the broker's limit is LimitNOFILE= in its unit, or the "
      "ulimit -n of the shell that started it";
  std::string frame = persistent::encode_frame(persistent::FrameKind::kReply,
                                               persistent::encode_error_reply(Error(EMFILE, why)));
  spare_fd_.take();
  size_t refused = 0;
  // A bounded batch: the backlog holds at most its length, and a client
  // that ends meanwhile frees a slot for the next accept.
  for (int tries = 0; tries < 64 && spare_fd_.held(); tries++) {
    spare_fd_.release();
    bool accepted = false;
    {
      auto socket = listener_.accept();
      if (socket.ok()) {
        accepted = true;
        (void)socket->send_some(
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(frame.data()), frame.size()));
      }
    }  // closed here, before the spare is taken again
    spare_fd_.take();
    if (!accepted)
      break;
    refused++;
  }
  if (refused)
    log_.write("accept", "turned away " + std::to_string(refused) +
                             " connection(s) for want of file descriptors");
}

void Broker::accept_clients() {
  for (;;) {
    auto socket = listener_.accept();
    if (!socket.ok()) {
      int code = socket.error().code();
      if (code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM) {
        // Each waiting client is told why, on the spare fd, instead of
        // waiting in the backlog for nothing; then a pause, not a spin.
        if (code == EMFILE || code == ENFILE)
          refuse_for_want_of_fds();
        accept_paused_until_ms_ = sys::monotonic_ms() + config_.accept_backoff_ms;
        log_.write("accept", socket.error().message() + "; accepting again in " +
                                 std::to_string(config_.accept_backoff_ms) + " ms (" +
                                 std::to_string(clients_.size()) + " clients, " +
                                 std::to_string(events_.size()) + " events)");
      } else if (code != EAGAIN) {
        log_.write("accept", socket.error().message());
      }
      return;
    }
    auto peer = socket->peer_credentials();
    if (!peer.ok() || !socket->set_nonblocking(true).ok())
      continue;
    (void)socket->pass_credentials();  // inherited from the listener; made sure of
    bool privileged = judge(*peer, sys::Fd()).empty();
    if (Status room = admit(*peer, privileged); !room.ok()) {
      log_from(*peer, "turning away " + describe_peer(*peer) + ": " + room.error().message());
      std::string frame = persistent::encode_frame(persistent::FrameKind::kReply,
                                                   persistent::encode_error_reply(room.error()));
      (void)socket->send_some(
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(frame.data()), frame.size()));
      continue;
    }
    auto client = std::make_unique<Client>();
    client->socket = std::move(*socket);
    client->peer = *peer;
    client->privileged = privileged;
    client->last_active_ms = sys::monotonic_ms();
    clients_.push_back(std::move(client));
  }
}

Result<bool> Broker::serve_once(int stop_fd, int timeout_ms) {
  std::vector<pollfd> fds;
  fds.push_back({stop_fd, POLLIN, 0});
  int64_t start_ms = sys::monotonic_ms();
  // During a handover new connections wait in the backlog for the new broker.
  bool accepting = start_ms >= accept_paused_until_ms_ && !handover_client_ && !handover_done_;
  fds.push_back({accepting ? listener_.fd() : -1, POLLIN, 0});  // poll skips a negative fd
  bool any_stalled = false;
  int64_t next_idle_ms = -1;  // when the next idle connection times out
  const size_t first_client = fds.size();
  for (const auto& client : clients_) {
    // Read at once, also while a reply is under way: the sender's rights are
    // judged when its bytes arrive, so the client must not choose when.
    fds.push_back({client->socket.fd(), short(client->out.empty() ? POLLIN : POLLIN | POLLOUT), 0});
    any_stalled |= client->stalled_since_ms >= 0;
    if (idle(*client)) {
      int64_t at = client->last_active_ms + config_.idle_timeout_ms;
      next_idle_ms = next_idle_ms < 0 ? at : std::min(next_idle_ms, at);
    }
  }
  auto wake_by = [&](int64_t ms) {
    ms = std::max<int64_t>(ms, 1);
    if (timeout_ms < 0 || timeout_ms > ms)
      timeout_ms = int(std::min<int64_t>(ms, 1 << 30));
  };
  if (any_stalled)
    wake_by(500);
  if (!accepting && !handover_client_ && !handover_done_)
    wake_by(accept_paused_until_ms_ - start_ms);
  if (handover_client_ && !handover_complete_)
    wake_by(handover_deadline_ms_ - start_ms);
  // The watchdog: never longer than half its interval between two pings.
  if (watchdog_interval_ms_ > 0)
    wake_by(next_watchdog_ms_ - start_ms);
  if (next_idle_ms >= 0)
    wake_by(next_idle_ms - start_ms + 1);
  // The guard, only for events with fds handed out: none, no wakeup.
  if (int64_t guard_ms = next_guard_ms(); guard_ms >= 0)
    wake_by(guard_ms - start_ms);
  // The ftrace instances' trace_pipe_raw: readable once a CPU's buffer is
  // buffer_percent full; and their drain and check clocks.
  const size_t first_pipe = fds.size();
  std::vector<uint64_t> pipe_events;
  if (!handover_client_ && !handover_done_) {
    for (const auto& [id, event] : events_) {
      if (!event.ftrace || readers_of(id) == 0)  // drained only while read
        continue;
      for (auto [fd, cpu] : event.ftrace->poll_fds()) {
        fds.push_back({fd, POLLIN, 0});
        pipe_events.push_back(id);
      }
    }
    if (int64_t ftrace_ms = next_ftrace_ms(); ftrace_ms >= 0)
      wake_by(ftrace_ms - start_ms);
  }
  if (auto ready = sys::wait_for(fds, timeout_ms); !ready.ok())
    return ready.error();
  std::vector<uint64_t> woken;
  for (size_t i = 0; i < pipe_events.size(); i++)
    if (fds[first_pipe + i].revents & POLLIN)
      woken.push_back(pipe_events[i]);
  if (stop_fd >= 0 && (fds[0].revents & POLLIN))
    return false;
  if (int64_t woke_ms = sys::monotonic_ms();
      watchdog_interval_ms_ > 0 && woke_ms >= next_watchdog_ms_) {
    notify("WATCHDOG=1");
    next_watchdog_ms_ = woke_ms + watchdog_interval_ms_;
  }
  // Clients first: the ones accepted now have no poll result yet.
  for (size_t i = 0; i < clients_.size(); i++) {
    Client& client = *clients_[i];
    short revents = fds[first_client + i].revents;
    if (!client.out.empty() && (revents & (POLLOUT | POLLERR | POLLHUP)))
      flush(client);
    if (client.socket.valid() && (revents & (POLLIN | POLLERR | POLLHUP)))
      read_from(client);  // and handles what it can
    else if (client.socket.valid())
      handle_frames(client);  // requests that waited for a reply to go out
  }
  if (accepting && (fds[1].revents & POLLIN))
    accept_clients();
  // One reading for the timeouts and the guard below.
  int64_t now_ns = sys::monotonic_ns();
  int64_t now_ms = now_ns / 1'000'000;
  for (auto& client : clients_) {
    if (client->socket.valid() && client->stalled_since_ms >= 0 &&
        now_ms - client->stalled_since_ms > config_.stall_timeout_ms) {
      log_from(client->peer, "dropping " + describe_peer(client->peer) + ": " +
                                 (client->out.empty() ? "half a request" : "a reply unread") +
                                 " for " + std::to_string(config_.stall_timeout_ms) + " ms");
      client->socket.close();
    } else if (idle(*client) && now_ms - client->last_active_ms > config_.idle_timeout_ms) {
      log_from(client->peer, "closing the connection of " + describe_peer(client->peer) +
                                 ": idle for " + std::to_string(config_.idle_timeout_ms) + " ms");
      client->socket.close();
    }
  }
  // A handover whose new broker went away, or did not finish in time:
  // carry on (or, when the lock is another's by now, leave).
  if (handover_client_ && !handover_complete_) {
    bool gone = std::none_of(clients_.begin(), clients_.end(), [&](const auto& c) {
      return c.get() == handover_client_ && c->socket.valid();
    });
    if (gone || now_ms >= handover_deadline_ms_) {
      for (auto& c : clients_)
        if (c.get() == handover_client_)
          c->socket.close();
      if (!abandon_handover(gone ? "the new broker closed its connection"
                                 : "it did not complete within " +
                                       std::to_string(config_.handover_timeout_ms) + " ms"))
        return false;
    }
  }
  std::erase_if(clients_, [](const auto& c) { return !c->socket.valid(); });
  if (handover_complete_ &&
      std::none_of(clients_.begin(), clients_.end(), [](const auto& c) { return !c->out.empty(); }))
    return false;  // the last reply is out: the new broker serves from here
  guard_events(now_ns);
  if (!handover_client_ && !handover_done_)
    serve_ftrace(now_ms, woken);
  return true;
}

Status Broker::serve(int stop_fd) {
  for (;;) {
    PP_ASSIGN_OR_RETURN(bool go_on, serve_once(stop_fd, -1));
    if (!go_on)
      return ok_status();
  }
}

}  // namespace pp::broker

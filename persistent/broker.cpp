#include "persistent/broker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "base/cpu_list.h"
#include "persistent/config_file.h"
#include "persistent/event_json.h"
#include "persistent/event_open.h"
#include "persistent/names.h"
#include "sys/atomic_file.h"

namespace pp::persistent {
namespace {

int64_t monotonic_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string describe_peer(const sys::PeerCredentials& peer) {
  return "uid " + std::to_string(peer.uid) + " (pid " + std::to_string(peer.pid) + ")";
}

Result<std::string> read_config_file(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  return sys::Tree(dir.empty() ? "/" : dir).read(path.substr(slash + 1), 1 << 20);
}

}  // namespace

Broker::Broker(BrokerConfig config)
    : config_(std::move(config)),
      dir_(config_.run_dir),
      sysfs_(config_.sysfs_root),
      proc_(config_.proc_root) {}

Broker::~Broker() {
  clients_.clear();
  events_.clear();
  if (lock_) {
    if (Status s = dir_.unpublish_all(); !s.ok())
      log("cannot remove the published events: " + s.error().message());
  }
}

int64_t Broker::now() const {
  return config_.clock ? config_.clock() : int64_t(::time(nullptr));
}

void Broker::log(const std::string& line) const {
  if (!config_.log)
    return;
  time_t t = ::time(nullptr);
  struct tm tm;
  char stamp[32];
  ::localtime_r(&t, &tm);
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
  *config_.log << stamp << " perf-persistent daemon[" << ::getpid() << "]: " << line << std::endl;
}

Result<std::unique_ptr<Broker>> Broker::start(BrokerConfig config) {
  if (!config.kernel || !config.resolver)
    return internal_error("a broker needs a kernel and an event resolver");
  std::unique_ptr<Broker> broker(new Broker(std::move(config)));
  const RunDir& dir = broker->dir_;
  PP_RETURN_IF_ERROR(dir.prepare());
  auto lock = sys::LockFile::acquire(dir.lock());
  if (!lock.ok()) {
    if (lock.error().code() == EBUSY)
      return Error(EBUSY, lock.error().message() + ": a broker already serves " + dir.root());
    return lock.error();
  }
  broker->lock_.emplace(std::move(*lock));
  PP_RETURN_IF_ERROR(dir.remove_temporaries());  // a killed broker's half-written files
  // A fresh publication: whatever a dead broker left in events/ goes.
  PP_RETURN_IF_ERROR(dir.publish_pmu());
  PP_RETURN_IF_ERROR(broker->restore());
  PP_RETURN_IF_ERROR(broker->save());
  // The lock is ours, so a socket already there is a dead broker's.
  PP_RETURN_IF_ERROR(sys::remove_file_durably(dir.socket()));
  PP_ASSIGN_OR_RETURN(broker->listener_, sys::UnixListener::listen(dir.socket(), 0666));
  return broker;
}

Status Broker::restore() {
  auto loaded = load_state(dir_);
  if (!loaded.ok()) {
    return Error(loaded.error().code(), "cannot restore the registry: " + loaded.error().message() +
                                            "; move " + dir_.state() +
                                            " away to start with an empty one");
  }
  RegistryState state = std::move(*loaded);
  next_id_ = state.next_id;
  size_t restored = 0, failed = 0, configured = 0;
  for (EventInfo& info : state.events) {
    LiveEvent event;
    event.info = std::move(info);
    event.info.backend = "broker";
    event.info.state = "running";
    event.info.error.clear();
    std::string note;
    auto plan = plan_recreate(event.info, create_context());
    Status opened = plan.ok() ? open_buffers(event, *plan, &note) : Status(plan.error());
    if (opened.ok()) {
      restored++;  // the start summary says so, once for all
    } else {
      failed++;
      event.info.state = "failed";
      event.info.error = opened.error().message();
      log("could not re-create event " + std::to_string(event.info.id) + " '" + event.info.name +
          "': " + event.info.error + "; it stays listed as failed until killed");
    }
    uint64_t id = event.info.id;
    PP_RETURN_IF_ERROR(dir_.publish_event(event.info.name, id));
    event.json = dump_json(event_to_json(event.info));
    events_.emplace(id, std::move(event));
  }
  if (!config_.config_file.empty()) {
    auto text = read_config_file(config_.config_file);
    if (!text.ok() && (config_.config_required || text.error().code() != ENOENT))
      return text.error().with_context("reading the config file");
    if (text.ok()) {
      PP_ASSIGN_OR_RETURN(auto requests, parse_config(*text, config_.config_file));
      sys::PeerCredentials self{::getpid(), ::geteuid(), ::getegid()};
      for (const CreateRequest& request : requests) {
        bool present = std::any_of(events_.begin(), events_.end(), [&](const auto& e) {
          return e.second.info.name == request.name;
        });
        if (present)
          continue;
        std::string note;
        auto created = create_event(request, self, &note);
        if (!created.ok())
          return created.error().with_context(config_.config_file + ", event '" + request.name +
                                              "'");
        configured++;
      }
    }
  }
  restored += failed;
  start_summary_ = std::to_string(restored) + " event" + (restored == 1 ? "" : "s") + " restored";
  if (failed)
    start_summary_ += " (" + std::to_string(failed) + " could not be re-created)";
  if (configured)
    start_summary_ += ", " + std::to_string(configured) + " created from " + config_.config_file;
  return ok_status();
}

Status Broker::save() const {
  RegistryState state;
  state.next_id = next_id_;
  for (const auto& [id, event] : events_)
    state.events.push_back(event.info);
  return save_state(dir_, state);
}

CreateContext Broker::create_context() const {
  return {.resolver = config_.resolver,
          .sysfs = &sysfs_,
          .layout = Layout::kBackward,
          .existing = [this]() -> Result<std::vector<EventInfo>> { return infos(); }};
}

Status Broker::open_buffers(LiveEvent& event, const CreatePlan& plan, std::string* note) {
  PP_ASSIGN_OR_RETURN(OpenedEvent opened,
                      open_per_cpu(*config_.kernel, plan.attr, plan.cpus, plan.pages, plan.filter,
                                   plan.event, {config_.proc_root, config_.sysfs_root}));
  if (!opened.note.empty() && note)
    *note = opened.note;
  event.info.attr = opened.attr;
  event.info.layout = opened.layout;
  event.info.cpus = plan.cpus;
  event.info.page_size = sys::page_size();
  event.info.buffer_start = now();
  event.buffers = std::move(opened.buffers);
  return ok_status();
}

Result<EventInfo> Broker::create_event(const CreateRequest& request,
                                       const sys::PeerCredentials& creator, std::string* note) {
  PP_ASSIGN_OR_RETURN(CreatePlan plan, plan_create(request, create_context()));
  // Ids never wrap: a wrapped counter would hand out a live event's id.
  if (next_id_ == 0 || next_id_ > kMaxEventId)
    return errorf(ENOSPC,
                  "no event ids are left (the next would be %llu, the last is %llu); ids are "
                  "never reused, so move %s away and restart the broker to count from 1 again",
                  (unsigned long long)next_id_, (unsigned long long)kMaxEventId,
                  dir_.state().c_str());
  uint64_t id = next_id_;
  std::string name = plan.name.empty() ? std::to_string(id) : plan.name;

  LiveEvent event;
  EventInfo& info = event.info;
  info.id = id;
  info.name = name;
  info.event = plan.event;
  info.backend = "broker";
  info.pages = plan.pages;
  info.filter = plan.filter;
  info.creator_uid = creator.uid;
  info.creator_pid = creator.pid;
  PP_RETURN_IF_ERROR(open_buffers(event, plan, note));
  info.created = info.buffer_start;

  PP_RETURN_IF_ERROR(dir_.publish_event(name, id));
  event.json = dump_json(event_to_json(event.info));
  events_.emplace(id, std::move(event));
  next_id_ = id + 1;
  if (Status saved = save(); !saved.ok()) {
    events_.erase(id);
    next_id_ = id;
    (void)dir_.unpublish_event(name);
    return saved.error().with_context("saving the registry");
  }
  const EventInfo& made = events_.at(id).info;
  log("created event " + std::to_string(id) + " '" + name + "' (" + plan.event + ") on CPUs " +
      format_cpu_list(made.cpus) + ", " + std::to_string(plan.pages) + " pages each, for " +
      describe_peer(creator));
  return snapshot(events_.at(id), false);
}

Result<EventInfo> Broker::kill_event(std::string_view reference) {
  std::vector<EventInfo> all = infos();
  PP_ASSIGN_OR_RETURN(const EventInfo* found, find_event(all, reference));
  EventInfo killed = *found;
  LiveEvent gone = std::move(events_.at(killed.id));
  events_.erase(killed.id);
  if (Status saved = save(); !saved.ok()) {
    events_.emplace(killed.id, std::move(gone));
    return saved.error().with_context("saving the registry");
  }
  if (Status s = dir_.unpublish_event(killed.name); !s.ok())
    log("cannot remove the published entry of '" + killed.name + "': " + s.error().message());
  for (auto& client : clients_)
    client->opened.erase(killed.id);
  return killed;  // `gone` closes its fds and mappings here
}

int Broker::readers_of(uint64_t id) const {
  int n = 0;
  for (const auto& client : clients_)
    n += client->opened.count(id) ? 1 : 0;
  return n;
}

EventInfo Broker::snapshot(const LiveEvent& event, bool verbose) const {
  EventInfo info = event.info;
  if (verbose) {
    info.counts.emplace();
    for (const CpuBuffer& buffer : event.buffers) {
      auto count = read_count(*config_.kernel, buffer.fd.get());
      info.counts->push_back({buffer.cpu, count.ok() ? *count : 0});
    }
    info.readers = readers_of(info.id);
  }
  return info;
}

std::vector<EventInfo> Broker::infos() const {
  std::vector<EventInfo> out;
  for (const auto& [id, event] : events_)
    out.push_back(event.info);
  return out;
}

Result<sys::ProcessStatus> Broker::authorise(const Client& client, std::string_view what) const {
  auto refuse = [&](const std::string& why) {
    log("refused to " + std::string(what) + " for " + describe_peer(client.peer) + ": " + why);
    return errorf(EACCES,
                  "%s may not %.*s persistent events: only root or a process with CAP_PERFMON "
                  "may create, kill or open them (%s)",
                  describe_peer(client.peer).c_str(), int(what.size()), what.data(), why.c_str());
  };
  if (client.peer.uid == 0)
    return sys::ProcessStatus{};
  auto status = sys::read_process_status(proc_, client.peer.pid);
  if (!status.ok())
    return refuse("cannot read its capabilities: " + status.error().message());
  // The pid may have been reused since connect: the process must still be the peer.
  if (status->effective_uid != client.peer.uid)
    return refuse("pid " + std::to_string(client.peer.pid) + " now belongs to another user");
  if (!status->perfmon_capable())
    return refuse("it is not root and has neither CAP_PERFMON nor CAP_SYS_ADMIN");
  return status;
}

void Broker::reply(Client& client, const std::string& payload, std::vector<sys::Fd> fds) {
  client.out = encode_frame(FrameKind::kReply, payload);
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
        client.stalled_since_ms = monotonic_ms();
      return;
    }
    client.out_sent += *sent;
  }
  client.out.clear();
  client.out_sent = 0;
  client.out_fds.clear();
  client.stalled_since_ms = -1;
  if (client.close_after_reply)
    client.socket.close();
}

const Broker::Operation Broker::kOperations[] = {
    {Op::kPing, Privilege::kAnyone, &Broker::handle_ping},
    {Op::kList, Privilege::kAnyone, &Broker::handle_list},
    {Op::kCreate, Privilege::kPerfmon, &Broker::handle_create},
    {Op::kKill, Privilege::kPerfmon, &Broker::handle_kill},
    {Op::kOpen, Privilege::kPerfmon, &Broker::handle_open},
};

void Broker::handle_request(Client& client, std::string_view payload) {
  Result<Answer> answered = answer_request(client, payload);
  if (!answered.ok()) {
    reply(client, encode_error_reply(answered.error()));
    return;
  }
  if (!answered->serialised_events) {
    reply(client, encode_ok_reply(std::move(answered->body)), std::move(answered->fds));
    return;
  }
  std::string list = "{\"ok\":true,\"events\":[";
  for (const std::string* event : *answered->serialised_events) {
    if (list.back() != '[')
      list += ',';
    list += *event;
  }
  reply(client, list + "]}", std::move(answered->fds));
}

Result<Broker::Answer> Broker::answer_request(Client& client, std::string_view payload) {
  PP_ASSIGN_OR_RETURN(Request request, decode_request(payload));
  const Operation* operation = std::find_if(std::begin(kOperations), std::end(kOperations),
                                            [&](const Operation& o) { return o.op == request.op; });
  if (operation == std::end(kOperations))  // decode_request() knows no other op
    return internal_error("no handler for op '" + std::string(op_name(request.op)) + "'");
  if (operation->privilege == Privilege::kPerfmon)
    PP_RETURN_IF_ERROR(authorise(client, op_name(request.op)));
  return (this->*operation->handle)(client, request);
}

Result<Broker::Answer> Broker::handle_ping(Client& /*client*/, const Request& /*request*/) {
  return Answer{.body = {{"pid", ::getpid()},
                         {"protocol", kProtocolVersion},
                         {"run_dir", dir_.root()},
                         {"events", events_.size()}}};
}

Result<Broker::Answer> Broker::handle_list(Client& /*client*/, const Request& request) {
  Answer answer;
  if (!request.verbose) {
    answer.serialised_events.emplace();
    for (const auto& [id, event] : events_)
      answer.serialised_events->push_back(&event.json);
    return answer;
  }
  json events = json::array();
  for (const auto& [id, event] : events_)
    events.push_back(event_to_json(snapshot(event, true)));
  answer.body = {{"events", std::move(events)}};
  return answer;
}

Result<Broker::Answer> Broker::handle_create(Client& client, const Request& request) {
  std::string note;
  auto created = create_event(request.create, client.peer, &note);
  if (!created.ok()) {
    log("create '" + request.create.event.substr(0, 200) + "' for " + describe_peer(client.peer) +
        " failed: " + created.error().message());
    return created.error();
  }
  Answer answer{.body = {{"event", event_to_json(*created)}}};
  if (!note.empty())
    answer.body["note"] = note;
  return answer;
}

Result<Broker::Answer> Broker::handle_kill(Client& client, const Request& request) {
  PP_ASSIGN_OR_RETURN(EventInfo killed, kill_event(request.reference));
  log("killed event " + std::to_string(killed.id) + " '" + killed.name + "' for " +
      describe_peer(client.peer));
  return Answer{.body = {{"event", event_to_json(killed)}}};
}

Result<Broker::Answer> Broker::handle_open(Client& client, const Request& request) {
  auto it = events_.find(request.id);
  if (it == events_.end())
    return not_found(std::to_string(request.id));
  const LiveEvent& event = it->second;
  if (event.info.state != "running")
    return errorf(
        ENODEV, "persistent event %llu '%s' has no buffers: %s; kill it and create it again",
        (unsigned long long)event.info.id, event.info.name.c_str(), event.info.error.c_str());
  auto buffer = std::find_if(event.buffers.begin(), event.buffers.end(),
                             [&](const CpuBuffer& b) { return b.cpu == request.cpu; });
  if (buffer == event.buffers.end())
    return errorf(ErrorKind::kNotFound, ENOENT,
                  "persistent event %llu '%s' has no buffer on CPU %d (its CPUs: %s)",
                  (unsigned long long)event.info.id, event.info.name.c_str(), request.cpu,
                  format_cpu_list(event.info.cpus).c_str());
  PP_ASSIGN_OR_RETURN(sys::Fd copy, sys::duplicate(buffer->fd.get()));
  client.opened.insert(event.info.id);
  Answer answer{.body = {{"id", event.info.id},
                         {"cpu", buffer->cpu},
                         {"mmap_bytes", buffer->mapping.size()},
                         {"layout", std::string(layout_name(event.info.layout))}}};
  answer.fds.push_back(std::move(copy));
  return answer;
}

void Broker::handle_frames(Client& client) {
  while (client.socket.valid() && client.out.empty()) {
    auto frame = client.reader.next();
    if (!frame.ok()) {
      log("closing the connection of " + describe_peer(client.peer) + ": " +
          frame.error().message());
      client.close_after_reply = true;
      reply(client, encode_error_reply(frame.error()));
      return;
    }
    if (!frame->has_value()) {
      if (client.reader.pending() == 0)
        client.stalled_since_ms = -1;
      else if (client.stalled_since_ms < 0)
        client.stalled_since_ms = monotonic_ms();
      return;
    }
    client.stalled_since_ms = -1;
    handle_request(client, **frame);
  }
}

void Broker::read_from(Client& client) {
  uint8_t buf[16384];
  auto n = client.socket.receive(buf, nullptr);  // descriptors from clients are closed unread
  if (!n.ok() || *n == 0) {
    client.socket.close();
    return;
  }
  client.reader.append(std::span<const uint8_t>(buf, *n));
  handle_frames(client);
}

void Broker::accept_clients() {
  for (;;) {
    auto socket = listener_.accept();
    if (!socket.ok()) {
      if (socket.error().code() != EAGAIN)
        log(socket.error().message());
      return;
    }
    auto peer = socket->peer_credentials();
    if (!peer.ok() || !socket->set_nonblocking(true).ok())
      continue;
    if (clients_.size() >= config_.max_clients) {
      std::string frame = encode_frame(
          FrameKind::kReply,
          encode_error_reply(
              errorf(EAGAIN, "the broker serves %zu clients already; try again", clients_.size())));
      (void)socket->send_some(
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(frame.data()), frame.size()));
      continue;
    }
    auto client = std::make_unique<Client>();
    client->socket = std::move(*socket);
    client->peer = *peer;
    clients_.push_back(std::move(client));
  }
}

Result<bool> Broker::serve_once(int stop_fd, int timeout_ms) {
  std::vector<pollfd> fds;
  fds.push_back({stop_fd, POLLIN, 0});
  fds.push_back({listener_.fd(), POLLIN, 0});
  bool any_stalled = false;
  for (const auto& client : clients_) {
    fds.push_back({client->socket.fd(), short(client->out.empty() ? POLLIN : POLLOUT), 0});
    any_stalled |= client->stalled_since_ms >= 0;
  }
  if (any_stalled && (timeout_ms < 0 || timeout_ms > 500))
    timeout_ms = 500;
  if (auto ready = sys::wait_for(fds, timeout_ms); !ready.ok())
    return ready.error();
  if (stop_fd >= 0 && (fds[0].revents & POLLIN))
    return false;
  // Clients first: the ones accepted now have no poll result yet.
  for (size_t i = 0; i < clients_.size(); i++) {
    Client& client = *clients_[i];
    short revents = fds[i + 2].revents;
    if (!client.out.empty() && (revents & (POLLOUT | POLLERR | POLLHUP))) {
      flush(client);
      handle_frames(client);
    } else if (client.out.empty() && (revents & (POLLIN | POLLERR | POLLHUP))) {
      read_from(client);
    }
  }
  if (fds[1].revents & POLLIN)
    accept_clients();
  int64_t now_ms = monotonic_ms();
  for (auto& client : clients_) {
    if (client->socket.valid() && client->stalled_since_ms >= 0 &&
        now_ms - client->stalled_since_ms > config_.stall_timeout_ms) {
      log("dropping " + describe_peer(client->peer) + ": " +
          (client->out.empty() ? "half a request" : "a reply unread") + " for " +
          std::to_string(config_.stall_timeout_ms) + " ms");
      client->socket.close();
    }
  }
  std::erase_if(clients_, [](const auto& c) { return !c->socket.valid(); });
  return true;
}

Status Broker::serve(int stop_fd) {
  for (;;) {
    PP_ASSIGN_OR_RETURN(bool go_on, serve_once(stop_fd, -1));
    if (!go_on)
      return ok_status();
  }
}

}  // namespace pp::persistent

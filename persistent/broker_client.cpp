#include "persistent/broker_client.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/strings.h"
#include "persistent/event_json.h"
#include "persistent/names.h"
#include "sys/clock.h"
#include "sys/process.h"
#include "sys/tree.h"

namespace pp::persistent {

namespace {

// Whether `info` (of the run directory or of its socket) is root's or the
// caller's own, and writable by nobody else: a socket another user could
// have put there would answer list and open with what that user chose.
Status check_trusted(const std::string& what, const std::string& path, const sys::PathInfo& info) {
  uid_t self = ::geteuid();
  if (info.is_link)
    return errorf(EPERM,
                  "the %s %s is a symbolic link; a broker never serves through one, and whoever "
                  "controls the link chooses who answers: give the directory it points to with "
                  "--run-dir",
                  what.c_str(), path.c_str());
  if (info.uid != 0 && info.uid != self)
    return errorf(EPERM,
                  "the %s %s belongs to uid %u, neither root nor uid %u that runs this command; "
                  "its broker could answer with anything, so it is not asked: give a run "
                  "directory of root's or your own with --run-dir",
                  what.c_str(), path.c_str(), unsigned(info.uid), unsigned(self));
  if (info.is_directory && (info.mode & 022) != 0)
    return errorf(EPERM,
                  "the %s %s has mode %04o: another user could replace its socket, so it is not "
                  "asked; 'chmod 0700 %s', or give another with --run-dir",
                  what.c_str(), path.c_str(), unsigned(info.mode), path.c_str());
  return ok_status();
}

}  // namespace

Result<BrokerConnection> BrokerConnection::connect(const RunDir& dir, int timeout_ms) {
  std::string path = dir.socket();
  // Looked at before the connect; nothing is sent to a broker it refuses.
  // A directory or socket that is not there is left to the connect, which
  // says the broker is not running.
  PP_RETURN_IF_ERROR(check_run_dir_parents(dir.root(), ::geteuid()));
  if (auto info = sys::path_info(dir.root()); info.ok())
    PP_RETURN_IF_ERROR(check_trusted("run directory", dir.root(), *info));
  if (auto info = sys::path_info(path); info.ok())
    PP_RETURN_IF_ERROR(check_trusted("broker socket", path, *info));
  auto socket = sys::UnixSocket::connect(path);
  if (!socket.ok()) {
    int code = socket.error().code();
    if (code == ENOENT || code == ECONNREFUSED)
      return Error(ErrorKind::kBrokerDown, ECONNREFUSED,
                   "the broker is not running: nothing answers at " + path +
                       "; start it with 'perf persistent daemon --run-dir " + dir.root() +
                       "' (or 'systemctl start perf-persistent' where it is a service)");
    if (code == EACCES || code == EPERM)
      return Error(EACCES, "permission denied reaching the broker at " + path +
                               ": only root or a process with CAP_PERFMON may use persistent "
                               "events (the run directory is root's, mode 0700)");
    return socket.error();
  }
  PP_RETURN_IF_ERROR(socket->set_timeouts(timeout_ms));
  return BrokerConnection(std::move(*socket), path, timeout_ms);
}

Result<json> BrokerConnection::call(const Request& request, std::vector<sys::Fd>* fds) {
  Request timed = request;
  if (!timed.deadline_ms)
    timed.deadline_ms = int64_t(sys::realtime_ns() / 1000000) + timeout_ms_;
  std::string frame = encode_frame(FrameKind::kRequest, encode_request(timed));
  Status sent = socket_.send(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(frame.data()), frame.size()));
  std::vector<uint8_t> buf(65536);
  if (!sent.ok()) {
    // A broker that turns a connection away says why and closes it, maybe
    // before the request went: the reason waits in the socket; read it.
    auto n = socket_.receive(buf, fds);
    if (n.ok() && *n > 0) {
      reader_.append(std::span<const uint8_t>(buf.data(), *n));
      if (auto payload = reader_.next(); payload.ok() && payload->has_value())
        return decode_reply(**payload);
    }
    return Error(
        EPIPE, "cannot send a request to the broker at " + where_ + ": " + sent.error().message());
  }
  for (;;) {
    auto payload = reader_.next();
    if (!payload.ok())
      return Error(payload.error().code(),
                   "a bad reply from the broker at " + where_ + ": " + payload.error().message());
    if (payload->has_value())
      return decode_reply(**payload);
    auto n = socket_.receive(buf, fds);
    if (!n.ok()) {
      if (n.error().code() == EAGAIN) {
        std::string dir = where_.substr(0, where_.rfind('/'));
        std::string what(op_name(request.op));
        std::string outcome;
        if (request.op != Op::kPing && request.op != Op::kList) {
          outcome = "; a broker that gets to the ";
          outcome += what;
          outcome +=
              " request later will not carry it out (it has a deadline), but the broker may have "
              "done so just before: see 'perf persistent list --run-dir ";
          outcome += dir;
          outcome += "'";
          if (request.op == Op::kCreate)
            outcome += ", or repeat the create: the same create again reports the event it made";
        }
        return errorf(ETIMEDOUT, "the broker at %s did not reply within %d ms (is it stopped?)%s",
                      where_.c_str(), timeout_ms_, outcome.c_str());
      }
      return Error(n.error().code(), "cannot read the broker's reply: " + n.error().message());
    }
    if (*n == 0)
      return Error(ECONNRESET, "the broker at " + where_ +
                                   " closed the connection without a reply; see broker.log in its "
                                   "run directory");
    reader_.append(std::span<const uint8_t>(buf.data(), *n));
  }
}

BrokerBackend::BrokerBackend(BackendOptions options)
    : options_(std::move(options)),
      dir_(options_.run_dir.empty() ? default_run_dir() : options_.run_dir) {}

Status BrokerBackend::start_broker() {
  sys::Tree proc(options_.proc_root);
  auto self = sys::read_process_status(proc, ::getpid());
  if (self.ok() && !self->may_use_persistent_events())
    return errorf(EACCES,
                  "only root or a process with CAP_PERFMON may create persistent events, and no "
                  "broker runs for %s (uid %u has no CAP_PERFMON)",
                  dir_.root().c_str(), unsigned(self->effective_uid));
  if (options_.systemd) {
    // Where systemd manages the broker, only systemd starts it: a second
    // broker beside the unit's would fight it for the run directory.
    auto managed = systemd_manages_broker(*options_.systemd, dir_.root(), options_.systemd_run_dir);
    if (!managed.ok())
      return Error(ErrorKind::kBrokerDown, ECONNREFUSED,
                   "the broker is not running for " + dir_.root() +
                       ", and whether systemd manages it is unknown (" + managed.error().message() +
                       "): start it with 'systemctl start " + kBrokerUnit + "'");
    if (*managed)
      return start_through_systemd();
  }
  if (options_.daemon_command.empty())
    return Error(ErrorKind::kBrokerDown, ECONNREFUSED,
                 "the broker is not running for " + dir_.root() +
                     " and this command starts none: start it with 'perf persistent daemon "
                     "--run-dir " +
                     dir_.root() + "'");
  if (options_.notes)
    *options_.notes << "perf persistent: no broker runs for " << dir_.root() << "; starting one ("
                    << join(options_.daemon_command, " ") << ")" << std::endl;
  auto status = sys::run_and_wait(options_.daemon_command);
  if (!status.ok())
    return Error(ErrorKind::kBrokerDown, ECONNREFUSED,
                 "the broker is not running and cannot be started: " + status.error().message());
  // Another create may have started one at the same moment: then this one
  // said so and gave up, and the other one answers.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    auto connected = BrokerConnection::connect(dir_);
    if (connected.ok()) {
      connection_.emplace(std::move(*connected));
      return ok_status();
    }
    if (*status == 0 || std::chrono::steady_clock::now() > deadline) {
      if (*status != 0) {
        // A broker that could not use its run directory never opened its
        // log there: name the log only when there is one.
        std::string log = sys::Tree(dir_.root()).exists("broker.log")
                              ? ", and in " + dir_.log()
                              : "; it stopped before it opened " + dir_.log();
        return errorf(ErrorKind::kBrokerDown, ECONNREFUSED,
                      "the broker is not running: it did not start (it exited with status %d; its "
                      "messages are above%s)",
                      *status, log.c_str());
      }
      return Error(ErrorKind::kBrokerDown, ECONNREFUSED,
                   "the broker is not running: it started but does not answer: " +
                       connected.error().message());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status BrokerBackend::start_through_systemd() {
  if (options_.notes)
    *options_.notes << "perf persistent: no broker runs for " << dir_.root()
                    << "; asking systemd to start " << kBrokerUnit << std::endl;
  PP_RETURN_IF_ERROR(options_.systemd->start_unit(kBrokerUnit));
  // Under a slow machine a unit can take seconds to be ready.
  return wait_for_broker(
      30000, [] { return false; },
      std::string("systemd started ") + kBrokerUnit +
          " but its broker does not answer; see 'systemctl status " + kBrokerUnit +
          "' and 'journalctl -u " + kBrokerUnit + "'");
}

Status BrokerBackend::wait_for_broker(int timeout_ms, const std::function<bool()>& give_up,
                                      const std::string& why_not) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    auto connected = BrokerConnection::connect(dir_);
    if (connected.ok()) {
      connection_.emplace(std::move(*connected));
      return ok_status();
    }
    if (give_up() || std::chrono::steady_clock::now() > deadline)
      return Error(
          ErrorKind::kBrokerDown, ECONNREFUSED,
          "the broker is not running: " + why_not + " (" + connected.error().message() + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Result<BrokerConnection*> BrokerBackend::connection(bool start) {
  if (connection_)
    return &*connection_;
  auto connected = BrokerConnection::connect(dir_);
  if (connected.ok()) {
    connection_.emplace(std::move(*connected));
    return &*connection_;
  }
  if (connected.error().code() != ECONNREFUSED || !start ||
      (options_.daemon_command.empty() && !options_.systemd))
    return connected.error();
  PP_RETURN_IF_ERROR(start_broker());
  return &*connection_;
}

Result<std::vector<EventInfo>> BrokerBackend::list(bool verbose, std::string* /*note*/) {
  auto conn = connection(false);
  if (!conn.ok()) {
    if (conn.error().code() != ECONNREFUSED)
      return conn.error();
    // No broker: the events it saved are held by nobody until it starts.
    size_t saved = down_events().size();
    if (saved == 0)
      return conn.error();
    return Error(ErrorKind::kBrokerDown, ECONNREFUSED,
                 conn.error().message() + "; its " + std::to_string(saved) +
                     " saved event(s) are down: they record nothing until it runs, and come "
                     "back (with empty buffers) when it starts");
  }
  // Page by page (Documentation/protocol.txt): each reply ends where the
  // broker's page does, and the next starts after its last id.
  Request request;
  request.op = Op::kList;
  request.verbose = verbose;
  std::vector<EventInfo> events;
  for (;;) {
    PP_ASSIGN_OR_RETURN(json body, (*conn)->call(request));
    JsonFields f(body, "the broker's list reply");
    PP_ASSIGN_OR_RETURN(const json* items, f.array("events"));
    PP_ASSIGN_OR_RETURN(bool more, f.boolean_or("more", false));
    for (const json& item : *items) {
      PP_ASSIGN_OR_RETURN(EventInfo e, event_from_json(item, "the broker's list reply"));
      if (e.id <= request.after)
        return errorf(EPROTO, "the broker's list reply goes back to id %llu after id %llu",
                      (unsigned long long)e.id, (unsigned long long)request.after);
      request.after = e.id;
      events.push_back(std::move(e));
    }
    if (!more)
      return events;
    if (items->empty())
      return Error(EPROTO, "the broker's list reply says there is more but holds no event");
  }
}

Result<EventInfo> BrokerBackend::create(const CreateRequest& create, std::string* note) {
  PP_ASSIGN_OR_RETURN(BrokerConnection * conn, connection(true));
  Request request;
  request.op = Op::kCreate;
  request.create = create;
  PP_ASSIGN_OR_RETURN(json body, conn->call(request));
  JsonFields f(body, "the broker's create reply");
  PP_ASSIGN_OR_RETURN(const json* event, f.object("event"));
  PP_ASSIGN_OR_RETURN(std::string broker_note, f.str_or("note", ""));
  if (note && !broker_note.empty())
    *note = broker_note;
  return event_from_json(*event, "the broker's create reply");
}

namespace {}  // namespace

std::vector<EventInfo> BrokerBackend::down_events() {
  auto saved = load_state(dir_);
  if (!saved.ok())
    return {};
  std::vector<EventInfo> down;
  for (EventInfo& e : saved->events) {
    if (e.is_context)
      continue;
    e.state = "down";
    e.error = "no broker runs for " + dir_.root();
    down.push_back(std::move(e));
  }
  return down;
}

Result<EventInfo> BrokerBackend::kill(std::string_view reference) {
  PP_ASSIGN_OR_RETURN(BrokerConnection * conn, connection(false));
  Request request;
  request.op = Op::kKill;
  request.reference = std::string(reference);
  PP_ASSIGN_OR_RETURN(json body, conn->call(request));
  JsonFields f(body, "the broker's kill reply");
  PP_ASSIGN_OR_RETURN(const json* event, f.object("event"));
  return event_from_json(*event, "the broker's kill reply");
}

Result<Buffer> BrokerBackend::open(uint64_t id, int cpu) {
  PP_ASSIGN_OR_RETURN(BrokerConnection * conn, connection(false));
  Request request;
  request.op = Op::kOpen;
  request.id = id;
  request.cpu = cpu;
  request.keep = options_.keep;
  // A reader wants the hangup pipe, with a shared ring and with a perf
  // event's fd alike; the keeper reads nothing.
  request.hangup = !options_.keep;
  request.hangup_perf = !options_.keep;
  std::vector<sys::Fd> fds;
  PP_ASSIGN_OR_RETURN(json body, conn->call(request, &fds));
  JsonFields f(body, "the broker's open reply");
  // The buffer's fd comes with the hangup pipe's reader end when the reply
  // says so (Documentation/protocol.txt); a broker before it passes the fd
  // alone (before "hangup_perf", a perf event's fd always), which reads as
  // well and never hangs up on a kill.
  PP_ASSIGN_OR_RETURN(bool pollable, f.boolean_or("pollable", true));
  PP_ASSIGN_OR_RETURN(bool hangup, f.boolean_or("hangup", false));
  const size_t want = hangup ? 2 : 1;
  if (fds.size() != want)
    return errorf(EPROTO, "the broker's open reply carried %zu descriptors instead of %zu",
                  fds.size(), want);
  PP_ASSIGN_OR_RETURN(uint64_t length, f.u64("mmap_bytes"));
  PP_ASSIGN_OR_RETURN(std::string layout, f.str("layout"));
  if (length < 2 * sys::page_size() || length % sys::page_size() != 0)
    return errorf(EPROTO, "the broker's open reply has a bad buffer size (%llu bytes)",
                  (unsigned long long)length);
  Buffer buffer;
  buffer.fd = std::move(fds[0]);
  buffer.id = id;
  buffer.cpu = cpu;
  buffer.mmap_length = size_t(length);
  buffer.layout = layout == "forward" ? Layout::kForward : Layout::kBackward;
  PP_ASSIGN_OR_RETURN(buffer.sample_id, f.u64_or("sample_id", 0));
  buffer.pollable = pollable;
  if (want == 2)
    buffer.hangup = std::move(fds[1]);
  return buffer;
}

}  // namespace pp::persistent

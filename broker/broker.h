// The broker: `perf persistent daemon`. It holds ordinary perf events open per
// CPU on behalf of everyone, each buffer mapped read-only so the kernel runs
// it in overwrite mode, and hands read-only fds for them to authorised
// clients over its Unix socket (SCM_RIGHTS): the sample data never passes
// through it. Documentation/perf-persistent-daemon.txt describes it for
// users and Documentation/protocol.txt its protocol.
//
//   BrokerConfig config;
//   config.run_dir = "/run/perf-persistent";
//   config.kernel = &sys::real_kernel();
//   config.resolver = resolver.get();
//   PP_ASSIGN_OR_RETURN(auto broker, Broker::start(config));
//   PP_RETURN_IF_ERROR(broker->serve(signal_fd));   // until SIGTERM
//
// Single-threaded: one poll loop serves every client, so a slow or hostile
// client can delay nobody. Each client's requests are handled one at a time,
// in order; a malformed request gets an error reply, a corrupt stream (bad
// magic, unknown version, oversized frame) an error reply and then the
// connection closed. Anyone connected may ping and list; create, kill and
// open are decided per request, by the process that sent its bytes
// (SCM_CREDENTIALS and, where the kernel has it, SCM_PIDFD), not by who
// connected: every sender must hold CAP_PERFMON or CAP_SYS_ADMIN in its
// effective set (/proc/<pid>/status), uid 0 or not. What the broker bounds
// (connections, idle time, event size, registry size, log growth) is in
// persistent/limits.h.
//
// Restarts (Documentation/perf-persistent-daemon.txt, RESTARTS): under
// systemd (BrokerConfig::systemd notifying) the broker says READY=1 once it
// listens, pings the watchdog from its loop, and stores every event's and
// context stream's per-CPU fd, and its listening socket, in systemd's fd
// store (persistent/fd_store.h names them). A broker that starts takes back
// what the store holds, or what the broker it replaces handed over
// (`daemon --replace`: the handover operation), and adopts each saved event
// whose fds all came back and still are that event (PERF_EVENT_IOC_ID
// against the saved perf ids) instead of opening it anew; every fd it did
// not adopt is closed and removed from the store. Whether the samples
// survive is up to whoever else kept the buffers mapped meanwhile: the
// keeper (persistent/keeper.h), the replacing broker, a reader.
//
// Reload (reload(), SIGHUP, the reload operation): the config file again,
// and only the difference applied (broker_config.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "broker/config_file.h"
#include "broker/fd_store.h"
#include "broker/ftrace_event.h"
#include "broker/guard.h"
#include "broker/log.h"
#include "persistent/create.h"
#include "persistent/event.h"
#include "persistent/event_open.h"
#include "persistent/limits.h"
#include "persistent/protocol.h"
#include "persistent/run_dir.h"
#include "sys/explain.h"
#include "sys/kernel.h"
#include "sys/process.h"
#include "sys/shared_ring.h"
#include "sys/systemd.h"
#include "sys/tree.h"
#include "sys/unix_socket.h"

namespace pp::broker {

// While a start or reload holds the event loop: how often the broker says
// so to the service manager, and by how much it extends the timeout each
// time (EXTEND_TIMEOUT_USEC, sd_notify(3)). One event takes about 24 ms to
// create at the documented maximum (1,024 events in about 24 s).
inline constexpr int kBusyNotifyMs = 1000;
inline constexpr uint64_t kBusyExtendUsec = 10'000'000;

// What an event that cannot be made is listed as: "unavailable" when it is
// optional (`optional = yes` in the config) and this host lacks it (no such
// tracepoint, PMU or CPU: ENOENT, ENODEV, EOPNOTSUPP); "failed" otherwise.
// An optional event refused for permissions, limits or a bad attr is a
// failure to see, not a host without the feature.
std::string unmade_state(bool optional, const Error& why);

// The ftrace backend's clocks (BrokerConfig::ftrace_drain_ms, ftrace_check_ms).
inline constexpr int kFtraceDrainMs = 100;
inline constexpr int kFtraceCheckMs = 1000;

struct BrokerConfig {
  std::string run_dir = persistent::kDefaultRunDir;
  std::string sysfs_root = sys::kDefaultSysfsRoot;
  std::string proc_root = sys::kDefaultProcRoot;
  // Where the ftrace backend makes its instances; "" for
  // sys::default_tracefs_root().
  std::string tracefs_root;
  // The ftrace backend: how often every instance is drained when its
  // buffer_percent wakeup has not come first, and how often its settings
  // are checked against foreign changes (changeable for tests).
  int ftrace_drain_ms = kFtraceDrainMs;
  int ftrace_check_ms = kFtraceCheckMs;
  // Events to create at start and at every reload (persistent/config_file.h);
  // "" for none. A missing file is an error only when `config_required`.
  std::string config_file;
  bool config_required = false;
  // The service manager (sys/systemd.h): readiness, the watchdog and the fd
  // store; null, or one that is not notifying, for none.
  sys::Systemd* systemd = nullptr;
  // Descriptors the broker this one replaces handed over (daemon
  // --replace), by name (persistent/fd_store.h); start() takes them. May be null.
  std::vector<sys::NamedFd>* handed_over = nullptr;
  // How long to wait for the run directory's lock, for a replacing broker
  // whose predecessor is exiting; 0: fail at once (EBUSY).
  int lock_wait_ms = 0;
  // A replacing broker's: called once the lock is this broker's, it asks the
  // broker it replaces for the listening socket (handover-listener), which
  // that broker hands only to the lock's holder. May be empty.
  std::function<Result<sys::Fd>()> take_listener;
  sys::Kernel* kernel = nullptr;                  // required
  persistent::EventResolver* resolver = nullptr;  // required
  std::function<int64_t()> clock;                 // unix seconds; the system clock when empty
  std::ostream* log = nullptr;  // one line per change and per refusal; none when null
  // How the log is bounded (persistent/broker_log.h); its `out` is `log`.
  BrokerLogOptions log_limits;
  // The bounds of persistent/limits.h, changeable for tests.
  size_t max_clients =
      persistent::kMaxConnections;  // then an idle one makes room, or the new one is refused
  size_t max_clients_per_uid =
      persistent::kMaxConnectionsPerUid;  // for uids that are not perfmon-capable
  // Of max_clients, kept for perfmon-capable clients that hold no buffer.
  size_t reserved_clients = persistent::kReservedConnections;
  size_t max_readers_per_uid = persistent::kMaxReadersPerUid;  // root included
  int stall_timeout_ms =
      persistent::kStallTimeoutMs;                   // a client mid-frame for this long is dropped
  int idle_timeout_ms = persistent::kIdleTimeoutMs;  // a client with nothing under way, closed
  int accept_backoff_ms = persistent::kAcceptBackoffMs;
  size_t list_page_bytes = persistent::kListPageBytes;
  size_t max_events = persistent::kMaxEvents;
  // A handover (daemon --replace) not complete this long after its first
  // request is abandoned: the broker serves on (persistent/limits.h).
  int handover_timeout_ms = persistent::kHandoverTimeoutMs;
  // During a start or reload, at most this long between two messages that
  // the broker is still busy (Broker::still_busy()); changeable for tests.
  int busy_notify_ms = kBusyNotifyMs;
  // The guard's intervals (persistent/guard.h), changeable for tests.
  int guard_interval_ms = kGuardIntervalMs;         // after a hand-out or a finding
  int guard_max_interval_ms = kGuardMaxIntervalMs;  // after clean checks
};

class Broker {
 public:
  // Prepares the run directory (created 0700; persistent/run_dir.h), takes
  // its lock (EBUSY when another broker holds it), restores the saved
  // registry re-creating every event with its id and name (an event that
  // cannot be re-created stays listed as "failed"), creates the config
  // file's events that are not there yet, publishes the registry and listens.
  static Result<std::unique_ptr<Broker>> start(BrokerConfig config);

  // Closes every event and connection and removes the published events/
  // entries and the socket; the state file stays, so a new broker restores it.
  // After a handover (daemon --replace) it removes nothing: the published
  // entries and the socket are its successor's.
  ~Broker();

  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  // Serves until `stop_fd` is readable (a signalfd, or a pipe in tests).
  Status serve(int stop_fd);

  // One pass of the loop, waiting at most `timeout_ms`: false once `stop_fd`
  // is readable.
  Result<bool> serve_once(int stop_fd, int timeout_ms);

  const persistent::RunDir& run_dir() const { return dir_; }
  // Events, not counting context streams (persistent/tracking.h).
  size_t event_count() const {
    return size_t(std::count_if(events_.begin(), events_.end(),
                                [](const auto& e) { return !e.second.info.is_context; }));
  }
  size_t client_count() const { return clients_.size(); }
  // "3 events restored (1 failed), 1 created from /etc/perf-persistent.conf".
  const std::string& start_summary() const { return start_summary_; }

  // What a reload did, by event name.
  struct ReloadReport {
    std::vector<std::string> created, killed, recreated, retried, unchanged, left_alone;
    std::vector<std::pair<std::string, std::string>> failed;       // name, why (not optional ones)
    std::vector<std::pair<std::string, std::string>> unavailable;  // optional ones
    json to_json() const;
    std::string summary() const;  // "1 created, 1 killed, 2 unchanged"
  };
  // Reads the config file again and applies the difference: config events
  // gone from it are killed, new ones created, changed ones (event string,
  // filter, pages, CPUs) killed and created again under a new id; unchanged
  // ones keep their buffers; events `create` made are left alone; every
  // failed event is tried again. A config file that cannot be read or
  // parsed changes nothing: its error (kind kConfig).
  Result<ReloadReport> reload();

  // True once a handover completed (the listening socket went to the new
  // broker, which holds the lock): the daemon exits, leaving the run
  // directory to it.
  bool handed_over() const { return handover_complete_; }

 private:
  struct LiveEvent {
    persistent::EventInfo info;
    std::vector<persistent::CpuBuffer> buffers;
    // event_to_json(info), serialised once: an event never changes after it
    // is made, and a plain list is then a concatenation (100 events in well
    // under a millisecond). Remade when a tampering is recorded.
    std::string json;
    std::vector<GuardState> guard;  // one per buffer (persistent/guard.h)
    bool broker_filter = false;     // a filter (the user's or kPassAllFilter) is set
    GuardSchedule guard_schedule;   // inactive while nothing was handed out
    // An ftrace-backend event (info.ring == kRingFtrace): its instance,
    // drained into shared rings (broker/ftrace_event.h); `buffers` is empty.
    std::unique_ptr<FtraceEvent> ftrace;
    // A perf-backend event's hangup pipe, whose reader end goes with each
    // fd a reader asks it for ("hangup_perf"): the reader's own fd keeps
    // the kernel event, so only this says the event is gone. Made at the
    // first such open (two fds per event read, none per open), closed with
    // the LiveEvent: a kill, a reload that replaces or drops it, the broker's
    // exit.
    sys::HangupPipe hangup;
  };
  // Who sent bytes of the stream (sys::ReceivedMessage), judged when the
  // broker received them: the rights a request is carried out with are the
  // sender's at that moment, which the broker, not the client, chooses (it
  // reads every connection as soon as bytes arrive).
  struct Sender {
    sys::PeerCredentials creds;   // pid 0 when the kernel passed none
    uint64_t begin = 0, end = 0;  // its bytes' offsets in the stream (FrameReader)
    std::string refused;          // why it may not create, kill or open; "" when it may
  };
  struct Client {
    sys::UnixSocket socket;
    sys::PeerCredentials peer;  // who connected: for limits and messages only
    bool privileged = false;    // perfmon-capable when it connected: never turned away for room
    // The senders of the bytes not yet cut into requests, and those of the
    // request being handled: every one of those must be allowed.
    std::deque<Sender> senders;
    std::vector<Sender> request_senders;
    int64_t last_active_ms = 0;
    persistent::FrameReader reader{persistent::FrameKind::kRequest, persistent::kMaxRequestPayload};
    std::string out;  // the reply being sent
    size_t out_sent = 0;
    std::vector<sys::Fd> out_fds;  // ride with the reply's first byte
    bool close_after_reply = false;
    std::set<uint64_t> opened;  // events this client holds fds of: it is their reader
    bool keeper = false;        // it opens with "keep": a keeper, not a reader
    // Since when the client has kept half a request unfinished, or a reply
    // unread: after stall_timeout_ms it is dropped.
    int64_t stalled_since_ms = -1;
  };

  explicit Broker(BrokerConfig config);

  Status restore();
  // Whether the service manager listens (BrokerConfig::systemd).
  bool notifying() const { return config_.systemd && config_.systemd->notifying(); }
  void notify(const std::string& state) const;
  // Called between two events of a start or reload, which hold the event
  // loop (1,024 events can take half a minute): every busy_notify_ms (and
  // every watchdog interval), EXTEND_TIMEOUT_USEC=kBusyExtendUsec and, when
  // a watchdog runs, WATCHDOG=1, so that neither the start or reload
  // timeout nor the watchdog ends a broker that is busy but alive.
  void still_busy();
  // The fd store: `event`'s per-CPU fds stored (unless they came from the
  // store), or removed.
  void store_fds(const LiveEvent& event);
  void remove_stored_fds(const LiveEvent& event);
  // Takes the saved `event` back from inherited_ when every CPU's fd came
  // back and is still the event (PERF_EVENT_IOC_ID), mapping each. Its
  // samples survived when someone else kept the buffers mapped meanwhile:
  // then buffer_start stays, else it is now, with the reason.
  enum class Adoption { kNone, kEventOnly, kWithSamples };
  Result<Adoption> adopt(LiveEvent& event);
  // The perf ids of `event`'s buffers (PERF_EVENT_IOC_ID).
  void read_perf_ids(LiveEvent& event);
  // Closes what start did not adopt, removing it from the store.
  void drop_leftovers();
  // The config file: its events, or a kConfig error.
  Result<std::vector<ConfigEvent>> read_config() const;
  // `retry_failed`: also try again the failed events `create` made (a
  // reload does; at start they were just tried).
  Result<ReloadReport> apply_config(const std::vector<ConfigEvent>& wanted, bool retry_failed);
  // Tries a failed event again, in place (same id and name).
  Status retry(LiveEvent& event);
  // A config event that cannot be made now: listed failed (or unavailable
  // when optional), tried again at every reload.
  void add_failed(const ConfigEvent& wanted, const Error& why);
  int64_t now() const;
  // Where sys::explain reads the facts of a refused open, and who runs the
  // broker (its advice for EMFILE).
  sys::ExplainEnv explain_env() const;
  // A change or a start message: never suppressed.
  void log(const std::string& line) const;
  // A refusal or an error caused by `peer`: rate-limited per uid.
  void log_from(const sys::PeerCredentials& peer, const std::string& line) const;
  Status save() const;

  // Creates one event; `creator` is who asked.
  // `from_config`: the config file's section it comes from (null for `create`).
  Result<persistent::EventInfo> create_event(const persistent::CreateRequest& request,
                                             const sys::PeerCredentials& creator, std::string* note,
                                             const ConfigEvent* from_config = nullptr);
  persistent::CreateContext create_context() const;
  // What creating `name` on `cpus` CPUs (and a new context stream with it)
  // needs in fds, against what the broker holds (persistent/limits.h).
  persistent::FdRoom fd_room(const std::string& name, size_t cpus, bool new_context) const;
  Status open_buffers(LiveEvent& event, const persistent::CreatePlan& plan, std::string* note);
  // The ftrace backend: makes the event's instance (or, with `adopt`, takes
  // over the one a previous broker made, keeping what it holds; made anew
  // when it is gone); the plan's event must be a tracepoint.
  Status open_ftrace(LiveEvent& event, const persistent::CreatePlan& plan, bool adopt);
  // Drains the ftrace instances (all, or those whose poll said so) into
  // their shared rings, and checks their settings when due. `now_ms`:
  // monotonic.
  void serve_ftrace(int64_t now_ms, const std::vector<uint64_t>& woken);
  // When the ftrace backend next wants the loop (monotonic ms), or -1.
  int64_t next_ftrace_ms() const;
  // Context streams (persistent/tracking.h): the one that serves `served`,
  // made now when there is none; opening one (again, after a restart); and
  // removing those no event uses any more.
  Result<uint64_t> context_for(const sys::EventAttr& served, const sys::PeerCredentials& creator);
  Status open_context(LiveEvent& context);
  void drop_unused_contexts();
  Result<persistent::EventInfo> kill_event(std::string_view reference);
  // Holds the kernel's ras/daemon_active open (sys/ras_daemon.h) while a
  // running event keeps ras:extlog_mem_event, and closes it when none does:
  // without it the kernel never emits that tracepoint. Called after every
  // change to the events; a failure to open is logged once per change.
  void hold_ras_gate();
  persistent::EventInfo snapshot(const LiveEvent& event, bool verbose) const;
  std::vector<persistent::EventInfo> infos() const;

  void accept_clients();
  void read_from(Client& client);
  void handle_frames(Client& client);
  // What a request's handler answers: the fields of an ok reply ("ok": true
  // is added), and the descriptors that ride with it. A plain list answers
  // with its events already serialised (LiveEvent::json) instead of `body`.
  struct Answer {
    json body = json::object();
    std::optional<std::vector<const std::string*>> serialised_events = std::nullopt;
    std::vector<std::string> serialised_storage = {};  // what a verbose list points into
    bool more = false;                                 // a list page with events after it
    std::vector<sys::Fd> fds = {};
  };
  // Who may ask for an operation (SO_PEERCRED, see the top of this file).
  enum class Privilege { kAnyone, kPerfmon };
  // The protocol's operations, one row each: who may ask, and the handler,
  // which acts on a decoded request and answers or fails. Decoding and
  // authorisation (answer_request()) and encoding the reply, an answer or an
  // error (handle_request()), happen there alone.
  struct Operation {
    persistent::Op op;
    Privilege privilege;
    Result<Answer> (Broker::*handle)(Client& client, const persistent::Request& request);
  };
  static const Operation kOperations[];

  Result<Answer> handle_ping(Client& client, const persistent::Request& request);
  Result<Answer> handle_list(Client& client, const persistent::Request& request);
  Result<Answer> handle_create(Client& client, const persistent::Request& request);
  Result<Answer> handle_kill(Client& client, const persistent::Request& request);
  Result<Answer> handle_open(Client& client, const persistent::Request& request);
  // The open of an ftrace-backend event: its shared ring's fd for the CPU,
  // after a drain of that CPU (a snapshot then holds what was just written).
  Result<Answer> open_shared_ring(Client& client, LiveEvent& event,
                                  const persistent::Request& request);
  // A new reader end of a perf-backend event's hangup pipe, made at the
  // first call; an invalid fd, logged, when the broker is out of fds (the
  // reader then reads as a client before the pipe did).
  sys::Fd hangup_fd(const Client& client, LiveEvent& event);
  Result<Answer> handle_reload(Client& client, const persistent::Request& request);
  Result<Answer> handle_handover(Client& client, const persistent::Request& request);
  Result<Answer> handle_handover_done(Client& client, const persistent::Request& request);
  Result<Answer> handle_handover_listener(Client& client, const persistent::Request& request);
  // Whether the senders of `client`'s request could be the broker itself:
  // the broker's uid, the same program, and the run directory's token.
  Status check_successor(const Client& client, const std::string& token) const;
  // Ends a handover that will not complete (its client went away, or its
  // deadline passed): serves on, taking the lock back if it was released.
  // False when the lock is another's now: the broker must exit.
  bool abandon_handover(const std::string& why);
  // While a handover is under way the registry is frozen: a change is
  // refused with EAGAIN, to be tried again once the new broker serves.
  Status check_not_frozen(std::string_view what) const;

  void handle_request(Client& client, std::string_view payload);
  Result<Answer> answer_request(Client& client, std::string_view payload);
  void reply(Client& client, const std::string& payload, std::vector<sys::Fd> fds = {});
  void flush(Client& client);
  Status authorise(const Client& client, std::string_view what) const;
  // Why the process `who` may not create, kill or open events, read from
  // /proc now: "" when it may. `pidfd` (invalid without one) proves the pid
  // was not reused between the message and the reading.
  std::string judge(const sys::PeerCredentials& who, const sys::Fd& pidfd) const;
  // Room for one more connection from `peer`, or the error to turn it away with.
  Status admit(const sys::PeerCredentials& peer, bool privileged);
  // Whether `client`, holding no buffer yet, may become a reader (the
  // bounds of persistent/limits.h); EAGAIN saying which bound when not.
  Status admit_reader(const Client& client) const;
  // Out of descriptors: accepts one connection on the spare fd, tells it
  // why and closes it.
  void refuse_for_want_of_fds();
  bool idle(const Client& client) const;
  // The same definition under the same name: the existing event, or null.
  const LiveEvent* same_event(const persistent::CreateRequest& request) const;
  int readers_of(uint64_t id) const;  // the keeper not counted
  bool kept(uint64_t id) const;       // a keeper holds its fds
  // What a finding names as the holders of one buffer's fd.
  static std::string holders_text(const GuardState& state);
  // Who a hand-out goes to: the sender of the request, and its role.
  GuardHolder holder_of(const Client& client, std::string_view role) const;
  // Buffer `index` of `event` leaves the broker (its fd is handed out to a
  // reader, the keeper or a new broker, or came back from where it may have
  // been): from now on the guard checks it, at its shortest interval for a
  // start, and names `holder` in what it finds. The first time, its baseline
  // is taken again: until now nobody but the broker could change it.
  void guard_from_now(LiveEvent& event, size_t index, GuardHolder holder);
  // The check of every event that is due (persistent/guard.h), which is only
  // ever one with fds handed out: repairs, records and logs what a holder
  // changed, and sets when each is checked next. `now_ns`: the serving
  // loop's one monotonic reading.
  void guard_events(int64_t now_ns);
  // When the next check is due (monotonic ms), or -1 for none.
  int64_t next_guard_ms() const;
  void record_tampering(LiveEvent& event, size_t index, const std::string& what);
  // Opens `attr` per CPU as the guard wants it (guarded_attr).
  Result<persistent::OpenedEvent> open_guarded(const sys::EventAttr& attr,
                                               const std::vector<int>& cpus, uint32_t pages,
                                               const std::string& filter, const std::string& what);

  BrokerConfig config_;
  persistent::RunDir dir_;
  sys::Tree sysfs_;
  sys::Tree proc_;
  std::optional<sys::LockFile> lock_;
  sys::UnixListener listener_;
  sys::SpareFd spare_fd_;  // freed to accept, refuse and close when out of fds
  std::map<uint64_t, LiveEvent> events_;
  sys::Fd ras_gate_;  // ras/daemon_active, while an event keeps ras:extlog_mem_event
  sys::Tree tracefs_;
  int64_t next_ftrace_drain_ms_ = 0;  // monotonic
  int64_t next_ftrace_check_ms_ = 0;
  uint64_t next_id_ = 1;
  std::vector<std::unique_ptr<Client>> clients_;
  std::string start_summary_;
  mutable BrokerLog log_;
  int64_t accept_paused_until_ms_ = 0;  // out of fds: not accepting until then
  InheritedFds inherited_;              // at start: what the store or a predecessor gave back
  bool listener_stored_ = false;        // the listening socket is in systemd's fd store
  int64_t watchdog_interval_ms_ = 0;    // half WATCHDOG_USEC; 0 for no watchdog
  int64_t next_watchdog_ms_ = 0;
  int64_t next_busy_notify_ms_ = 0;  // still_busy(): when it next tells the manager
  // The handover (daemon --replace): the client taking over, and the fds
  // being handed to it, page by page (each duplicated only for its page).
  const Client* handover_client_ = nullptr;
  struct HandedFd {
    std::string name;
    int fd = -1;  // the broker's own, valid while the registry is frozen
    uint64_t mmap_bytes = 0;
  };
  std::vector<HandedFd> handover_fds_;
  int64_t handover_deadline_ms_ = 0;  // monotonic
  bool handover_done_ = false;        // the lock is released for the new broker
  bool handover_complete_ = false;    // the listener went to the lock's new holder
  std::string handover_token_;        // what a successor shows (RunDir::handover_token)
};

}  // namespace pp::broker

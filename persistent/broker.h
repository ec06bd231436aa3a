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
// connection closed. Who may do what is decided by SO_PEERCRED: anyone
// connected may ping and list; only root or a process with CAP_PERFMON (or
// CAP_SYS_ADMIN) in /proc/<pid>/status may create, kill or open.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "base/result.h"
#include "persistent/create.h"
#include "persistent/event.h"
#include "persistent/event_open.h"
#include "persistent/protocol.h"
#include "persistent/run_dir.h"
#include "sys/kernel.h"
#include "sys/process.h"
#include "sys/tree.h"
#include "sys/unix_socket.h"

namespace pp::persistent {

struct BrokerConfig {
  std::string run_dir = kDefaultRunDir;
  std::string sysfs_root = sys::kDefaultSysfsRoot;
  std::string proc_root = sys::kDefaultProcRoot;
  // Events to create at start (persistent/config_file.h); "" for none. A
  // missing file is an error only when `config_required`.
  std::string config_file;
  bool config_required = false;
  sys::Kernel* kernel = nullptr;      // required
  EventResolver* resolver = nullptr;  // required
  std::function<int64_t()> clock;     // unix seconds; the system clock when empty
  std::ostream* log = nullptr;        // one line per change and per refusal; none when null
  size_t max_clients = 256;           // more are accepted and closed at once
  int stall_timeout_ms = 10000;       // a client mid-frame for this long is dropped
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
  ~Broker();

  Broker(const Broker&) = delete;
  Broker& operator=(const Broker&) = delete;

  // Serves until `stop_fd` is readable (a signalfd, or a pipe in tests).
  Status serve(int stop_fd);

  // One pass of the loop, waiting at most `timeout_ms`: false once `stop_fd`
  // is readable.
  Result<bool> serve_once(int stop_fd, int timeout_ms);

  const RunDir& run_dir() const { return dir_; }
  // Events, not counting context streams (persistent/tracking.h).
  size_t event_count() const {
    return size_t(std::count_if(events_.begin(), events_.end(),
                                [](const auto& e) { return !e.second.info.is_context; }));
  }
  size_t client_count() const { return clients_.size(); }
  // "3 events restored (1 failed), 1 created from /etc/perf-persistent.conf".
  const std::string& start_summary() const { return start_summary_; }

 private:
  struct LiveEvent {
    EventInfo info;
    std::vector<CpuBuffer> buffers;
    // event_to_json(info), serialised once: an event never changes after it
    // is made, and a plain list is then a concatenation (100 events in well
    // under a millisecond).
    std::string json;
  };
  struct Client {
    sys::UnixSocket socket;
    sys::PeerCredentials peer;
    FrameReader reader{FrameKind::kRequest, kMaxRequestPayload};
    std::string out;  // the reply being sent
    size_t out_sent = 0;
    std::vector<sys::Fd> out_fds;  // ride with the reply's first byte
    bool close_after_reply = false;
    std::set<uint64_t> opened;  // events this client holds fds of: it is their reader
    // Since when the client has kept half a request unfinished, or a reply
    // unread: after stall_timeout_ms it is dropped.
    int64_t stalled_since_ms = -1;
  };

  explicit Broker(BrokerConfig config);

  Status restore();
  int64_t now() const;
  void log(const std::string& line) const;
  Status save() const;

  // Creates one event; `creator` is who asked.
  Result<EventInfo> create_event(const CreateRequest& request, const sys::PeerCredentials& creator,
                                 std::string* note);
  CreateContext create_context() const;
  Status open_buffers(LiveEvent& event, const CreatePlan& plan, std::string* note);
  // Context streams (persistent/tracking.h): the one that serves `served`,
  // made now when there is none; opening one (again, after a restart); and
  // removing those no event uses any more.
  Result<uint64_t> context_for(const sys::EventAttr& served, const sys::PeerCredentials& creator);
  Status open_context(LiveEvent& context);
  void drop_unused_contexts();
  Result<EventInfo> kill_event(std::string_view reference);
  EventInfo snapshot(const LiveEvent& event, bool verbose) const;
  std::vector<EventInfo> infos() const;

  void accept_clients();
  void read_from(Client& client);
  void handle_frames(Client& client);
  // What a request's handler answers: the fields of an ok reply ("ok": true
  // is added), and the descriptors that ride with it. A plain list answers
  // with its events already serialised (LiveEvent::json) instead of `body`.
  struct Answer {
    json body = json::object();
    std::optional<std::vector<const std::string*>> serialised_events = std::nullopt;
    std::vector<sys::Fd> fds = {};
  };
  // Who may ask for an operation (SO_PEERCRED, see the top of this file).
  enum class Privilege { kAnyone, kPerfmon };
  // The protocol's operations, one row each: who may ask, and the handler,
  // which acts on a decoded request and answers or fails. Decoding and
  // authorisation (answer_request()) and encoding the reply, an answer or an
  // error (handle_request()), happen there alone.
  struct Operation {
    Op op;
    Privilege privilege;
    Result<Answer> (Broker::*handle)(Client& client, const Request& request);
  };
  static const Operation kOperations[];

  Result<Answer> handle_ping(Client& client, const Request& request);
  Result<Answer> handle_list(Client& client, const Request& request);
  Result<Answer> handle_create(Client& client, const Request& request);
  Result<Answer> handle_kill(Client& client, const Request& request);
  Result<Answer> handle_open(Client& client, const Request& request);

  void handle_request(Client& client, std::string_view payload);
  Result<Answer> answer_request(Client& client, std::string_view payload);
  void reply(Client& client, const std::string& payload, std::vector<sys::Fd> fds = {});
  void flush(Client& client);
  Result<sys::ProcessStatus> authorise(const Client& client, std::string_view what) const;
  int readers_of(uint64_t id) const;

  BrokerConfig config_;
  RunDir dir_;
  sys::Tree sysfs_;
  sys::Tree proc_;
  std::optional<sys::LockFile> lock_;
  sys::UnixListener listener_;
  std::map<uint64_t, LiveEvent> events_;
  uint64_t next_id_ = 1;
  std::vector<std::unique_ptr<Client>> clients_;
  std::string start_summary_;
};

}  // namespace pp::persistent

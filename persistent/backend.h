// Where persistent events live: the kernel (the seed ABI, when
// <sysfs>/bus/event_source/devices/persistent exists) or the broker daemon
// (every mainline kernel). Both give the same model (persistent/event.h).
//
//   PP_ASSIGN_OR_RETURN(auto backend, make_backend(options));
//   PP_ASSIGN_OR_RETURN(auto events, backend->list(/*verbose=*/false));
//   PP_ASSIGN_OR_RETURN(Buffer buffer, backend->open(events[0].id, 0));
//   PP_ASSIGN_OR_RETURN(auto map, kernel.mmap(buffer.fd.get(), buffer.mmap_length, PROT_READ));
//
// A reader keeps its Backend alive while it reads: the broker counts the
// readers of an event by their open connections.
//
// Every operation's Error has a kind (base/result.h) that decides the exit
// status: usage (a bad name, event string, CPU list, pages), name-taken,
// not-found (no persistent event with that id or name, or not on that CPU),
// or refused (by the kernel, with its own errno explained; by authorisation,
// EACCES; or the broker is unreachable). The broker's kind reaches the client
// through the protocol.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "persistent/create.h"
#include "persistent/event.h"
#include "sys/kernel.h"
#include "sys/systemd.h"
#include "sys/tree.h"

namespace pp::persistent {

class Backend {
 public:
  virtual ~Backend() = default;

  // "broker" or "kernel".
  virtual std::string_view name() const = 0;

  // Every persistent event, by id. `verbose` adds per-CPU counts (read(2):
  // events counted since buffer_start) and, for the broker, readers. `note`
  // (may be null) gets a line for the user when something is worth knowing.
  // A broker that is not running is an error of kind kBrokerDown (never an
  // empty list): down_events() says what it held.
  virtual Result<std::vector<EventInfo>> list(bool verbose, std::string* note) = 0;

  // The events a backend that is down holds in its registry but serves to
  // nobody (state "down", with when they went down): what list shows, with
  // its kBrokerDown error. Empty for a backend that cannot be down.
  virtual std::vector<EventInfo> down_events() { return {}; }

  // Creates an event; returns it as list() would show it. `note` gets a line
  // for the user when something was done on their behalf (a broker started,
  // a forward-layout fallback).
  virtual Result<EventInfo> create(const CreateRequest& request, std::string* note) = 0;

  // Kills the event `reference` names (an id or a name, persistent/names.h);
  // returns what it was. Readers that hold its fds keep reading until they
  // close them.
  virtual Result<EventInfo> kill(std::string_view reference) = 0;

  // A read-only fd for one CPU's buffer of event `id`.
  virtual Result<Buffer> open(uint64_t id, int cpu) = 0;
};

struct BackendOptions {
  std::string sysfs_root = sys::kDefaultSysfsRoot;
  std::string proc_root = sys::kDefaultProcRoot;
  std::string tracefs_root;       // "" means sys::default_tracefs_root()
  std::string run_dir;            // "" means default_run_dir()
  sys::Kernel* kernel = nullptr;  // nullptr means sys::real_kernel()
  // Parses event strings for the kernel backend's create (the broker parses
  // its own). May be null where nothing is created.
  EventResolver* resolver = nullptr;
  // How to start the broker when `create` finds none, e.g. {"/usr/lib/perf-core/
  // perf-persistent", "daemon", "--run-dir", DIR}; empty means never start one.
  std::vector<std::string> daemon_command;
  // Where "started the broker" goes.
  std::ostream* notes = nullptr;
  // The service manager, asked before `create` starts a broker: where
  // systemd manages the broker (it is PID 1 and perf-persistent.service is
  // installed), systemd starts it and no second one is ever spawned. Null:
  // never asked.
  sys::Systemd* systemd = nullptr;
  // The run directory the unit's broker serves: only a create for it asks
  // systemd (a create for another run directory starts its own broker).
  std::string systemd_run_dir = kDefaultRunDir;
  // Opens buffers as the keeper does (persistent/keeper.h): to hold them
  // mapped across broker restarts, not to read them.
  bool keep = false;
};

// The broker's unit, as contrib/perf-persistent.service installs it.
inline constexpr const char* kBrokerUnit = "perf-persistent.service";

// Whether systemd manages the broker of `run_dir`: systemd is PID 1
// (sd_booted), kBrokerUnit is installed, and `run_dir` is the one the unit
// serves. Then a create that finds no broker asks systemd to start it
// rather than start one itself. EHOSTDOWN-like errors from the bus are
// returned: a create then says so instead of guessing.
Result<bool> systemd_manages_broker(sys::Systemd& systemd, const std::string& run_dir,
                                    const std::string& unit_run_dir);

// $PERF_PERSISTENT_RUN_DIR when set and not empty, else /run/perf-persistent.
std::string default_run_dir();

// Whether an attr that parse/ made from `persistent/NAME/` names a broker
// event (attr.type is the broker's kBrokerPmuType, published in
// <run-dir>/devices/persistent/type): then attr.config is the id to open()
// through the broker, never an attr for perf_event_open.
inline bool is_broker_event(const sys::EventAttr& attr) {
  return attr.attr.type == kBrokerPmuType;
}

// Whether the kernel has the seed ABI: <sysfs>/bus/event_source/devices/persistent.
bool kernel_has_persistent_pmu(const sys::Tree& sysfs);

// The kernel backend where the kernel has the ABI, else the broker's client.
std::unique_ptr<Backend> make_backend(const BackendOptions& options);

// Kills each reference (or, with `all`, every event): what was killed and
// the error of each reference that was not.
struct KillReport {
  std::vector<EventInfo> killed;
  std::vector<std::pair<std::string, Error>> failed;  // reference, why

  // 0 when every reference was killed; else the status of the first
  // failure, except that "no such event" (4) wins over the others.
  int exit_status() const;
};
Result<KillReport> kill_events(Backend& backend, const std::vector<std::string>& references,
                               bool all);

}  // namespace pp::persistent

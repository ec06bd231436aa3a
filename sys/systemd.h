// The one seam between perf-persistent and systemd: the only code that calls
// libsystemd (sd_notify and friends, sd_listen_fds_with_names, sd-bus). The
// broker, its client and their tests see the Systemd interface; tests pass
// a fake (sys/testing/fake_systemd.h) that records every message and keeps
// a file-descriptor store as systemd 252 keeps one.
//
// What crosses it, as systemd reads it (sd_notify(3), systemd.service(5)):
//
//   READY=1                    the service is up (Type=notify)
//   STATUS=serving 3 events    a line for `systemctl status`
//   STOPPING=1                 the service is going down
//   WATCHDOG=1                 the watchdog's keep-alive (WatchdogSec=)
//   FDSTORE=1 FDNAME=<name> FDPOLL=0   + one fd: keep it across restarts
//   FDSTOREREMOVE=1 FDNAME=<name>      drop every stored fd of that name
//
// and back, at start: LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES (the stored fds
// from fd 3 on, each with its name; their order is not stable), and
// WATCHDOG_USEC / WATCHDOG_PID.
//
// Measured on systemd 252: a stored perf fd must carry
// FDPOLL=0, else systemd polls it, sees EPOLLHUP and closes it within
// milliseconds; an fd whose file is already in the store is ignored as a
// duplicate (systemd compares the open file, not the number).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sys/fd.h"

namespace pp::sys {

// One descriptor the service manager passed at start, with its FDNAME.
struct NamedFd {
  std::string name;
  Fd fd;
};

// The longest FDNAME systemd takes (FDNAME_MAX): 255 characters, printable
// ASCII but ':' (it separates names in LISTEN_FDNAMES).
inline constexpr size_t kMaxFdNameLength = 255;
bool valid_fd_name(std::string_view name);

class Systemd {
 public:
  virtual ~Systemd() = default;

  // Whether a service manager listens for our notifications ($NOTIFY_SOCKET
  // is set): false when the process was not started by systemd.
  virtual bool notifying() const = 0;

  // Sends `state` (newline-separated assignments, as above). Without a
  // notify socket it does nothing and succeeds.
  virtual Status notify(const std::string& state) = 0;

  // Stores `fd` in the service's fd store under `name` (valid_fd_name()),
  // with FDPOLL=0. One fd per message, so each keeps its own name.
  virtual Status store_fd(const std::string& name, int fd) = 0;

  // Removes every stored fd named `name` (FDSTOREREMOVE=1).
  virtual Status remove_fds(const std::string& name) = 0;

  // The watchdog interval in microseconds when the manager expects
  // WATCHDOG=1 from this process (sd_watchdog_enabled), else 0.
  virtual uint64_t watchdog_usec() = 0;

  // The descriptors passed at start (sd_listen_fds_with_names), each made
  // close-on-exec, and the LISTEN_* variables unset so no child sees them.
  // Empty when none were passed to this process.
  virtual Result<std::vector<NamedFd>> take_listen_fds() = 0;

  // Whether systemd is PID 1 (sd_booted: /run/systemd/system exists).
  virtual bool booted() = 0;

  // Whether the system manager knows a unit file for `unit`
  // (GetUnitFileState over the system bus answers for it).
  virtual Result<bool> unit_installed(const std::string& unit) = 0;

  // Asks the system manager to start `unit` (StartUnit, mode "replace") and
  // returns once the job is queued.
  virtual Status start_unit(const std::string& unit) = 0;
};

// The real one: libsystemd.
Systemd& real_systemd();

}  // namespace pp::sys

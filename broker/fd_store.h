// The names the broker gives the descriptors it hands to systemd's fd store
// (FDNAME=, sys/systemd.h) or to the broker that replaces it (daemon
// --replace), and the descriptors a starting broker got back, by name.
//
//   pp-event-<id>-cpu-<cpu>     one CPU's perf fd of event (or context
//                               stream) <id>: "pp-event-7-cpu-0"
//   pp-listener                 the broker's listening socket
//
// Stable across versions (a new broker reads an old one's names), at most
// 44 characters, and only [a-z0-9-]: well inside what systemd allows (255
// printable ASCII characters but ':'). Names, never positions, identify an
// fd: systemd's LISTEN_FDNAMES order changes across restarts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/fd.h"
#include "sys/systemd.h"

namespace pp::broker {

inline constexpr const char* kListenerFdName = "pp-listener";

std::string event_fd_name(uint64_t id, int cpu);

struct EventFdName {
  uint64_t id = 0;
  int cpu = 0;
};
// The (id, cpu) an event_fd_name() names; nullopt for any other name.
std::optional<EventFdName> parse_event_fd_name(std::string_view name);

// The descriptors a starting broker was given, by name. Each remembers
// whether it came from systemd's fd store (which keeps a copy, so the broker
// does not store it again: systemd would ignore it as a duplicate anyway)
// or from the broker it replaces (then it is stored, when under systemd).
class InheritedFds {
 public:
  // Adds fds. A name may come more than once (a stale fd beside the live
  // one): duplicated_names() says which.
  void add(std::vector<sys::NamedFd> fds, bool from_store);

  // Takes out the first fd named `name` for which `fits` is true (every one
  // when `fits` is empty), or an invalid Fd; `from_store` says where it came
  // from.
  sys::Fd take(const std::string& name, const std::function<bool(int fd)>& fits = {},
               bool* from_store = nullptr);

  // What was not taken: the caller closes the fds, and removes the names
  // that came from the store (FDSTOREREMOVE).
  struct Leftover {
    std::string name;
    sys::Fd fd;
    bool from_store = false;
  };
  std::vector<Leftover> take_rest();
  // Names that came more than once.
  const std::vector<std::string>& duplicated_names() const { return duplicated_; }

  size_t size() const { return fds_.size(); }

 private:
  struct Entry {
    sys::Fd fd;
    bool from_store = false;
  };
  std::multimap<std::string, Entry> fds_;
  std::vector<std::string> duplicated_;
};

}  // namespace pp::broker

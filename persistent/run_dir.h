// The run directory and what lives in it (default /run/perf-persistent, mode
// 0700, owned by root):
//
//   broker.sock                     the broker's socket (Documentation/protocol.txt)
//   broker.lock                     flock'ed by the running broker; holds its pid
//   keeper.lock                     flock'ed by the keeper (persistent/keeper.h)
//   broker.log                      the detached broker's stdout and stderr
//   state.json                      the broker's registry (below), 0600
//   devices/persistent/type         "4294901760\n" (kBrokerPmuType)
//   devices/persistent/format/persistent   "attr5:23\n"
//   devices/persistent/events/<name>       "persistent,config=<id>\n"
//   kernel-events/<name>.json       the kernel backend's name records
//
// devices/persistent/ is the kernel's sysfs layout (seed 07/12, 08/12), so
// pmu/ resolves `persistent/<name>/` through it exactly as through sysfs.
// Its files are replaced atomically but not fsync'ed: they derive from
// state.json (which is) and are rebuilt whenever a broker starts.
//
// state.json, rewritten atomically on every change:
//
//   {"version": 1, "next_id": 3,
//    "events": [ <event_to_json() of each event, without counts> ]}
//
// next_id never goes back, so an id is never reused while the state lives.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "persistent/event.h"
#include "sys/tree.h"

namespace pp::persistent {

class RunDir {
 public:
  explicit RunDir(std::string root);

  const std::string& root() const { return root_; }
  std::string socket() const { return root_ + "/broker.sock"; }
  std::string lock() const { return root_ + "/broker.lock"; }
  std::string keeper_lock() const { return root_ + "/keeper.lock"; }
  std::string log() const { return root_ + "/broker.log"; }
  std::string state() const { return root_ + "/state.json"; }
  // What a broker that replaces this one must show (daemon --replace): a
  // random token the running broker writes at start, mode 0600, so only the
  // run directory's owner reads it.
  std::string handover_token() const { return root_ + "/handover.token"; }
  std::string pmu() const { return root_ + "/devices/persistent"; }
  std::string kernel_records() const { return root_ + "/kernel-events"; }

  // Creates the directory 0700 when missing. An existing one must be a real
  // directory (not a symbolic link), belong to this user, and give group and
  // others no access at all (check_run_dir() below); and no directory above
  // it may be another user's or writable by one (check_run_dir_parents()).
  Status prepare() const;

  // Removes the temporaries of atomic writes (.<file>.tmp.<pid>, see
  // sys/atomic_file.h) that a killed broker left in the run directory and in
  // devices/persistent/; only the lock's holder may call it.
  Status remove_temporaries() const;

  // Writes type and format/persistent, and makes events/ empty.
  Status publish_pmu() const;
  Status publish_event(std::string_view name, uint64_t id) const;
  Status unpublish_event(std::string_view name) const;
  // Removes every events/ entry (on a clean broker exit: no broker, no events).
  Status unpublish_all() const;

 private:
  std::string root_;
};

// What prepare() asks of an existing run directory, `info` its
// sys::path_info() (lstat(2)): a
// directory, not a symbolic link (EPERM), owned by `owner` (EPERM), mode
// 0700 or less (EPERM: with 0755 or even 0711 any user could reach the
// socket, or read the published events). Each message names the path and
// the fix.
Status check_run_dir(const std::string& path, const sys::PathInfo& info, uid_t owner);

// What a client asks of the directories above the run directory `path`
// before it talks to the broker there: each one up to /, as `path` names it
// and as its symbolic links resolve (/var/run -> /run), belongs to root or
// to `self`, and no other user may write it unless it is sticky and root's
// (/tmp, mode 1777). Whoever may write a parent may rename the run
// directory away and put one of theirs with a socket of theirs in its
// place; checking the run directory alone would not see it. EPERM naming
// the directory, its owner or mode, and the fix. Reads through
// sys::path_info() and sys::real_path(); a parent that cannot be looked at
// is left to the connect. The broker's prepare() asks the same of the
// directory it is given (`by` words the refusal for who refuses).
enum class ParentsCheckedBy { kClient, kBroker };
Status check_run_dir_parents(const std::string& path, uid_t self,
                             ParentsCheckedBy by = ParentsCheckedBy::kClient);

struct RegistryState {
  uint64_t next_id = 1;
  std::vector<EventInfo> events;
};

inline constexpr int kStateVersion = 1;

// The largest event id ever given: next_id stops there rather than wrap.
inline constexpr uint64_t kMaxEventId = UINT64_MAX - 1;

std::string encode_state(const RegistryState& state);
// Strict; EINVAL names `path` and what is wrong with it.
Result<RegistryState> decode_state(std::string_view text, std::string_view path);

// Reads the state file; a missing file is an empty registry.
Result<RegistryState> load_state(const RunDir& dir);
Status save_state(const RunDir& dir, const RegistryState& state);

}  // namespace pp::persistent

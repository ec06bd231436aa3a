// The keeper: `perf persistent daemon --keeper`, the smallest process that
// keeps the broker's buffers mapped across a broker restart, so the kernel
// never frees them (it frees a perf ring buffer with its last mapping, and
// `systemctl restart` stops the old broker before the new one starts).
// Documentation/perf-persistent-daemon.txt (RESTARTS) is the user's account.
//
//   KeeperOptions options{.run_dir = "/run/perf-persistent"};
//   PP_ASSIGN_OR_RETURN(auto keeper, Keeper::start(options));
//   PP_RETURN_IF_ERROR(keeper->run(signal_fd));   // until SIGTERM
//
// Its whole surface: it watches the broker's published registry
// (<run-dir>/devices/persistent/events/, inotify), so the broker is never
// woken by it; on a change it connects, lists, opens each new event's
// per-CPU buffers with the ordinary open request marked "keep" (the broker
// then shows the event kept and counts the keeper as no reader), maps each
// read-only at the size the broker maps it, and holds them. An event that
// is gone from the list (killed) or came back as another kernel event
// (PERF_EVENT_IOC_ID changed: re-created) loses its old mappings. An
// ftrace-backend event is left alone: its records outlive the broker in its
// ftrace instance, its shared rings do not (the next broker writes new
// ones), and a memfd has no PERF_EVENT_IOC_ID to tell it unchanged. A broker
// that does not answer changes nothing: whatever is held stays held, and the
// keeper tries again (100 ms, doubling to 5 s) until one answers. It serves
// nothing, reads nothing from the buffers, writes nothing but its log.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/result.h"
#include "persistent/broker_client.h"
#include "persistent/run_dir.h"
#include "sys/dir_watch.h"
#include "sys/kernel.h"
#include "sys/process.h"

namespace pp::broker {

struct KeeperOptions {
  std::string run_dir = persistent::kDefaultRunDir;
  sys::Kernel* kernel = nullptr;  // the real kernel when null
  std::ostream* log = nullptr;    // one line per change; none when null
};

class Keeper {
 public:
  // Takes <run-dir>/keeper.lock (EBUSY: a keeper runs already) and syncs
  // once when the broker answers.
  static Result<std::unique_ptr<Keeper>> start(KeeperOptions options);

  // Until `stop_fd` is readable.
  Status run(int stop_fd);
  // One pass, waiting at most `timeout_ms` (-1: until something happens):
  // false once `stop_fd` is readable.
  Result<bool> run_once(int stop_fd, int timeout_ms);

  // Asks the broker now and keeps what it lists.
  Status sync();

  size_t kept_events() const { return kept_.size(); }
  size_t kept_buffers() const;
  // Whether the last sync failed (the broker did not answer): it is retried.
  bool retrying() const { return retry_ms_ > 0; }

 private:
  explicit Keeper(KeeperOptions options);
  struct KeptBuffer {
    int cpu = 0;
    uint64_t perf_id = 0;
    sys::Fd fd;
    sys::Mapping mapping;
  };
  Status sync_once(bool* connection_lost);
  void log(const std::string& line) const;

  KeeperOptions options_;
  persistent::RunDir dir_;
  sys::Kernel* kernel_;
  std::optional<sys::LockFile> lock_;
  std::optional<sys::DirChanges> watch_;
  std::unique_ptr<persistent::BrokerBackend> backend_;
  bool registered_ = false;  // the current connection knows every buffer held
  std::map<uint64_t, std::vector<KeptBuffer>> kept_;
  int64_t retry_ms_ = 0;  // the next retry's backoff; 0 when none is due
  int64_t retry_at_ms_ = 0;
};

}  // namespace pp::broker

#include "broker/keeper.h"

#include <poll.h>
#include <sys/mman.h>

#include <algorithm>

#include "sys/clock.h"
#include "sys/unix_socket.h"

namespace pp::broker {
namespace {

constexpr int64_t kFirstRetryMs = 100;
constexpr int64_t kMaxRetryMs = 5000;
constexpr int kWatchRetryMs = 1000;

// The connection went away under the request (the broker stopped, or
// closed an idle connection): a new one may work at once.
bool connection_lost(const Error& error) {
  int code = error.code();
  return code == EPIPE || code == ECONNRESET || code == ETIMEDOUT || code == EPROTO;
}

}  // namespace

Keeper::Keeper(KeeperOptions options)
    : options_(std::move(options)),
      dir_(options_.run_dir),
      kernel_(options_.kernel ? options_.kernel : &sys::real_kernel()) {}

void Keeper::log(const std::string& line) const {
  if (options_.log)
    *options_.log << "perf persistent keeper: " << line << std::endl;
}

size_t Keeper::kept_buffers() const {
  size_t n = 0;
  for (const auto& [id, buffers] : kept_)
    n += buffers.size();
  return n;
}

Result<std::unique_ptr<Keeper>> Keeper::start(KeeperOptions options) {
  std::unique_ptr<Keeper> keeper(new Keeper(std::move(options)));
  PP_RETURN_IF_ERROR(keeper->dir_.prepare());
  auto lock = sys::LockFile::acquire(keeper->dir_.keeper_lock());
  if (!lock.ok()) {
    if (lock.error().code() == EBUSY)
      return Error(EBUSY,
                   lock.error().message() + ": a keeper already runs for " + keeper->dir_.root());
    return lock.error();
  }
  keeper->lock_.emplace(std::move(*lock));
  // The first sync happens as soon as the watch is set (run_once).
  return keeper;
}

Status Keeper::run(int stop_fd) {
  for (;;) {
    PP_ASSIGN_OR_RETURN(bool go_on, run_once(stop_fd, -1));
    if (!go_on)
      return ok_status();
  }
}

Result<bool> Keeper::run_once(int stop_fd, int timeout_ms) {
  bool due = false;
  if (!watch_) {
    auto watch = sys::DirChanges::open(dir_.pmu() + "/events");
    if (watch.ok()) {
      watch_.emplace(std::move(*watch));
      due = true;  // whatever happened while nothing watched
    }
  }
  int64_t start = sys::monotonic_ms();
  auto wake_by = [&](int64_t ms) {
    ms = std::max<int64_t>(ms, 0);
    if (timeout_ms < 0 || timeout_ms > ms)
      timeout_ms = int(std::min<int64_t>(ms, 1 << 30));
  };
  if (due)
    wake_by(0);
  if (!watch_)
    wake_by(kWatchRetryMs);  // no broker has published yet: look again
  if (retry_ms_ > 0)
    wake_by(retry_at_ms_ - start);
  pollfd fds[2] = {{stop_fd, POLLIN, 0}, {watch_ ? watch_->fd() : -1, POLLIN, 0}};
  if (auto ready = sys::wait_for(fds, timeout_ms); !ready.ok())
    return ready.error();
  if (stop_fd >= 0 && (fds[0].revents & POLLIN))
    return false;
  if (watch_ && (fds[1].revents & POLLIN)) {
    PP_ASSIGN_OR_RETURN(sys::DirChanges::Drained drained, watch_->read());
    if (drained.gone)
      watch_.reset();
    due |= drained.changed || drained.gone;
  }
  if (retry_ms_ > 0 && sys::monotonic_ms() >= retry_at_ms_)
    due = true;
  if (due)
    (void)sync();
  return true;
}

Status Keeper::sync() {
  bool lost = false;
  Status synced = sync_once(&lost);
  if (!synced.ok() && lost) {
    backend_.reset();
    synced = sync_once(&lost);
  }
  if (synced.ok()) {
    if (retry_ms_ > 0)
      log("the broker answers again; keeping " + std::to_string(kept_buffers()) + " buffer(s) of " +
          std::to_string(kept_events()) + " event(s)");
    retry_ms_ = 0;
    return synced;
  }
  if (retry_ms_ == 0)
    log(synced.error().message() + "; keeping the " + std::to_string(kept_buffers()) +
        " buffer(s) held, trying again");
  backend_.reset();
  retry_ms_ = retry_ms_ == 0 ? kFirstRetryMs : std::min(retry_ms_ * 2, kMaxRetryMs);
  retry_at_ms_ = sys::monotonic_ms() + retry_ms_;
  return synced;
}

Status Keeper::sync_once(bool* lost) {
  *lost = false;
  if (!backend_) {
    persistent::BackendOptions options;
    options.run_dir = dir_.root();
    options.keep = true;
    backend_ = std::make_unique<persistent::BrokerBackend>(options);
    registered_ = false;
  }
  auto listed = backend_->list(false, nullptr);
  if (!listed.ok()) {
    *lost = connection_lost(listed.error());
    return listed.error();
  }
  std::map<uint64_t, const persistent::EventInfo*> running;
  // An ftrace-backend event is none of the keeper's: its records outlive
  // the broker in its ftrace instance, and its shared rings die with the
  // broker that writes them (the next one writes new ones), so a mapping
  // of one keeps nothing.
  for (const persistent::EventInfo& e : *listed)
    if (e.state == "running" && !e.cpus.empty() && e.ring != persistent::kRingFtrace)
      running[e.id] = &e;
  for (auto it = kept_.begin(); it != kept_.end();) {
    if (running.count(it->first)) {
      ++it;
      continue;
    }
    log("event " + std::to_string(it->first) + " is gone: releasing its " +
        std::to_string(it->second.size()) + " mapping(s)");
    it = kept_.erase(it);
  }
  for (const auto& [id, event] : running) {
    auto found = kept_.find(id);
    bool same = found != kept_.end() && found->second.size() == event->cpus.size() &&
                !event->perf_ids.empty() &&
                std::all_of(event->perf_ids.begin(), event->perf_ids.end(),
                            [&](const persistent::CpuId& c) {
                              return std::any_of(found->second.begin(), found->second.end(),
                                                 [&](const KeptBuffer& b) {
                                                   return b.cpu == c.cpu && b.perf_id == c.id;
                                                 });
                            });
    if (same && registered_)
      continue;
    std::vector<KeptBuffer> now;
    bool renewed = false;
    for (int cpu : event->cpus) {
      auto buffer = backend_->open(id, cpu);
      if (!buffer.ok()) {
        if (connection_lost(buffer.error())) {
          *lost = true;
          return buffer.error();
        }
        log("cannot keep event " + std::to_string(id) + " on CPU " + std::to_string(cpu) + ": " +
            buffer.error().message());
        continue;
      }
      auto perf_id = sys::event_id(*kernel_, buffer->fd.get());
      KeptBuffer* old = nullptr;
      if (found != kept_.end())
        for (KeptBuffer& b : found->second)
          if (b.cpu == cpu && b.fd.valid())
            old = &b;
      if (old && perf_id.ok() && old->perf_id == *perf_id) {
        now.push_back(std::move(*old));  // the same kernel event: the mapping held stays
        continue;
      }
      auto mapping = kernel_->mmap(buffer->fd.get(), buffer->mmap_length, PROT_READ);
      if (!mapping.ok()) {
        log("cannot map event " + std::to_string(id) + "'s buffer on CPU " + std::to_string(cpu) +
            ": " + mapping.error().message());
        continue;
      }
      renewed = true;
      now.push_back({cpu, perf_id.ok() ? *perf_id : 0, std::move(buffer->fd), std::move(*mapping)});
    }
    if (renewed)
      log(std::string(found == kept_.end() ? "keeping" : "keeping anew (re-created)") + " event " +
          std::to_string(id) + " '" + event->name + "': " + std::to_string(now.size()) +
          " buffer(s)");
    kept_[id] = std::move(now);
  }
  registered_ = true;
  return ok_status();
}

}  // namespace pp::broker

#include "broker/log.h"

#include <unistd.h>

#include <ctime>

#include "sys/clock.h"

namespace pp::broker {

std::string describe_peer(const sys::PeerCredentials& peer) {
  return "uid " + std::to_string(peer.uid) + " (pid " + std::to_string(peer.pid) + ")";
}

int64_t BrokerLog::now_ms() const {
  if (options_.clock_ms)
    return options_.clock_ms();
  return sys::monotonic_ms();
}

void BrokerLog::emit(const std::string& line) {
  if (!options_.out)
    return;
  time_t t = ::time(nullptr);
  struct tm tm;
  char stamp[32];
  ::localtime_r(&t, &tm);
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string text = std::string(stamp) + " perf-persistent daemon[" + std::to_string(::getpid()) +
                     "]: " + line + "\n";
  if (bytes_ + text.size() > options_.max_bytes && options_.rotate) {
    Status rotated = options_.rotate();
    bytes_ = 0;
    if (!rotated.ok()) {
      // Cannot rotate: stop writing rather than grow without bound.
      std::string why = std::string(stamp) + " perf-persistent daemon: the log is full and " +
                        rotated.error().message() + "; no more lines are written\n";
      *options_.out << why << std::flush;
      bytes_ = options_.max_bytes;
      options_.rotate = nullptr;
      options_.out = nullptr;
      return;
    }
  }
  *options_.out << text << std::flush;
  bytes_ += text.size();
}

void BrokerLog::write_always(const std::string& line) {
  emit(line);
}

void BrokerLog::write(const std::string& source, const std::string& line) {
  int64_t now = now_ms();
  Source& s = sources_[source];
  if (now - s.window_start >= options_.window_ms) {
    if (s.suppressed)
      emit(std::to_string(s.suppressed) + " more message" + (s.suppressed == 1 ? "" : "s") +
           " from " + source + " suppressed (at most " + std::to_string(options_.burst) + " per " +
           std::to_string(options_.window_ms / 1000) + " s)");
    s = Source{.window_start = now};
  }
  if (s.lines >= options_.burst) {
    s.suppressed++;
    suppressed_total_++;
    return;
  }
  s.lines++;
  emit(line);
  // Sources come and go with clients: forget the quiet ones.
  if (sources_.size() > 1024)
    std::erase_if(sources_, [&](const auto& entry) {
      return entry.second.suppressed == 0 && now - entry.second.window_start >= options_.window_ms;
    });
}

}  // namespace pp::broker

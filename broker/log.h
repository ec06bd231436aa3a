// The broker's log, bounded (Documentation/perf-persistent-daemon.txt, LIMITS):
// a client that floods the broker with refused requests must not fill the
// disk. Each source (a client's uid, or "accept") may write `burst` lines per
// window; the rest are dropped and counted, and the count is said once, as
// "... 1234 more messages from uid 1000 suppressed", when the source next
// writes after the window. Changes (created, killed) are never suppressed.
// Past `max_bytes` the `rotate` callback runs (the daemon moves broker.log
// to broker.log.1 and reopens it); without one, nothing is rotated.
//
//   BrokerLog log({.out = &std::cerr, .rotate = [&] { return rotate_log(path); }});
//   log.write("uid 1000", "refused to create for uid 1000 (pid 42): ...");
//   log.write_always("created event 3 'ctxsw' ...");
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <string_view>

#include "base/result.h"
#include "persistent/limits.h"
#include "sys/unix_socket.h"

namespace pp::broker {

// Who a peer is, in every log line and message: "uid 0 (pid 42)".
std::string describe_peer(const sys::PeerCredentials& peer);

struct BrokerLogOptions {
  std::ostream* out = nullptr;  // none: every line is dropped
  int burst = persistent::kLogBurst;
  int window_ms = persistent::kLogWindowMs;
  uint64_t max_bytes = persistent::kLogMaxBytes;
  uint64_t initial_bytes = 0;         // what the file held already
  std::function<Status()> rotate;     // may be empty
  std::function<int64_t()> clock_ms;  // monotonic; the steady clock when empty
};

class BrokerLog {
 public:
  explicit BrokerLog(BrokerLogOptions options) : options_(std::move(options)) {}

  // A line from `source`, rate-limited as above.
  void write(const std::string& source, const std::string& line);
  // A line that is always written (size-bounded only).
  void write_always(const std::string& line);

  uint64_t suppressed() const { return suppressed_total_; }
  uint64_t bytes() const { return bytes_; }

 private:
  struct Source {
    int64_t window_start = 0;
    int lines = 0;
    uint64_t suppressed = 0;
  };
  void emit(const std::string& line);
  int64_t now_ms() const;

  BrokerLogOptions options_;
  std::map<std::string, Source> sources_;
  uint64_t bytes_ = options_.initial_bytes;
  uint64_t suppressed_total_ = 0;
};

}  // namespace pp::broker

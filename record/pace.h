// How long a reader may sleep between two passes over its buffers.
//
// The kernel wakes a poller of a buffer each time a watermark's worth of it
// is new (the broker asks for a quarter of the buffer), but when several
// readers share one event, that wakeup reaches only one of them: perf_poll()
// takes and clears the buffer's single poll flag, so the first reader to
// poll sees POLLIN and the others sleep on until their timeout, while the
// writer, in overwrite mode, laps them. A reader therefore also wakes itself
// in time, from what its own passes saw:
//
//   - a buffer being written (bytes arrived since the previous pass): the
//     next pass is due when, at the rate seen, a quarter of that buffer
//     (PaceOptions::fill) is new again;
//   - a shared buffer, quiet or not: due before a burst starting at
//     PaceOptions::onset_rate could fill half of it, and never sooner than
//     PaceOptions::idle_floor_ms (an idle reader makes at most 1000 /
//     idle_floor_ms passes a second, each one poll() and one load of each
//     buffer's data_head);
//   - a private buffer (record's own tracking event) that is quiet: the
//     kernel's wakeup reaches its only reader, so only max_ms.
//
// Every timeout lies in [min_ms, max_ms]. The rate of a buffer is the last
// interval's, or half the previous estimate when that is more, so a pause
// between two bursts does not forget how fast the writer goes.
//
//   ReadPacer pacer({.max_ms = 250}, {{512 << 10, true}, {512 << 10, true}});
//   for (;;) {
//     poll(fds, pacer.timeout_ms());
//     drain();
//     pacer.observe({written_0, written_1}, now_ns());
//   }
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pp::record {

struct PaceOptions {
  int max_ms = 250;  // the longest sleep (record's flush interval)
  int min_ms = 1;    // the shortest
  // A pass is due when this fraction of a buffer being written is new.
  double fill = 0.25;
  // The rate, in bytes a second, a burst may start at in a quiet buffer:
  // about what one CPU writes tracepoint samples at.
  uint64_t onset_rate = uint64_t(128) << 20;
  int idle_floor_ms = 10;
};

struct PacedBuffer {
  uint64_t data_size = 0;  // bytes
  bool shared = true;      // other readers may take its wakeups
};

class ReadPacer {
 public:
  ReadPacer(PaceOptions options, std::vector<PacedBuffer> buffers);

  // A pass at `now_ns` (any monotonic clock, nanoseconds) found that the
  // writer of buffer i had written `written[i]` bytes in all (what the
  // reader read, lapped or dropped: every byte the writer wrote).
  // `written` has one entry per buffer, in the constructor's order.
  void observe(std::span<const uint64_t> written, int64_t now_ns);

  // The longest the reader may sleep now, in milliseconds.
  int timeout_ms() const { return timeout_ms_; }

  // The rate of buffer i as last estimated, bytes a second (for notes).
  double rate(size_t i) const { return state_[i].rate; }

 private:
  struct State {
    uint64_t written = 0;
    double rate = 0;  // bytes a second
  };
  int compute() const;

  PaceOptions options_;
  std::vector<PacedBuffer> buffers_;
  std::vector<State> state_;
  bool observed_ = false;
  int64_t last_ns_ = 0;
  int timeout_ms_;
};

}  // namespace pp::record

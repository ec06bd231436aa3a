#include "record/pace.h"

#include <algorithm>
#include <cmath>

namespace pp::record {

ReadPacer::ReadPacer(PaceOptions options, std::vector<PacedBuffer> buffers)
    : options_(options), buffers_(std::move(buffers)), state_(buffers_.size()) {
  options_.min_ms = std::max(options_.min_ms, 0);
  options_.max_ms = std::max(options_.max_ms, options_.min_ms);
  timeout_ms_ = compute();
}

void ReadPacer::observe(std::span<const uint64_t> written, int64_t now_ns) {
  size_t n = std::min(written.size(), state_.size());
  double seconds = double(now_ns - last_ns_) / 1e9;
  for (size_t i = 0; i < n; i++) {
    State& s = state_[i];
    uint64_t moved = written[i] >= s.written ? written[i] - s.written : 0;
    s.written = written[i];
    if (!observed_)
      continue;  // the first pass has no interval
    double now_rate = seconds > 0 ? double(moved) / seconds : 0;
    s.rate = std::max(now_rate, s.rate / 2);
    if (s.rate < 1)
      s.rate = 0;
  }
  observed_ = true;
  last_ns_ = now_ns;
  timeout_ms_ = compute();
}

int ReadPacer::compute() const {
  double due_ms = options_.max_ms;
  for (size_t i = 0; i < buffers_.size(); i++) {
    const PacedBuffer& b = buffers_[i];
    double rate = state_[i].rate;
    if (rate > 0)
      due_ms = std::min(due_ms, 1000.0 * options_.fill * double(b.data_size) / rate);
    if (b.shared && options_.onset_rate) {
      double onset_ms = 1000.0 * double(b.data_size) / 2 / double(options_.onset_rate);
      due_ms = std::min(due_ms, std::max(onset_ms, double(options_.idle_floor_ms)));
    }
  }
  int ms = int(std::floor(due_ms));
  return std::clamp(ms, options_.min_ms, options_.max_ms);
}

}  // namespace pp::record

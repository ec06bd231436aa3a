#include "report/time_order.h"

#include <algorithm>

namespace pp::report {
namespace {

// Bits of the time each pass of the radix sort orders by.
constexpr int kRadixBits = 12;
// At most this share of runs (one in kMergeRuns records starts a run) is
// merged; more take the radix sort.
constexpr size_t kMergeRuns = 32;

struct Key {
  uint64_t time;
  uint32_t index;
};

void merge_runs(std::vector<Key>& keys, std::vector<size_t> runs) {
  std::vector<Key> spare(keys.size());
  auto earlier = [](const Key& a, const Key& b) { return a.time < b.time; };
  runs.push_back(keys.size());
  while (runs.size() > 2) {
    std::vector<size_t> merged;
    for (size_t r = 0; r + 1 < runs.size(); r += 2) {
      size_t begin = runs[r], middle = runs[r + 1];
      size_t end = r + 2 < runs.size() ? runs[r + 2] : middle;
      merged.push_back(begin);
      // std::merge takes the first run's key on a tie: the order given.
      std::merge(keys.begin() + ptrdiff_t(begin), keys.begin() + ptrdiff_t(middle),
                 keys.begin() + ptrdiff_t(middle), keys.begin() + ptrdiff_t(end),
                 spare.begin() + ptrdiff_t(begin), earlier);
    }
    merged.push_back(keys.size());
    keys.swap(spare);
    runs = std::move(merged);
  }
}

void radix_sort(std::vector<Key>& keys, uint64_t low, uint64_t high) {
  std::vector<Key> spare(keys.size());
  std::vector<uint32_t> counts(size_t(1) << kRadixBits);
  const uint64_t span = high - low;
  const uint64_t mask = (uint64_t(1) << kRadixBits) - 1;
  for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += kRadixBits) {
    std::fill(counts.begin(), counts.end(), 0);
    for (const Key& k : keys)
      counts[size_t(((k.time - low) >> shift) & mask)]++;
    uint32_t at = 0;
    for (uint32_t& c : counts) {
      uint32_t here = c;
      c = at;
      at += here;
    }
    for (const Key& k : keys)
      spare[counts[size_t(((k.time - low) >> shift) & mask)]++] = k;
    keys.swap(spare);
  }
}

}  // namespace

void order_by_time(std::span<const uint64_t> times, std::vector<uint32_t>& order) {
  const size_t n = times.size();
  order.resize(n);
  std::vector<size_t> runs;  // where each run starts
  uint64_t low = UINT64_MAX, high = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t t = times[i];
    if (i == 0 || t < times[i - 1])
      runs.push_back(i);
    low = std::min(low, t);
    high = std::max(high, t);
  }
  if (runs.size() <= 1) {
    for (size_t i = 0; i < n; i++)
      order[i] = uint32_t(i);
    return;
  }
  std::vector<Key> keys(n);
  for (size_t i = 0; i < n; i++)
    keys[i] = {times[i], uint32_t(i)};
  if (runs.size() <= n / kMergeRuns)
    merge_runs(keys, std::move(runs));
  else
    radix_sort(keys, low, high);
  for (size_t i = 0; i < n; i++)
    order[i] = keys[i].index;
}

}  // namespace pp::report

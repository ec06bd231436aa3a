// order_by_time() against std::stable_sort on the shapes a trace has: in
// order, a few long runs (perf record -a's per-CPU drains) with times equal
// across runs, many short runs, shuffled, all equal, times that use all 64
// bits, empty and one record.
#include "report/time_order.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <numeric>

namespace pp::report {
namespace {

std::vector<uint32_t> reference(const std::vector<uint64_t>& times) {
  std::vector<uint32_t> order(times.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return times[a] < times[b]; });
  return order;
}

// Runs of `run` records per CPU, `cpus` CPUs in turn, each CPU's times
// rising by 1..`step` (so equal times across CPUs are common).
std::vector<uint64_t> drains(size_t n, size_t run, int cpus, uint64_t step, uint64_t seed) {
  std::vector<uint64_t> now(size_t(cpus), 1000000), times;
  uint64_t x = seed;
  auto next = [&] { return x = x * 6364136223846793005ULL + 1442695040888963407ULL; };
  for (int cpu = 0; times.size() < n; cpu = (cpu + 1) % cpus)
    for (size_t i = 0; i < run && times.size() < n; i++)
      times.push_back(now[size_t(cpu)] += 1 + (next() >> 33) % step);
  return times;
}

TEST(OrderByTime, AsStableSortOnEveryShape) {
  std::vector<std::vector<uint64_t>> inputs = {
      {},
      {5},
      drains(10000, 10000, 1, 3, 1),  // in order
      drains(50000, 700, 2, 3, 2),    // few runs: merged
      drains(50000, 700, 7, 1, 3),    // few runs, many ties
      drains(50000, 3, 4, 5, 4),      // many runs: radix
      drains(3001, 1, 3, 2, 5),       // many runs, odd count
      std::vector<uint64_t>(1000, 42),
  };
  std::vector<uint64_t> shuffled = drains(20000, 20000, 1, 100, 6);
  uint64_t x = 7;
  for (size_t i = shuffled.size() - 1; i > 0; i--) {
    x = x * 6364136223846793005ULL + 1;
    std::swap(shuffled[i], shuffled[(x >> 33) % (i + 1)]);
  }
  inputs.push_back(shuffled);
  inputs.push_back({UINT64_MAX, 0, UINT64_MAX - 1, 1ULL << 63, 0, UINT64_MAX});
  for (size_t i = 0; i < inputs.size(); i++) {
    std::vector<uint32_t> order;
    order_by_time(inputs[i], order);
    EXPECT_EQ(order, reference(inputs[i])) << "input " << i;
  }
}

}  // namespace
}  // namespace pp::report

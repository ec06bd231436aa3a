// The order of records by time, ties in the order given: report's default
// --sort. perf record -a writes each CPU's records in runs already in time
// order (a run per CPU for each drain of its ring), so a trace of a million
// records is a few hundred runs: those are merged, neighbour with
// neighbour, in a few passes. Input with many runs (records shuffled)
// takes a least-significant-digit radix sort of the times instead. Both
// are stable; a test compares them with std::stable_sort.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace pp::report {

// `order` becomes the indices of `times` in time order, ties by index.
void order_by_time(std::span<const uint64_t> times, std::vector<uint32_t>& order);

}  // namespace pp::report

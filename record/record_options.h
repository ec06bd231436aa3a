// The values of record's perf-style options that say how a long recording
// is cut and bounded, parsed as perf record parses them:
//
//   --switch-output            signal: a new file at each SIGUSR2
//   --switch-output=signal     the same
//   --switch-output=100M       a new file when the current one reaches 100 MiB
//                              (B, K, M, G: bytes, KiB, MiB, GiB)
//   --switch-output=30s        a new file every 30 seconds (s, m, h, d)
//   --max-size=2G              stop when the output reaches 2 GiB (a bare
//                              number is bytes)
//
// And the perf record options that make no sense for persistent events,
// each with the reason record refuses it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp::record {

struct SwitchOutput {
  enum class Mode { kNone, kSignal, kSize, kTime };
  Mode mode = Mode::kNone;
  uint64_t bytes = 0;                 // kSize
  std::chrono::milliseconds every{};  // kTime
};

// "signal", "<n>B|K|M|G" or "<n>s|m|h|d" (units in either case). EINVAL (a
// usage error) says what is accepted.
Result<SwitchOutput> parse_switch_output(std::string_view text);

// "<n>", "<n>B|K|M|G": bytes. EINVAL on anything else or on 0.
Result<uint64_t> parse_size(std::string_view text, std::string_view option);

// The name perf gives a file it switched away from: "<output>.<stamp>",
// the local time as YYYYMMDDHHMMSS and hundredths of a second
// ("perf.data.2026120313522589"). `after`, when not empty, is the previous
// stamp: the new one is made later than it (by a hundredth), so the names
// of files switched within the same hundredth stay distinct and in order.
std::string switch_stamp(std::chrono::system_clock::time_point now, const std::string& after);

// A perf record option record refuses, and why.
struct RefusedOption {
  char short_name;  // 0: none
  std::string_view long_name;
  bool takes_value;
  std::string_view reason;
};
extern const std::vector<RefusedOption> kRefusedOptions;

}  // namespace pp::record

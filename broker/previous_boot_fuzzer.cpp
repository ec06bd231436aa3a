// libFuzzer target: the black box's three parsers (broker/previous_boot.h,
// persistent/previous_boot.h), any bytes each: a clock marker as it comes
// out of a trace_marker record, a copy's kept.json, and a broker config
// file's [previous boot] section. The first byte picks the parser. What
// they return must hold what they promise: a marker has its time (and maps
// the time it was written at to its own realtime_ns); a kept.json's
// instance is one path component; the settings keep between 1 and
// kMaxKeptCopies copies and name SYSTEM:EVENT events. Seeds:
// tests/fuzz/corpus/previous_boot_fuzzer/.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "broker/previous_boot.h"
#include "persistent/previous_boot.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto marker = pp::persistent::parse_clock_marker(text);
      if (!marker)
        break;
      pp::persistent::MarkerClock clock;
      clock.add(1000, *marker);
      if (clock.wall_ns(1000) != marker->realtime_ns || clock.wall_ns(999).has_value())
        std::abort();
      break;
    }
    case 1: {
      auto boot = pp::persistent::parse_kept_boot(text, "kept.json");
      if (boot.ok() && (boot->instance.empty() || boot->instance.find('/') != std::string::npos ||
                        boot->instance == "." || boot->instance == ".."))
        std::abort();
      break;
    }
    default: {
      auto settings = pp::broker::parse_previous_boot_settings(text, "/etc/perf-persistent.conf");
      if (!settings.ok())
        break;
      if (settings->keep < 1 || settings->keep > pp::broker::kMaxKeptCopies)
        std::abort();
      for (const std::string& e : settings->events)
        if (e.find(':') == std::string::npos || e.find('/') != std::string::npos)
          std::abort();
      break;
    }
  }
  return 0;
}

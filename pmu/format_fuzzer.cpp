// libFuzzer target: any bytes as the contents of a sysfs format file
// (pmu/format.h). parse_format() must never crash; what it accepts must be a
// real format (a known target, at least one bit) that prints back to text
// which parses to the same format, and scattering any value into it must stay
// within its bits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "pmu/format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto format = pp::pmu::parse_format(text);
  if (!format.ok()) {
    if (format.error().code() != EINVAL || format.error().message().empty())
      std::abort();
    return 0;
  }
  if (format->bits == 0 || format->target.empty())
    std::abort();
  auto again = pp::pmu::parse_format(pp::pmu::format_string(*format));
  if (!again.ok() || again->bits != format->bits || again->word != format->word ||
      again->target != format->target)
    std::abort();

  uint64_t value = 0;
  std::memcpy(&value, data, size < sizeof(value) ? size : sizeof(value));
  uint64_t word = 0;
  pp::pmu::format_scatter(format->bits, value, &word);
  if (word & ~format->bits)
    std::abort();
  uint64_t max = pp::pmu::format_max_value(format->bits);
  word = 0;
  pp::pmu::format_scatter(format->bits, max, &word);
  if (word != format->bits)
    std::abort();
  return 0;
}

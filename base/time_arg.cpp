#include "base/time_arg.h"

#include <algorithm>
#include <string>

#include "base/strings.h"
#include "base/wall_time.h"

namespace pp {
namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;

bool all_digits(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// What a TIME may be, for a message.
std::string forms(TraceSeconds seconds) {
  std::string out =
      "give an ISO 8601 time (2026-12-03T14:05:00Z), a date (2026-12-03, from 00:00 UTC), ";
  if (seconds == TraceSeconds::kAccepted)
    return out +
           "a duration before now (90m, 24h, 7d; units ms, s, m, h, d, w), or seconds on the "
           "records' clock as the lines show them (18970.883561)";
  return out + "or a duration before now (90m, 24h, 7d; units ms, s, m, h, d, w)";
}

// perf's "seconds.fraction" (at most nine digits of fraction) into ns.
Result<uint64_t> parse_trace_seconds(std::string_view text) {
  size_t dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? "" : text.substr(dot + 1);
  auto seconds = parse_u64(whole, "seconds");
  if (!seconds.ok() || *seconds > UINT64_MAX / kNsPerSecond - 1 || fraction.size() > 9)
    return usage_error("'" + std::string(text) +
                       "' is not a time on the records' clock: give seconds as the lines show "
                       "them, at most nine digits after the point (18970.883561)");
  uint64_t ns = 0;
  for (size_t i = 0; i < 9; i++)
    ns = ns * 10 + uint64_t(i < fraction.size() ? fraction[i] - '0' : 0);
  return *seconds * kNsPerSecond + ns;
}

}  // namespace

Result<TimeArg> parse_time_arg(std::string_view text, uint64_t now_wall_ns, TraceSeconds seconds) {
  auto not_a_time = [&](std::string_view hint = "") {
    return usage_error("'" + std::string(text) + "' is not a time: " + forms(seconds) +
                       std::string(hint));
  };
  if (trim(text).empty())
    return not_a_time();
  // Text that starts as a date is a date, or a date and a time.
  if (text.size() >= 10 && text[4] == '-' && text[7] == '-') {
    PP_ASSIGN_OR_RETURN(uint64_t ns,
                        text.size() == 10 ? parse_wall_date(text) : parse_wall_time(text));
    return TimeArg{TimeBase::kWall, ns};
  }
  size_t dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? "" : text.substr(dot + 1);
  if (!whole.empty() && all_digits(whole) && all_digits(fraction)) {
    if (seconds == TraceSeconds::kRefused)
      return not_a_time(
          "; a number alone is seconds on a trace's clock, which this input does not have "
          "(a duration takes its unit: " +
          std::string(whole) + "s, " + std::string(whole) + "h, " + std::string(whole) + "d)");
    PP_ASSIGN_OR_RETURN(uint64_t ns, parse_trace_seconds(text));
    return TimeArg{TimeBase::kTraceClock, ns};
  }
  auto ms = parse_duration_ms(text);
  if (!ms.ok() && ms.error().code() != ERANGE)
    return not_a_time();
  // Further back than the epoch (or than a uint64_t holds): from the start.
  if (!ms.ok() || *ms > now_wall_ns / 1'000'000)
    return TimeArg{TimeBase::kWall, 0};
  return TimeArg{TimeBase::kWall, now_wall_ns - *ms * 1'000'000};
}

}  // namespace pp

#include "sys/clock.h"

#include <time.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/strings.h"

namespace pp::sys {
namespace {

// perf's short names for the lazy.
struct Alias {
  std::string_view name;
  int id;
};
constexpr Alias kAliases[] = {{"mono", 1}, {"raw", 4}, {"real", 0}, {"boot", 7}};

Result<uint64_t> now_ns(int clockid) {
  struct timespec ts = {};
  if (::clock_gettime(clockid_t(clockid), &ts) != 0)
    return errorf(errno, "clock_gettime(%s): %s", clock_name(clockid).c_str(),
                  std::strerror(errno));
  return uint64_t(ts.tv_sec) * 1000000000ULL + uint64_t(ts.tv_nsec);
}

}  // namespace

Result<int> parse_clockid(std::string_view text) {
  std::string_view name = text;
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string_view::npos) {
    auto n = parse_u64(name, "clock");
    if (n.ok())
      for (const ClockInfo& c : kClocks)
        if (uint64_t(c.id) == *n)
          return c.id;
  } else {
    if (name.size() > 6 && equal_ignoring_case(name.substr(0, 6), "CLOCK_"))
      name.remove_prefix(6);
    for (const ClockInfo& c : kClocks)
      if (equal_ignoring_case(name, c.name))
        return c.id;
    for (const Alias& a : kAliases)
      if (equal_ignoring_case(name, a.name))
        return a.id;
  }
  std::string names;
  for (const ClockInfo& c : kClocks)
    names += (names.empty() ? "" : ", ") + std::string(c.name) + " (" + std::to_string(c.id) + ")";
  return errorf(ErrorKind::kUsage, EINVAL, "unknown clock '%.*s'; the clocks are %s",
                int(text.size()), text.data(), names.c_str());
}

std::string clock_name(int clockid) {
  for (const ClockInfo& c : kClocks)
    if (c.id == clockid)
      return std::string(c.name);
  return std::to_string(clockid);
}

bool clock_is_nmi_safe(int clockid) {
  for (const ClockInfo& c : kClocks)
    if (c.id == clockid)
      return c.nmi_safe;
  return false;
}

Result<ClockPair> read_clock_pair(int clockid) {
  ClockPair best;
  best.clockid = clockid;
  best.window_ns = UINT64_MAX;
  for (int i = 0; i < 8; i++) {
    PP_ASSIGN_OR_RETURN(uint64_t before, now_ns(CLOCK_REALTIME));
    PP_ASSIGN_OR_RETURN(uint64_t clock, now_ns(clockid));
    PP_ASSIGN_OR_RETURN(uint64_t after, now_ns(CLOCK_REALTIME));
    if (after < before)  // the wall clock was set between the reads: try again
      continue;
    if (after - before < best.window_ns) {
      best.window_ns = after - before;
      best.wall_ns = before + (after - before) / 2;
      best.clock_ns = clock;
    }
  }
  if (best.window_ns == UINT64_MAX)
    return errorf(EAGAIN, "the wall clock kept stepping back while it was read with %s",
                  clock_name(clockid).c_str());
  return best;
}

Result<uint64_t> clock_resolution_ns(int clockid) {
  struct timespec res = {};
  if (::clock_getres(clockid_t(clockid), &res) != 0)
    return errorf(errno, "clock_getres(%s): %s", clock_name(clockid).c_str(), std::strerror(errno));
  return uint64_t(res.tv_sec) * 1000000000ULL + uint64_t(res.tv_nsec);
}

uint64_t realtime_ns() {
  struct timespec ts = {};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000ULL + uint64_t(ts.tv_nsec);
}

int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace pp::sys

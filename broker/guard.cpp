#include "broker/guard.h"

#include <linux/perf_event.h>

#include <algorithm>

#include "sys/ring.h"

namespace pp::broker {
namespace {

// Any writer moves data_head by less than this between two checks (1 TiB).
constexpr uint64_t kMaxHeadStep = uint64_t(1) << 40;
// time_enabled may lag the clock this much before the check calls it a
// disable (reading the clock and the event are not one instant).
constexpr int64_t kEnabledSlackNs = 50'000'000;

std::string with_error(std::string line, const Status& repaired) {
  if (!repaired.ok())
    line += " (the repair failed: " + repaired.error().message() + ")";
  return line;
}

// The first multiple of `interval_ms` after `now_ms`.
int64_t next_multiple(int64_t now_ms, int interval_ms) {
  return (now_ms / interval_ms + 1) * interval_ms;
}

}  // namespace

void GuardSchedule::tighten(int64_t now_ms, int min_ms) {
  min_ms = std::max(min_ms, 1);
  int64_t at = next_multiple(now_ms, min_ms);
  due_ms = active() ? std::min(due_ms, at) : at;
  interval_ms = min_ms;
}

void GuardSchedule::relax(int64_t now_ms, int max_ms) {
  if (!active())
    return;
  interval_ms = std::min(interval_ms * 2, std::max(max_ms, interval_ms));
  due_ms = next_multiple(now_ms, interval_ms);
}

std::string guarded_filter(const sys::EventAttr& attr, std::string_view filter) {
  if (filter.empty() && attr.attr.type == PERF_TYPE_TRACEPOINT)
    return kPassAllFilter;
  return std::string(filter);
}

sys::EventAttr guarded_attr(const sys::EventAttr& attr) {
  sys::EventAttr guarded = attr;
  if (!(attr.attr.sample_type & PERF_SAMPLE_READ))
    guarded.attr.read_format |= PERF_FORMAT_TOTAL_TIME_ENABLED;
  return guarded;
}

std::vector<std::string> check_buffer(sys::Kernel& kernel, const persistent::CpuBuffer& buffer,
                                      const sys::EventAttr& attr, persistent::Layout layout,
                                      bool broker_filter, GuardState& state, int64_t now_ns) {
  std::vector<std::string> found;
  int fd = buffer.fd.get();
  auto reading = sys::read_event(kernel, fd, attr.attr.read_format);
  if (!reading.ok())
    return found;
  uint64_t head = buffer.mapping.valid()
                      ? sys::load_data_head(
                            reinterpret_cast<const perf_event_mmap_page*>(buffer.mapping.data()))
                      : 0;
  if (!state.seen) {
    state = {.handed_out = state.handed_out,
             .seen = true,
             .count = reading->value,
             .time_enabled = reading->time_enabled.value_or(0),
             .head = head,
             .when_ns = now_ns};
    return found;
  }
  int64_t wall = now_ns - state.when_ns;

  if (!reading->time_enabled) {
    (void)sys::enable_event(kernel, fd);  // cannot tell: enable blindly, it is idempotent
  } else {
    uint64_t enabled = *reading->time_enabled - state.time_enabled;
    int64_t missing = wall - int64_t(enabled);
    if ((enabled == 0 && wall > 0) || missing > kEnabledSlackNs) {
      // An enabled event's time_enabled moves between two reads; a disabled
      // one's stands still.
      bool off = enabled == 0;
      if (!off) {
        auto again = sys::read_event(kernel, fd, attr.attr.read_format);
        off = again.ok() && again->time_enabled == reading->time_enabled;
      }
      std::string how_long = missing > kEnabledSlackNs
                                 ? " for about " + std::to_string(missing / 1000000) + " ms"
                                 : "";
      if (off)
        found.push_back(with_error(
            "disabled" + how_long + " (PERF_EVENT_IOC_DISABLE or a REFRESH limit); re-enabled",
            sys::enable_event(kernel, fd)));
      else
        found.push_back("disabled" + how_long + ", then enabled again by a holder");
    }
  }

  // The head, in the writer's direction of travel.
  uint64_t moved = layout == persistent::Layout::kBackward ? state.head - head : head - state.head;
  bool head_ok = moved < kMaxHeadStep;
  if (!head_ok)
    found.push_back(
        "data_head overwritten through a writable mapping; readers resynchronise, and the kernel "
        "rewrites it with its next record");

  if (reading->value < state.count) {
    found.push_back("count reset (PERF_EVENT_IOC_RESET); the count cannot be restored");
  } else if (head_ok && moved == 0 && !attr.attr.freq) {
    uint64_t counted = reading->value - state.count;
    uint64_t period = std::max<uint64_t>(attr.attr.sample_period, 1);
    if (counted >= 2 * period) {
      Status resumed = sys::resume_output(kernel, fd);
      if (resumed.ok())
        resumed = sys::set_period(kernel, fd, period);
      found.push_back(
          with_error(std::to_string(counted) +
                         " events counted and no record written (PERF_EVENT_IOC_PAUSE_OUTPUT or "
                         "PERF_EVENT_IOC_PERIOD); output resumed, period set back to " +
                         std::to_string(period),
                     resumed));
    }
  }

  if (!broker_filter && !state.filter_reported) {
    auto filtered = sys::has_filter(kernel, fd);
    if (filtered.ok() && *filtered) {
      state.filter_reported = true;
      found.push_back(
          "a filter was set (PERF_EVENT_IOC_SET_FILTER); the kernel cannot remove it: kill the "
          "event and create it again");
    }
  }

  state.count = reading->value;
  state.time_enabled = reading->time_enabled.value_or(0);
  if (head_ok)
    state.head = head;
  state.when_ns = now_ns;
  return found;
}

}  // namespace pp::broker

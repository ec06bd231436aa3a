#include "broker/guard.h"

#include <linux/perf_event.h>

#include <algorithm>

#include "sys/kernel.h"
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
    guarded.attr.read_format |=
        PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING | PERF_FORMAT_LOST;
  return guarded;
}

namespace {

// Samples counted but not written, or written but not counted, that the
// check lets pass: the count and data_head are two readings, and records
// being written between them are counted in one and not the other.
uint64_t sample_slack(uint64_t expected) {
  return std::max<uint64_t>(8, expected / 4);
}

std::string ids_text(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids)
    out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

}  // namespace

std::vector<std::string> check_buffer(sys::Kernel& kernel, const persistent::CpuBuffer& buffer,
                                      const sys::EventAttr& attr, persistent::Layout layout,
                                      bool broker_filter, bool is_context, GuardState& state,
                                      int64_t now_ns) {
  std::vector<std::string> found;
  int fd = buffer.fd.get();
  const perf_event_attr& a = attr.attr;
  bool tracepoint = a.type == PERF_TYPE_TRACEPOINT;
  // The head first, then the count: every sample the head shows is counted.
  uint64_t head = buffer.mapping.valid()
                      ? sys::load_data_head(
                            reinterpret_cast<const perf_event_mmap_page*>(buffer.mapping.data()))
                      : 0;
  auto reading = sys::read_event(kernel, fd, a.read_format);
  if (!reading.ok())
    return found;
  if (!state.seen) {
    std::vector<uint32_t> programs;
    if (tracepoint) {
      if (auto ids = sys::attached_bpf_programs(kernel, fd); ids.ok())
        programs = std::move(*ids);
    }
    state.seen = true;
    state.count = reading->value;
    state.time_enabled = reading->time_enabled.value_or(0);
    state.lost = reading->lost.value_or(0);
    state.head = head;
    state.when_ns = now_ns;
    state.bpf_known = std::move(programs);
    return found;
  }
  int64_t wall = now_ns - state.when_ns;
  uint64_t period = std::max<uint64_t>(a.freq ? a.sample_freq : a.sample_period, 1);
  bool sampling = a.freq ? a.sample_freq > 0 : a.sample_period > 0;
  // Setting the period restarts the event's count towards its next sample,
  // so it is set only where the check saw cause, or cannot see the period.
  bool reset_period = false;

  if (!reading->time_enabled) {
    (void)sys::enable_event(kernel, fd);           // cannot tell: enable blindly, it is idempotent
    reset_period = reading->value == state.count;  // stood still: perhaps a REFRESH limit
  } else {
    uint64_t enabled = *reading->time_enabled - state.time_enabled;
    int64_t missing = wall - int64_t(enabled);
    if ((enabled == 0 && wall > 0) || missing > kEnabledSlackNs) {
      // An enabled event's time_enabled moves between two reads; a disabled
      // one's stands still.
      bool off = enabled == 0;
      if (!off) {
        auto again = sys::read_event(kernel, fd, a.read_format);
        off = again.ok() && again->time_enabled == reading->time_enabled;
      }
      std::string how_long =
          " for about " + std::to_string(std::max<int64_t>(missing, 0) / 1000000) + " ms";
      // A REFRESH limit leaves an event that, enabled again, counts nothing
      // until its period is set.
      reset_period = true;
      if (off)
        found.push_back(with_error("disabled" + how_long +
                                       " (PERF_EVENT_IOC_DISABLE, or a PERF_EVENT_IOC_REFRESH "
                                       "limit); re-enabled, its period set again",
                                   sys::enable_event(kernel, fd)));
      else
        found.push_back("disabled" + how_long + ", then enabled again by a holder");
    }
  }

  // Whatever was seen, output resumed: a holder may have paused it for less
  // than an interval. Idempotent, and it leaves the count alone.
  Status resumed = sys::resume_output(kernel, fd);

  uint64_t lost = reading->lost.value_or(0) - std::min(reading->lost.value_or(0), state.lost);

  // The head, in the writer's direction of travel.
  uint64_t moved = layout == persistent::Layout::kBackward ? state.head - head : head - state.head;
  bool head_ok = moved < kMaxHeadStep;
  if (!head_ok)
    found.push_back(
        "data_head overwritten through a writable mapping; readers resynchronise, and the kernel "
        "rewrites it with its next record");

  sys::RingTally tally;
  if (head_ok && buffer.mapping.valid()) {
    std::span<const uint8_t> mapping(buffer.mapping.data(), buffer.mapping.size());
    if (auto geometry = sys::ring_geometry(mapping, sys::page_size()); geometry.ok())
      tally =
          sys::tally_records(mapping, *geometry,
                             layout == persistent::Layout::kBackward ? sys::RingLayout::kBackward
                                                                     : sys::RingLayout::kForward,
                             state.head, head);
  }
  lost = std::max(lost, tally.lost);
  if (lost > 0)
    found.push_back(with_error(std::to_string(lost) +
                                   " samples dropped by the kernel while the buffer's output was "
                                   "paused (PERF_EVENT_IOC_PAUSE_OUTPUT); output resumed",
                               resumed));

  // Whether the samples written can be set against the count: then a period
  // as the broker set it shows, and it is left alone.
  bool comparable = !is_context && sampling && !a.freq && head_ok &&
                    (tally.walked > 0 || tally.moved == 0) && tally.throttles == 0;
  if (!comparable)
    reset_period = true;
  if (reading->value < state.count) {
    found.push_back("count reset (PERF_EVENT_IOC_RESET); the count cannot be restored");
  } else if (comparable) {
    // The samples written since the last check, those the walk could not
    // reach (overwritten since) estimated at the rate of those it did.
    uint64_t written = tally.samples;
    if (tally.walked > 0 && tally.walked < tally.moved)
      written = uint64_t(double(tally.samples) * double(tally.moved) / double(tally.walked));
    uint64_t expected = (reading->value - state.count) / period;
    if (written + lost + sample_slack(expected) < expected) {
      Status period_set = sys::set_period(kernel, fd, period);
      reset_period = false;
      found.push_back(with_error(
          std::to_string(expected - written - lost) + " of " + std::to_string(expected) +
              " samples not written (PERF_EVENT_IOC_PERIOD raised, or output paused); period set "
              "back to " +
              std::to_string(period) + ", output resumed",
          period_set.ok() ? resumed : period_set));
    } else if (written > expected + sample_slack(expected))
      found.push_back(std::to_string(written - expected) + " more samples in the buffer than the " +
                      "event made (" + std::to_string(expected) +
                      "): another event's output goes into it (PERF_EVENT_IOC_SET_OUTPUT), and "
                      "its records mix with the event's for every reader; the broker cannot "
                      "stop it: kill the event and create it again");
  }

  if (reset_period && sampling)
    (void)sys::set_period(kernel, fd, period);

  if (tracepoint) {
    if (auto ids = sys::attached_bpf_programs(kernel, fd); ids.ok()) {
      std::vector<uint32_t> added;
      for (uint32_t id : *ids)
        if (std::find(state.bpf_known.begin(), state.bpf_known.end(), id) == state.bpf_known.end())
          added.push_back(id);
      if (!added.empty()) {
        state.bpf_known.insert(state.bpf_known.end(), added.begin(), added.end());
        found.push_back(
            std::string(added.size() == 1 ? "a BPF program (id " : "BPF programs (ids ") +
            ids_text(added) +
            ") attached to the tracepoint (PERF_EVENT_IOC_SET_BPF through a handed-out fd, or "
            "another tool on the same tracepoint): the samples it rejects are lost for every "
            "perf event on the tracepoint, other users' included; the broker cannot detach it "
            "(the kernel does when the event it was attached through is freed, which a holder's "
            "fd prevents): kill the event once its holders have closed their fds, and create it "
            "again");
      }
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
  state.lost = reading->lost.value_or(0);
  if (head_ok)
    state.head = head;
  state.when_ns = now_ns;
  return found;
}

}  // namespace pp::broker

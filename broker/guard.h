// What a holder of one of the broker's fds can change on the event behind it,
// and the broker's periodic check that finds it, undoes what can be undone
// and says what cannot. Mainline has no read-only perf fd: the fd a reader
// gets is the broker's own open file description, O_RDWR, so its ioctls act
// on the event for every reader. Documentation/perf-persistent-daemon.txt
// (TRUST MODEL) is the user's account of it.
//
//   at creation:  open guarded_attr(attr), set guarded_filter(attr, filter)
//   at a hand-out: the CPU's baseline taken again (if its fd never left the
//                 broker before), its holder noted, schedule.tighten(now)
//   when due:     for each CPU whose fd was handed out:
//                   check_buffer(kernel, buffer, attr, ..., state, now)
//                   -> what was found, one line each (already repaired)
//                 schedule.tighten(now) after a finding, else relax(now)
//
// Only a process the broker gave an fd can change an event (the broker
// changes none), so a buffer whose fd never left the broker is never
// checked: a broker nobody has read from wakes up for nothing. Once handed
// out, a buffer is checked for as long as the event lives, since nothing
// shows when the last copy of an fd is closed.
//
// Measured on Linux 6.18 (2 CPUs), before the resume, the period, the BPF
// query and the walk of the record headers were added to it: one check of
// one CPU (read(2) and at most three ioctls) cost about 3.5 us; the filter
// probe 1.5-3 us. The check as it is now has not been measured again.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "persistent/event_open.h"
#include "sys/kernel.h"
#include "sys/perf_attr.h"

namespace pp::broker {

// How often the broker checks an event whose fds it handed out, in
// milliseconds: every kGuardIntervalMs right after a hand-out or a finding,
// doubling after each check that finds nothing up to kGuardMaxIntervalMs. A
// tampering that can be undone is undone within the interval of the moment
// (plus the time to serve one request).
inline constexpr int kGuardIntervalMs = 250;
inline constexpr int kGuardMaxIntervalMs = 10'000;

// When one event is checked next. Due times are multiples of the interval
// on the monotonic clock, so events at the same interval share one wakeup.
struct GuardSchedule {
  int interval_ms = 0;  // 0: no fd of the event was handed out; never due
  int64_t due_ms = 0;   // monotonic ms

  bool active() const { return interval_ms > 0; }
  bool due(int64_t now_ms) const { return active() && now_ms >= due_ms; }
  // A hand-out or a finding: every `min_ms` again, the next check within
  // `min_ms` of `now_ms` (or sooner, when one was due sooner).
  void tighten(int64_t now_ms, int min_ms);
  // A check that found nothing: the interval doubles, up to `max_ms`.
  void relax(int64_t now_ms, int max_ms);
};

// The filter the broker sets on a tracepoint event created without one. It
// passes every hit (no task has pid -1), and a perf event takes a single
// filter: a second PERF_EVENT_IOC_SET_FILTER fails with EEXIST, so nobody
// holding the fd can filter the event for everyone.
inline constexpr const char* kPassAllFilter = "common_pid != -1";

// The filter to set on `attr`'s event: `filter`, or kPassAllFilter for a
// tracepoint event without one.
std::string guarded_filter(const sys::EventAttr& attr, std::string_view filter);

// `attr` with PERF_FORMAT_TOTAL_TIME_ENABLED and TOTAL_TIME_RUNNING in
// read_format, which let the check see a disabled event (time_enabled stops),
// and PERF_FORMAT_LOST (Linux 6.0+; persistent::open_per_cpu() drops it
// where the kernel refuses it), which counts the samples dropped while a
// holder paused the output; unchanged when the samples carry read values
// (PERF_SAMPLE_READ), whose layout it would change. No record the buffer
// holds changes otherwise.
sys::EventAttr guarded_attr(const sys::EventAttr& attr);

// Who received a buffer's fd: what a finding names.
struct GuardHolder {
  std::string who;  // "uid 0 (pid 42)", "uid 0 (pid 42, the keeper)"
  pid_t pid = 0;    // 0: unknown (a broker before this one)
};

// What the check keeps of one CPU's buffer between two checks.
struct GuardState {
  // Its fd left the broker (a reader's or the keeper's open, a handover, or
  // a predecessor that may have handed it out): a holder may change it, so
  // the broker checks it. Kept by check_buffer().
  bool handed_out = false;
  bool seen = false;
  uint64_t count = 0;
  uint64_t time_enabled = 0;
  uint64_t lost = 0;
  uint64_t head = 0;    // the last data_head that looked like the kernel's
  int64_t when_ns = 0;  // the caller's monotonic clock
  bool filter_reported = false;
  // BPF programs on the tracepoint when the fd first left (another tool's)
  // and those reported since.
  std::vector<uint32_t> bpf_known;
  // Every process that received the fd and lived during the last interval,
  // oldest first (at most kMaxGuardHolders): the broker keeps it, the check
  // leaves it alone.
  std::vector<GuardHolder> holders;
};

// The holders a buffer remembers; older ones are dropped first.
inline constexpr size_t kMaxGuardHolders = 16;

// Checks one CPU's buffer against what it was at the previous check and
// repairs what it can. At every check, whatever was found, the event's
// output is resumed (PERF_EVENT_IOC_PAUSE_OUTPUT 0: idempotent, it undoes a
// pause shorter than an interval). A sampling event's period is set
// (PERF_EVENT_IOC_PERIOD) only where the check saw cause (disabled, a REFRESH
// limit, fewer samples than the count makes) or cannot see the period (a
// frequency, a throttled interval, records the walk could not reach): setting
// it restarts the count towards the next sample, which at every check would
// starve an event whose period outlasts the interval. Found:
//   - disabled (PERF_EVENT_IOC_DISABLE, or a PERF_EVENT_IOC_REFRESH limit
//     reached): time_enabled did not move; re-enabled, and so for how long.
//     Disabled and enabled again between two checks: time_enabled fell
//     behind the clock; noted.
//   - samples the kernel dropped while the output was paused: PERF_FORMAT_LOST
//     and the PERF_RECORD_LOST the kernel writes once it resumes.
//   - fewer samples written than the count makes (a raised period): counted
//     events over the broker's period against the samples walked in the
//     buffer since the last check (sys::tally_records); more samples written
//     than counted: another event's output goes into this buffer
//     (PERF_EVENT_IOC_SET_OUTPUT), which cannot be undone here.
//   - a BPF program attached to the tracepoint since the fd first left
//     (PERF_EVENT_IOC_QUERY_BPF): it drops samples for every perf event on
//     the tracepoint; the kernel detaches it only when the event it came
//     through is freed, which its holder's fd prevents: reported once.
//   - the count went down (PERF_EVENT_IOC_RESET): cannot be undone; noted.
//   - a filter set although the broker set none (only where the event type
//     takes filters but the broker could not set kPassAllFilter): cannot be
//     removed; noted once.
//   - data_head moved against the layout, or by more than any writer could
//     (a writable mapping scribbled on the control page): the kernel
//     rewrites it with its next record; noted.
// A context stream (`is_context`) has no samples to count: only its enabling
// and output are checked. The first call only records the state. Returns
// one line per finding, each saying what was done.
std::vector<std::string> check_buffer(sys::Kernel& kernel, const persistent::CpuBuffer& buffer,
                                      const sys::EventAttr& attr, persistent::Layout layout,
                                      bool broker_filter, bool is_context, GuardState& state,
                                      int64_t now_ns);

}  // namespace pp::broker

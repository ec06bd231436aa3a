#include "persistent/sample_layout.h"

namespace pp::persistent {

bool is_lean(const sys::EventAttr& attr) {
  const perf_event_attr& a = attr.attr;
  if (a.type != PERF_TYPE_TRACEPOINT)
    return false;
  // What a reader cannot supply (IP can be: as 0, for events made lean
  // without it).
  constexpr uint64_t kKernelOnly = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
  if ((a.sample_type & kKernelOnly) != kKernelOnly)
    return false;
  // The IP alone missing is no lean event: an ftrace-backend event's
  // records have none to give (the broker lays them out as
  // IDENTIFIER|TID|TIME|CPU|PERIOD|RAW, complete), and a reader adds a
  // zero IP only with the other fields.
  uint64_t supplied = kReaderSuppliedSampleType & ~uint64_t(PERF_SAMPLE_IP);
  if (a.freq)  // the period varies: only the kernel knows it
    supplied &= ~uint64_t(PERF_SAMPLE_PERIOD);
  return (a.sample_type & supplied) != supplied;
}

sys::EventAttr completed_attr(const sys::EventAttr& attr) {
  if (!is_lean(attr))
    return attr;
  sys::EventAttr full = attr;
  full.attr.sample_type |= kReaderSuppliedSampleType;
  return full;
}

}  // namespace pp::persistent

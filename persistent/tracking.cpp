#include "persistent/tracking.h"

#include <linux/perf_event.h>

#include <algorithm>

#include "persistent/sample_layout.h"
#include "sys/clock.h"

namespace pp::persistent {

ContextKey context_key(const sys::EventAttr& served) {
  const perf_event_attr& a = served.attr;
  ContextKey key;
  key.mmap = (a.sample_type & PERF_SAMPLE_IP) && a.type != PERF_TYPE_TRACEPOINT;
  key.use_clockid = a.use_clockid;
  key.clockid = a.use_clockid ? uint32_t(a.clockid) : 0;
  return key;
}

ContextKey key_of_context(const sys::EventAttr& context) {
  const perf_event_attr& a = context.attr;
  ContextKey key;
  key.mmap = a.mmap;
  key.use_clockid = a.use_clockid;
  key.clockid = a.use_clockid ? uint32_t(a.clockid) : 0;
  return key;
}

std::string context_name(const sys::EventAttr& attr) {
  ContextKey key = key_of_context(attr);
  std::string name = key.mmap ? "[context-mmap" : "[context";
  // Events on the default clock (sys::kDefaultClockId) share the plain name.
  if (key.use_clockid && key.clockid != uint32_t(sys::kDefaultClockId))
    name += "-clock" + std::to_string(key.clockid);
  return name + "]";
}

sys::EventAttr context_attr(const ContextKey& key, Layout layout) {
  sys::EventAttr attr;
  perf_event_attr& a = attr.attr;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_DUMMY;
  a.size = sys::kAttrSizeVer7;
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
  a.sample_id_all = 1;
  a.comm = 1;
  a.comm_exec = 1;
  a.task = 1;
  a.mmap = key.mmap;
  a.use_clockid = key.use_clockid;
  a.clockid = int32_t(key.clockid);
  a.exclude_guest = 1;
  a.write_backward = layout == Layout::kBackward;
  return attr;
}

bool wants_context(const sys::EventAttr& served) {
  const perf_event_attr& a = served.attr;
  // A lean event's readers give its records the stream's ids (sample_layout.h).
  return a.sample_id_all &&
         ((a.sample_type & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID)) || is_lean(served));
}

const EventInfo* find_context(const std::vector<EventInfo>& events, const sys::EventAttr& served) {
  ContextKey key = context_key(served);
  for (const EventInfo& e : events)
    if (e.is_context && key_of_context(e.attr) == key)
      return &e;
  return nullptr;
}

uint64_t next_context_id(const std::vector<EventInfo>& events) {
  uint64_t next = kFirstContextId;
  for (const EventInfo& e : events)
    if (e.is_context)
      next = std::max(next, e.id + 1);
  return next;
}

bool context_in_use(const std::vector<EventInfo>& events, uint64_t id) {
  return std::any_of(events.begin(), events.end(),
                     [&](const EventInfo& e) { return !e.is_context && e.context == id; });
}

}  // namespace pp::persistent

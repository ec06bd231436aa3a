// Breakpoint events: mem:ADDR[/LEN][:rwx] (perf's
// parse_events_add_breakpoint()).
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>

#include "parse/resolver.h"

namespace pp::parse {

// PERF_TYPE_BREAKPOINT at bp_addr; the access defaults to rw, the length to
// 4 bytes (sizeof(long) for x); sample_period 1, as perf.
Status Resolver::add_breakpoint(const EventDef& def) {
  uint32_t bp_type = 0;
  if (def.bp_access) {
    const Word& access = *def.bp_access;
    for (char c : access.text) {
      uint32_t bit = c == 'r' ? HW_BREAKPOINT_R : c == 'w' ? HW_BREAKPOINT_W : HW_BREAKPOINT_X;
      if (bp_type & bit)
        return fail(
            access.col, EINVAL,
            "'" + std::string(1, c) + "' is given twice in breakpoint access '" + access.text + "'",
            "the access is r, w, x or a combination such as rw");
      bp_type |= bit;
    }
  }
  if (!bp_type)
    bp_type = HW_BREAKPOINT_R | HW_BREAKPOINT_W;
  uint64_t len = def.bp_len;
  if (!len)
    len = bp_type == HW_BREAKPOINT_X ? uint64_t(sizeof(long)) : uint64_t(HW_BREAKPOINT_LEN_4);
  Evsel& e = new_evsel("breakpoint");
  e.spec.attr.attr.type = PERF_TYPE_BREAKPOINT;
  e.spec.attr.attr.bp_addr = def.name.num;
  e.spec.attr.attr.bp_len = len;
  e.spec.attr.attr.bp_type = bp_type;
  e.spec.attr.attr.sample_period = 1;
  return ok_status();
}

}  // namespace pp::parse

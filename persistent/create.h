// The one create path (Documentation/architecture.txt): every rule a `create -e EVENT` request
// must pass and every choice made for it, whichever backend then makes the
// event. Each backend calls plan_create() and only does its own mechanics
// with the plan: the broker opens and maps the event on each CPU and
// registers it (persistent/event_open.h), the kernel backend opens it on each
// CPU and makes it persistent with PERF_EVENT_IOC_DETACH.
//
//   CreateContext context{.resolver = resolver, .sysfs = &sysfs,
//                         .layout = Layout::kBackward,
//                         .existing = [&] { return backend_events(); }};
//   PP_ASSIGN_OR_RETURN(CreatePlan plan, plan_create(request, context));
//   ... open plan.attr on each of plan.cpus, set plan.filter ...
//
// The rules, in the order they are checked (the first one broken is the
// message; all are EINVAL but a taken name, EEXIST):
//   --name   when given: 1 to 64 of [A-Za-z0-9_.-], not "." or "..", not only
//            digits (persistent/names.h)
//   -m       0 is the default (kDefaultPages); else a power of two from 1 to
//            kMaxPages, or, where the backend's buffers have one size (the
//            seed kernel's 512 KiB), that size
//   -e       present, and one ordinary event as parse/ reads it (EventResolver)
//   -C       "" is every online CPU in the PMU's cpumask; else each CPU listed
//            must be online and in the cpumask
//   name     not taken by an existing event, the default name included
//
// The attr each CPU opens is what `perf record -a` would open: tracepoints
// sample every event (sample_period 1), other events sample at 4000 Hz
// (freq 1) unless the event string chose a period or frequency; sample_type
// IP|TID|TIME|CPU|PERIOD|IDENTIFIER, but IP|TID|TIME|RAW for tracepoints (PERIOD
// too when sampling by frequency): the readers supply the rest
// (persistent/sample_layout.h); sample_id_all; enabled from the start; no
// inherit; write_backward for a backward layout.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "persistent/event.h"
#include "sys/kernel.h"
#include "sys/tree.h"

namespace pp::persistent {

// One parsed event.
struct ResolvedEvent {
  sys::EventAttr attr;
  std::string tracepoint;     // "sys:event" for a tracepoint, else ""
  std::string pmu;            // "tracepoint", "software", or the sysfs PMU's name
  std::vector<int> pmu_cpus;  // the PMU's cpumask; empty means every CPU
};

// Turns an event string into one event. EINVAL for anything that does not
// parse, with the parser's located message; EINVAL too for a list or group
// of several events (create makes one at a time) and for an event of the
// persistent PMU itself.
class EventResolver {
 public:
  virtual ~EventResolver() = default;
  virtual Result<ResolvedEvent> resolve(std::string_view text) = 0;
};

// What the create path needs from the backend it serves.
struct CreateContext {
  EventResolver* resolver = nullptr;  // null: EINVAL "no event parser to create with"
  const sys::Tree* sysfs = nullptr;   // <sysfs>/devices/system/cpu/online; required
  // How the backend's buffers are written: the broker asks for backward
  // (write_backward), the seed kernel's are forward.
  Layout layout = Layout::kBackward;
  // The one buffer size the backend has, in data pages per CPU (the seed
  // kernel's), or 0 when -m chooses it.
  uint64_t fixed_pages = 0;
  // The events there are now, for the names taken; asked for only once the
  // request itself has passed. Null means none.
  std::function<Result<std::vector<EventInfo>>()> existing;
};

// What to make: the request checked, its event resolved, its CPUs chosen.
struct CreatePlan {
  std::string event;       // the event string, as given
  std::string name;        // --name or the tracepoint's name; "" means the id,
                           // which the backend learns only as it makes the event
  sys::EventAttr attr;     // sampling_attr() of the event, for context.layout
  std::vector<int> cpus;   // ascending
  uint64_t pages = 0;      // data pages per CPU
  std::string filter;      // "" for none
  std::string tracepoint;  // "sys:event" for a tracepoint, else "" (ResolvedEvent)
};

// Refuses `text` (an event string, spaces_allowed false; a filter, true)
// when it holds a NUL, a control character or, unless allowed, a space: a
// usage error (EINVAL) saying what, where and why.
Status check_printable(std::string_view what, std::string_view text, bool spaces_allowed);

// Checks `request` against the rules above and plans it.
Result<CreatePlan> plan_create(const CreateRequest& request, const CreateContext& context);

// Plans an event that was made before, to make it again (the broker's
// restart): its name, pages and filter are kept as saved, its event string is
// resolved again and its CPUs checked against the online ones now.
Result<CreatePlan> plan_recreate(const EventInfo& saved, const CreateContext& context);

// The attr that is opened on each CPU: `event.attr` with the defaults above.
sys::EventAttr sampling_attr(const ResolvedEvent& event, Layout layout);

// The online CPUs, from <sysfs>/devices/system/cpu/online ("0-1\n").
Result<std::vector<int>> online_cpus(const sys::Tree& sysfs);

// The CPUs an event is created on: every online CPU (within the PMU's
// cpumask, when it has one) when `requested` is "", else the requested list,
// each of which must be online and in the cpumask. EINVAL says which is not.
Result<std::vector<int>> choose_cpus(std::string_view requested, const std::vector<int>& online,
                                     const std::vector<int>& pmu_cpus);

// -m: a power of two from 1 to kMaxPages. EINVAL otherwise.
Status validate_pages(uint64_t pages);

}  // namespace pp::persistent

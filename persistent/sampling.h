// From an event string to open, mapped, always-on per-CPU buffers: what the
// broker (and the kernel backend, before DETACH) does for `create -e EVENT`.
//
// The event string goes through parse/ behind EventResolver, so the broker
// never turns a client's bytes into an attr any other way. sampling_attr()
// then applies what `perf record -a` would: tracepoints sample every event
// (sample_period 1), other events sample at 4000 Hz (freq 1) unless the event
// string chose a period or frequency; sample_type IP|TID|TIME|CPU|PERIOD|
// IDENTIFIER, plus RAW for tracepoints; sample_id_all; enabled from the
// start; no inherit; write_backward for the broker's backward layout.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "persistent/event.h"
#include "sys/explain.h"
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

// Turns an event string into one event. A usage error for anything that does
// not parse, with the parser's located message; a usage error too for a list or group
// of several events (create makes one at a time) and for an event of the
// persistent PMU itself.
class EventResolver {
 public:
  virtual ~EventResolver() = default;
  virtual Result<ResolvedEvent> resolve(std::string_view text) = 0;
};

// The attr that is opened on each CPU: `event.attr` with the defaults above.
sys::EventAttr sampling_attr(const ResolvedEvent& event, Layout layout);

// The online CPUs, from <sysfs>/devices/system/cpu/online ("0-1\n").
Result<std::vector<int>> online_cpus(const sys::Tree& sysfs);

// The CPUs an event is created on: every online CPU (within the PMU's
// cpumask, when it has one) when `requested` is "", else the requested list,
// each of which must be online and in the cpumask. A usage error (EINVAL)
// says which is not.
Result<std::vector<int>> choose_cpus(std::string_view requested, const std::vector<int>& online,
                                     const std::vector<int>& pmu_cpus);

// -m: a power of two from 1 to kMaxPages. A usage error (EINVAL) otherwise.
Status validate_pages(uint64_t pages);

// One CPU's open event and its read-only mapping.
struct CpuBuffer {
  int cpu = 0;
  sys::Fd fd;
  sys::Mapping mapping;
};

struct OpenedEvent {
  std::vector<CpuBuffer> buffers;
  sys::EventAttr attr;  // as opened (write_backward cleared by the fallback)
  Layout layout = Layout::kBackward;
  std::string note;  // set when the layout fell back to forward
};

// Opens `attr` on each CPU (pid -1), sets `filter` (PERF_EVENT_IOC_SET_FILTER)
// when not empty, and maps 1 + `pages` pages PROT_READ, so the kernel runs the
// buffer in overwrite mode. When the kernel refuses write_backward with EINVAL
// (before Linux 4.7) it opens forward-written buffers instead and says so in
// `note`. `what` names the event in errors; a refusal is kernel_refusal()'s,
// except that a filter the kernel calls invalid is the request's fault (usage).
Result<OpenedEvent> open_per_cpu(sys::Kernel& kernel, const sys::EventAttr& attr,
                                 const std::vector<int>& cpus, uint64_t pages,
                                 std::string_view filter, std::string_view what,
                                 const sys::ExplainEnv& env = {});

// A kernel refusal as the user sees it: kind refused, the code the kernel
// gave, and sys::explain()'s message (what failed, on what, why, what to try).
Error kernel_refusal(const Error& error, const sys::FailedCall& call,
                     const sys::ExplainEnv& env = {});

// read(2) of an event's count (read_format 0: one u64).
Result<uint64_t> read_count(sys::Kernel& kernel, int fd);

}  // namespace pp::persistent

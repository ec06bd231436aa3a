// The kernel calls behind a persistent event's creation, for both backends:
// opening the ordinary perf event on each CPU, its tracepoint filter, the
// broker's read-only mappings, counts, and how the kernel's refusals read.
// What to open (attr, CPUs, pages, filter) is decided before, by the one
// create path (persistent/create.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "persistent/event.h"
#include "sys/explain.h"
#include "sys/kernel.h"

namespace pp::persistent {

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

// The broker's mechanics: opens `attr` on each CPU (pid -1), sets `filter`
// (apply_filter()) and maps 1 + `pages` pages PROT_READ, so the kernel runs
// the buffer in overwrite mode. When the kernel refuses write_backward with
// EINVAL (before Linux 4.7) it opens forward-written buffers instead and says
// so in `note`; when it refuses PERF_FORMAT_LOST in read_format with EINVAL
// (before Linux 6.0) it opens without it (`attr` says what was opened). `what` names the event in
// errors; a refusal is kernel_refusal()'s. Unless `attr` chose a wakeup of its own, readers are
// woken each time a quarter of the buffer is new (wakeup_watermark(); the
// kernel's default is half).
Result<OpenedEvent> open_per_cpu(sys::Kernel& kernel, const sys::EventAttr& attr,
                                 const std::vector<int>& cpus, uint64_t pages,
                                 std::string_view filter, std::string_view what,
                                 const sys::ExplainEnv& env = {});

// `attr` with the wakeup the broker's buffers use: unless it has one already
// (wakeup_events or watermark), watermark set and wakeup_watermark a quarter
// of `pages` pages. The buffers are in overwrite mode, so a woken reader has
// what is left of the buffer before the writer laps it: three quarters, not
// the half the kernel's default watermark leaves.
sys::EventAttr wakeup_watermark(const sys::EventAttr& attr, uint64_t pages);

// Sets a tracepoint filter on `fd` (PERF_EVENT_IOC_SET_FILTER); nothing when
// `filter` is "". A filter the kernel calls invalid is the request's fault:
// EINVAL, "the filter 'common_pid != x' was refused: <the explanation>".
// Any other refusal is kernel_refusal()'s. `call` says what was opened (event
// and CPU); the ioctl fields are filled in here.
Status apply_filter(sys::Kernel& kernel, int fd, std::string_view filter, sys::FailedCall call,
                    const sys::ExplainEnv& env = {});

// A kernel refusal as the user sees it: kind refused, the code the kernel
// gave, and sys::explain()'s message (what failed, on what, why, what to try).
Error kernel_refusal(const Error& error, const sys::FailedCall& call,
                     const sys::ExplainEnv& env = {});

// read(2) of an event's count (read_format 0: one u64).
Result<uint64_t> read_count(sys::Kernel& kernel, int fd);

}  // namespace pp::persistent

#include "persistent/event_open.h"

#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

namespace pp::persistent {

Error kernel_refusal(const Error& error, const sys::FailedCall& call, const sys::ExplainEnv& env) {
  return Error(ErrorKind::kRefused, error.code(), sys::explain(error, call, env).message());
}

Status apply_filter(sys::Kernel& kernel, int fd, std::string_view filter, sys::FailedCall call,
                    const sys::ExplainEnv& env) {
  if (filter.empty())
    return ok_status();
  Status set = sys::set_filter(kernel, fd, std::string(filter));
  if (set.ok())
    return set;
  call.call = sys::PerfCall::kIoctl;
  call.request = PERF_EVENT_IOC_SET_FILTER;
  Error e = kernel_refusal(set.error(), call, env);
  if (set.error().code() == EINVAL)  // a bad filter is the request's fault
    return usage_error("the filter '" + std::string(filter) + "' was refused: " + e.message());
  return e;
}

sys::EventAttr wakeup_watermark(const sys::EventAttr& attr, uint64_t pages) {
  sys::EventAttr woken = attr;
  if (attr.attr.watermark || attr.attr.wakeup_events || pages == 0)
    return woken;
  woken.attr.watermark = 1;
  woken.attr.wakeup_watermark =
      uint32_t(std::min<uint64_t>(pages * sys::page_size() / 4, UINT32_MAX));
  return woken;
}

Result<OpenedEvent> open_per_cpu(sys::Kernel& kernel, const sys::EventAttr& attr,
                                 const std::vector<int>& cpus, uint64_t pages,
                                 std::string_view filter, std::string_view what,
                                 const sys::ExplainEnv& env) {
  OpenedEvent opened;
  opened.attr = wakeup_watermark(attr, pages);
  opened.layout = attr.attr.write_backward ? Layout::kBackward : Layout::kForward;
  size_t length = (1 + pages) * sys::page_size();
  for (int cpu : cpus) {
    sys::FailedCall call{
        .call = sys::PerfCall::kOpen, .event = std::string(what), .cpu = cpu, .attr = opened.attr};
    auto fd = kernel.perf_event_open(opened.attr, -1, cpu, -1, 0);
    if (!fd.ok() && fd.error().code() == EINVAL && opened.attr.attr.write_backward &&
        opened.buffers.empty()) {
      sys::EventAttr forward = opened.attr;
      forward.attr.write_backward = 0;
      auto retry = kernel.perf_event_open(forward, -1, cpu, -1, 0);
      if (retry.ok()) {
        opened.attr = forward;
        opened.layout = Layout::kForward;
        opened.note =
            "this kernel refuses write_backward (it came in Linux 4.7): the buffers are "
            "forward-written";
        fd = std::move(retry);
      }
    }
    if (!fd.ok() && fd.error().code() == EINVAL &&
        (opened.attr.attr.read_format & PERF_FORMAT_LOST) && opened.buffers.empty()) {
      sys::EventAttr without = opened.attr;  // PERF_FORMAT_LOST came in Linux 6.0
      without.attr.read_format &= ~uint64_t(PERF_FORMAT_LOST);
      auto retry = kernel.perf_event_open(without, -1, cpu, -1, 0);
      if (retry.ok()) {
        opened.attr = without;
        fd = std::move(retry);
      }
    }
    if (!fd.ok())
      return kernel_refusal(fd.error(), call, env);
    PP_RETURN_IF_ERROR(apply_filter(kernel, fd->get(), filter, call, env));
    auto mapping = kernel.mmap(fd->get(), length, PROT_READ);
    if (!mapping.ok()) {
      call.call = sys::PerfCall::kMmap;
      call.length = length;
      call.prot = PROT_READ;
      return kernel_refusal(mapping.error(), call, env);
    }
    opened.buffers.push_back({cpu, std::move(*fd), std::move(*mapping)});
  }
  return opened;
}

Result<uint64_t> read_count(sys::Kernel& kernel, int fd) {
  uint64_t count = 0;
  PP_ASSIGN_OR_RETURN(size_t n, kernel.read(fd, &count, sizeof(count)));
  if (n != sizeof(count))
    return errorf(EIO, "reading an event's count returned %zu bytes, not 8", n);
  return count;
}

}  // namespace pp::persistent

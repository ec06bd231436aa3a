#include "persistent/sampling.h"

#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>

#include "base/cpu_list.h"

namespace pp::persistent {

sys::EventAttr sampling_attr(const ResolvedEvent& event, Layout layout) {
  sys::EventAttr a = event.attr;
  perf_event_attr& attr = a.attr;
  bool tracepoint = attr.type == PERF_TYPE_TRACEPOINT;
  if (attr.size < sys::kAttrSizeVer7)
    attr.size = sys::kAttrSizeVer7;
  if (attr.sample_period == 0) {  // neither a period nor a frequency in the event string
    if (tracepoint) {
      attr.freq = 0;
      attr.sample_period = 1;
    } else {
      attr.freq = 1;
      attr.sample_freq = 4000;
    }
  }
  attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                     PERF_SAMPLE_PERIOD | PERF_SAMPLE_IDENTIFIER;
  if (tracepoint)
    attr.sample_type |= PERF_SAMPLE_RAW;
  attr.sample_id_all = 1;
  attr.disabled = 0;
  attr.inherit = 0;
  attr.write_backward = layout == Layout::kBackward ? 1 : 0;
  return a;
}

Result<std::vector<int>> online_cpus(const sys::Tree& sysfs) {
  auto text = sysfs.read("devices/system/cpu/online");
  if (!text.ok())
    return text.error().with_context("finding the online CPUs");
  auto cpus = parse_cpu_list(*text);
  if (!cpus.ok())
    return cpus.error().with_context(sysfs.path("devices/system/cpu/online"));
  return cpus;
}

Result<std::vector<int>> choose_cpus(std::string_view requested, const std::vector<int>& online,
                                     const std::vector<int>& pmu_cpus) {
  auto in = [](const std::vector<int>& set, int cpu) {
    return std::binary_search(set.begin(), set.end(), cpu);
  };
  std::vector<int> chosen;
  if (requested.empty()) {
    for (int cpu : online)
      if (pmu_cpus.empty() || in(pmu_cpus, cpu))
        chosen.push_back(cpu);
    if (chosen.empty())
      return errorf(ErrorKind::kUsage, EINVAL,
                    "none of the online CPUs (%s) is in the event's PMU cpumask (%s)",
                    format_cpu_list(online).c_str(), format_cpu_list(pmu_cpus).c_str());
    return chosen;
  }
  PP_ASSIGN_OR_RETURN(chosen, parse_cpu_list(requested));
  for (int cpu : chosen) {
    if (!in(online, cpu))
      return errorf(ErrorKind::kUsage, EINVAL,
                    "CPU %d is not online (online: %s); choose CPUs with -C from those", cpu,
                    format_cpu_list(online).c_str());
    if (!pmu_cpus.empty() && !in(pmu_cpus, cpu))
      return errorf(ErrorKind::kUsage, EINVAL, "CPU %d is not in the event's PMU cpumask (%s)", cpu,
                    format_cpu_list(pmu_cpus).c_str());
  }
  return chosen;
}

Status validate_pages(uint64_t pages) {
  if (pages == 0 || pages > kMaxPages || (pages & (pages - 1)) != 0)
    return errorf(ErrorKind::kUsage, EINVAL,
                  "-m %llu: the buffer size in pages must be a power of two from 1 to %llu "
                  "(the default is %llu)",
                  (unsigned long long)pages, (unsigned long long)kMaxPages,
                  (unsigned long long)kDefaultPages);
  return ok_status();
}

Error kernel_refusal(const Error& error, const sys::FailedCall& call, const sys::ExplainEnv& env) {
  return Error(ErrorKind::kRefused, error.code(), sys::explain(error, call, env).message());
}

Result<OpenedEvent> open_per_cpu(sys::Kernel& kernel, const sys::EventAttr& attr,
                                 const std::vector<int>& cpus, uint64_t pages,
                                 std::string_view filter, std::string_view what,
                                 const sys::ExplainEnv& env) {
  OpenedEvent opened;
  opened.attr = attr;
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
    if (!fd.ok())
      return kernel_refusal(fd.error(), call, env);
    if (!filter.empty()) {
      Status set = sys::set_filter(kernel, fd->get(), std::string(filter));
      if (!set.ok()) {
        call.call = sys::PerfCall::kIoctl;
        call.request = PERF_EVENT_IOC_SET_FILTER;
        Error e = kernel_refusal(set.error(), call, env);
        if (set.error().code() == EINVAL)  // a bad filter is the request's fault
          return usage_error("the filter '" + std::string(filter) +
                             "' was refused: " + e.message());
        return e;
      }
    }
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

#include "tests/kernel/report_capture.h"

#include <linux/perf_event.h>
#include <sched.h>
#include <sys/mman.h>

#include "base/cpu_list.h"
#include "sys/tree.h"

namespace pp::testing {

Result<PerCpuCapture> PerCpuCapture::open(const sys::EventAttr& attr, size_t data_pages,
                                          const std::string& filter) {
  sys::Kernel& kernel = sys::real_kernel();
  PerCpuCapture capture;
  PP_ASSIGN_OR_RETURN(std::string online,
                      sys::Tree(sys::kDefaultSysfsRoot).read("devices/system/cpu/online"));
  PP_ASSIGN_OR_RETURN(capture.cpus_, parse_cpu_list(online));
  sys::EventAttr disabled = attr;
  disabled.attr.disabled = 1;
  for (int cpu : capture.cpus_) {
    auto fd = kernel.perf_event_open(disabled, -1, cpu, -1, 0);
    if (!fd.ok())
      return std::move(fd).error().with_context("opening the event on CPU " + std::to_string(cpu));
    uint64_t id = 0;
    PP_RETURN_IF_ERROR(
        kernel.ioctl(fd->get(), PERF_EVENT_IOC_ID, reinterpret_cast<unsigned long>(&id)));
    if (!filter.empty())
      PP_RETURN_IF_ERROR(kernel.ioctl(fd->get(), PERF_EVENT_IOC_SET_FILTER,
                                      reinterpret_cast<unsigned long>(filter.c_str())));
    auto map = kernel.mmap(fd->get(), (1 + data_pages) * sys::page_size(), PROT_READ);
    if (!map.ok())
      return std::move(map).error().with_context("mapping the buffer of CPU " +
                                                 std::to_string(cpu));
    capture.ids_.push_back(id);
    capture.fds_.push_back(std::move(*fd));
    capture.maps_.push_back(std::move(*map));
  }
  for (const sys::Fd& fd : capture.fds_)
    PP_RETURN_IF_ERROR(kernel.ioctl(fd.get(), PERF_EVENT_IOC_ENABLE, 0));
  return capture;
}

Result<report::Bytes> PerCpuCapture::drain() {
  sys::Kernel& kernel = sys::real_kernel();
  for (const sys::Fd& fd : fds_)
    PP_RETURN_IF_ERROR(kernel.ioctl(fd.get(), PERF_EVENT_IOC_DISABLE, 0));
  report::Bytes out;
  for (size_t i = 0; i < maps_.size(); i++) {
    const auto* page = reinterpret_cast<const perf_event_mmap_page*>(maps_[i].data());
    uint64_t head = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
    uint64_t size = page->data_size;
    if (head > size)
      return errorf(EOVERFLOW,
                    "the ring of CPU %d wrapped (%llu bytes written into %llu); give the test a "
                    "bigger buffer",
                    cpus_[i], static_cast<unsigned long long>(head),
                    static_cast<unsigned long long>(size));
    const uint8_t* data = maps_[i].data() + page->data_offset;
    out.insert(out.end(), data, data + head);
  }
  return out;
}

Status run_on_cpu(int cpu, const std::function<void()>& fn) {
  cpu_set_t old_mask, mask;
  if (sched_getaffinity(0, sizeof(old_mask), &old_mask) != 0)
    return error_from_errno(errno, "sched_getaffinity");
  CPU_ZERO(&mask);
  CPU_SET(cpu, &mask);
  if (sched_setaffinity(0, sizeof(mask), &mask) != 0)
    return error_from_errno(errno, "pinning to CPU " + std::to_string(cpu));
  fn();
  if (sched_setaffinity(0, sizeof(old_mask), &old_mask) != 0)
    return error_from_errno(errno, "restoring the CPU mask");
  return ok_status();
}

sys::EventAttr tracepoint_attr(uint64_t id) {
  sys::EventAttr attr;
  attr.attr.type = PERF_TYPE_TRACEPOINT;
  attr.attr.size = sys::kAttrSizeVer7;
  attr.attr.config = id;
  attr.attr.sample_period = 1;
  attr.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                          PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW | PERF_SAMPLE_IDENTIFIER;
  attr.attr.sample_id_all = 1;
  return attr;
}

}  // namespace pp::testing

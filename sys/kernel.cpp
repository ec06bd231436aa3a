#include "sys/kernel.h"

#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace pp::sys {

void Mapping::reset() {
  if (addr_ && kernel_)
    kernel_->munmap(addr_, size_);
  addr_ = nullptr;
  size_ = 0;
  kernel_ = nullptr;
}

namespace {

class RealKernel final : public Kernel {
 public:
  Result<Fd> perf_event_open(const EventAttr& attr, pid_t pid, int cpu, int group_fd,
                             unsigned long flags) override {
    long fd = ::syscall(SYS_perf_event_open, &attr.attr, pid, cpu, group_fd,
                        flags | PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
      return error_from_errno(errno, "perf_event_open");
    return Fd(int(fd));
  }

  Result<long> ioctl(int fd, unsigned long request, unsigned long arg) override {
    long ret = ::ioctl(fd, request, arg);
    if (ret < 0)
      return error_from_errno(errno, "ioctl");
    return ret;
  }

  Result<Mapping> mmap(int fd, size_t length, int prot) override {
    void* addr = ::mmap(nullptr, length, prot, MAP_SHARED, fd, 0);
    if (addr == MAP_FAILED)
      return error_from_errno(errno, "mmap");
    return Mapping(addr, length, this);
  }

  Result<size_t> read(int fd, void* buf, size_t length) override {
    for (;;) {
      ssize_t n = ::read(fd, buf, length);
      if (n >= 0)
        return size_t(n);
      if (errno != EINTR)
        return error_from_errno(errno, "read");
    }
  }

  Result<int> poll(std::span<pollfd> fds, int timeout_ms) override {
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0)
      return error_from_errno(errno, "poll");
    return n;
  }

  void close(int fd) override { ::close(fd); }
  void munmap(void* addr, size_t length) override { ::munmap(addr, length); }
};

}  // namespace

Kernel& real_kernel() {
  static RealKernel kernel;
  return kernel;
}

Result<uint64_t> event_id(Kernel& kernel, int fd) {
  uint64_t id = 0;
  PP_RETURN_IF_ERROR(kernel.ioctl_ptr(fd, PERF_EVENT_IOC_ID, &id));
  return id;
}

Status set_filter(Kernel& kernel, int fd, const std::string& filter) {
  PP_RETURN_IF_ERROR(
      kernel.ioctl_ptr(fd, PERF_EVENT_IOC_SET_FILTER, const_cast<char*>(filter.c_str())));
  return ok_status();
}

Result<EventReading> read_event(Kernel& kernel, int fd, uint64_t read_format) {
  uint64_t words[5] = {};
  PP_ASSIGN_OR_RETURN(size_t n, kernel.read(fd, words, sizeof(words)));
  size_t want = 1;
  for (uint64_t bit :
       {uint64_t(PERF_FORMAT_TOTAL_TIME_ENABLED), uint64_t(PERF_FORMAT_TOTAL_TIME_RUNNING),
        uint64_t(PERF_FORMAT_ID), uint64_t(PERF_FORMAT_LOST)})
    want += (read_format & bit) ? 1 : 0;
  if (n < want * sizeof(uint64_t))
    return errorf(EIO, "reading an event's value returned %zu bytes, not %zu", n,
                  want * sizeof(uint64_t));
  EventReading reading;
  size_t at = 0;
  reading.value = words[at++];
  if (read_format & PERF_FORMAT_TOTAL_TIME_ENABLED)
    reading.time_enabled = words[at++];
  if (read_format & PERF_FORMAT_TOTAL_TIME_RUNNING)
    reading.time_running = words[at++];
  if (read_format & PERF_FORMAT_ID)
    at++;
  if (read_format & PERF_FORMAT_LOST)
    reading.lost = words[at++];
  return reading;
}

Status enable_event(Kernel& kernel, int fd) {
  PP_RETURN_IF_ERROR(kernel.ioctl(fd, PERF_EVENT_IOC_ENABLE, 0));
  return ok_status();
}

Status disable_event(Kernel& kernel, int fd) {
  PP_RETURN_IF_ERROR(kernel.ioctl(fd, PERF_EVENT_IOC_DISABLE, 0));
  return ok_status();
}

Status resume_output(Kernel& kernel, int fd) {
  PP_RETURN_IF_ERROR(kernel.ioctl(fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 0));
  return ok_status();
}

Result<std::vector<uint32_t>> attached_bpf_programs(Kernel& kernel, int fd) {
  // struct perf_event_query_bpf { u32 ids_len; u32 prog_cnt; u32 ids[]; }
  constexpr uint32_t kMaxIds = 64;
  uint32_t query[2 + kMaxIds] = {kMaxIds, 0};
  PP_RETURN_IF_ERROR(kernel.ioctl_ptr(fd, PERF_EVENT_IOC_QUERY_BPF, query));
  uint32_t count = std::min(query[1], kMaxIds);
  return std::vector<uint32_t>(query + 2, query + 2 + count);
}

Status set_period(Kernel& kernel, int fd, uint64_t period) {
  PP_RETURN_IF_ERROR(kernel.ioctl_ptr(fd, PERF_EVENT_IOC_PERIOD, &period));
  return ok_status();
}

Result<bool> has_filter(Kernel& kernel, int fd) {
  Status probe = set_filter(kernel, fd, "(");
  if (probe.ok())  // cannot happen: "(" never parses
    return true;
  if (probe.error().code() == EEXIST)
    return true;
  if (probe.error().code() == EINVAL || probe.error().code() == ENOENT)
    return false;  // 6.18 answers ENOENT for a string it cannot parse
  return probe.error();
}

size_t page_size() {
  static const size_t size = size_t(::sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace pp::sys

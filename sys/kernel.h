// The one seam between perf-persistent and the kernel's perf interface.
//
// Everything that opens, controls, maps, reads, polls or closes a perf event
// goes through a Kernel. real_kernel() makes the system calls; tests pass a
// fake (sys/testing/fake_kernel.h) that implements the seed patch set's ABI, records
// every attr and ioctl, and answers with the errors the real kernel gives.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "sys/fd.h"
#include "sys/perf_attr.h"

namespace pp::sys {

class Kernel;

// A mapping of a perf event's buffer. Move-only; unmapped through the Kernel
// that made it.
class Mapping {
 public:
  Mapping() = default;
  Mapping(void* addr, size_t size, Kernel* kernel) : addr_(addr), size_(size), kernel_(kernel) {}
  ~Mapping() { reset(); }

  Mapping(Mapping&& other) noexcept
      : addr_(std::exchange(other.addr_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        kernel_(std::exchange(other.kernel_, nullptr)) {}
  Mapping& operator=(Mapping&& other) noexcept {
    if (this != &other) {
      reset();
      addr_ = std::exchange(other.addr_, nullptr);
      size_ = std::exchange(other.size_, 0);
      kernel_ = std::exchange(other.kernel_, nullptr);
    }
    return *this;
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  const uint8_t* data() const { return static_cast<const uint8_t*>(addr_); }
  size_t size() const { return size_; }
  bool valid() const { return addr_ != nullptr; }

  void reset();

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
  Kernel* kernel_ = nullptr;
};

// PERF_EVENT_IOC_DETACH and PERF_EVENT_IOC_ATTACH from the seed patch set
// (12/12): _IO('$', 8) and _IO('$', 9). They do not collide with mainline's
// _IOW('$', 8/9, __u32) (SET_BPF, PAUSE_OUTPUT); a mainline kernel answers
// them with ENOTTY.
inline constexpr unsigned long kIocDetach = 0x2408;
inline constexpr unsigned long kIocAttach = 0x2409;

class Kernel {
 public:
  virtual ~Kernel() = default;

  // perf_event_open(2). attr.size must be set by the caller. The fd is
  // opened close-on-exec (PERF_FLAG_FD_CLOEXEC is added).
  virtual Result<Fd> perf_event_open(const EventAttr& attr, pid_t pid, int cpu, int group_fd,
                                     unsigned long flags) = 0;

  // ioctl(2) on a perf event fd. Returns the ioctl's (non-negative) result.
  virtual Result<long> ioctl(int fd, unsigned long request, unsigned long arg) = 0;

  // ioctl(2) whose argument points at memory: PERF_EVENT_IOC_SET_FILTER
  // (a NUL-terminated filter string), PERF_EVENT_IOC_ID (a u64 the kernel
  // fills in), PERF_EVENT_IOC_PERIOD (a u64). The default passes the pointer
  // through ioctl() above, which is what the real kernel wants; a fake
  // overrides it to read or fill the pointed-to value.
  virtual Result<long> ioctl_ptr(int fd, unsigned long request, void* arg) {
    return ioctl(fd, request, reinterpret_cast<unsigned long>(arg));
  }

  // mmap(2) of a perf event fd, MAP_SHARED, at offset 0. A persistent
  // event's buffer refuses PROT_WRITE with EACCES.
  virtual Result<Mapping> mmap(int fd, size_t length, int prot) = 0;

  // read(2): an event's count (read_format layout) or any fd's data.
  virtual Result<size_t> read(int fd, void* buf, size_t length) = 0;

  // poll(2); returns the number of ready fds (0 on timeout). EINTR is
  // returned as an error so callers can notice signals.
  virtual Result<int> poll(std::span<pollfd> fds, int timeout_ms) = 0;

  // Called by Fd and Mapping; not for direct use.
  virtual void close(int fd) = 0;
  virtual void munmap(void* addr, size_t length) = 0;
};

// The real kernel: system calls, nothing else.
Kernel& real_kernel();

// PERF_EVENT_IOC_ID: the kernel's id of the event behind `fd`, the value
// that PERF_SAMPLE_ID / PERF_SAMPLE_IDENTIFIER put in its samples.
Result<uint64_t> event_id(Kernel& kernel, int fd);

// PERF_EVENT_IOC_SET_FILTER: a tracepoint filter ("common_pid != 0").
Status set_filter(Kernel& kernel, int fd, const std::string& filter);

// read(2) of one event's value with the read_format it was opened with
// ({ u64 value; [u64 time_enabled]; [u64 time_running]; [u64 id];
// [u64 lost] }, not GROUP): each field read_format asks for.
// time_enabled stops while the event is disabled: the one way to see from
// outside that someone disabled it; lost (PERF_FORMAT_LOST, Linux 6.0+)
// counts the samples the kernel could not write, among them those made while
// the buffer's output was paused.
struct EventReading {
  uint64_t value = 0;
  std::optional<uint64_t> time_enabled;
  std::optional<uint64_t> time_running;
  std::optional<uint64_t> lost;
};
Result<EventReading> read_event(Kernel& kernel, int fd, uint64_t read_format);

// PERF_EVENT_IOC_ENABLE / PERF_EVENT_IOC_DISABLE of the event behind `fd`
// (for every fd of that open file description, and for every holder).
Status enable_event(Kernel& kernel, int fd);
Status disable_event(Kernel& kernel, int fd);

// PERF_EVENT_IOC_PAUSE_OUTPUT with 0: the ring buffer takes records again.
Status resume_output(Kernel& kernel, int fd);

// PERF_EVENT_IOC_PERIOD: the sample period (or frequency, for attr.freq).
// It also lifts a throttle (what a PERF_EVENT_IOC_REFRESH limit leaves: the
// event enabled again counts nothing until its period is set).
Status set_period(Kernel& kernel, int fd, uint64_t period);

// PERF_EVENT_IOC_QUERY_BPF: the ids of the BPF programs attached to the
// tracepoint of the event behind `fd` (through any perf event on it, by
// anyone), at most 64. EINVAL for an event that is no tracepoint.
Result<std::vector<uint32_t>> attached_bpf_programs(Kernel& kernel, int fd);

// Whether the event behind `fd` has a tracepoint filter. A filter cannot be
// read back, but a perf event takes one filter only: the kernel checks for
// an existing one (EEXIST) before it parses the new string, so setting a
// string that never parses ("(") tells, and changes nothing.
Result<bool> has_filter(Kernel& kernel, int fd);

// The system's page size (sysconf), which sizes every perf buffer.
size_t page_size();

}  // namespace pp::sys

// Why one file of ~1,400 lines: it is the executable specification of the
// seed patch set's persistent-event ABI (sys/testing/fake_kernel.h lists what
// it models), and its parts share one lock and one table of events, fds and
// buffers whose invariants (refcounts, publication in sysfs, who may map
// what) each call both checks and changes. Split by call it would spread
// one state machine over files that each need its private members. It is
// read by section instead, in the order a reader meets the kernel:
// bookkeeping, sysfs, perf_event_open, ioctl, mmap/munmap/read/close, poll,
// events that fire (boot-time persistent events, emit()), inspection for
// tests, and the call log as text for golden tests. Test-only: the program
// never links sys/testing/.
#include "sys/testing/fake_kernel.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/strings.h"
#include "sys/explain.h"
#include "sys/perf_abi_attr.h"
#include "sys/perf_abi_sample.h"

namespace pp::sys::testing {

namespace {

// Word 5 bit 23: the seed's `persistent` flag (05/12), mainline's `mmap2`.
constexpr uint64_t kPersistentFlag = 1ull << 23;
constexpr unsigned kFlagsWord = 5;
constexpr unsigned kFirstReservedFlag = 38;  // after sigtrap (Linux 5.13+)
constexpr uint32_t kKernelAttrSize = kAttrSizeVer8;
constexpr unsigned long kKnownOpenFlags =
    PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_OUTPUT | PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC;
constexpr uint64_t kKnownReadFormat = (PERF_FORMAT_LOST << 1) - 1;
constexpr const char* kPmuDir = "bus/event_source/devices/persistent";

Error fake_error(int err, const char* call, const std::string& why) {
  return Error(err, std::string(call) + ": " + std::strerror(err) + " (fake kernel: " + why + ")");
}

void put_u64(std::vector<uint8_t>& out, uint64_t value) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof(value));
}

void finish_header(std::vector<uint8_t>& out, uint32_t type, uint16_t misc) {
  perf_event_header header{type, misc, uint16_t(out.size())};
  std::memcpy(out.data(), &header, sizeof(header));
}

bool is_pointer_request(unsigned long request) {
  return request == PERF_EVENT_IOC_SET_FILTER || request == PERF_EVENT_IOC_ID ||
         request == PERF_EVENT_IOC_PERIOD || request == PERF_EVENT_IOC_QUERY_BPF;
}

}  // namespace

struct FakeKernel::Buffer {
  Fd memfd;
  uint8_t* view = nullptr;  // the writer's read-write mapping
  size_t bytes = 0;         // control page + data pages
  size_t pages = 0;         // data pages
  bool overwrite = true;
  bool paused = false;
  RingWriter writer;
  uint64_t pending_lost = 0;  // rb->lost: reported by the next PERF_RECORD_LOST
  uint64_t watermark = 0;
  uint64_t bytes_since_wakeup = 0;
  uint64_t events_since_wakeup = 0;
  bool poll_pending = false;  // rb->poll: consumed by the first poll that sees it

  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (view)
      ::munmap(view, bytes);
  }
};

struct FakeKernel::Event {
  uint64_t id = 0;  // PERF_EVENT_IOC_ID, PERF_SAMPLE_ID
  EventAttr attr;
  int cpu = -1;
  pid_t pid = -1;
  bool enabled = false;
  // read(2)'s time_enabled: real nanoseconds while enabled, as the kernel
  // counts them (set_enabled() keeps them).
  uint64_t enabled_total_ns = 0;
  int64_t enabled_since_ns = 0;
  uint64_t hits = 0;
  uint64_t count = 0;
  uint64_t lost_samples = 0;
  uint64_t created_ns = 0;
  std::string filter;
  std::shared_ptr<Buffer> buffer;
  bool redirected = false;  // buffer is another event's (SET_OUTPUT)
  uint64_t persistent_id = 0;
  int fds = 0;
  int maps = 0;

  bool persistent() const { return persistent_id != 0; }

  static int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void set_enabled(bool on) {
    if (enabled && !on)
      enabled_total_ns += uint64_t(steady_ns() - enabled_since_ns);
    if (!enabled && on)
      enabled_since_ns = steady_ns();
    enabled = on;
  }
  uint64_t time_enabled() const {
    return enabled_total_ns + (enabled ? uint64_t(steady_ns() - enabled_since_ns) : 0);
  }
};

struct FakeKernel::OpenFd {
  int fd = -1;  // an eventfd: the number the caller holds
  int handle = 0;
  std::shared_ptr<Event> event;
};

FakeKernel::FakeKernel(FakeKernelOptions options)
    : options_(std::move(options)), page_size_(sys::page_size()) {
  if (options_.cpus < 1)
    options_.cpus = 1;
  persistent_pages_ = options_.persistent_buffer_pages
                          ? options_.persistent_buffer_pages
                          : std::max<size_t>(1, kPersistentBufferBytes / page_size_);
  publish_pmu();
}

FakeKernel::~FakeKernel() {
  std::lock_guard lock(mutex_);
  for (auto& [fd, entry] : fds_)
    ::close(fd);
  for (auto& [addr, entry] : mappings_)
    ::munmap(const_cast<void*>(addr), entry.length);
}

// ---------------------------------------------------------------------------
// Bookkeeping

void FakeKernel::log(KernelCall call) {
  calls_.push_back(std::move(call));
}

void FakeKernel::clear_calls() {
  std::lock_guard lock(mutex_);
  calls_.clear();
}

std::optional<int> FakeKernel::injected(KernelCall::Kind kind, unsigned long request) {
  for (auto it = injections_.begin(); it != injections_.end(); ++it) {
    if (it->kind != kind || (it->request != 0 && it->request != request))
      continue;
    int error = it->error;
    if (--it->times <= 0)
      injections_.erase(it);
    return error;
  }
  return std::nullopt;
}

void FakeKernel::inject_error(KernelCall::Kind kind, int error, int times, unsigned long request) {
  std::lock_guard lock(mutex_);
  injections_.push_back({kind, error, times, request});
}

const FakeKernel::OpenFd* FakeKernel::find_fd(int fd) const {
  auto it = fds_.find(fd);
  return it == fds_.end() ? nullptr : it->second.get();
}

int FakeKernel::handle_of(int fd) const {
  const OpenFd* entry = find_fd(fd);
  return entry ? entry->handle : 0;
}

Result<Fd> FakeKernel::new_fd_locked(const std::shared_ptr<Event>& event) {
  int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0)
    return error_from_errno(errno, "perf_event_open (fake kernel: eventfd)");
  auto entry = std::make_unique<OpenFd>();
  entry->fd = fd;
  entry->handle = next_handle_++;
  entry->event = event;
  ++event->fds;
  fds_[fd] = std::move(entry);
  return Fd(fd, this);
}

std::shared_ptr<FakeKernel::Buffer> FakeKernel::new_buffer_locked(size_t pages, bool overwrite,
                                                                  bool backward) {
  auto buffer = std::make_shared<Buffer>();
  buffer->pages = pages;
  buffer->bytes = (1 + pages) * page_size_;
  buffer->overwrite = overwrite;
  buffer->memfd = Fd(::memfd_create("pp-fake-perf-buffer", MFD_CLOEXEC));
  if (!buffer->memfd || ::ftruncate(buffer->memfd.get(), off_t(buffer->bytes)) != 0)
    return nullptr;
  void* view =
      ::mmap(nullptr, buffer->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, buffer->memfd.get(), 0);
  if (view == MAP_FAILED)
    return nullptr;
  buffer->view = static_cast<uint8_t*>(view);
  size_t data_size = pages * page_size_;
  buffer->writer = RingWriter({buffer->view, buffer->bytes}, page_size_, data_size,
                              backward ? RingLayout::kBackward : RingLayout::kForward, overwrite);
  buffer->watermark = data_size / 2;
  return buffer;
}

void FakeKernel::release_if_dead_locked(const std::shared_ptr<Event>& event) {
  if (event->fds == 0 && event->maps == 0 && !event->persistent()) {
    event->buffer.reset();
    events_.erase(event->id);
  }
}

// ---------------------------------------------------------------------------
// sysfs

void FakeKernel::publish_pmu() {
  if (options_.sysfs_root.empty() || !options_.persistent_abi)
    return;
  std::filesystem::path dir = std::filesystem::path(options_.sysfs_root) / kPmuDir;
  std::error_code ec;
  std::filesystem::create_directories(dir / "format", ec);
  std::ofstream(dir / "type") << options_.persistent_type << "\n";
  std::ofstream(dir / "format" / "persistent") << "attr5:23\n";
}

void FakeKernel::publish_locked(const PersistentEvent& pevent) {
  if (options_.sysfs_root.empty() || !options_.persistent_abi)
    return;
  std::filesystem::path events = std::filesystem::path(options_.sysfs_root) / kPmuDir / "events";
  std::error_code ec;
  std::filesystem::create_directories(events, ec);
  // Written whole under a temporary name, so a reader never sees half a file.
  std::filesystem::path tmp = events / ("." + pevent.name + ".tmp");
  std::ofstream(tmp) << "persistent,config=" << pevent.id;
  std::filesystem::rename(tmp, events / pevent.name, ec);
}

void FakeKernel::unpublish_locked(const PersistentEvent& pevent) {
  if (options_.sysfs_root.empty() || !options_.persistent_abi)
    return;
  std::filesystem::path events = std::filesystem::path(options_.sysfs_root) / kPmuDir / "events";
  std::error_code ec;
  std::filesystem::remove(events / pevent.name, ec);
  // sysfs_remove_group() when the last entry goes (11/12).
  if (std::filesystem::is_empty(events, ec))
    std::filesystem::remove(events, ec);
}

uint64_t FakeKernel::alloc_persistent_id_locked() const {
  // idr_alloc(&event_idr, pevent, 1, INT_MAX): the lowest free id from 1.
  uint64_t id = 1;
  for (const auto& [used, pevent] : persistent_) {
    if (used != id)
      break;
    ++id;
  }
  return id;
}

// ---------------------------------------------------------------------------
// perf_event_open

Result<Fd> FakeKernel::perf_event_open(const EventAttr& attr, pid_t pid, int cpu, int group_fd,
                                       unsigned long flags) {
  std::lock_guard lock(mutex_);
  KernelCall call;
  call.kind = KernelCall::Kind::kOpen;
  call.attr = attr;
  call.pid = pid;
  call.cpu = cpu;
  call.group_handle = group_fd < 0 ? -1 : handle_of(group_fd);
  call.flags = flags;
  auto fd = open_locked(attr, pid, cpu, group_fd, flags, call);
  if (fd.ok())
    call.handle = handle_of(fd->get());
  else
    call.error = fd.error().code();
  log(std::move(call));
  return fd;
}

Result<Fd> FakeKernel::open_locked(const EventAttr& given, pid_t pid, int cpu, int group_fd,
                                   unsigned long flags, KernelCall& call) {
  constexpr const char* kCall = "perf_event_open";
  if (auto err = injected(KernelCall::Kind::kOpen, 0))
    return fake_error(*err, kCall, "injected error");

  // perf_copy_attr(): the kernel copies attr.size bytes and no more.
  EventAttr attr;
  uint32_t size = given.attr.size ? given.attr.size : PERF_ATTR_SIZE_VER0;
  if (size < PERF_ATTR_SIZE_VER0)
    return fake_error(E2BIG, kCall,
                      "attr.size " + std::to_string(size) + " is below the first ABI");
  std::memcpy(&attr, &given, std::min<size_t>(size, sizeof(EventAttr)));
  attr.attr.size = std::min<uint32_t>(size, kKernelAttrSize);
  call.attr = attr;

  if (flags & ~kKnownOpenFlags)
    return fake_error(EINVAL, kCall, "unknown flags");

  // 05/12: "return fd for an existing persistent event".
  if (options_.persistent_abi && attr.attr.type == options_.persistent_type) {
    if (cpu < 0 || cpu >= options_.cpus)
      return fake_error(EINVAL, kCall,
                        "persistent events are per CPU; CPU " + std::to_string(cpu) +
                            " is not one of " + std::to_string(options_.cpus));
    if (pid != -1)
      return fake_error(EINVAL, kCall, "persistent events are per CPU; pid must be -1");
    if (!options_.privileged)
      return fake_error(EACCES, kCall, "persistent events need root or CAP_PERFMON");
    auto pevent = persistent_.find(attr.attr.config);
    if (pevent == persistent_.end() || !pevent->second.events.count(cpu))
      return fake_error(ENOENT, kCall,
                        "no persistent event " + std::to_string(attr.attr.config) + " on CPU " +
                            std::to_string(cpu));
    return new_fd_locked(pevent->second.events.at(cpu));
  }
  if (options_.persistent_abi && (attr.words[kFlagsWord] & kPersistentFlag))
    return fake_error(EOPNOTSUPP, kCall,
                      "attr.persistent on a new event is not supported; use PERF_EVENT_IOC_DETACH");
  if (attr.words[kFlagsWord] >> kFirstReservedFlag)
    return fake_error(EINVAL, kCall, "reserved attr flag bits set");
  if (attr.attr.write_backward && !options_.write_backward)
    return fake_error(EINVAL, kCall, "write_backward needs Linux 4.7");
  if (attr.attr.sample_type & ~uint64_t(PERF_SAMPLE_MAX - 1))
    return fake_error(EINVAL, kCall, "unknown sample_type bits");
  if (attr.attr.read_format & ~kKnownReadFormat)
    return fake_error(EINVAL, kCall, "unknown read_format bits");
  if (pid < -1 || cpu < -1 || cpu >= options_.cpus || (pid == -1 && cpu == -1))
    return fake_error(EINVAL, kCall,
                      "pid " + std::to_string(pid) + ", cpu " + std::to_string(cpu) +
                          " is not a task or a CPU of " + std::to_string(options_.cpus));
  if (pid == -1 && !options_.privileged)
    return fake_error(EACCES, kCall, "CPU-wide events need root or CAP_PERFMON");
  if (group_fd != -1) {
    const OpenFd* leader = find_fd(group_fd);
    if (!leader)
      return fake_error(EBADF, kCall, "group_fd is not a perf event fd");
    if (leader->event->cpu != cpu)
      return fake_error(EINVAL, kCall, "group leader is on another CPU");
  }
  switch (attr.attr.type) {
    case PERF_TYPE_SOFTWARE:
      if (attr.attr.config >= PERF_COUNT_SW_MAX)
        return fake_error(ENOENT, kCall, "no such software event");
      break;
    case PERF_TYPE_TRACEPOINT:
      if (!options_.tracepoints.empty() &&
          std::find(options_.tracepoints.begin(), options_.tracepoints.end(), attr.attr.config) ==
              options_.tracepoints.end())
        return fake_error(EINVAL, kCall,
                          "no tracepoint with id " + std::to_string(attr.attr.config));
      break;
    default:
      return fake_error(ENOENT, kCall,
                        "no PMU of type " + std::to_string(attr.attr.type) +
                            " (the fake has software, tracepoint and persistent)");
  }

  auto event = std::make_shared<Event>();
  event->id = next_event_id_++;
  event->attr = attr;
  event->cpu = cpu;
  event->pid = pid;
  event->set_enabled(!attr.attr.disabled);
  event->created_ns = clock_ns_;
  events_[event->id] = event;
  auto fd = new_fd_locked(event);
  if (!fd.ok())
    events_.erase(event->id);
  return fd;
}

// ---------------------------------------------------------------------------
// ioctl

Result<long> FakeKernel::ioctl(int fd, unsigned long request, unsigned long arg) {
  // Requests whose argument is a pointer (SET_FILTER, ID, PERIOD) may come
  // either way, as they may to the real ioctl(2).
  void* ptr = is_pointer_request(request)
                  ? reinterpret_cast<void*>(arg)  // NOLINT(performance-no-int-to-ptr)
                  : nullptr;
  return ioctl_entry(fd, request, arg, ptr);
}

Result<long> FakeKernel::ioctl_ptr(int fd, unsigned long request, void* arg) {
  return ioctl_entry(fd, request, reinterpret_cast<unsigned long>(arg), arg);
}

Result<long> FakeKernel::ioctl_entry(int fd, unsigned long request, unsigned long arg, void* ptr) {
  std::lock_guard lock(mutex_);
  KernelCall call;
  call.kind = KernelCall::Kind::kIoctl;
  call.handle = handle_of(fd);
  call.request = request;
  call.arg = arg;
  auto result = ioctl_locked(fd, request, arg, ptr, call);
  if (result.ok())
    call.result = *result;
  else
    call.error = result.error().code();
  log(std::move(call));
  return result;
}

Result<long> FakeKernel::ioctl_locked(int fd, unsigned long request, unsigned long arg, void* ptr,
                                      KernelCall& call) {
  constexpr const char* kCall = "ioctl";
  if (is_pointer_request(request)) {
    call.arg = 0;  // a pointer: logged by what it points at
    if (request == PERF_EVENT_IOC_SET_FILTER && ptr)
      call.arg_text = static_cast<const char*>(ptr);
    if (request == PERF_EVENT_IOC_PERIOD && ptr)
      call.arg_text = std::to_string(*static_cast<const uint64_t*>(ptr));
  }
  if (auto err = injected(KernelCall::Kind::kIoctl, request))
    return fake_error(*err, kCall, "injected error");
  auto it = fds_.find(fd);
  if (it == fds_.end())
    return fake_error(EBADF, kCall, "fd " + std::to_string(fd) + " is not a perf event");
  OpenFd& entry = *it->second;
  Event& event = *entry.event;
  switch (request) {
    case PERF_EVENT_IOC_ENABLE:
      event.set_enabled(true);
      return 0;
    case PERF_EVENT_IOC_DISABLE:
      event.set_enabled(false);
      return 0;
    case PERF_EVENT_IOC_REFRESH:
      if (event.attr.attr.inherit)
        return fake_error(EINVAL, kCall, "REFRESH on an inherited event");
      event.set_enabled(true);
      return 0;
    case PERF_EVENT_IOC_RESET:
      event.count = 0;
      return 0;
    case PERF_EVENT_IOC_PERIOD: {
      if (!ptr)
        return fake_error(EFAULT, kCall, "PERIOD needs a pointer to a u64");
      uint64_t period = *static_cast<const uint64_t*>(ptr);
      if (period == 0 || event.attr.attr.sample_period == 0)
        return fake_error(EINVAL, kCall, "PERIOD 0, or on a counting event");
      event.attr.attr.sample_period = period;
      return 0;
    }
    case PERF_EVENT_IOC_SET_OUTPUT:
      return set_output_locked(entry, int(arg), call);
    case PERF_EVENT_IOC_SET_FILTER:
      if (!ptr)
        return fake_error(EFAULT, kCall, "SET_FILTER needs a string");
      if (event.attr.attr.type != PERF_TYPE_TRACEPOINT)
        return fake_error(EINVAL, kCall, "filters apply to tracepoints only");
      // ftrace_profile_set_filter(): one filter per event, checked before parsing.
      if (!event.filter.empty())
        return fake_error(EEXIST, kCall, "the event has a filter already");
      if (std::string_view text = static_cast<const char*>(ptr);
          std::count(text.begin(), text.end(), '(') != std::count(text.begin(), text.end(), ')'))
        return fake_error(ENOENT, kCall, "the filter does not parse");
      event.filter = static_cast<const char*>(ptr);
      return 0;
    case PERF_EVENT_IOC_ID:
      if (!ptr)
        return fake_error(EFAULT, kCall, "ID needs a pointer to a u64");
      *static_cast<uint64_t*>(ptr) = event.id;
      call.arg_text = std::to_string(event.id);
      return 0;
    case PERF_EVENT_IOC_PAUSE_OUTPUT:
      if (!event.buffer)
        return fake_error(EINVAL, kCall, "PAUSE_OUTPUT on an event without a buffer");
      event.buffer->paused = arg != 0;
      return 0;
    case PERF_EVENT_IOC_QUERY_BPF:
      if (!ptr)
        return fake_error(EFAULT, kCall, "QUERY_BPF needs a struct perf_event_query_bpf");
      if (event.attr.attr.type != PERF_TYPE_TRACEPOINT)
        return fake_error(EINVAL, kCall, "QUERY_BPF on an event that is no tracepoint");
      static_cast<uint32_t*>(ptr)[1] = 0;  // no program attached: none is modelled
      return 0;
    case PERF_EVENT_IOC_SET_BPF:
    case PERF_EVENT_IOC_MODIFY_ATTRIBUTES:
      return fake_error(EOPNOTSUPP, kCall, "not modelled");
    default:
      break;
  }
  if (request == kIocDetach && options_.persistent_abi)
    return detach_locked(entry);
  if (request == kIocAttach && options_.persistent_abi)
    return attach_locked(entry);
  return fake_error(ENOTTY, kCall, "unknown perf ioctl");
}

// 12/12 perf_event_detach(): makes the event persistent, returns its new id.
Result<long> FakeKernel::detach_locked(OpenFd& entry) {
  constexpr const char* kCall = "ioctl(PERF_EVENT_IOC_DETACH)";
  const std::shared_ptr<Event>& event = entry.event;
  if (event->cpu < 0 || event->cpu >= options_.cpus)
    return fake_error(EINVAL, kCall, "per-task events cannot be persistent");
  if (event->persistent())
    return fake_error(EEXIST, kCall,
                      "already persistent with id " + std::to_string(event->persistent_id));
  if (event->buffer)
    return fake_error(EBUSY, kCall, "the event already has a buffer (it was mapped)");
  auto buffer = new_buffer_locked(persistent_pages_, true, event->attr.attr.write_backward);
  if (!buffer)
    return fake_error(ENOMEM, kCall, "cannot allocate the buffer");
  PersistentEvent pevent;
  pevent.id = alloc_persistent_id_locked();
  pevent.name = std::to_string(pevent.id);  // pevent_alloc(NULL)
  pevent.events[event->cpu] = event;
  event->buffer = std::move(buffer);
  event->persistent_id = pevent.id;
  event->attr.words[kFlagsWord] |= kPersistentFlag;  // pevent_add()
  publish_locked(pevent);
  uint64_t id = pevent.id;
  persistent_[id] = std::move(pevent);
  return long(id);
}

// 12/12 perf_event_attach(): no longer persistent; dies with its last fd and mapping.
Result<long> FakeKernel::attach_locked(OpenFd& entry) {
  constexpr const char* kCall = "ioctl(PERF_EVENT_IOC_ATTACH)";
  std::shared_ptr<Event> event = entry.event;
  if (event->cpu < 0 || event->cpu >= options_.cpus)
    return fake_error(EINVAL, kCall, "per-task events are never persistent");
  if (!event->persistent())
    return fake_error(EINVAL, kCall, "the event is not persistent");
  auto it = persistent_.find(event->persistent_id);
  it->second.events.erase(event->cpu);
  event->persistent_id = 0;
  event->attr.words[kFlagsWord] &= ~kPersistentFlag;  // pevent_del()
  if (it->second.events.empty()) {
    unpublish_locked(it->second);
    persistent_.erase(it);
  }
  release_if_dead_locked(event);
  return 0;
}

Result<long> FakeKernel::set_output_locked(OpenFd& entry, int target_fd, KernelCall& call) {
  constexpr const char* kCall = "ioctl(PERF_EVENT_IOC_SET_OUTPUT)";
  Event& event = *entry.event;
  const OpenFd* target = target_fd < 0 ? nullptr : find_fd(target_fd);
  call.arg_text = target_fd < 0 ? "-1" : "fd#" + std::to_string(target ? target->handle : 0);
  if (target_fd >= 0 && !target)
    return fake_error(EBADF, kCall, "the target is not a perf event");
  // 05/12: "the set_output ioctl may not be used in conjunction with
  // persistent events", either way round.
  if (event.persistent() || (target && target->event->persistent()))
    return fake_error(EACCES, kCall, "persistent buffers are read-only and shared");
  if (!target) {
    if (event.redirected) {
      event.buffer.reset();
      event.redirected = false;
    }
    return 0;
  }
  Event& output = *target->event;
  if (&output == &event || output.cpu != event.cpu ||
      output.attr.attr.write_backward != event.attr.attr.write_backward)
    return fake_error(EINVAL, kCall,
                      "the target is this event, on another CPU or writes the other way");
  if (event.maps > 0)
    return fake_error(EBUSY, kCall, "the event's own buffer is mapped");
  if (!output.buffer)
    return fake_error(EINVAL, kCall, "the target has no buffer");
  event.buffer = output.buffer;
  event.redirected = true;
  return 0;
}

// ---------------------------------------------------------------------------
// mmap, munmap, read, close

Result<Mapping> FakeKernel::mmap(int fd, size_t length, int prot) {
  std::lock_guard lock(mutex_);
  KernelCall call;
  call.kind = KernelCall::Kind::kMmap;
  call.handle = handle_of(fd);
  call.length = length;
  call.prot = prot;
  auto mapping = mmap_locked(fd, length, prot, call);
  if (!mapping.ok())
    call.error = mapping.error().code();
  log(std::move(call));
  return mapping;
}

Result<Mapping> FakeKernel::mmap_locked(int fd, size_t length, int prot, KernelCall& call) {
  constexpr const char* kCall = "mmap";
  if (auto err = injected(KernelCall::Kind::kMmap, 0))
    return fake_error(*err, kCall, "injected error");
  auto it = fds_.find(fd);
  if (it == fds_.end())
    return fake_error(ENODEV, kCall, "fd " + std::to_string(fd) + " is not a perf event");
  std::shared_ptr<Event> event = it->second->event;
  // 05/12 perf_mmap(): "if (event->attr.persistent && (vma->vm_flags & VM_WRITE)) return -EACCES".
  if (event->persistent() && (prot & PROT_WRITE))
    return fake_error(EACCES, kCall, "persistent buffers map read-only");
  if (length == 0 || length % page_size_ != 0)
    return fake_error(EINVAL, kCall, "length is not a whole number of pages");
  size_t pages = length / page_size_ - 1;
  if (pages != 0 && (pages & (pages - 1)) != 0)
    return fake_error(EINVAL, kCall,
                      "data pages (" + std::to_string(pages) + ") are not a power of two");
  if (event->buffer) {
    if (event->buffer->pages != pages)
      return fake_error(EINVAL, kCall,
                        "the buffer has " + std::to_string(event->buffer->pages) +
                            " data pages; map exactly 1 + that many");
  } else {
    if (pages == 0)
      return fake_error(EINVAL, kCall, "the fake does not model a control page without data");
    auto buffer = new_buffer_locked(pages, !(prot & PROT_WRITE), event->attr.attr.write_backward);
    if (!buffer)
      return fake_error(ENOMEM, kCall, "cannot allocate the buffer");
    event->buffer = std::move(buffer);
  }
  void* addr = ::mmap(nullptr, length, prot, MAP_SHARED, event->buffer->memfd.get(), 0);
  if (addr == MAP_FAILED)
    return error_from_errno(errno, "mmap (fake kernel)");
  MappingEntry entry;
  entry.event = event;
  entry.buffer = event->buffer;
  entry.length = length;
  entry.handle = next_mapping_++;
  call.mapping = entry.handle;
  ++event->maps;
  mappings_[addr] = std::move(entry);
  return Mapping(addr, length, this);
}

void FakeKernel::munmap(void* addr, size_t length) {
  std::lock_guard lock(mutex_);
  auto it = mappings_.find(addr);
  if (it == mappings_.end()) {
    ::munmap(addr, length);
    return;
  }
  KernelCall call;
  call.kind = KernelCall::Kind::kMunmap;
  call.handle = 0;
  call.mapping = it->second.handle;
  call.length = length;
  log(std::move(call));
  ::munmap(addr, it->second.length);
  std::shared_ptr<Event> event = it->second.event;
  mappings_.erase(it);
  // perf_mmap_close(): the last mapping detaches the buffer, unless the
  // persistent state holds it (05/12 takes a mapping reference for it).
  if (--event->maps == 0 && !event->persistent() && !event->redirected)
    event->buffer.reset();
  release_if_dead_locked(event);
}

Result<Fd> FakeKernel::duplicate(int fd) {
  std::lock_guard lock(mutex_);
  auto it = fds_.find(fd);
  if (it == fds_.end())
    return fake_error(EBADF, "dup", "fd " + std::to_string(fd) + " is not the fake's");
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (copy < 0)
    return error_from_errno(errno, "dup (fake kernel)");
  auto entry = std::make_unique<OpenFd>();
  entry->fd = copy;
  entry->handle = next_handle_++;
  entry->event = it->second->event;
  ++entry->event->fds;
  fds_[copy] = std::move(entry);
  return Fd(copy, this);
}

void FakeKernel::close(int fd) {
  std::lock_guard lock(mutex_);
  auto it = fds_.find(fd);
  if (it == fds_.end()) {
    ::close(fd);
    return;
  }
  KernelCall call;
  call.kind = KernelCall::Kind::kClose;
  call.handle = it->second->handle;
  log(std::move(call));
  std::shared_ptr<Event> event = it->second->event;
  ::close(fd);
  fds_.erase(it);
  --event->fds;
  release_if_dead_locked(event);
}

Result<size_t> FakeKernel::read(int fd, void* buf, size_t length) {
  std::unique_lock lock(mutex_);
  auto it = fds_.find(fd);
  if (it == fds_.end()) {
    lock.unlock();
    return real_kernel().read(fd, buf, length);
  }
  reads_[it->second->handle]++;
  return read_locked(*it->second, buf, length);
}

Result<size_t> FakeKernel::read_locked(OpenFd& entry, void* buf, size_t length) {
  // The read_format layout (perf_event_open(2)):
  //   { u64 value; [u64 time_enabled]; [u64 time_running]; [u64 id]; [u64 lost] }
  //   PERF_FORMAT_GROUP: { u64 nr; [time_enabled]; [time_running];
  //                        { u64 value; [u64 id]; [u64 lost] } cntr[nr] }
  const Event& event = *entry.event;
  uint64_t format = event.attr.attr.read_format;
  uint64_t elapsed = clock_ns_ - event.created_ns;
  std::vector<uint8_t> out;
  if (format & PERF_FORMAT_GROUP)
    put_u64(out, 1);
  else
    put_u64(out, event.count);
  if (format & PERF_FORMAT_TOTAL_TIME_ENABLED)
    put_u64(out, event.time_enabled());
  if (format & PERF_FORMAT_TOTAL_TIME_RUNNING)
    put_u64(out, elapsed);
  if (format & PERF_FORMAT_GROUP)
    put_u64(out, event.count);
  if (format & PERF_FORMAT_ID)
    put_u64(out, event.id);
  if (format & PERF_FORMAT_LOST)
    put_u64(out, event.lost_samples);
  if (length < out.size())
    return fake_error(ENOSPC, "read",
                      "the read_format needs " + std::to_string(out.size()) + " bytes");
  std::memcpy(buf, out.data(), out.size());
  return out.size();
}

// ---------------------------------------------------------------------------
// poll

Result<int> FakeKernel::poll(std::span<pollfd> fds, int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  std::vector<pollfd> real(fds.begin(), fds.end());
  for (;;) {
    bool hangup = false;
    {
      std::lock_guard lock(mutex_);
      for (auto& p : real) {
        const OpenFd* entry = find_fd(p.fd);
        if (!entry)
          continue;
        p.events = POLLIN;  // the eventfd is readable once the event woke its readers
        hangup |= !entry->event->buffer;
      }
    }
    int wait_ms = timeout_ms;
    if (timeout_ms >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      wait_ms = int(std::max<int64_t>(0, left.count()));
    }
    if (hangup)
      wait_ms = 0;
    int n = ::poll(real.data(), real.size(), wait_ms);
    if (n < 0)
      return error_from_errno(errno, "poll");
    int ready = 0;
    {
      std::lock_guard lock(mutex_);
      for (size_t i = 0; i < fds.size(); ++i) {
        fds[i].revents = 0;
        const OpenFd* entry = find_fd(fds[i].fd);
        if (!entry) {
          fds[i].revents = real[i].revents;
        } else if (!entry->event->buffer) {
          fds[i].revents = POLLHUP;  // perf_poll() without a buffer
        } else if (real[i].revents & POLLIN) {
          uint64_t drained;
          [[maybe_unused]] ssize_t ignored = ::read(entry->fd, &drained, sizeof(drained));
          // perf_poll(): atomic_xchg(&rb->poll, 0). The first poller takes
          // the wakeup; others on the same buffer go back to sleep.
          if (std::exchange(entry->event->buffer->poll_pending, false))
            fds[i].revents = short(POLLIN | POLLRDNORM);
        }
        if (fds[i].revents)
          ++ready;
      }
    }
    if (ready > 0 || timeout_ms == 0 || (timeout_ms > 0 && Clock::now() >= deadline))
      return ready;
  }
}

// ---------------------------------------------------------------------------
// Persistent events the kernel makes itself, and events firing

void FakeKernel::set_privileged(bool privileged) {
  std::lock_guard lock(mutex_);
  options_.privileged = privileged;
}

Result<uint64_t> FakeKernel::add_boot_event(const std::string& name, const EventAttr& attr,
                                            std::vector<int> cpus, size_t pages) {
  std::lock_guard lock(mutex_);
  if (!options_.persistent_abi)
    return errorf(ENOTSUP, "fake kernel: a mainline kernel has no persistent events");
  if (name.empty() || name.find('/') != std::string::npos)
    return errorf(EINVAL, "fake kernel: bad persistent event name '%s'", name.c_str());
  for (const auto& [id, pevent] : persistent_)
    if (pevent.name == name)
      return errorf(EEXIST, "fake kernel: a persistent event is already named '%s'", name.c_str());
  if (cpus.empty())
    for (int cpu = 0; cpu < options_.cpus; ++cpu)
      cpus.push_back(cpu);
  PersistentEvent pevent;
  pevent.id = alloc_persistent_id_locked();
  pevent.name = name;
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= options_.cpus)
      return errorf(EINVAL, "fake kernel: no CPU %d", cpu);
    auto buffer =
        new_buffer_locked(pages ? pages : persistent_pages_, true, attr.attr.write_backward);
    if (!buffer)
      return errorf(ENOMEM, "fake kernel: cannot allocate a buffer");
    auto event = std::make_shared<Event>();
    event->id = next_event_id_++;
    event->attr = attr;
    event->attr.words[kFlagsWord] |= kPersistentFlag;
    event->cpu = cpu;
    event->set_enabled(true);  // persistent_event_open(): perf_event_enable()
    event->created_ns = clock_ns_;
    event->buffer = std::move(buffer);
    event->persistent_id = pevent.id;
    events_[event->id] = event;
    pevent.events[cpu] = event;
  }
  publish_locked(pevent);
  uint64_t id = pevent.id;
  persistent_[id] = std::move(pevent);
  return id;
}

std::vector<std::shared_ptr<FakeKernel::Event>> FakeKernel::matching_locked(
    int cpu, const FakeEventMatch& match, uint32_t pid, bool any_pid) const {
  std::vector<std::shared_ptr<Event>> out;
  for (const auto& [id, event] : events_) {
    const perf_event_attr& attr = event->attr.attr;
    if (attr.type != match.type || attr.config != match.config)
      continue;
    if (event->cpu != -1 && event->cpu != cpu)
      continue;
    if (event->pid != -1 && !any_pid && uint32_t(event->pid) != pid)
      continue;
    out.push_back(event);
  }
  return out;
}

namespace {

struct SampleContext {
  uint64_t id = 0;
  int cpu = 0;
  uint64_t time = 0;
  uint64_t period = 1;
  uint64_t count = 0;
  uint64_t elapsed = 0;
  uint64_t lost = 0;
};

// The sample_id trailer of non-sample records when attr.sample_id_all.
void put_sample_id(std::vector<uint8_t>& out, const perf_event_attr& attr, const FakeSample& s,
                   const SampleContext& c) {
  if (!attr.sample_id_all)
    return;
  encode_sample_id(attr.sample_type,
                   {.pid = s.pid,
                    .tid = s.tid,
                    .time = c.time,
                    .id = c.id,
                    .stream_id = c.id,
                    .cpu = uint32_t(c.cpu)},
                   out);
}

// The read_format block: one value (this event's count), or a group of one.
std::vector<uint8_t> read_block(uint64_t format, const SampleContext& c) {
  std::vector<uint8_t> out;
  put_u64(out, (format & PERF_FORMAT_GROUP) ? 1 : c.count);
  if (format & PERF_FORMAT_TOTAL_TIME_ENABLED)
    put_u64(out, c.elapsed);
  if (format & PERF_FORMAT_TOTAL_TIME_RUNNING)
    put_u64(out, c.elapsed);
  if (format & PERF_FORMAT_GROUP)
    put_u64(out, c.count);
  if (format & PERF_FORMAT_ID)
    put_u64(out, c.id);
  if (format & PERF_FORMAT_LOST)
    put_u64(out, c.lost);
  return out;
}

// PERF_RECORD_LOST {u64 id, lost} or PERF_RECORD_LOST_SAMPLES {u64 lost},
// with the sample_id trailer when attr.sample_id_all.
std::vector<uint8_t> lost_record(const perf_event_attr& attr, uint64_t id, int cpu, uint64_t time,
                                 uint32_t type, uint64_t lost) {
  std::vector<uint8_t> out(sizeof(perf_event_header), 0);
  if (type == PERF_RECORD_LOST)
    put_u64(out, id);
  put_u64(out, lost);
  put_sample_id(out, attr, FakeSample{}, SampleContext{.id = id, .cpu = cpu, .time = time});
  finish_header(out, type, 0);
  return out;
}

// PERF_RECORD_SAMPLE as perf_output_sample() writes it (sys/perf_abi_sample.h):
// what the fake cannot make up comes from the FakeSample. No branch
// entries, registers, user stack or aux data.
void encode_fake_sample(std::vector<uint8_t>& out, const perf_event_attr& attr, const FakeSample& s,
                        const SampleContext& c) {
  std::vector<uint8_t> read = read_block(attr.read_format, c);
  std::vector<uint8_t> raw = pad_raw(s.raw);
  Sample sample;
  sample.identifier = c.id;
  sample.ip = s.ip;
  sample.pid = s.pid;
  sample.tid = s.tid;
  sample.time = c.time;
  sample.addr = s.addr;
  sample.id = c.id;
  sample.stream_id = c.id;
  sample.cpu = uint32_t(c.cpu);
  sample.period = c.period;
  sample.read = read;
  sample.callchain = {reinterpret_cast<const uint8_t*>(s.callchain.data()),
                      s.callchain.size() * sizeof(uint64_t)};
  sample.raw = raw;
  sample.branch_hw_index = uint64_t(-1);
  sample.weight = s.weight;
  sample.data_src = s.data_src;
  sample.transaction = s.transaction;
  sample.phys_addr = s.phys_addr;
  sample.cgroup = s.cgroup;
  sample.data_page_size = s.data_page_size;
  sample.code_page_size = s.code_page_size;
  out.clear();
  encode_sample(attr, sample, s.misc, out);
}

}  // namespace

void FakeKernel::wake_locked(Buffer& buffer) {
  buffer.poll_pending = true;
  uint64_t one = 1;
  for (const auto& [fd, entry] : fds_) {
    if (entry->event->buffer.get() == &buffer) {
      [[maybe_unused]] ssize_t ignored = ::write(fd, &one, sizeof(one));
    }
  }
}

bool FakeKernel::write_record_locked(Event& event, const std::vector<uint8_t>& record,
                                     bool is_sample) {
  Buffer& buffer = *event.buffer;
  if (buffer.paused) {
    ++buffer.pending_lost;
    ++event.lost_samples;
    return false;
  }
  // perf_output_begin(): a pending loss is reported first, in one reservation.
  std::vector<uint8_t> bytes;
  if (buffer.pending_lost)
    bytes = lost_record(event.attr.attr, event.id, event.cpu, clock_ns_, PERF_RECORD_LOST,
                        buffer.pending_lost);
  bytes.insert(bytes.end(), record.begin(), record.end());
  if (!buffer.writer.write(bytes)) {
    ++buffer.pending_lost;
    ++event.lost_samples;
    return false;
  }
  buffer.pending_lost = 0;
  buffer.bytes_since_wakeup += bytes.size();
  bool wake = false;
  const perf_event_attr& attr = event.attr.attr;
  if (is_sample && !attr.watermark && attr.wakeup_events) {
    if (++buffer.events_since_wakeup >= attr.wakeup_events) {
      buffer.events_since_wakeup -= attr.wakeup_events;
      wake = true;
    }
  }
  uint64_t watermark = buffer.watermark;
  if (attr.watermark && attr.wakeup_watermark)
    watermark = std::min<uint64_t>(attr.wakeup_watermark, buffer.pages * page_size_);
  if (buffer.bytes_since_wakeup > watermark) {
    buffer.bytes_since_wakeup -= watermark;
    wake = true;
  }
  if (wake)
    wake_locked(buffer);
  return true;
}

bool FakeKernel::fire_locked(Event& event, int cpu, const FakeSample& sample) {
  if (!event.enabled)
    return false;
  if (!event.filter.empty() && !sample.passes_filter)
    return false;
  ++event.hits;
  ++event.count;
  const perf_event_attr& attr = event.attr.attr;
  uint64_t period = attr.freq ? 1 : attr.sample_period;
  if (period == 0 || event.hits % period != 0 || !event.buffer)
    return true;
  SampleContext c;
  c.id = event.id;
  c.cpu = cpu;
  c.time = sample.time.value_or(clock_ns_);
  c.period = period;
  c.count = event.count;
  c.elapsed = clock_ns_ - event.created_ns;
  c.lost = event.lost_samples;
  std::vector<uint8_t> record;
  encode_fake_sample(record, attr, sample, c);
  write_record_locked(event, record, true);
  return true;
}

size_t FakeKernel::emit(int cpu, const FakeEventMatch& match, const FakeSample& sample) {
  std::lock_guard lock(mutex_);
  clock_ns_ += 1000;
  size_t fired = 0;
  for (const auto& event : matching_locked(cpu, match, sample.pid, false))
    fired += fire_locked(*event, cpu, sample);
  return fired;
}

size_t FakeKernel::emit_lost(int cpu, const FakeEventMatch& match, uint64_t lost) {
  return emit_lost_record(cpu, match, PERF_RECORD_LOST, lost);
}

size_t FakeKernel::emit_lost_samples(int cpu, const FakeEventMatch& match, uint64_t lost) {
  return emit_lost_record(cpu, match, PERF_RECORD_LOST_SAMPLES, lost);
}

size_t FakeKernel::emit_lost_record(int cpu, const FakeEventMatch& match, uint32_t type,
                                    uint64_t lost) {
  std::lock_guard lock(mutex_);
  size_t written = 0;
  for (const auto& event : matching_locked(cpu, match, 0, true)) {
    if (!event->buffer)
      continue;
    std::vector<uint8_t> record =
        lost_record(event->attr.attr, event->id, cpu, clock_ns_, type, lost);
    written += write_record_locked(*event, record, false);
  }
  return written;
}

uint64_t FakeKernel::now_ns() const {
  std::lock_guard lock(mutex_);
  return clock_ns_;
}

void FakeKernel::advance_clock(uint64_t ns) {
  std::lock_guard lock(mutex_);
  clock_ns_ += ns;
}

// ---------------------------------------------------------------------------
// Inspection

std::vector<uint64_t> FakeKernel::persistent_ids() const {
  std::lock_guard lock(mutex_);
  std::vector<uint64_t> ids;
  for (const auto& [id, pevent] : persistent_)
    ids.push_back(id);
  return ids;
}

std::string FakeKernel::persistent_name(uint64_t id) const {
  std::lock_guard lock(mutex_);
  auto it = persistent_.find(id);
  return it == persistent_.end() ? "" : it->second.name;
}

std::vector<int> FakeKernel::persistent_cpus(uint64_t id) const {
  std::lock_guard lock(mutex_);
  std::vector<int> cpus;
  auto it = persistent_.find(id);
  if (it != persistent_.end())
    for (const auto& [cpu, event] : it->second.events)
      cpus.push_back(cpu);
  return cpus;
}

Result<uint64_t> FakeKernel::persistent_count(uint64_t id, int cpu) const {
  std::lock_guard lock(mutex_);
  auto it = persistent_.find(id);
  if (it == persistent_.end() || !it->second.events.count(cpu))
    return errorf(ENOENT, "fake kernel: no persistent event %llu on CPU %d",
                  static_cast<unsigned long long>(id), cpu);
  return it->second.events.at(cpu)->count;
}

bool FakeKernel::is_fake_fd(int fd) const {
  std::lock_guard lock(mutex_);
  return find_fd(fd) != nullptr;
}

bool FakeKernel::is_persistent_fd(int fd) const {
  std::lock_guard lock(mutex_);
  const OpenFd* entry = find_fd(fd);
  return entry && entry->event->persistent();
}

std::optional<EventAttr> FakeKernel::event_attr(int fd) const {
  std::lock_guard lock(mutex_);
  const OpenFd* entry = find_fd(fd);
  if (!entry)
    return std::nullopt;
  return entry->event->attr;
}

std::string FakeKernel::filter(int fd) const {
  std::lock_guard lock(mutex_);
  const OpenFd* entry = find_fd(fd);
  return entry ? entry->event->filter : "";
}

uint64_t FakeKernel::count(int fd) const {
  std::lock_guard lock(mutex_);
  const OpenFd* entry = find_fd(fd);
  return entry ? entry->event->count : 0;
}

size_t FakeKernel::open_fds() const {
  std::lock_guard lock(mutex_);
  return fds_.size();
}

size_t FakeKernel::reads(int handle) const {
  std::lock_guard lock(mutex_);
  auto it = reads_.find(handle);
  return it == reads_.end() ? 0 : it->second;
}

int FakeKernel::fd_of(int handle) const {
  std::lock_guard lock(mutex_);
  for (const auto& [fd, entry] : fds_)
    if (entry->handle == handle)
      return fd;
  return -1;
}

size_t FakeKernel::mappings() const {
  std::lock_guard lock(mutex_);
  return mappings_.size();
}

size_t FakeKernel::live_events() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

size_t FakeKernel::buffer_pages(int fd) const {
  std::lock_guard lock(mutex_);
  const OpenFd* entry = find_fd(fd);
  return entry && entry->event->buffer ? entry->event->buffer->pages : 0;
}

// ---------------------------------------------------------------------------
// The call log as text

namespace {

std::string hex(uint64_t value) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%#llx", static_cast<unsigned long long>(value));
  return buf;
}

// The set bits in bit order, '|'-joined, by perf's names (sys/perf_abi_attr.h);
// "bit<N>" for a bit perf has no name for.
template <typename NameOf>
std::string bit_names(uint64_t bits, NameOf name_of) {
  std::string out;
  for (unsigned bit = 0; bit < 64; ++bit) {
    if (!(bits & (1ull << bit)))
      continue;
    if (!out.empty())
      out += '|';
    std::string_view name = name_of(bit);
    out += name.empty() ? "bit" + std::to_string(bit) : std::string(name);
  }
  return out;
}

std::string flag_names(AttrFormat format, uint64_t bits) {
  return bit_names(bits, [format](unsigned bit) { return attr_flag_name(format, 1ull << bit); });
}

// The call log's sample_type: perf 6.1 has no name for TRANSACTION; the
// sample layout does. (Not sys::sample_type_names, which prints perf's.)
std::string call_log_sample_type_names(uint64_t bits) {
  return bit_names(bits, [](unsigned bit) {
    std::string_view name = attr_flag_name(AttrFormat::kSampleType, 1ull << bit);
    for (const SampleField& f : sample_fields())
      if (name.empty() && f.bits == 1ull << bit)
        name = f.name;
    return name;
  });
}

std::string type_name(uint32_t type, uint32_t persistent_type, bool persistent_abi) {
  if (persistent_abi && type == persistent_type)
    return "persistent";
  std::string_view name = builtin_type_name(type);
  return name.empty() ? std::to_string(type) : std::string(name);
}

std::string render_attr(const EventAttr& ea, uint32_t persistent_type, bool persistent_abi) {
  const perf_event_attr& a = ea.attr;
  std::vector<std::string> parts;
  auto add = [&](const std::string& name, const std::string& value) {
    parts.push_back(name + "=" + value);
  };
  auto add_num = [&](const char* name, uint64_t value) {
    if (value)
      add(name, std::to_string(value));
  };
  add("type", type_name(a.type, persistent_type, persistent_abi));
  add("config", hex(a.config));
  if (a.size != kAttrSizeVer7)
    add_num("size", a.size);
  if (a.freq)
    add_num("sample_freq", a.sample_freq);
  else
    add_num("sample_period", a.sample_period);
  if (a.sample_type)
    add("sample_type", call_log_sample_type_names(a.sample_type));
  if (a.read_format)
    add("read_format", flag_names(AttrFormat::kReadFormat, a.read_format));
  uint64_t flags = ea.words[5] & ~(3ull << 15);
  if (flags) {
    // Bit 23 of word 5 is the seed's persistent flag, mainline's mmap2.
    add("flags", bit_names(flags, [persistent_abi](unsigned bit) {
          return persistent_abi && bit == 23 ? std::string_view("persistent")
                                             : attr_word5_flag_name(bit);
        }));
  }
  add_num("precise_ip", a.precise_ip);
  if (a.watermark)
    add_num("wakeup_watermark", a.wakeup_watermark);
  else
    add_num("wakeup_events", a.wakeup_events);
  add_num("bp_type", a.bp_type);
  if (a.config1)
    add("config1", hex(a.config1));
  if (a.config2)
    add("config2", hex(a.config2));
  if (a.branch_sample_type)
    add("branch_sample_type", hex(a.branch_sample_type));
  if (a.sample_regs_user)
    add("sample_regs_user", hex(a.sample_regs_user));
  add_num("sample_stack_user", a.sample_stack_user);
  if (a.use_clockid)
    add("clockid", std::to_string(a.clockid));
  if (a.sample_regs_intr)
    add("sample_regs_intr", hex(a.sample_regs_intr));
  add_num("aux_watermark", a.aux_watermark);
  add_num("sample_max_stack", a.sample_max_stack);
  add_num("aux_sample_size", a.aux_sample_size);
  if (a.sig_data)
    add("sig_data", hex(a.sig_data));
  if (ea.config3())
    add("config3", hex(ea.config3()));
  return "{" + join(parts, ", ") + "}";
}

std::string handle_text(int handle) {
  return handle > 0 ? "fd#" + std::to_string(handle) : "fd#?";
}

std::string prot_text(int prot) {
  if (prot == PROT_NONE)
    return "PROT_NONE";
  std::string out;
  if (prot & PROT_READ)
    out += "PROT_READ";
  if (prot & PROT_WRITE)
    out += out.empty() ? "PROT_WRITE" : "|PROT_WRITE";
  return out;
}

std::string failure(int error) {
  return "-1 " + errno_name(error);
}

}  // namespace

std::string FakeKernel::render_call(const KernelCall& call, uint32_t persistent_type,
                                    bool persistent_abi) {
  std::string out;
  switch (call.kind) {
    case KernelCall::Kind::kOpen:
      out = "perf_event_open(" + render_attr(call.attr, persistent_type, persistent_abi) +
            ", pid=" + std::to_string(call.pid) + ", cpu=" + std::to_string(call.cpu) +
            ", group_fd=" + (call.group_handle < 0 ? "-1" : handle_text(call.group_handle)) +
            ", flags=" + hex(call.flags) +
            ") = " + (call.error ? failure(call.error) : handle_text(call.handle));
      break;
    case KernelCall::Kind::kIoctl: {
      std::string arg;
      if (call.request == PERF_EVENT_IOC_SET_FILTER)
        arg = "\"" + call.arg_text + "\"";
      else if (call.request == PERF_EVENT_IOC_SET_OUTPUT)
        arg = call.arg_text.empty() ? std::to_string(long(call.arg)) : call.arg_text;
      else if (call.request == PERF_EVENT_IOC_ID)
        arg = "&id";
      else if (call.request == PERF_EVENT_IOC_PERIOD)
        arg = "&" + call.arg_text;
      else
        arg = std::to_string(call.arg);
      out = "ioctl(" + handle_text(call.handle) + ", " + perf_ioctl_name(call.request) + ", " +
            arg + ") = " + (call.error ? failure(call.error) : std::to_string(call.result));
      if (!call.error && call.request == PERF_EVENT_IOC_ID)
        out += " (id " + call.arg_text + ")";
      break;
    }
    case KernelCall::Kind::kMmap:
      out = "mmap(" + handle_text(call.handle) + ", " + std::to_string(call.length) + ", " +
            prot_text(call.prot) +
            ") = " + (call.error ? failure(call.error) : "map#" + std::to_string(call.mapping));
      break;
    case KernelCall::Kind::kMunmap:
      out = "munmap(map#" + std::to_string(call.mapping) + ", " + std::to_string(call.length) + ")";
      break;
    case KernelCall::Kind::kClose:
      out = "close(" + handle_text(call.handle) + ")";
      break;
  }
  return out;
}

std::string FakeKernel::render_calls() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const KernelCall& call : calls_) {
    out += render_call(call, options_.persistent_type, options_.persistent_abi);
    out += '\n';
  }
  return out;
}

}  // namespace pp::sys::testing

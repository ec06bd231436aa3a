// A fake kernel: the executable specification of the seed patch set's
// persistent-event ABI (shared/seed/persistent-events-v3.txt), which no real
// kernel has, plus enough of mainline perf to test the code around it.
//
// It models:
//   - N CPUs, a privileged flag, and a fake sysfs under a root the test gives,
//     where the persistent PMU appears as the seed's patches 07/08 make it:
//       bus/event_source/devices/persistent/type               "13\n"
//       bus/event_source/devices/persistent/format/persistent  "attr5:23\n"
//       bus/event_source/devices/persistent/events/<name>      "persistent,config=<id>"
//     (the events file has no newline: 08/12's pevent_sysfs_show prints
//     none). events/ exists only while an event is published (11/12).
//   - ordinary tracepoint and software events, per CPU or per task, that
//     count and, once mapped, write PERF_RECORD_SAMPLEs in the attr's
//     sample_type layout into a real perf_event_mmap_page + data pages, in
//     either direction (attr.write_backward), in overwrite mode when mapped
//     read-only; emit() makes them fire.
//   - boot-time persistent events (06/12: one id on every CPU), DETACH and
//     ATTACH (12/12), opening by id (05/12), read-only mmap, SET_OUTPUT
//     refused, refcounting (10/12), lowest-free ids from 1 (09/12).
//   - a mainline mode: no persistent PMU, DETACH and ATTACH answer ENOTTY.
//   - a log of every perf_event_open, ioctl, mmap, munmap and close, which
//     render_calls() prints for golden tests (STYLE.md 11).
//
// Every fd it hands out is a real fd (an eventfd, so poll() and close() are
// well defined); every mapping is a real shared mapping of a memfd with the
// protection asked for, so a reader that writes to a read-only buffer
// faults exactly as it would on the real kernel. Fd and Mapping close
// through the fake. Calls on fds the fake did not make (pipes, sockets) go to
// the real kernel, except perf_event_open and mmap.
//
//   pp::testing::TempDir sysfs;
//   sys::testing::FakeKernel kernel({.cpus = 2, .sysfs_root = sysfs.path()});
//   auto id = kernel.add_boot_event("mce_record", attr);        // like 06/12
//   sys::EventAttr open_attr;
//   open_attr.attr.type = kernel.persistent_type();
//   open_attr.attr.config = *id;
//   auto fd = kernel.perf_event_open(open_attr, -1, 0, -1, 0);
//   kernel.emit(0, {PERF_TYPE_TRACEPOINT, tp_id}, {.pid = 42});  // fires on CPU 0
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sys/kernel.h"
#include "sys/ring_writer.h"

namespace pp::sys::testing {

// The seed's CPU_BUFFER_NR_PAGES (05/12): 512 KiB per CPU.
inline constexpr size_t kPersistentBufferBytes = size_t{512} * 1024;

// The persistent PMU's type the fake uses unless told otherwise. Not the
// seed's 6 on purpose: code that hard-codes 6 instead of reading
// devices/persistent/type fails its tests.
inline constexpr uint32_t kFakePersistentType = 13;

struct FakeKernelOptions {
  int cpus = 2;
  // Root or CAP_PERFMON. Unprivileged: EACCES for CPU-wide opens (so for
  // creating a persistent event) and for opening a persistent event.
  bool privileged = true;
  // Where to publish bus/event_source/devices/persistent; "" publishes
  // nothing (the registry is still kept).
  std::string sysfs_root{};
  uint32_t persistent_type = kFakePersistentType;
  // false: a mainline kernel (no persistent PMU; DETACH/ATTACH give ENOTTY;
  // opening the persistent type gives ENOENT; bit 23 of word 5 is mmap2).
  bool persistent_abi = true;
  // false: a kernel before 4.7, which refuses attr.write_backward (EINVAL).
  bool write_backward = true;
  // Data pages of a buffer DETACH allocates; 0: 512 KiB worth.
  size_t persistent_buffer_pages = 0;
  // Tracepoint ids that exist; empty: every id opens.
  std::vector<uint64_t> tracepoints{};
};

// What an event writes when it fires, for the fields the fake cannot make up
// itself. Fields the attr's sample_type does not ask for are not written.
struct FakeSample {
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint64_t ip = 0;
  uint64_t addr = 0;
  std::optional<uint64_t> time{};     // default: the fake's clock (+1000 ns per emit)
  std::vector<uint64_t> callchain{};  // PERF_SAMPLE_CALLCHAIN
  std::vector<uint8_t> raw{};         // PERF_SAMPLE_RAW payload, common fields included
  uint16_t misc = PERF_RECORD_MISC_KERNEL;
  uint64_t weight = 0;
  uint64_t data_src = 0;
  uint64_t transaction = 0;
  uint64_t phys_addr = 0;
  uint64_t cgroup = 0;
  uint64_t data_page_size = 0;
  uint64_t code_page_size = 0;
  // false: the hit does not pass a tracepoint filter (PERF_EVENT_IOC_SET_FILTER);
  // events with a filter neither count nor sample it, events without do.
  bool passes_filter = true;
};

// Which events fire: every enabled event of this type and config on the CPU,
// and every per-task event of the sample's pid.
struct FakeEventMatch {
  uint32_t type = PERF_TYPE_TRACEPOINT;
  uint64_t config = 0;
};

// One call that reached the fake. fd numbers are logged as handles: the
// fake's 1-based count of fds it handed out, so logs do not depend on which fd
// numbers the process had free.
struct KernelCall {
  enum class Kind { kOpen, kIoctl, kMmap, kMunmap, kClose };
  Kind kind = Kind::kOpen;
  int error = 0;  // 0 on success, else the errno
  // kOpen
  EventAttr attr;
  pid_t pid = -1;
  int cpu = -1;
  int group_handle = -1;
  unsigned long flags = 0;
  // kOpen: the new fd's handle; others: the fd's handle (0 for fds the fake
  // did not make); kMmap/kMunmap: the mapping's handle in `mapping`.
  int handle = 0;
  int mapping = 0;
  // kIoctl
  unsigned long request = 0;
  unsigned long arg = 0;
  std::string arg_text;  // a filter string, a target fd handle, an id
  long result = 0;
  // kMmap / kMunmap
  size_t length = 0;
  int prot = 0;
};

// The fake must outlive every Fd and Mapping it handed out.
class FakeKernel final : public Kernel {
 public:
  explicit FakeKernel(FakeKernelOptions options = {});
  ~FakeKernel() override;
  FakeKernel(const FakeKernel&) = delete;
  FakeKernel& operator=(const FakeKernel&) = delete;

  // --- the Kernel interface ---
  Result<Fd> perf_event_open(const EventAttr& attr, pid_t pid, int cpu, int group_fd,
                             unsigned long flags) override;
  Result<long> ioctl(int fd, unsigned long request, unsigned long arg) override;
  Result<long> ioctl_ptr(int fd, unsigned long request, void* arg) override;
  Result<Mapping> mmap(int fd, size_t length, int prot) override;
  Result<size_t> read(int fd, void* buf, size_t length) override;
  Result<int> poll(std::span<pollfd> fds, int timeout_ms) override;
  void close(int fd) override;
  void munmap(void* addr, size_t length) override;

  // --- the machine ---
  int cpus() const { return options_.cpus; }
  uint32_t persistent_type() const { return options_.persistent_type; }
  bool persistent_abi() const { return options_.persistent_abi; }
  void set_privileged(bool privileged);
  // Data pages of a persistent buffer DETACH allocates.
  size_t persistent_buffer_pages() const { return persistent_pages_; }

  // A persistent event the kernel created itself, as mcheck_init_tp() does
  // for mce_record (06/12): one event per CPU in `cpus` (all when empty), one
  // id for all, named `name` in sysfs, enabled, with a `pages`-page buffer
  // each (0: 512 KiB). Returns the id.
  Result<uint64_t> add_boot_event(const std::string& name, const EventAttr& attr,
                                  std::vector<int> cpus = {}, size_t pages = 0);

  // Fires every matching event on `cpu` (see FakeEventMatch): each enabled
  // one whose filter (if any) the sample passes counts one hit and, every
  // sample_period hits, writes a PERF_RECORD_SAMPLE into its buffer if it has
  // one. Returns how many events counted the hit.
  size_t emit(int cpu, const FakeEventMatch& match, const FakeSample& sample = {});
  // Writes PERF_RECORD_LOST {id, lost} / PERF_RECORD_LOST_SAMPLES {lost}
  // (with the sample_id trailer when attr.sample_id_all) into the buffer of
  // every matching event on `cpu`. Returns how many buffers got one.
  size_t emit_lost(int cpu, const FakeEventMatch& match, uint64_t lost);
  size_t emit_lost_samples(int cpu, const FakeEventMatch& match, uint64_t lost);

  // The next `times` calls of `kind` (and, for ioctls, `request` unless 0)
  // fail with `error` before any other check, as a full fd table (EMFILE) or
  // memory pressure (ENOMEM) would.
  void inject_error(KernelCall::Kind kind, int error, int times = 1, unsigned long request = 0);

  // The fake's clock, used for sample times and time_enabled/time_running.
  uint64_t now_ns() const;
  void advance_clock(uint64_t ns);

  // --- what a test inspects ---
  std::vector<uint64_t> persistent_ids() const;    // sorted
  std::string persistent_name(uint64_t id) const;  // "" when there is no such id
  std::vector<int> persistent_cpus(uint64_t id) const;
  // The event's count on `cpu`, as read(2) gives it; ENOENT when absent.
  Result<uint64_t> persistent_count(uint64_t id, int cpu) const;
  bool is_fake_fd(int fd) const;
  // dup(2) of one of the fake's fds: a second fd of the same open file (what
  // SCM_RIGHTS or systemd's fd store hands back), known to the fake. EBADF
  // for an fd the fake did not make.
  Result<Fd> duplicate(int fd);
  bool is_persistent_fd(int fd) const;
  std::optional<EventAttr> event_attr(int fd) const;  // with bit 23 set while persistent
  std::string filter(int fd) const;
  uint64_t count(int fd) const;
  size_t open_fds() const;  // fds the fake made that are still open
  // read(2)s of the fd with this handle (fd#N in render_calls()) so far:
  // reads are not in the call log, they are what the broker's guard makes.
  size_t reads(int handle) const;
  // The fd with this handle, -1 once closed: how a test acts as another
  // holder of the same open file (an ioctl through it reaches the event).
  int fd_of(int handle) const;
  size_t mappings() const;            // mappings still mapped
  size_t live_events() const;         // events alive (counting), persistent or not
  size_t buffer_pages(int fd) const;  // data pages of the fd's buffer, 0 if none

  const std::vector<KernelCall>& calls() const { return calls_; }
  void clear_calls();
  // One line per call, e.g.
  //   perf_event_open({type=tracepoint, config=0x131, sample_period=1, sample_type=RAW}, pid=-1,
  //   cpu=0, group_fd=-1, flags=0) = fd#1 ioctl(fd#1, PERF_EVENT_IOC_DETACH, 0) = 1 mmap(fd#2,
  //   528384, PROT_READ) = map#1
  std::string render_calls() const;
  static std::string render_call(const KernelCall& call, uint32_t persistent_type,
                                 bool persistent_abi);

 private:
  struct Buffer;
  struct Event;
  struct OpenFd;
  struct MappingEntry {
    std::shared_ptr<Event> event;
    std::shared_ptr<Buffer> buffer;
    size_t length = 0;
    int handle = 0;
  };
  struct PersistentEvent {
    uint64_t id = 0;
    std::string name;
    std::map<int, std::shared_ptr<Event>> events;  // by CPU
  };
  struct Injection {
    KernelCall::Kind kind;
    int error;
    int times;
    unsigned long request;
  };

  Result<Fd> open_locked(const EventAttr& attr, pid_t pid, int cpu, int group_fd,
                         unsigned long flags, KernelCall& call);
  Result<long> ioctl_entry(int fd, unsigned long request, unsigned long arg, void* ptr);
  Result<long> ioctl_locked(int fd, unsigned long request, unsigned long arg, void* ptr,
                            KernelCall& call);
  Result<long> detach_locked(OpenFd& entry);
  Result<long> attach_locked(OpenFd& entry);
  Result<long> set_output_locked(OpenFd& entry, int target_fd, KernelCall& call);
  Result<Mapping> mmap_locked(int fd, size_t length, int prot, KernelCall& call);
  Result<size_t> read_locked(OpenFd& entry, void* buf, size_t length);

  std::optional<int> injected(KernelCall::Kind kind, unsigned long request);
  Result<Fd> new_fd_locked(const std::shared_ptr<Event>& event);
  std::shared_ptr<Buffer> new_buffer_locked(size_t pages, bool overwrite, bool backward);
  uint64_t alloc_persistent_id_locked() const;
  void publish_locked(const PersistentEvent& pevent);
  void unpublish_locked(const PersistentEvent& pevent);
  void publish_pmu();
  void release_if_dead_locked(const std::shared_ptr<Event>& event);
  bool fire_locked(Event& event, int cpu, const FakeSample& sample);
  bool write_record_locked(Event& event, const std::vector<uint8_t>& record, bool is_sample);
  size_t emit_lost_record(int cpu, const FakeEventMatch& match, uint32_t type, uint64_t lost);
  void wake_locked(Buffer& buffer);
  std::vector<std::shared_ptr<Event>> matching_locked(int cpu, const FakeEventMatch& match,
                                                      uint32_t pid, bool any_pid) const;
  const OpenFd* find_fd(int fd) const;
  int handle_of(int fd) const;
  void log(KernelCall call);

  FakeKernelOptions options_;
  size_t page_size_;
  size_t persistent_pages_;
  mutable std::mutex mutex_;
  std::map<int, std::unique_ptr<OpenFd>> fds_;
  std::map<const void*, MappingEntry> mappings_;
  std::map<uint64_t, std::shared_ptr<Event>> events_;  // by perf id (PERF_EVENT_IOC_ID)
  std::map<uint64_t, PersistentEvent> persistent_;     // by persistent id
  std::vector<Injection> injections_;
  std::vector<KernelCall> calls_;
  uint64_t next_event_id_ = 1;
  int next_handle_ = 1;
  std::map<int, size_t> reads_;  // by handle
  int next_mapping_ = 1;
  uint64_t clock_ns_ = 1'000'000'000;
};

}  // namespace pp::sys::testing

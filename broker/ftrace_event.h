// The broker's ftrace backend (`create --backend ftrace`): one tracefs
// instance per event, owned by the broker, which is its only consumer.
//
// An ftrace instance has one consume position per CPU, shared by every
// reader of trace_pipe_raw: two readers would split the
// records. So the broker alone reads each CPU's
// instances/perf-persistent.NAME/per_cpu/cpuN/trace_pipe_raw (non-blocking,
// whole pages, until EAGAIN), walks the pages with ftrace/ring_page, and
// republishes each record as the perf sample perf record writes for a
// tracepoint:
//
//   PERF_RECORD_SAMPLE, misc KERNEL, sample_type
//   IDENTIFIER|TID|TIME|CPU|PERIOD|RAW:
//     u64 identifier   kSharedRingIdBase | event id << 12 | cpu
//     u32 pid, tid     the record's common_pid (ftrace keeps the thread)
//     u64 time         the instance's trace clock (the event's -k clock)
//     u32 cpu, res     the CPU whose buffer held it
//     u64 period       1
//     u32 size, raw    the whole ftrace record, padded as the kernel pads
//
// into a shared ring per CPU (sys/shared_ring.h), backward-written like the
// broker's perf buffers; readers map it read-only, as they map a perf
// event's. No IP: ftrace records none. The kernel's losses (the pages'
// missed-events flags) become PERF_RECORD_LOST records in that ring.
//
// The instance's settings are the event's: buffer_size_kb from -m,
// tracing_cpumask from -C, trace_clock from -k, the tracepoint's filter,
// the tracepoint enabled, tracing_on 1, the directory mode 0700. check()
// finds each one changed by anyone else, puts it back, and says what it
// found (the guard's findings).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "ftrace/common_fields.h"
#include "ftrace/ring_page.h"
#include "sys/fd.h"
#include "sys/ftrace_instance.h"
#include "sys/perf_attr.h"
#include "sys/ring_writer.h"
#include "sys/shared_ring.h"
#include "sys/tree.h"

namespace pp::broker {

// Every instance the broker makes is named kInstancePrefix + the event's
// name (a validated name: [A-Za-z0-9_.-], persistent/names.h).
inline constexpr const char* kInstancePrefix = "perf-persistent.";
inline constexpr mode_t kInstanceMode = 0700;

// The sample ids of the shared rings: no perf event id comes near them
// (the kernel counts its ids up from 1).
inline constexpr uint64_t kSharedRingIdBase = uint64_t(1) << 62;

// The shared ring holds this many times the instance's bytes: a perf sample
// of a tracepoint is about three times its ftrace record (72 bytes for
// sys_enter_getppid's 20), and a reader that comes late still finds as
// many records as the instance held.
inline constexpr uint64_t kSharedRingFactor = 4;

// The most pages one drain() takes from one CPU, so that a CPU written to as
// fast as it is read never holds the broker's loop (what is left waits for
// the next drain).
inline constexpr size_t kMaxDrainPages = 512;

// What an ftrace-backend event is made with.
struct FtraceSpec {
  std::string instance;        // kInstancePrefix + name
  std::string tracepoint;      // "syscalls:sys_enter_getppid"
  uint64_t tracepoint_id = 0;  // its events/SYS/EVENT/id
  std::vector<int> cpus;
  uint64_t buffer_kb = 0;  // per CPU
  std::string filter;      // "" for none
  int clockid = 0;         // the event's -k clock
  uint64_t event_id = 0;   // the broker's id of the event (the sample ids)
};

// The trace_clock that stamps records in `clockid`'s time: "mono" for
// CLOCK_MONOTONIC, "mono_raw", "boot", "tai"; EINVAL for clocks ftrace has
// no equivalent of (CLOCK_REALTIME: a tracepoint refuses it in perf too).
Result<std::string> trace_clock_for(int clockid);

// tracing_cpumask's text for `cpus`: hex words of 32 CPUs, highest first,
// separated by commas ("3", "1,00000000").
std::string cpumask_text(const std::vector<int>& cpus);

// The attr readers see: a tracepoint sample of the layout above.
sys::EventAttr shared_ring_attr(uint64_t tracepoint_id, int clockid);

class FtraceEvent {
 public:
  // Makes the instance (a name-taken error when it exists), applies the
  // settings, opens each CPU's trace_pipe_raw and shared ring, and turns
  // tracing on. On a failure nothing stays: the instance is removed.
  static Result<std::unique_ptr<FtraceEvent>> create(const sys::Tree& tracefs,
                                                     const FtraceSpec& spec);
  // Takes over the instance a previous broker made for this event (a
  // restart): what its buffer holds is kept and read first. Each setting
  // found changed is put back and listed in `changed`. Not-found when the
  // instance is gone.
  static Result<std::unique_ptr<FtraceEvent>> adopt(const sys::Tree& tracefs,
                                                    const FtraceSpec& spec,
                                                    std::vector<std::string>* changed);
  // Closes the pipes and rings; the instance stays (it outlives the broker).
  ~FtraceEvent() = default;
  FtraceEvent(const FtraceEvent&) = delete;
  FtraceEvent& operator=(const FtraceEvent&) = delete;

  // Turns tracing off, closes every file of the instance and removes it.
  Status remove();

  struct Drained {
    uint64_t records = 0;  // republished
    uint64_t pages = 0;
    uint64_t lost = 0;     // the kernel's missed events, as PERF_RECORD_LOST
    uint64_t foreign = 0;  // records of another tracepoint (someone enabled it)
  };
  // Reads every CPU (or only `cpu`, >= 0) until it has nothing left, at
  // most kMaxDrainPages pages each, and republishes what it read. A page
  // that breaks the rules is refused with its error after the records
  // before it are published.
  Result<Drained> drain(int cpu = -1);

  // The settings as they should be, each compared with the instance's:
  // what someone else changed ("tracing_on was 0; set to 1 again"), put
  // back. Empty when nothing changed.
  std::vector<std::string> check();

  const FtraceSpec& spec() const { return spec_; }
  const sys::EventAttr& attr() const { return attr_; }
  // One CPU's shared ring, or null when the event has no buffer there.
  const sys::SharedRing* ring(int cpu) const;
  uint64_t sample_id(int cpu) const;
  // Records published on `cpu` since the broker took the instance.
  uint64_t published(int cpu) const;
  // A descriptor for each reader to poll in place of the ring's: POLLHUP
  // once this event is gone (killed, or its broker exited), as a perf
  // event's fd says; nothing before.
  Result<sys::Fd> hangup_fd() const { return hangup_.reader_fd(); }
  // The descriptors the broker polls: POLLIN when a CPU's buffer reaches
  // buffer_percent full. `cpu_of` maps them back.
  std::vector<std::pair<int, int>> poll_fds() const;  // (fd, cpu)

 private:
  struct Cpu {
    int cpu = 0;
    sys::Fd pipe;           // trace_pipe_raw, O_NONBLOCK
    std::string pipe_path;  // its path, for messages
    sys::SharedRing ring;
    sys::RingWriter writer;
    uint64_t sample_id = 0;
    uint64_t published = 0;
    uint64_t last_time = 0;  // of the last record published
    // per_cpu/cpuN/stats' "commit overrun" published as lost so far.
    uint64_t commit_overrun = 0;
  };
  // Publishes as lost the events a nested write dropped since the last
  // call: the kernel counts them in the CPU's stats, no page says so.
  void publish_commit_overrun(Cpu& cpu, Drained& total);
  FtraceEvent(sys::FtraceInstance instance, FtraceSpec spec)
      : instance_(std::move(instance)), spec_(std::move(spec)) {}

  // The settings the spec wants, in the order they are applied.
  struct Setting {
    std::string file;
    std::string value;
  };
  std::vector<Setting> settings() const;
  Status apply();
  // Reads the layout and the format, opens the pipes, makes the rings.
  Status open_cpus();
  void publish_lost(Cpu& cpu, uint64_t lost, uint64_t time);

  sys::FtraceInstance instance_;
  FtraceSpec spec_;
  std::string tracefs_root_;
  sys::EventAttr attr_;
  ftrace::RingLayout layout_;
  ftrace::PidField pid_;
  std::vector<Cpu> cpus_;
  sys::HangupPipe hangup_;  // closes with the event
  // What each setting read back as once applied: the baseline check()
  // compares with (the kernel may write a setting back differently).
  std::vector<Setting> baseline_;
  std::vector<uint8_t> pages_;   // one drain's pages of one CPU
  std::vector<uint8_t> record_;  // one sample being encoded
};

}  // namespace pp::broker

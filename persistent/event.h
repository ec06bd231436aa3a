// The one model of a persistent event that everything above persistent/ sees,
// whichever backend holds it (Documentation/architecture.txt): the kernel's seed ABI, or
// the broker daemon on mainline kernels.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sys/clock.h"
#include "sys/fd.h"
#include "sys/perf_attr.h"

namespace pp::persistent {

// Data pages per CPU when `create -m` is not given: 512 KiB with 4 KiB pages,
// the seed's CPU_BUFFER_NR_PAGES (05/12).
inline constexpr uint64_t kDefaultPages = 128;
// The largest -m accepted: 256 MiB per CPU with 4 KiB pages.
inline constexpr uint64_t kMaxPages = 1 << 16;

// The run directory: where the broker keeps its socket, state and published
// registry, and where the kernel backend keeps its name records. The default
// is kDefaultRunDir; the environment variable kRunDirEnv overrides it, and
// every command's --run-dir overrides both.
inline constexpr const char* kDefaultRunDir = "/run/perf-persistent";
inline constexpr const char* kRunDirEnv = "PERF_PERSISTENT_RUN_DIR";

// The PMU type the broker publishes in <run-dir>/devices/persistent/type.
// The kernel hands out PMU types from an idr in 0..INT_MAX, so a type above
// INT_MAX can never be a kernel PMU's: an attr with this type is a broker
// event, and one that reaches perf_event_open by mistake fails with ENOENT.
inline constexpr uint32_t kBrokerPmuType = 0xffff0000u;

// How the kernel writes an event's ring buffer. Readers need it to walk the
// records: the broker asks for write_backward (newest record at data_head);
// the seed kernel's buffers are forward-written.
enum class Layout { kBackward, kForward };

std::string_view layout_name(Layout layout);

// Where each (event, CPU) lives in the kernel backend: DETACH gives one id
// per CPU (seed 12/12); the kernel's boot events have one id for all CPUs.
struct CpuId {
  int cpu = 0;
  uint64_t id = 0;
};

struct CpuCount {
  int cpu = 0;
  uint64_t count = 0;  // events counted on that CPU since buffer_start
};

// One change the broker found made to an event behind its back, through an
// fd it handed out (Documentation/perf-persistent-daemon.txt, TRUST MODEL).
struct Tampering {
  int64_t time = 0;  // unix seconds, when the broker noticed
  int cpu = 0;
  std::string what;     // "disabled (PERF_EVENT_IOC_DISABLE); re-enabled"
  std::string holders;  // who held its fds then: "uid 0 (pid 42)", "" when nobody
};

// The most tampering entries an event keeps (the newest); tamper_count has all.
inline constexpr size_t kMaxTamperings = 16;

// Whose ring buffer a broker event's records are written into (EventInfo::ring,
// CreateRequest::backend): perf's, per CPU; or an ftrace instance's, which
// the broker drains into a shared ring per CPU (tracepoints only).
inline constexpr const char* kRingPerf = "perf";
inline constexpr const char* kRingFtrace = "ftrace";

// Where a broker event came from (EventInfo::origin): `perf persistent
// create`, or the broker's config file (which a reload follows).
inline constexpr const char* kOriginCreate = "create";
inline constexpr const char* kOriginConfig = "config";

// The line of an event's error (EventInfo::error) that says what is wrong,
// for one-line displays: a parse error's "Error: ..." line without that
// prefix (the caret form takes four lines), else its first line; trimmed.
//   "event syntax error: 'mce:mce_record'\n ...\nError: ... does not exist."
//   -> "... does not exist."
std::string error_line(std::string_view error);

struct EventInfo {
  uint64_t id = 0;
  std::string name;
  std::string event;    // the event string given to create; "" when unknown
  std::string backend;  // "broker" or "kernel"
  // "running"; "failed": the broker could not create or re-create it (error
  // says why; retried at every reload); "unavailable": the same for an
  // event the config marks optional, which is no failure; "down": the
  // registry holds it but no broker runs.
  std::string state = "running";
  std::string error;    // why it failed
  sys::EventAttr attr;  // what is open on each CPU (all zero when unknown)
  std::vector<int> cpus;
  uint64_t pages = 0;      // data pages per CPU
  uint64_t page_size = 0;  // bytes
  Layout layout = Layout::kBackward;
  std::string filter;
  int64_t created = 0;       // unix seconds, when the event was first created
  int64_t buffer_start = 0;  // unix seconds, when its buffers and counts started:
                             // later than `created` after a broker restart
  uid_t creator_uid = 0;
  pid_t creator_pid = 0;
  std::vector<CpuId> cpu_ids;       // the kernel backend's per-CPU ids; empty for the broker
  std::vector<Tampering> tampered;  // the newest kMaxTamperings, oldest first (broker only)
  uint64_t tamper_count = 0;        // every tampering found since buffer_start
  // The context stream (persistent/tracking.h): `is_context` marks the
  // stream itself; an event that has one names it in `context` (its id; 0
  // when the event was created with --no-context).
  bool is_context = false;
  uint64_t context = 0;
  // The broker's own bookkeeping, saved in its registry:
  std::string origin = kOriginCreate;  // kOriginCreate or kOriginConfig
  bool optional = false;               // a config event marked `optional = yes`
  // The kernel's PERF_EVENT_IOC_ID of each CPU's event: how a restarted
  // broker knows that an fd handed back to it (systemd's fd store, or the
  // broker it replaces) is still this event.
  std::vector<CpuId> perf_ids;
  // Why the buffers restarted at buffer_start ("" when they never did):
  // what list says of the samples lost then.
  std::string lost_reason;
  // Whose ring buffer holds its records (the broker's events): kRingPerf, a
  // perf event per CPU; or kRingFtrace, the tracefs instance `instance`,
  // drained by the broker into a shared ring per CPU that readers map.
  std::string ring = kRingPerf;
  std::string instance;  // "perf-persistent.NAME" for kRingFtrace, else ""

  // Filled by list(verbose = true) only.
  std::optional<std::vector<CpuCount>> counts;
  std::optional<int> readers;  // connected readers (broker only)
  // Whether a keeper holds its buffers mapped (perf-persistent-daemon(1),
  // RESTARTS), so they survive a broker restart (broker only).
  std::optional<bool> kept;

  uint64_t buffer_bytes() const { return pages * page_size; }
  // The clock that stamps its records (attr.use_clockid), when it has one:
  // "monotonic"; "" when the attr is unknown or uses perf's default clock.
  std::string clock() const {
    return attr.attr.use_clockid ? sys::clock_name(attr.attr.clockid) : std::string();
  }
  // The buffers restarted after the event was created (a broker restart):
  // samples from before are gone. Times are in seconds, so a restart within
  // the second the event was created shows only in lost_reason.
  bool restarted() const { return buffer_start != created || !lost_reason.empty(); }
};

// What `create` asks for.
struct CreateRequest {
  std::string event;   // the event string, parsed by parse/
  std::string name;    // "" means the default (the tracepoint's name, else the id)
  uint64_t pages = 0;  // data pages per CPU, a power of two; 0 means kDefaultPages
  std::string cpus;    // a CPU list ("0-3,8"); "" means every online CPU
  std::string filter;  // a tracepoint filter (PERF_EVENT_IOC_SET_FILTER); "" for none
  int clockid = sys::kDefaultClockId;  // -k: the clock that stamps its records
  bool context = true;  // keep the context stream for it (persistent/tracking.h); --no-context
  std::string backend = kRingPerf;  // --backend: kRingPerf or kRingFtrace (broker only)
};

// A read-only view of one CPU's buffer of a persistent event, from
// Backend::open(). Map it with kernel.mmap(fd, mmap_length, PROT_READ): the
// buffer is in overwrite mode and PROT_WRITE is refused.
struct Buffer {
  sys::Fd fd;
  uint64_t id = 0;
  int cpu = 0;
  size_t mmap_length = 0;  // the control page plus the data pages, in bytes
  Layout layout = Layout::kBackward;
  // A shared ring the broker writes (an ftrace-backend event): the sample
  // id its records carry, which no PERF_EVENT_IOC_ID can tell; and the fd
  // is a memory file, always readable to poll(2), so a reader wakes itself
  // by time instead of polling it, and polls `hangup` instead.
  uint64_t sample_id = 0;
  bool pollable = true;
  // From the broker, when it passed one: polls POLLHUP once the event is
  // gone (killed, its definition replaced, the broker gone), which a perf
  // event's fd never says of a broker's kill (the reader's own fd keeps
  // the event). Invalid from the kernel backend and older brokers.
  sys::Fd hangup;
};

}  // namespace pp::persistent

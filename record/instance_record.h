// `perf persistent record --instance NAME`: an ftrace instance's buffer
// written as perf.data, each record a tracepoint sample laid out as perf
// record lays one out, so perf script and perf report read it.
//
// Each enabled event of the instance (set_event) becomes an attr
// {PERF_TYPE_TRACEPOINT, config = its id, sample_period 1, sample_type
// IDENTIFIER|TID|TIME|CPU|PERIOD|RAW, sample_id_all}, with one sample id per
// CPU. A sample: the record's common_pid as pid and tid (ftrace keeps the
// thread, not its process), the record's trace-clock time (the instance's
// trace_clock, not perf's clock), the CPU whose buffer held it, the record
// as RAW. No IP: ftrace does not record one. The tracing data holds the
// instance's header files and the events' formats.
//
// Reading consumes: trace_pipe_raw has one consume position per CPU.
//
//   InstanceRequest request{.instance = "blackbox", .output = "bb.data"};
//   PP_ASSIGN_OR_RETURN(InstanceResult result, record_instance(request));
//   std::cerr << instance_summary(result);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/json.h"
#include "base/result.h"
#include "ftrace/ring_page.h"
#include "persistent/previous_boot.h"
#include "sys/ftrace_instance.h"
#include "sys/tree.h"

namespace pp::record {

struct InstanceRequest {
  std::string instance;
  // --previous-boot: the boot-mapped instance the kernel command line names
  // (trace_instance=NAME^traceoff@ADDRESS:SIZE), which must hold the previous
  // boot's buffer; `instance`, when set, must be that one.
  bool previous_boot = false;
  // The kernel command line; proc_root's cmdline when absent.
  std::optional<std::string> kernel_cmdline;
  // With previous_boot: where the broker keeps the previous boot's buffer
  // (persistent/previous_boot.h). The newest copy (of `instance`, when set)
  // is read, which does not consume it; with none, the instance itself.
  std::string kept_dir = persistent::kDefaultKeptDir;
  std::string output = "perf.data";  // "-": perf's pipe format on stdout
  std::string tracefs_root;          // "" = sys::default_tracefs_root()
  std::string proc_root = sys::kDefaultProcRoot;
  std::string sysfs_root = sys::kDefaultSysfsRoot;
  std::vector<std::string> cmdline;  // HEADER_CMDLINE
  // The most read from one CPU's trace_pipe_raw (a CPU written to faster
  // than it is read never runs dry).
  size_t max_bytes_per_cpu = size_t(256) << 20;
};

struct InstanceResult {
  std::string output;
  std::string instance;
  std::string clock;  // the instance's trace_clock ("local")
  // A boot-mapped instance holding the previous boot's buffer: the file then
  // names no task (this boot's /proc would name the wrong ones).
  bool previous_boot = false;
  // The broker's copy read (its directory), "" when the instance itself was.
  std::string kept;
  // Wall-clock time from the broker's clock markers (persistent/
  // previous_boot.h): each record's from the last marker at or before it.
  uint64_t markers = 0;
  std::string marked_boot_id;                           // the boot_id the last marker names
  std::optional<uint64_t> first_wall_ns, last_wall_ns;  // of the records after a marker
  uint64_t unmarked_records = 0;  // before the first marker: no wall-clock time
  uint32_t cpus = 0;
  uint32_t events = 0;  // attrs written
  uint64_t pages = 0;
  uint64_t samples = 0;
  uint64_t bytes = 0;  // the file
  // Lost by the kernel before a page: counted, and pages flagged without a count.
  uint64_t missed_events = 0;
  uint64_t pages_after_loss = 0;
  // The kernel's own counters (per_cpu/cpuN/stats, summed; since the
  // buffer was last reset): records overwritten before they were read, and
  // records not written at all. nullopt when the instance has no stats (a
  // kept copy).
  std::optional<uint64_t> overrun, dropped_events;
  // Records of events that are not enabled and whose format was not found.
  uint64_t unknown_records = 0;
};

// An instance's buffer read whole: every CPU's pages (which own the
// records' payloads: keep this object while the records are used), their
// records in the order written per CPU, and the broker's clock markers
// among them (ftrace/print records, persistent/previous_boot.h).
struct InstanceRead {
  ftrace::RingLayout layout;
  std::vector<uint32_t> cpus;
  std::vector<std::vector<uint8_t>> pages;  // one per CPU, as cpus
  ftrace::RingRead read;
  std::map<uint32_t, uint64_t> missed_by_cpu;
  // per_cpu/cpuN/stats summed over the CPUs, read after the pages (none
  // for a kept copy, which has no stats: nullopt).
  std::optional<sys::CpuStats> stats;
  // The first malformed page (the records before it are in `read`).
  std::optional<Error> bad_page;
  persistent::MarkerClock clock;
};

// Reads every CPU of `instance` (consuming a live one; a kept copy's files
// stay as they are), at most `max_bytes_per_cpu` of each. Errors name the
// instance.
Result<InstanceRead> read_instance(const sys::FtraceInstance& instance, size_t max_bytes_per_cpu);

// Reads every CPU of the instance (consuming it) and writes the file.
// Not-found for a missing instance, and with previous_boot for a command
// line without a boot-mapped instance or one that holds this boot's
// buffer; a usage error when it has no enabled event or, with
// previous_boot, the command line names several and `instance` none; EINVAL naming the CPU, page
// and byte of a malformed page (the records before it are written).
Result<InstanceResult> record_instance(const InstanceRequest& request);

// "[ perf persistent record: Captured and wrote ... ]" lines.
std::string instance_summary(const InstanceResult& result);

// --json: the summary as one object (documented in perf-persistent-record(1)):
//
//   {"output": "bb.data", "instance": "blackbox", "clock": "local", "previous_boot": false,
//    "kept": null,
//    "wall_clock": {"markers": 3, "boot_id": "6f0c...", "first": "2026-12-06T01:02:03.5Z",
//                   "last": "2026-12-06T01:02:31.25Z", "unmarked_records": 0},
//    "cpus": 2, "events": 2, "pages": 14, "samples": 1450, "bytes": 98304,
//    "lost": {"missed_events": 0, "pages_after_loss": 0, "unknown_records": 0,
//             "overrun": 0, "dropped_events": 0},
//    "error": null, "exit_status": 0}
json instance_summary_json(const InstanceResult& result);

}  // namespace pp::record

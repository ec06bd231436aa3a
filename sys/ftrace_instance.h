// An ftrace instance's files, under a tracefs root it is given (the live
// /sys/kernel/tracing, or a test's temp-dir tree with regular files in place
// of the kernel's): what the black box reads of an instance.
//
//   instances/NAME/events/header_page, header_event   the ring's page layout
//   instances/NAME/set_event                          "sched:sched_switch\n..."
//   instances/NAME/events/SYS/EVENT/id, format        the enabled events
//   instances/NAME/trace_clock                        "[local] global counter ..."
//   instances/NAME/last_boot_info                     boot-mapped instances (6.12+)
//   instances/NAME/per_cpu/cpuN/trace_pipe_raw        whole ring-buffer pages
//
// Reading trace_pipe_raw consumes: an instance has one consume position per
// CPU, shared by trace_pipe, every reader of trace_pipe_raw and its mmap.
//
//   PP_ASSIGN_OR_RETURN(FtraceInstance inst, FtraceInstance::open(tracefs, "blackbox"));
//   PP_ASSIGN_OR_RETURN(std::vector<uint8_t> pages, inst.read_pages(0, 4096, 64 << 20));
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sys/fd.h"
#include "sys/tree.h"

namespace pp::sys {

// An event enabled in an instance, as set_event names it.
struct InstanceEvent {
  std::string system;
  std::string name;
  uint64_t id = 0;
  std::string format;  // events/SYS/EVENT/format, whole
};

// A CPU's per_cpu/cpuN/stats, as the kernel counts them
// (kernel/trace/trace.c, tracing_stats_read()):
//   entries: 27            records in the buffer now
//   overrun: 0             records overwritten before they were read
//   commit overrun: 0      records lost to a nested write filling a page
//   bytes: 1840
//   oldest event ts:  42594.266644
//   now ts:  42594.300418
//   dropped events: 0      records not written (the buffer was full, not overwriting)
//   read events: 0
struct CpuStats {
  uint64_t entries = 0;
  uint64_t overrun = 0;
  uint64_t commit_overrun = 0;
  uint64_t dropped_events = 0;
};

// The counts of a stats file's text; a line it does not know is skipped,
// a count that is no number leaves 0. Pure.
CpuStats parse_cpu_stats(std::string_view text);

class FtraceInstance {
 public:
  // The instance `name` under `tracefs` (instances/NAME/); a not-found error
  // naming the directory and the instances there when it is missing; a usage
  // error for a name that is no single path component.
  static Result<FtraceInstance> open(const Tree& tracefs, const std::string& name);

  const std::string& name() const { return name_; }
  // The instance's directory, for what reads its events/ (the tracing data).
  const Tree& tree() const { return tree_; }

  Result<std::string> header_page() const;
  Result<std::string> header_event() const;
  // The enabled events, in set_event's order, each with its id and format.
  Result<std::vector<InstanceEvent>> enabled_events() const;
  // The selected clock of trace_clock ("local").
  Result<std::string> trace_clock() const;
  // last_boot_info, or nothing when the kernel has no such file (before
  // 6.12) or the instance is not boot-mapped.
  std::optional<std::string> last_boot_info() const;
  // per_cpu/cpuN/stats, which reading does not consume.
  Result<CpuStats> cpu_stats(uint32_t cpu) const;
  // The CPUs of per_cpu/, ascending.
  Result<std::vector<uint32_t>> cpus() const;

  // Making and running an instance (the broker's ftrace backend, which is
  // its only consumer):
  //
  // Makes instances/NAME (mkdir in tracefs creates a whole instance, its
  // buffers included) and takes its directory to `mode` (0700: root alone
  // may look inside). A name-taken error when it exists already.
  static Result<FtraceInstance> make(const Tree& tracefs, const std::string& name, mode_t mode);
  // Removes instances/NAME (rmdir frees its buffers); EBUSY while a file
  // of it is open.
  static Status remove(const Tree& tracefs, const std::string& name);
  // The instance directory's permission bits, and changing them.
  Result<mode_t> mode() const;
  Status set_mode(mode_t mode) const;
  // One of its files, trimmed ("1", "4096", "3", "none"); and writes one,
  // whole, the way `echo VALUE > FILE` does. The kernel's refusal (EINVAL
  // for a filter it cannot parse) names the file.
  Result<std::string> read_setting(std::string_view file) const;
  Status write_setting(std::string_view file, std::string_view value) const;
  // per_cpu/cpuN/trace_pipe_raw opened non-blocking, kept open by its one
  // consumer; and one read of a page from it: the bytes read (a whole
  // page), or 0 when it has nothing (EAGAIN) or ended.
  Result<Fd> open_pipe_raw(uint32_t cpu) const;
  static Result<size_t> read_page(int fd, std::span<uint8_t> page, const std::string& what);

  // Reads per_cpu/cpuN/trace_pipe_raw non-blocking, `page_size` bytes at a
  // time, until EAGAIN or end of file, or `limit` bytes (a CPU written to
  // faster than it is read would never run dry). Each read must return a
  // whole page; EIO naming the file otherwise. Consumes what it returns.
  Result<std::vector<uint8_t>> read_pages(uint32_t cpu, uint32_t page_size, size_t limit) const;

  // Arming (the broker's, for a boot-mapped instance; every one of these
  // changes a setting, which ends the previous boot's buffer):
  // The events of events/SYSTEM/ ("mce_record"), sorted; none when the
  // kernel has no such system.
  std::vector<std::string> system_events(const std::string& system) const;
  // Appends "SYSTEM:EVENT" to set_event (enables it).
  Status enable_event(const std::string& system, const std::string& name) const;
  // tracing_on: "1" or "0".
  Status set_tracing_on(bool on) const;
  // One write of `text` to trace_marker: an ftrace:print record.
  Status write_marker(std::string_view text) const;

 private:
  FtraceInstance(std::string name, Tree tree) : name_(std::move(name)), tree_(std::move(tree)) {}

  std::string name_;
  Tree tree_;
};

}  // namespace pp::sys

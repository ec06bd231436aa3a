// The ftrace instances the kernel command line creates (trace_instance=,
// Documentation/admin-guide/kernel-parameters.txt), and which of them are
// boot-mapped: kept in memory a reset does not clear, so that the next
// boot finds the previous boot's buffer in it (Linux 6.12 and later).
//
//   trace_instance=boot_mapped^traceoff@0x10000000:12M      boot-mapped, fixed address
//   trace_instance=bb^traceoff@trace,sched:sched_switch     boot-mapped, a reserve_mem= label
//   trace_instance=foo,sched:sched_switch                   a plain instance
//
// The instance part is the value up to its first ',' (the events follow):
// the name, then '^'-flags, then '@' and the memory for a boot-mapped one.
// Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pp::ftrace {

struct BootInstance {
  std::string name;
  std::vector<std::string> flags;  // "traceoff", "traceprintk", ...
  std::string memory;              // after '@' ("0x10000000:12M", a label); "" when not boot-mapped

  bool boot_mapped() const { return !memory.empty(); }
};

// Every trace_instance= of `cmdline` (/proc/cmdline), in order. Words in
// double quotes count as one; words after a lone "--" go to init and are
// not the kernel's.
std::vector<BootInstance> boot_instances(std::string_view cmdline);

// The names of the boot-mapped ones among them, in order: the instances
// that can hold a previous boot's buffer.
std::vector<std::string> boot_mapped_names(std::string_view cmdline);

// Whether a boot-mapped instance's last_boot_info (Linux 6.12+,
// kernel/trace/trace.c, show_last_boot_header()) says the buffer is the
// previous boot's, which it stays until a setting of the instance changes:
//   "text delta:\t-268435456"   the previous boot's (also over a buffer the
//                               firmware zeroed: the records tell)
//   "# Current"                 this boot's
bool holds_previous_boot(std::string_view last_boot_info);

}  // namespace pp::ftrace

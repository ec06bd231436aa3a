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

}  // namespace pp::ftrace

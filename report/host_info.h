// What perf.data says about the recording host: the values of the
// HOSTNAME, OSRELEASE, VERSION, ARCH, NRCPUS, CPUDESC, CPUID, TOTAL_MEM,
// CMDLINE and PMU_MAPPINGS features. Collected through a proc tree and a
// sysfs tree given by the caller (the live /proc and /sys, or fakes):
//
//   proc/sys/kernel/hostname      "vm\n"
//   proc/sys/kernel/osrelease     "6.18.44-fc-v1045\n"
//   proc/sys/kernel/arch          "x86_64\n"
//   proc/cpuinfo                  "model name\t: AMD EPYC\n", vendor_id,
//                                 cpu family, model, stepping
//   proc/meminfo                  "MemTotal:       24683584 kB\n"
//   sys/devices/system/cpu/present, .../online   "0-1\n"
//   sys/bus/event_source/devices/<pmu>/type      "2\n"
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "sys/tree.h"

namespace pp::report {

struct HostInfo {
  std::string hostname;
  std::string os_release;
  std::string version;  // the writing tool: "perf-persistent 0.1.0"
  std::string arch;
  std::string cpu_desc;            // "AMD EPYC"; empty when /proc/cpuinfo has no model name
  std::string cpuid;               // "AuthenticAMD,25,1,1" (x86 only); empty elsewhere
  uint32_t nr_cpus_available = 0;  // highest present CPU + 1
  uint32_t nr_cpus_online = 0;
  uint64_t total_mem_kb = 0;
  std::vector<std::string> cmdline;                         // argv of the recording command
  std::vector<std::pair<uint32_t, std::string>> pmu_types;  // {2, "tracepoint"}, by type
};

// Collects everything but `cmdline` (the caller's own argv). Fails only when
// the essentials (hostname, osrelease, arch, CPU counts) cannot be read;
// the rest is left empty and its feature is not written.
Result<HostInfo> collect_host_info(const sys::Tree& proc, const sys::Tree& sysfs);

// "perf-persistent <VERSION>", what HEADER_VERSION carries by default.
std::string writer_version();

}  // namespace pp::report

// CPU lists in the kernel's notation, as in /sys/devices/system/cpu/online,
// a PMU's cpumask file and perf's -C option:
//
//   0-3,8,10-11
//
// Pure functions; reading the files is sys/'s job.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp {

// The largest CPU number accepted is kMaxCpu - 1 (the kernel's NR_CPUS limit).
inline constexpr int kMaxCpu = 8192;

// Parses "0-3,8" into a sorted list without duplicates. A trailing newline is
// allowed (sysfs files end with one); an empty list is an error, a usage
// error (EINVAL: most lists come from -C) naming the offending part:
// "CPU list '0-x': 'x' is not a CPU number".
Result<std::vector<int>> parse_cpu_list(std::string_view text);

// Formats a sorted list back into the shortest notation: {0,1,2,3,8} -> "0-3,8".
std::string format_cpu_list(const std::vector<int>& cpus);

}  // namespace pp

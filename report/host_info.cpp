#include "report/host_info.h"

#include <sys/utsname.h>

#include <algorithm>
#include <cctype>

#include "base/cpu_list.h"
#include "base/strings.h"
#include "build_info.h"

namespace pp::report {
namespace {

Result<std::string> read_line(const sys::Tree& tree, std::string_view relative) {
  PP_ASSIGN_OR_RETURN(std::string text, tree.read(relative, 4096));
  return std::string(trim(text));
}

// The value of the first "key\t: value" line of /proc/cpuinfo with `key`.
std::string cpuinfo_value(std::string_view cpuinfo, std::string_view key) {
  for (std::string_view line : split(cpuinfo, '\n')) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      continue;
    if (trim(line.substr(0, colon)) == key)
      return std::string(trim(line.substr(colon + 1)));
  }
  return "";
}

// perf squashes runs of spaces in the CPU's branding string.
std::string squash_spaces(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ')
        out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

Result<uint32_t> count_cpus(const sys::Tree& sysfs, std::string_view file, bool highest_plus_one) {
  std::string relative = "devices/system/cpu/" + std::string(file);
  PP_ASSIGN_OR_RETURN(std::string text, sysfs.read(relative, 65536));
  auto cpus = parse_cpu_list(text);
  if (!cpus.ok())
    return std::move(cpus).error().with_context(sysfs.path(relative));
  return highest_plus_one ? uint32_t(cpus->back() + 1) : uint32_t(cpus->size());
}

}  // namespace

std::string writer_version() {
  return std::string("perf-persistent ") + PP_VERSION;
}

Result<HostInfo> collect_host_info(const sys::Tree& proc, const sys::Tree& sysfs) {
  HostInfo info;
  info.version = writer_version();
  PP_ASSIGN_OR_RETURN(info.hostname, read_line(proc, "sys/kernel/hostname"));
  PP_ASSIGN_OR_RETURN(info.os_release, read_line(proc, "sys/kernel/osrelease"));
  // kernel.arch is not on every kernel; uname() knows the same.
  if (auto arch = read_line(proc, "sys/kernel/arch"); arch.ok()) {
    info.arch = *arch;
  } else {
    struct utsname uts;
    if (::uname(&uts) != 0)
      return std::move(arch).error();
    info.arch = uts.machine;
  }
  PP_ASSIGN_OR_RETURN(info.nr_cpus_available, count_cpus(sysfs, "present", true));
  PP_ASSIGN_OR_RETURN(info.nr_cpus_online, count_cpus(sysfs, "online", false));

  if (auto cpuinfo = proc.read("cpuinfo", 16 << 20); cpuinfo.ok()) {
    info.cpu_desc = squash_spaces(cpuinfo_value(*cpuinfo, "model name"));
    std::string vendor = cpuinfo_value(*cpuinfo, "vendor_id");
    std::string family = cpuinfo_value(*cpuinfo, "cpu family");
    std::string model = cpuinfo_value(*cpuinfo, "model");
    std::string stepping = cpuinfo_value(*cpuinfo, "stepping");
    if (!vendor.empty() && !family.empty() && !model.empty() && !stepping.empty())
      info.cpuid = vendor + "," + family + "," + model + "," + stepping;
  }

  if (auto meminfo = proc.read("meminfo", 1 << 20); meminfo.ok()) {
    for (std::string_view line : split(*meminfo, '\n')) {
      if (!starts_with(line, "MemTotal:"))
        continue;
      std::string_view value = trim(line.substr(9));
      value = value.substr(0, value.find(' '));
      if (auto kb = parse_u64(value, "MemTotal"); kb.ok())
        info.total_mem_kb = *kb;
    }
  }

  if (auto pmus = sysfs.list("bus/event_source/devices"); pmus.ok()) {
    for (const std::string& pmu : *pmus) {
      auto text = sysfs.read("bus/event_source/devices/" + pmu + "/type", 64);
      if (!text.ok())
        continue;
      auto type = parse_u64(trim(*text), "PMU type");
      if (type.ok() && *type <= UINT32_MAX)
        info.pmu_types.emplace_back(uint32_t(*type), pmu);
    }
    std::sort(info.pmu_types.begin(), info.pmu_types.end());
  }
  return info;
}

}  // namespace pp::report

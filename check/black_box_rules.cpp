// The black box: does the kernel command line keep a trace buffer across a
// reset (a boot-mapped ftrace instance, Linux 6.12+), is it armed, and was
// the previous boot's buffer kept (broker/previous_boot.h does both at the
// broker's start; persistent/previous_boot.h says where the copies go).
//
//   boot-mapped-instance   OK when armed, or when the command line has none
//                          (the finding then says what to add); WARNING when
//                          named but absent from tracefs, or not armed
//   previous-boot-unkept   OK when this boot kept a copy, or there was
//                          nothing to keep; WARNING when the instance still
//                          holds the previous boot's records and no copy
//                          was made (nothing re-arms it either)
#include <algorithm>

#include "base/strings.h"
#include "check/checker.h"
#include "ftrace/boot_param.h"
#include "persistent/previous_boot.h"
#include "sys/ftrace_instance.h"

namespace pp::check {
namespace {

// The records the instance's buffers hold, without consuming them
// (per_cpu/cpuN/stats' entries).
uint64_t entries(const sys::FtraceInstance& instance) {
  uint64_t total = 0;
  for (uint32_t cpu : instance.cpus().value_or(std::vector<uint32_t>{}))
    total += instance.cpu_stats(cpu).value_or(sys::CpuStats{}).entries;
  return total;
}

}  // namespace

void Checker::black_box() {
  if (!cmdline_read_)
    return;
  const std::vector<std::string> names = ftrace::boot_mapped_names(cmdline_);
  const std::string cmdline_source = proc_.path("cmdline");
  if (names.empty()) {
    add("boot-mapped-instance", CheckStatus::kOk,
        std::string("the kernel command line has no boot-mapped ftrace instance, so the records "
                    "of the seconds before a crash die with it; to keep them across a reset "
                    "(Linux 6.12 and later) add '") +
            persistent::kBootMappedCmdline +
            "' (perf-persistent-daemon(1), THE PREVIOUS BOOT'S BUFFER)",
        cmdline_source);
    add("previous-boot-unkept", CheckStatus::kOk,
        "not applicable: no boot-mapped ftrace instance on the kernel command line",
        cmdline_source);
    return;
  }
  const std::string& name = names.front();
  const std::string relative = "instances/" + name;
  auto opened = sys::FtraceInstance::open(tracefs_, name);
  if (!opened.ok()) {
    add("boot-mapped-instance", CheckStatus::kWarning,
        "the kernel command line names the boot-mapped ftrace instance '" + name +
            "', but tracefs has no " + tracefs_.path(relative) +
            ": the kernel is older than 6.12, or could not map its memory (see 'dmesg | grep "
            "-i -e trace_instance -e \"ring buffer\"')",
        tracefs_.path(relative),
        "boot a kernel of 6.12 or later, and place the memory as the man page says: " +
            std::string(persistent::kBootMappedCmdline));
    add("previous-boot-unkept", CheckStatus::kOk,
        "not applicable: no boot-mapped ftrace instance in tracefs", tracefs_.path(relative));
    return;
  }
  const sys::Tree& instance = opened->tree();
  std::string events = std::string(trim(instance.read("set_event").value_or("")));
  bool tracing = first_line(instance.read("tracing_on").value_or("0")) == "1";
  auto info = instance.read("last_boot_info");
  bool armed = tracing && !events.empty();
  if (armed) {
    std::replace(events.begin(), events.end(), '\n', ' ');
    add("boot-mapped-instance", CheckStatus::kOk,
        "ftrace instance '" + name + "' is armed (" + events +
            "): its records survive a reset into the next boot",
        instance.path(""));
  } else {
    add("boot-mapped-instance", CheckStatus::kWarning,
        "the boot-mapped ftrace instance '" + name + "' is not armed (" +
            (events.empty() ? "no event enabled" : "tracing_on is 0") +
            "): a crash now leaves nothing in it",
        instance.path(""),
        broker_pid_
            ? "see why the broker did not arm it: 'grep \"black box\" " + run_dir_.log() + "'"
            : "start the broker: it keeps the previous boot's buffer, then arms the "
              "instance ('perf persistent daemon')");
  }

  std::string boot_id = first_line(proc_.read("sys/kernel/random/boot_id", 64).value_or(""));
  const std::string kept_dir = in_.kept_dir;
  auto kept = persistent::list_kept_boots(kept_dir);
  const persistent::KeptBoot* mine =
      kept.ok() ? persistent::kept_by_boot(*kept, boot_id, name) : nullptr;
  if (mine) {
    add("previous-boot-unkept", CheckStatus::kOk,
        "the previous boot's buffer of ftrace instance '" + name + "' was kept in this boot (" +
            std::to_string(mine->cpus) + " CPUs, " + std::to_string(mine->bytes / 1024) +
            " KiB): 'perf persistent record --previous-boot -o FILE' writes it as perf.data",
        mine->path);
    return;
  }
  // 6.12 shows "text delta" until a setting changes, also over an empty
  // buffer: the entries say whether there is anything to keep.
  uint64_t held = info.ok() && ftrace::holds_previous_boot(*info) ? entries(*opened) : 0;
  if (held > 0) {
    add("previous-boot-unkept", CheckStatus::kWarning,
        "ftrace instance '" + name + "' still holds " + std::to_string(held) +
            " records of the previous boot, and no copy was kept in " + kept_dir,
        instance.path("last_boot_info"),
        "start the broker ('perf persistent daemon'): it keeps the buffer, then re-arms the "
        "instance; or write it now with 'perf persistent record --previous-boot -o FILE' "
        "(that reads it once)");
    return;
  }
  add("previous-boot-unkept", CheckStatus::kOk,
      "nothing to keep: ftrace instance '" + name +
          "' held no record of a previous boot at this boot (a cold start, or the firmware "
          "cleared its memory)",
      kept_dir);
}

}  // namespace pp::check

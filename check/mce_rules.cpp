// The rules that ask whether the kernel delivers machine checks at all:
// tracefs, the mce:mce_record tracepoint, the corrected-error collector,
// the machinecheck sysfs settings, mce= options, and other consumers
// (mcelog, rasdaemon). check/checker.h lists every group.
#include <linux/perf_event.h>

#include <algorithm>
#include <cstdlib>

#include "base/cpu_list.h"
#include "base/strings.h"
#include "check/checker.h"

namespace pp::check {

void Checker::tracefs() {
  tracefs_mounted_ = tracefs_.is_directory("events");
  if (tracefs_mounted_)
    add("tracefs-not-mounted", CheckStatus::kOk, "tracefs is mounted", tracefs_.path("events"));
  else
    add("tracefs-not-mounted", CheckStatus::kCritical,
        "tracefs is not mounted: no tracepoint event can be created", tracefs_.path("events"),
        "mount it: 'mount -t tracefs nodev " + tracefs_.root() +
            "' (or enable sys-kernel-tracing.mount)");
}

void Checker::mce_tracepoint() {
  std::string path = tracefs_.path("events/mce/mce_record/id");
  if (!tracefs_mounted_) {
    add("mce-tracepoint-absent", CheckStatus::kUnknown,
        "cannot tell whether mce:mce_record exists: tracefs is not mounted", path,
        "mount tracefs (see tracefs-not-mounted)");
    return;
  }
  auto id = tracefs_.read("events/mce/mce_record/id");
  if (id.ok()) {
    auto value = parse_u64(trim(*id), path);
    if (value.ok()) {
      mce_id_ = *value;
      add("mce-tracepoint-absent", CheckStatus::kOk, "mce:mce_record has id " + first_line(*id),
          path);
      return;
    }
  }
  // A guest's machine checks are its hypervisor's: most hypervisors give
  // a guest no virtual MCE, and its kernel then has nothing to trace. The
  // CPU flag is the kernel's X86_FEATURE_HYPERVISOR (CPUID.1:ECX[31]).
  if (x86_ && virtual_machine_) {
    add("mce-tracepoint-absent", CheckStatus::kOk,
        "no mce:mce_record, and this is a virtual machine (the 'hypervisor' CPU flag): the "
        "host handles its machine checks; watch and check the host",
        path);
    return;
  }
  if (!x86_) {
    add("mce-tracepoint-absent", CheckStatus::kOk,
        "no mce:mce_record, as on every " + (machine_.empty() ? "non-x86" : machine_) +
            " machine: machine checks are x86's",
        path);
    return;
  }
  add("mce-tracepoint-absent", CheckStatus::kCritical,
      "this " + machine_ +
          " kernel has no mce:mce_record tracepoint (built without CONFIG_X86_MCE): machine "
          "checks cannot be recorded",
      path,
      "boot a kernel built with CONFIG_X86_MCE=y (every distribution kernel is); in a VM, "
      "also give the guest the host's MCE capability");
}

void Checker::ras_cec() {
  std::string path = debugfs_.path("ras/cec");
  // The collector sits behind the machine-check code (CONFIG_RAS_CEC needs
  // CONFIG_X86_MCE): without mce_record it hides nothing worth telling.
  if (!mce_id_) {
    add("ras-cec-absorbs-corrected", CheckStatus::kOk,
        "not applicable: no mce:mce_record (see mce-tracepoint-absent)", path);
    return;
  }
  if (cec_disabled_) {
    add("ras-cec-absorbs-corrected", CheckStatus::kOk,
        "the corrected-error collector is disabled (ras=cec_disable)", proc_.path("cmdline"));
    return;
  }
  if (debugfs_.is_directory("ras/cec")) {
    std::string threshold;
    if (auto t = debugfs_.read("ras/cec/action_threshold"); t.ok())
      threshold = " (action_threshold " + first_line(*t) + ")";
    // Since Linux 5.7 the collector marks a corrected error handled
    // (MCE_HANDLED_CEC, arch/x86/kernel/cpu/mce/core.c) and the notifier
    // chain goes on, so mce_record still sees every error; what it hides
    // is /dev/mcelog, EDAC's ras:mc_event and extlog. Before 5.7 it ended
    // the chain, and mce_record missed what it absorbed.
    if (kernel_before(5, 7)) {
      add("ras-cec-absorbs-corrected", CheckStatus::kWarning,
          "the kernel's corrected-error collector (CONFIG_RAS_CEC) is active and this kernel "
          "(before 5.7) stops there: corrected memory errors it counts never reach "
          "mce:mce_record until a page crosses its threshold" +
              threshold,
          path,
          "boot with 'ras=cec_disable' to record every corrected error; else read " + path +
              "/pfns as well");
      return;
    }
    add("ras-cec-absorbs-corrected", CheckStatus::kOk,
        "the kernel's corrected-error collector (CONFIG_RAS_CEC) is active" + threshold +
            ": mce:mce_record still sees every corrected error (since Linux 5.7 the "
            "collector marks it handled and the chain goes on); it hides them from "
            "/dev/mcelog, EDAC's ras:mc_event and extlog (so from mcelog and rasdaemon), and "
            "soft-offlines a page by itself when it crosses the threshold",
        path);
    return;
  }
  auto entries = debugfs_.list("");
  if (!entries.ok() || entries->empty()) {
    add("ras-cec-absorbs-corrected", CheckStatus::kUnknown,
        "cannot tell whether the corrected-error collector (CONFIG_RAS_CEC) hides corrected "
        "errors: debugfs is not mounted",
        path, "mount it: 'mount -t debugfs none " + debugfs_.root() + "'");
    return;
  }
  add("ras-cec-absorbs-corrected", CheckStatus::kOk,
      "no corrected-error collector (CONFIG_RAS_CEC) in debugfs", path);
}

void Checker::machinecheck() {
  const char* dir = "devices/system/machinecheck";
  std::vector<std::string> banks;
  if (auto entries = sysfs_.list(dir); entries.ok())
    for (const std::string& e : *entries)
      if (starts_with(e, "machinecheck"))
        banks.push_back(e);
  std::string source = sysfs_.path(std::string(dir) + "/machinecheck*/");
  if (banks.empty()) {
    CheckStatus status =
        mce_id_ && !has_mce_option("off") ? CheckStatus::kUnknown : CheckStatus::kOk;
    std::string found = status == CheckStatus::kOk
                            ? "not applicable: the kernel has no machine-check sysfs"
                            : "the kernel has mce:mce_record but no machine-check sysfs";
    for (const char* id : {"mce-polling-disabled", "mce-ignore-ce", "cmci-disabled"})
      add(id, status, found, sysfs_.path(dir),
          status == CheckStatus::kOk ? "" : "see whether sysfs is mounted");
    return;
  }
  struct Setting {
    const char* id;
    const char* file;
    const char* bad;  // the value that is a problem
    const char* found;
    const char* action;
  };
  const Setting settings[] = {
      {"mce-polling-disabled", "check_interval", "0",
       "machine-check polling is off (check_interval 0): corrected errors in banks that raise "
       "no interrupt are never found",
       "write a period in seconds (300 is the default) to check_interval, or drop the "
       "setting that zeroed it"},
      {"mce-ignore-ce", "ignore_ce", "1",
       "corrected errors are ignored (ignore_ce 1): neither polled nor signalled, they never "
       "reach mce:mce_record",
       "write 0 to ignore_ce (and drop mce=ignore_ce from the kernel command line)"},
      {"cmci-disabled", "cmci_disabled", "1",
       "CMCI is off (cmci_disabled 1): corrected errors are found only by polling, up to "
       "check_interval late, and bursts between polls are lost",
       "write 0 to cmci_disabled (and drop mce=no_cmci from the kernel command line)"},
  };
  for (const Setting& s : settings) {
    if (amd_ && std::string_view(s.id) == "cmci-disabled") {
      add(s.id, CheckStatus::kOk, "not applicable: AMD processors have no CMCI",
          proc_.path("cpuinfo"));
      continue;
    }
    std::vector<int> bad;
    size_t read = 0;
    for (const std::string& bank : banks) {
      auto value = sysfs_.read(std::string(dir) + "/" + bank + "/" + s.file);
      if (!value.ok())
        continue;
      read++;
      if (first_line(*value) == s.bad)
        bad.push_back(std::atoi(bank.c_str() + 12));
    }
    std::string path = source + s.file;
    if (read == 0)
      add(s.id, CheckStatus::kOk, std::string("no ") + s.file + " file (not this CPU's)", path);
    else if (bad.empty())
      add(s.id, CheckStatus::kOk, std::string(s.file) + " is fine on every CPU", path);
    else {
      std::sort(bad.begin(), bad.end());
      add(s.id, CheckStatus::kWarning, std::string(s.found) + " on CPU(s) " + format_cpu_list(bad),
          path, s.action);
    }
  }
}

void Checker::mce_cmdline() {
  std::string path = proc_.path("cmdline");
  if (!cmdline_read_) {
    add("mce-cmdline", CheckStatus::kUnknown, "cannot read the kernel command line", path);
    return;
  }
  if (has_mce_option("off")) {
    add("mce-cmdline", CheckStatus::kCritical,
        "the kernel was booted with mce=off: machine checks are not handled at all", path,
        "remove mce=off from the kernel command line and reboot");
    return;
  }
  std::vector<std::string> bad;
  for (const char* option : {"ignore_ce", "dont_log_ce", "no_cmci"})
    if (has_mce_option(option) && !(amd_ && std::string_view(option) == "no_cmci"))
      bad.push_back(std::string("mce=") + option);
  if (!bad.empty()) {
    add("mce-cmdline", CheckStatus::kWarning,
        "the kernel was booted with " + join(bad, ", ") +
            ": corrected errors are ignored, cleared unlogged, or found late",
        path, "remove " + join(bad, " and ") + " from the kernel command line and reboot");
    return;
  }
  add("mce-cmdline", CheckStatus::kOk,
      mce_options_.empty() ? "no mce= option" : "no mce= option that hides errors", path);
}

void Checker::other_consumers() {
  std::vector<std::string> found;
  auto pids = proc_.list("");
  if (!pids.ok()) {
    add("other-consumer", CheckStatus::kUnknown, "cannot list processes: " + pids.error().message(),
        proc_.root());
    return;
  }
  for (const std::string& pid : *pids) {
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)
      continue;
    auto comm = proc_.read(pid + "/comm");
    if (!comm.ok())
      continue;
    std::string name = first_line(*comm);
    if (name != "mcelog" && name != "rasdaemon") {
      // comm is the first 15 bytes of the program's name; argv[0] may say more.
      auto cmdline = proc_.read(pid + "/cmdline");
      if (!cmdline.ok())
        continue;
      std::string argv0 = cmdline->substr(0, cmdline->find('\0'));
      argv0 = argv0.substr(argv0.rfind('/') + 1);
      if (argv0 != "mcelog" && argv0 != "rasdaemon")
        continue;
      name = argv0;
    }
    std::string who = name;
    who.append(" (pid ").append(pid);
    // rasdaemon reads the same tracepoints through its own trace instance:
    // both see every error, so it is a note. mcelog acts on /dev/mcelog.
    if (name == "rasdaemon") {
      add("other-consumer", CheckStatus::kOk,
          who +
              ") runs beside it: both read the machine-check tracepoints (a tracepoint has "
              "any number of readers), so neither misses an error; if both act (offline "
              "pages, page someone), let one of them",
          proc_.path(pid + "/comm"));
      found.push_back(name);
      continue;
    }
    add("other-consumer", CheckStatus::kWarning,
        who +
            ") also consumes machine checks: its actions (page offlining, its own alerts and "
            "counts) and this recording can disagree, and one may be watched while the other "
            "is not",
        proc_.path(pid + "/comm"),
        "keep one source of truth: stop and disable " + name +
            ", or make sure it only records (rasdaemon --record) and nobody acts on it alone");
    found.push_back(name);
  }
  if (found.empty())
    add("other-consumer", CheckStatus::kOk, "no mcelog or rasdaemon runs", proc_.root());
}

}  // namespace pp::check

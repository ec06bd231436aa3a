// The facts every rule reads, gathered once, and the order the rules run
// in; the rules themselves are in mce_rules.cpp, broker_rules.cpp and
// limit_rules.cpp (check/checker.h says which is where).
#include "check/check.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/strings.h"
#include "check/checker.h"

namespace pp::check {

CheckInputs check_inputs_under(const std::string& root) {
  CheckInputs in;
  in.sysfs_root = root + "/sys";
  in.proc_root = root + "/proc";
  in.tracefs_root = root + "/sys/kernel/tracing";
  in.debugfs_root = root + "/sys/kernel/debug";
  in.etc_root = root + "/etc";
  in.run_root = root + "/run";
  in.kept_dir = root + persistent::kDefaultKeptDir;
  return in;
}

CheckInputs check_inputs_from_env() {
  const char* root = std::getenv(kCheckRootEnv);
  if (root && *root)
    return check_inputs_under(root);
  CheckInputs in;
  in.tracefs_root = sys::default_tracefs_root();
  return in;
}

namespace {

bool is_x86(std::string_view machine) {
  return machine == "x86_64" || machine == "x86" || machine == "i386" || machine == "i486" ||
         machine == "i586" || machine == "i686";
}

}  // namespace

std::string first_line(std::string_view text) {
  return std::string(trim(text.substr(0, text.find('\n'))));
}

std::string seconds_text(uint64_t s) {
  if (s == 0)
    return "under 1 s";
  if (s >= 3600)
    return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
  if (s >= 60)
    return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  return std::to_string(s) + " s";
}

Checker::Checker(const CheckInputs& in)
    : in_(in),
      sysfs_(in.sysfs_root),
      proc_(in.proc_root),
      tracefs_(in.tracefs_root),
      debugfs_(in.debugfs_root),
      etc_(in.etc_root),
      run_(in.run_root),
      run_dir_(in.run_dir.empty() ? persistent::default_run_dir() : in.run_dir) {}

CheckReport Checker::run() {
  read_machine();
  read_cmdline();
  tracefs();
  mce_tracepoint();
  broker();
  events();
  ras_cec();
  machinecheck();
  mce_cmdline();
  other_consumers();
  paranoid();
  mlock();
  fds();
  losing();
  watch_alive();
  metrics_fresh();
  black_box();
  report_.machine_checks = in_.watch.machine_checks;
  return std::move(report_);
}

void Checker::add(std::string id, CheckStatus status, std::string found, std::string source,
                  std::string action) {
  report_.findings.push_back(
      {std::move(id), status, std::move(found), std::move(source), std::move(action)});
}

void Checker::read_machine() {
  machine_ = in_.machine;
  if (machine_.empty()) {
    auto arch = proc_.read("sys/kernel/arch");
    if (arch.ok())
      machine_ = first_line(*arch);
  }
  x86_ = is_x86(machine_);
  // CMCI is Intel's; AMD signals corrected errors with its own threshold
  // interrupts, which cmci_disabled and mce=no_cmci do not touch.
  //   flags		: fpu vme de pse ... hypervisor lahf_lm ...
  if (auto cpuinfo = proc_.read("cpuinfo", 16 << 20); cpuinfo.ok()) {
    amd_ = cpuinfo->find("AuthenticAMD") != std::string::npos ||
           cpuinfo->find("HygonGenuine") != std::string::npos;
    for (std::string_view line : split(*cpuinfo, '\n')) {
      if (!starts_with(line, "flags"))
        continue;
      for (std::string_view flag : split(line.substr(line.find(':') + 1), ' '))
        virtual_machine_ |= trim(flag) == "hypervisor";
      break;
    }
  }
  // sd_booted(): systemd is PID 1 when this directory exists.
  systemd_booted_ = run_.is_directory("systemd/system");
  //   /proc/sys/kernel/osrelease: "6.1.0-27-amd64"
  if (auto release = proc_.read("sys/kernel/osrelease"); release.ok())
    osrelease_ = first_line(*release);
}

bool Checker::kernel_before(int major, int minor) const {
  int have_major = 0, have_minor = 0;
  if (std::sscanf(osrelease_.c_str(), "%d.%d", &have_major, &have_minor) != 2)
    return false;
  return have_major < major || (have_major == major && have_minor < minor);
}

void Checker::read_cmdline() {
  auto text = proc_.read("cmdline");
  if (!text.ok())
    return;
  cmdline_read_ = true;
  cmdline_ = std::move(*text);
  std::string line = first_line(cmdline_);
  for (std::string_view word : split(line, ' ')) {
    if (starts_with(word, "mce="))
      for (std::string_view v : split(word.substr(4), ','))
        mce_options_.emplace_back(v);
    if (word == "ras=cec_disable")
      cec_disabled_ = true;
  }
}

bool Checker::has_mce_option(std::string_view option) const {
  return std::find(mce_options_.begin(), mce_options_.end(), option) != mce_options_.end();
}

CheckReport run_checks(const CheckInputs& inputs) {
  return Checker(inputs).run();
}

}  // namespace pp::check

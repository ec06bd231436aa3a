// The rules of `perf persistent check`, internal to check/: one Checker
// runs every rule in order (run()) over the facts it gathers once (the
// machine, the kernel command line, the mce:mce_record id, the broker's pid
// and status, the events), each rule adding its findings (check/findings.h).
// The rules are grouped by what they ask, one file per group:
//
//   check.cpp         the facts, run(), the inputs
//   mce_rules.cpp     does the kernel deliver machine checks: tracefs, the
//                     mce_record tracepoint, the corrected-error collector,
//                     machinecheck sysfs, mce= options, other consumers
//   broker_rules.cpp  who holds the events: the broker, its unit, the
//                     events' states, tampering, lost buffers, an event on
//                     mce_record, the other RAS tracepoints kept
//   limit_rules.cpp   what the kernel lets the holder keep: perf_event_paranoid,
//                     locked memory, fds, buffers that wrap too fast
//   watch_rules.cpp   is watch alive: its history's heartbeat, its metrics
//                     file's age
//   black_box_rules.cpp  the boot-mapped ftrace instance: armed, and the
//                     previous boot's buffer kept
//
// A new rule is a method here, a line in run() and its body in its group's
// file; a group past ~400 lines gets a file of its own.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "check/check.h"
#include "persistent/run_dir.h"
#include "sys/process.h"
#include "sys/tree.h"

namespace pp::check {

// The first line of `text`, trimmed.
std::string first_line(std::string_view text);
// "under 1 s", "42 s", "3 min 5 s", "2 h 10 min".
std::string seconds_text(uint64_t s);

class Checker {
 public:
  explicit Checker(const CheckInputs& in);

  CheckReport run();

 private:
  void add(std::string id, CheckStatus status, std::string found, std::string source,
           std::string action = "");

  // The facts (check.cpp).
  void read_machine();
  void read_cmdline();
  bool has_mce_option(std::string_view option) const;
  // Whether the running kernel's version (osrelease) is before major.minor;
  // false when it cannot be read.
  bool kernel_before(int major, int minor) const;

  // mce_rules.cpp
  void tracefs();
  void mce_tracepoint();
  void ras_cec();
  void machinecheck();
  void mce_cmdline();
  void other_consumers();

  // broker_rules.cpp
  void broker();
  void enabled();
  void under_systemd();
  void events();
  static std::string label(const persistent::EventInfo& e);
  void failed(const std::string& source);
  void tampered(const std::string& source);
  void buffers_lost(const std::string& source);
  void no_mce_event(const std::string& source);
  void ras_event_unkept(const std::string& source);

  // limit_rules.cpp
  void broker_status();
  void paranoid();
  void mlock();
  std::optional<uint64_t> limit_of(std::string_view name);
  uint64_t memlock_limit();
  void fds();
  void losing();

  // watch_rules.cpp
  void watch_alive();
  void metrics_fresh();

  // black_box_rules.cpp
  void black_box();

  const CheckInputs& in_;
  sys::Tree sysfs_, proc_, tracefs_, debugfs_, etc_, run_;
  persistent::RunDir run_dir_;
  CheckReport report_;
  std::string machine_;
  bool x86_ = false;
  bool amd_ = false;
  bool virtual_machine_ = false;  // /proc/cpuinfo's "hypervisor" flag
  bool systemd_booted_ = false;   // <run>/systemd/system exists (sd_booted())
  std::string osrelease_;
  bool cmdline_read_ = false;
  std::string cmdline_;  // /proc/cmdline, when read
  bool cec_disabled_ = false;
  std::vector<std::string> mce_options_;
  bool tracefs_mounted_ = false;
  std::optional<uint64_t> mce_id_;
  bool kernel_backend_ = false;
  pid_t broker_pid_ = 0;
  bool status_read_ = false;
  std::optional<sys::ProcessStatus> broker_status_;
  bool listed_ = false;
  std::vector<persistent::EventInfo> events_;
};

}  // namespace pp::check

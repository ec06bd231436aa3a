#include "check/check.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "base/cpu_list.h"
#include "base/strings.h"
#include "persistent/run_dir.h"
#include "sys/process.h"
#include "sys/tree.h"

namespace pp::check {

std::string_view check_status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "OK";
    case CheckStatus::kWarning:
      return "WARNING";
    case CheckStatus::kCritical:
      return "CRITICAL";
    case CheckStatus::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

namespace {

int rank(CheckStatus s) {
  switch (s) {
    case CheckStatus::kOk:
      return 0;
    case CheckStatus::kUnknown:
      return 1;
    case CheckStatus::kWarning:
      return 2;
    case CheckStatus::kCritical:
      return 3;
  }
  return 1;
}

}  // namespace

bool check_status_worse(CheckStatus a, CheckStatus b) {
  return rank(a) > rank(b);
}

CheckStatus CheckReport::status() const {
  CheckStatus worst = CheckStatus::kOk;
  for (const Finding& f : findings)
    if (check_status_worse(f.status, worst))
      worst = f.status;
  return worst;
}

std::vector<const Finding*> CheckReport::problems() const {
  std::vector<const Finding*> out;
  for (const Finding& f : findings)
    if (f.status != CheckStatus::kOk)
      out.push_back(&f);
  return out;
}

const Finding* CheckReport::find(std::string_view id) const {
  for (const Finding& f : findings)
    if (f.id == id)
      return &f;
  return nullptr;
}

CheckInputs check_inputs_under(const std::string& root) {
  CheckInputs in;
  in.sysfs_root = root + "/sys";
  in.proc_root = root + "/proc";
  in.tracefs_root = root + "/sys/kernel/tracing";
  in.debugfs_root = root + "/sys/kernel/debug";
  in.etc_root = root + "/etc";
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

uint64_t estimated_sample_bytes(const sys::EventAttr& attr, uint64_t raw_bytes) {
  uint64_t type = attr.attr.sample_type;
  uint64_t bytes = sizeof(perf_event_header);
  for (uint64_t bit :
       {PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID, PERF_SAMPLE_TIME, PERF_SAMPLE_ADDR,
        PERF_SAMPLE_ID, PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD})
    if (type & bit)
      bytes += 8;
  if (type & PERF_SAMPLE_RAW)
    bytes += 4 + (raw_bytes ? raw_bytes : 64);
  return (bytes + 7) / 8 * 8;
}

uint64_t tracepoint_raw_bytes(std::string_view format) {
  uint64_t end = 0;
  for (std::string_view line : split(format, '\n')) {
    size_t off = line.find("offset:");
    size_t size = line.find("size:");
    if (off == std::string_view::npos || size == std::string_view::npos)
      continue;
    auto number = [&](size_t at) -> uint64_t {
      std::string_view rest = line.substr(at);
      rest = rest.substr(0, rest.find(';'));
      auto v = parse_u64(trim(rest), "a format field");
      return v.ok() ? *v : 0;
    };
    end = std::max(end, number(off + 7) + number(size + 5));
  }
  return end;
}

namespace {

constexpr const char* kUnit = "perf-persistent.service";

bool is_x86(std::string_view machine) {
  return machine == "x86_64" || machine == "x86" || machine == "i386" || machine == "i486" ||
         machine == "i586" || machine == "i686";
}

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

class Checker {
 public:
  explicit Checker(const CheckInputs& in)
      : in_(in),
        sysfs_(in.sysfs_root),
        proc_(in.proc_root),
        tracefs_(in.tracefs_root),
        debugfs_(in.debugfs_root),
        etc_(in.etc_root),
        run_dir_(in.run_dir.empty() ? persistent::default_run_dir() : in.run_dir) {}

  CheckReport run() {
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
    return std::move(report_);
  }

 private:
  void add(std::string id, CheckStatus status, std::string found, std::string source,
           std::string action = "") {
    report_.findings.push_back(
        {std::move(id), status, std::move(found), std::move(source), std::move(action)});
  }

  void read_machine() {
    machine_ = in_.machine;
    if (machine_.empty()) {
      auto arch = proc_.read("sys/kernel/arch");
      if (arch.ok())
        machine_ = first_line(*arch);
    }
    x86_ = is_x86(machine_);
    // CMCI is Intel's; AMD signals corrected errors with its own threshold
    // interrupts, which cmci_disabled and mce=no_cmci do not touch.
    if (auto cpuinfo = proc_.read("cpuinfo", 16 << 20); cpuinfo.ok())
      amd_ = cpuinfo->find("AuthenticAMD") != std::string::npos ||
             cpuinfo->find("HygonGenuine") != std::string::npos;
  }

  void read_cmdline() {
    auto text = proc_.read("cmdline");
    if (!text.ok())
      return;
    cmdline_read_ = true;
    std::string line = first_line(*text);
    for (std::string_view word : split(line, ' ')) {
      if (starts_with(word, "mce="))
        for (std::string_view v : split(word.substr(4), ','))
          mce_options_.emplace_back(v);
      if (word == "ras=cec_disable")
        cec_disabled_ = true;
    }
  }

  bool has_mce_option(std::string_view option) const {
    return std::find(mce_options_.begin(), mce_options_.end(), option) != mce_options_.end();
  }

  void tracefs() {
    tracefs_mounted_ = tracefs_.is_directory("events");
    if (tracefs_mounted_)
      add("tracefs-not-mounted", CheckStatus::kOk, "tracefs is mounted", tracefs_.path("events"));
    else
      add("tracefs-not-mounted", CheckStatus::kCritical,
          "tracefs is not mounted: no tracepoint event can be created", tracefs_.path("events"),
          "mount it: 'mount -t tracefs nodev " + tracefs_.root() +
              "' (or enable sys-kernel-tracing.mount)");
  }

  void mce_tracepoint() {
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

  // The broker's pid from its lock file, when a process with that pid runs
  // a daemon.
  void broker() {
    if (persistent::kernel_has_persistent_pmu(sysfs_)) {
      kernel_backend_ = true;
      std::string path = sysfs_.path("bus/event_source/devices/persistent");
      add("broker-not-running", CheckStatus::kOk,
          "the kernel holds persistent events itself: no broker is needed", path);
      add("broker-not-enabled", CheckStatus::kOk, "not needed: the kernel holds the events", path);
      add("broker-not-under-systemd", CheckStatus::kOk, "not needed: the kernel holds the events",
          path);
      return;
    }
    std::string lock = run_dir_.lock();
    auto text = sys::Tree(run_dir_.root()).read("broker.lock");
    if (text.ok()) {
      auto pid = parse_u64(trim(*text), lock);
      if (pid.ok() && *pid > 0 && *pid < (1u << 22)) {
        std::string dir = std::to_string(*pid);
        auto cmdline = proc_.read(dir + "/cmdline");
        if (cmdline.ok() && cmdline->find(std::string("daemon") + '\0') != std::string::npos)
          broker_pid_ = pid_t(*pid);
      }
    }
    if (broker_pid_ > 0)
      add("broker-not-running", CheckStatus::kOk,
          "the broker runs as pid " + std::to_string(broker_pid_), lock);
    else
      add("broker-not-running", CheckStatus::kCritical,
          "no broker runs for " + run_dir_.root() + " (" +
              (text.ok() ? "the pid in its lock file is no running broker"
                         : "no lock file: " + text.error().message()) +
              "): no event is held",
          lock,
          "start it: 'systemctl start perf-persistent', or 'perf persistent daemon --run-dir " +
              run_dir_.root() + "'");
    enabled();
    under_systemd();
  }

  void enabled() {
    std::string dir = "systemd/system";
    auto entries = etc_.list(dir);
    if (entries.ok())
      for (const std::string& e : *entries) {
        std::string link = dir;
        link.append("/").append(e).append("/").append(kUnit);
        if (e.size() > 6 && e.substr(e.size() - 6) == ".wants" && etc_.exists(link)) {
          add("broker-not-enabled", CheckStatus::kOk, std::string(kUnit) + " is enabled",
              etc_.path(link));
          return;
        }
      }
    add("broker-not-enabled", CheckStatus::kWarning,
        std::string(kUnit) +
            " is not enabled: no broker starts at boot, and machine checks "
            "before someone starts one are missed",
        etc_.path(dir + "/*.wants/" + kUnit),
        std::string("enable it: 'systemctl enable ") + kUnit +
            "' (without systemd: start 'perf persistent daemon' from the init system)");
  }

  void under_systemd() {
    if (broker_pid_ <= 0) {
      add("broker-not-under-systemd", CheckStatus::kOk,
          "not applicable: no broker runs (see broker-not-running)", run_dir_.lock());
      return;
    }
    std::string path = std::to_string(broker_pid_) + "/cgroup";
    auto text = proc_.read(path);
    if (!text.ok()) {
      add("broker-not-under-systemd", CheckStatus::kUnknown,
          "cannot read the broker's cgroup: " + text.error().message(), proc_.path(path),
          "run check as root");
      return;
    }
    std::string group;
    for (std::string_view line : split(*text, '\n')) {
      // "0::/system.slice/perf-persistent.service" (cgroup v2), or the
      // "name=systemd" hierarchy of v1.
      size_t colon = line.rfind(':');
      if (colon == std::string_view::npos)
        continue;
      std::string_view g = line.substr(colon + 1);
      if (starts_with(line, "0::") || line.find(":name=systemd:") != std::string_view::npos)
        if (group.empty() || g.size() > group.size())
          group = std::string(g);
    }
    if (group.size() > 8 && group.substr(group.size() - 8) == ".service")
      add("broker-not-under-systemd", CheckStatus::kOk,
          "the broker runs in the service cgroup " + group, proc_.path(path));
    else
      add("broker-not-under-systemd", CheckStatus::kWarning,
          "the broker (pid " + std::to_string(broker_pid_) + ") runs in cgroup '" + group +
              "', not as a systemd service: nothing restarts it when it dies",
          proc_.path(path),
          std::string("stop it ('kill ") + std::to_string(broker_pid_) + "') and run it as " +
              kUnit + ": 'systemctl start perf-persistent'");
  }

  void events() {
    std::string source = kernel_backend_ ? "the kernel's persistent PMU (list -v)"
                                         : "the broker's list -v reply (" + run_dir_.socket() + ")";
    if (!in_.backend) {
      add("event-failed", CheckStatus::kUnknown, "no backend to ask for the events", source);
      add("event-tampered", CheckStatus::kUnknown, "no backend to ask for the events", source);
      add("buffers-lost", CheckStatus::kUnknown, "no backend to ask for the events", source);
    } else {
      std::string note;
      auto listed = in_.backend->list(true, &note);
      if (!listed.ok() && listed.error().kind() == ErrorKind::kBrokerDown) {
        // broker-not-running says it; its saved events are down, held by nobody.
        listed_ = true;
        events_ = in_.backend->down_events();
        failed(source);
        tampered(source);
        buffers_lost(source);
      } else if (!listed.ok()) {
        add("event-failed", CheckStatus::kUnknown,
            "cannot list the events: " + listed.error().message(), source,
            "run check as root (or as the broker's user)");
        add("event-tampered", CheckStatus::kUnknown,
            "cannot list the events: " + listed.error().message(), source,
            "run check as root (or as the broker's user)");
        add("buffers-lost", CheckStatus::kUnknown,
            "cannot list the events: " + listed.error().message(), source,
            "run check as root (or as the broker's user)");
      } else {
        listed_ = true;
        events_ = std::move(*listed);
        failed(source);
        tampered(source);
        buffers_lost(source);
      }
    }
    for (const persistent::EventInfo& e : events_)
      if (!e.is_context)
        report_.events++;
    no_mce_event(source);
  }

  static std::string label(const persistent::EventInfo& e) {
    std::string s = "event " + std::to_string(e.id);
    if (!e.name.empty())
      s += " '" + e.name + "'";
    if (!e.event.empty() && e.event != e.name)
      s += " (" + e.event + ")";
    return s;
  }

  void failed(const std::string& source) {
    size_t bad = 0, held = 0;
    for (const persistent::EventInfo& e : events_) {
      held += !e.is_context;
      if (e.state == "down") {
        bad++;
        add("event-failed", CheckStatus::kCritical,
            label(e) + " is down: " + e.error + "; nothing records it", source,
            "start the broker: 'systemctl start perf-persistent', or 'perf persistent daemon'");
      } else if (e.state == "failed") {
        bad++;
        add("event-failed", CheckStatus::kWarning,
            label(e) + " failed: " + (e.error.empty() ? "no reason given" : e.error), source,
            "fix the cause, then create it again: 'perf persistent kill " + std::to_string(e.id) +
                "' and 'perf persistent create -e " + (e.event.empty() ? "EVENT" : e.event) + "'");
      }
    }
    if (bad == 0)
      add("event-failed", CheckStatus::kOk, std::to_string(held) + " event(s), none failed",
          source);
  }

  void tampered(const std::string& source) {
    size_t bad = 0;
    for (const persistent::EventInfo& e : events_)
      if (e.tamper_count > 0) {
        bad++;
        std::string last;
        if (!e.tampered.empty()) {
          const persistent::Tampering& t = e.tampered.back();
          last = "; the last on CPU " + std::to_string(t.cpu) + ": " + t.what;
          if (!t.holders.empty())
            last += ", held by " + t.holders;
        }
        add("event-tampered", CheckStatus::kWarning,
            label(e) + " was changed behind the broker's back " + std::to_string(e.tamper_count) +
                " time(s)" + last + ": its buffer may have gaps",
            source,
            "find who holds its fds ('perf persistent list -v' shows readers) and stop them; "
            "see TRUST MODEL in perf-persistent-daemon(1)");
      }
    if (bad == 0)
      add("event-tampered", CheckStatus::kOk, "no event was tampered with", source);
  }

  // Buffers that restarted (a broker restart that kept the events but not
  // their samples, or re-created them) within kBuffersLostWindowSeconds.
  void buffers_lost(const std::string& source) {
    size_t bad = 0;
    for (const persistent::EventInfo& e : events_) {
      if (e.is_context || e.state != "running" || !e.restarted() || e.created <= 0)
        continue;
      int64_t ago = in_.now > 0 ? in_.now - e.buffer_start : 0;
      if (ago >= kBuffersLostWindowSeconds)
        continue;
      bad++;
      add("buffers-lost", CheckStatus::kWarning,
          label(e) + " lost the samples its buffers held before " + std::to_string(ago) +
              " s ago (" + (e.lost_reason.empty() ? "broker restart" : e.lost_reason) + ")",
          source,
          "run the broker under systemd with the keeper (perf-persistent-keeper.service), and "
          "upgrade with 'perf persistent daemon --replace'; see RESTARTS in "
          "perf-persistent-daemon(1)");
    }
    if (bad == 0)
      add("buffers-lost", CheckStatus::kOk,
          "no event lost its buffers in the last " +
              std::to_string(kBuffersLostWindowSeconds / 3600) + " h",
          source);
  }

  void no_mce_event(const std::string& source) {
    if (!mce_id_) {
      add("no-mce-event", CheckStatus::kOk,
          "not applicable: no mce:mce_record tracepoint (see mce-tracepoint-absent)",
          tracefs_.path("events/mce/mce_record/id"));
      return;
    }
    for (const persistent::EventInfo& e : events_)
      if (e.state == "running" &&
          ((e.attr.attr.type == PERF_TYPE_TRACEPOINT && e.attr.attr.config == *mce_id_) ||
           e.event == "mce:mce_record")) {
        add("no-mce-event", CheckStatus::kOk, label(e) + " holds mce:mce_record", source);
        return;
      }
    if (!listed_ && in_.backend) {
      add("no-mce-event", CheckStatus::kUnknown,
          "cannot tell whether an event holds mce:mce_record: the events could not be listed",
          source, "run check as root");
      return;
    }
    add("no-mce-event", CheckStatus::kCritical,
        "no persistent event holds mce:mce_record: machine checks are not recorded", source,
        "create one: 'perf persistent create -e mce:mce_record' (or add it to the broker's "
        "config)");
  }

  void ras_cec() {
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
      add("ras-cec-absorbs-corrected", CheckStatus::kWarning,
          "the kernel's corrected-error collector (CONFIG_RAS_CEC) is active: it counts "
          "corrected memory errors per page and hides them from mce:mce_record until a page "
          "crosses its threshold" +
              threshold,
          path,
          "boot with 'ras=cec_disable' to record every corrected error; else read " + path +
              "/pfns as well");
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

  void machinecheck() {
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
        add(s.id, CheckStatus::kWarning,
            std::string(s.found) + " on CPU(s) " + format_cpu_list(bad), path, s.action);
      }
    }
  }

  void mce_cmdline() {
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

  void other_consumers() {
    std::vector<std::string> found;
    auto pids = proc_.list("");
    if (!pids.ok()) {
      add("other-consumer", CheckStatus::kUnknown,
          "cannot list processes: " + pids.error().message(), proc_.root());
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

  void broker_status() {
    if (status_read_ || broker_pid_ <= 0)
      return;
    status_read_ = true;
    auto status = sys::read_process_status(proc_, broker_pid_);
    if (status.ok())
      broker_status_ = *status;
  }

  void paranoid() {
    std::string path = proc_.path("sys/kernel/perf_event_paranoid");
    auto text = proc_.read("sys/kernel/perf_event_paranoid");
    if (!text.ok()) {
      add("perf-event-paranoid", CheckStatus::kUnknown,
          "cannot read perf_event_paranoid: " + text.error().message(), path);
      return;
    }
    std::string value = first_line(*text);
    broker_status();
    if (!broker_status_) {
      add("perf-event-paranoid", CheckStatus::kOk,
          "perf_event_paranoid is " + value +
              "; it matters only to a broker without CAP_PERFMON or CAP_SYS_ADMIN",
          path);
      return;
    }
    // Debian's and Android's level 3 asks for CAP_SYS_ADMIN itself:
    // CAP_PERFMON alone opens nothing there.
    long level = std::strtol(value.c_str(), nullptr, 10);
    if (broker_status_->perfmon_capable() &&
        !sys::perf_capable_at(broker_status_->cap_effective, level)) {
      add("perf-event-paranoid", CheckStatus::kCritical,
          "perf_event_paranoid is " + value +
              ": this kernel lets only CAP_SYS_ADMIN open perf "
              "events, and the broker (pid " +
              std::to_string(broker_pid_) +
              ") has CAP_PERFMON without it: every event it creates is refused",
          path,
          "give the broker CAP_SYS_ADMIN (its unit: CapabilityBoundingSet=CAP_PERFMON "
          "CAP_SYS_ADMIN), or set 'sysctl kernel.perf_event_paranoid=2'");
      return;
    }
    if (broker_status_->perfmon_capable() || value == "-1") {
      add("perf-event-paranoid", CheckStatus::kOk,
          "perf_event_paranoid is " + value + ", and the broker " +
              (broker_status_->perfmon_capable() ? "has CAP_PERFMON or CAP_SYS_ADMIN"
                                                 : "needs no capability at -1"),
          path);
      return;
    }
    add("perf-event-paranoid", CheckStatus::kWarning,
        "perf_event_paranoid is " + value + " and the broker (pid " + std::to_string(broker_pid_) +
            ") has neither CAP_PERFMON nor CAP_SYS_ADMIN: the kernel refuses its system-wide "
            "events and raw tracepoint data",
        path,
        "run the broker as root or with CAP_PERFMON (as the unit does), or set "
        "'sysctl kernel.perf_event_paranoid=-1'");
  }

  // The limit the kernel puts on locked ring-buffer memory: perf_event_mlock_kb
  // per online CPU for each user, then the process's RLIMIT_MEMLOCK; none for a
  // process with CAP_IPC_LOCK.
  void mlock() {
    std::string path = proc_.path("sys/kernel/perf_event_mlock_kb");
    auto text = proc_.read("sys/kernel/perf_event_mlock_kb");
    if (!text.ok()) {
      add("mlock-limit", CheckStatus::kUnknown,
          "cannot read perf_event_mlock_kb: " + text.error().message(), path);
      return;
    }
    auto kb = parse_u64(trim(*text), path);
    if (!kb.ok()) {
      add("mlock-limit", CheckStatus::kUnknown, kb.error().message(), path);
      return;
    }
    uint64_t used = 0;
    for (const persistent::EventInfo& e : events_)
      used += (e.pages + 1) * e.page_size * e.cpus.size();
    broker_status();
    constexpr int kCapIpcLock = 14;
    if (kernel_backend_ || !broker_status_ || broker_status_->has_capability(kCapIpcLock)) {
      add("mlock-limit", CheckStatus::kOk,
          "perf_event_mlock_kb is " + std::to_string(*kb) + "; " +
              (kernel_backend_   ? std::string("the kernel holds the buffers")
               : !broker_status_ ? std::string("no broker to limit")
                                 : "the broker has CAP_IPC_LOCK, so no limit applies to its " +
                                       std::to_string(used) + " bytes of buffers"),
          path);
      return;
    }
    uint64_t cpus = 1;
    if (auto online = sysfs_.read("devices/system/cpu/online"); online.ok())
      if (auto list = parse_cpu_list(*online); list.ok())
        cpus = list->size();
    uint64_t limit = *kb * 1024 * cpus + memlock_limit();
    if (used * 100 >= limit * kLimitWarnPercent)
      add("mlock-limit", CheckStatus::kWarning,
          "the buffers lock " + std::to_string(used) + " of the " + std::to_string(limit) +
              " bytes the broker may lock (perf_event_mlock_kb " + std::to_string(*kb) +
              " per CPU, plus its RLIMIT_MEMLOCK): the next event or a larger -m is refused",
          path,
          "raise 'sysctl kernel.perf_event_mlock_kb', or give the broker CAP_IPC_LOCK (as the "
          "unit does)");
    else
      add("mlock-limit", CheckStatus::kOk,
          "the buffers lock " + std::to_string(used) + " of " + std::to_string(limit) + " bytes",
          path);
  }

  // The soft "Max locked memory" or "Max open files" of the broker's limits.
  std::optional<uint64_t> limit_of(std::string_view name) {
    auto text = proc_.read(std::to_string(broker_pid_) + "/limits");
    if (!text.ok())
      return std::nullopt;
    for (std::string_view line : split(*text, '\n')) {
      if (!starts_with(line, name))
        continue;
      std::string_view rest = trim(line.substr(name.size()));
      std::string_view soft = rest.substr(0, rest.find(' '));
      if (soft == "unlimited")
        return UINT64_MAX / 4;
      auto v = parse_u64(soft, "a limit");
      if (v.ok())
        return *v;
    }
    return std::nullopt;
  }

  uint64_t memlock_limit() { return limit_of("Max locked memory").value_or(0); }

  void fds() {
    if (kernel_backend_ || broker_pid_ <= 0) {
      add("fd-limit", CheckStatus::kOk,
          kernel_backend_ ? "the kernel holds the events: no fd is held for them"
                          : "not applicable: no broker runs",
          proc_.root());
      return;
    }
    std::string limits = proc_.path(std::to_string(broker_pid_) + "/limits");
    auto soft = limit_of("Max open files");
    auto open = proc_.list(std::to_string(broker_pid_) + "/fd");
    if (!soft || !open.ok()) {
      add("fd-limit", CheckStatus::kUnknown, "cannot read the broker's open files or its limit",
          limits, "run check as root");
      return;
    }
    uint64_t used = open->size();
    if (used * 100 >= *soft * kLimitWarnPercent)
      add("fd-limit", CheckStatus::kWarning,
          "the broker holds " + std::to_string(used) + " fds of its limit of " +
              std::to_string(*soft) + ": the next event (one fd per CPU) or reader is refused",
          limits, "raise its limit (LimitNOFILE= in the unit, or 'ulimit -n' before it starts)");
    else
      add("fd-limit", CheckStatus::kOk,
          "the broker holds " + std::to_string(used) + " fds of its limit of " +
              std::to_string(*soft),
          limits);
  }

  void losing() {
    std::string source = "the counts of list -v";
    if (!listed_) {
      add("events-losing", CheckStatus::kUnknown, "no counts: the events could not be listed",
          source);
      return;
    }
    size_t bad = 0;
    for (const persistent::EventInfo& e : events_) {
      if (e.is_context || e.state == "failed" || !e.counts || e.page_size == 0)
        continue;
      int64_t elapsed = in_.now - e.buffer_start;
      if (elapsed <= 0)
        continue;
      uint64_t raw = 0;
      if (e.attr.attr.type == PERF_TYPE_TRACEPOINT && e.event.find(':') != std::string::npos) {
        std::string tp = e.event.substr(0, e.event.find_first_of("/ "));
        tp[tp.find(':')] = '/';
        if (auto format = tracefs_.read("events/" + tp + "/format"); format.ok())
          raw = tracepoint_raw_bytes(*format);
      }
      uint64_t capacity = e.buffer_bytes() / estimated_sample_bytes(e.attr, raw);
      for (const persistent::CpuCount& c : *e.counts) {
        if (c.count <= capacity || capacity == 0)
          continue;
        // It has wrapped: how much time its capacity covers at this rate.
        uint64_t history = uint64_t(double(capacity) * double(elapsed) / double(c.count));
        if (int64_t(history) >= kMinHistorySeconds)
          continue;
        bad++;
        add("events-losing", CheckStatus::kWarning,
            label(e) + " on CPU " + std::to_string(c.cpu) + ": " + std::to_string(c.count) +
                " records in " + seconds_text(uint64_t(elapsed)) + ", and its buffer holds about " +
                std::to_string(capacity) + ", " + seconds_text(history) +
                " of history at this rate: older records are overwritten before anyone reads "
                "them",
            source,
            "create it again with a larger buffer (-m, now " + std::to_string(e.pages) +
                " pages) or a filter, or record it more often (its buffer keeps " +
                seconds_text(history) + ")");
        break;  // one finding per event
      }
    }
    if (bad == 0 && report_.events == 0)
      add("events-losing", CheckStatus::kOk, "no event to measure", source);
    else if (bad == 0)
      add("events-losing", CheckStatus::kOk,
          "every buffer holds at least " + seconds_text(kMinHistorySeconds) +
              " of records at the rate it sees",
          source);
  }

  const CheckInputs& in_;
  sys::Tree sysfs_, proc_, tracefs_, debugfs_, etc_;
  persistent::RunDir run_dir_;
  CheckReport report_;
  std::string machine_;
  bool x86_ = false;
  bool amd_ = false;
  bool cmdline_read_ = false;
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

}  // namespace

CheckReport run_checks(const CheckInputs& inputs) {
  return Checker(inputs).run();
}

namespace {

std::string summary(const CheckReport& report) {
  auto problems = report.problems();
  if (problems.empty())
    return std::to_string(report.findings.size()) + " checks passed, " +
           std::to_string(report.events) + " event(s) held";
  std::vector<std::string> ids;
  for (const Finding* f : problems)
    if (std::find(ids.begin(), ids.end(), f->id) == ids.end())
      ids.push_back(f->id);
  return std::to_string(problems.size()) + (problems.size() == 1 ? " problem: " : " problems: ") +
         join(ids, ", ");
}

size_t count(const CheckReport& report, CheckStatus status) {
  return size_t(std::count_if(report.findings.begin(), report.findings.end(),
                              [&](const Finding& f) { return f.status == status; }));
}

}  // namespace

void print_check_text(std::ostream& out, const CheckReport& report, bool verbose) {
  out << "PERSISTENT " << check_status_name(report.status()) << " - " << summary(report)
      << " | critical=" << count(report, CheckStatus::kCritical)
      << " warning=" << count(report, CheckStatus::kWarning)
      << " unknown=" << count(report, CheckStatus::kUnknown) << " events=" << report.events << "\n";
  for (const Finding& f : report.findings) {
    if (f.status == CheckStatus::kOk && !verbose)
      continue;
    out << check_status_name(f.status) << ' ' << f.id << ": " << f.found << "\n"
        << "    from: " << f.source << "\n";
    if (!f.action.empty())
      out << "    what to do: " << f.action << "\n";
  }
}

ordered_json check_json(const CheckReport& report) {
  ordered_json findings = ordered_json::array();
  for (const Finding& f : report.findings)
    findings.push_back(ordered_json{{"id", f.id},
                                    {"status", std::string(check_status_name(f.status))},
                                    {"found", f.found},
                                    {"source", f.source},
                                    {"action", f.action}});
  return ordered_json{{"status", std::string(check_status_name(report.status()))},
                      {"exit_status", report.exit_status()},
                      {"summary", summary(report)},
                      {"events", report.events},
                      {"findings", std::move(findings)}};
}

void print_check_error_text(std::ostream& out, const Error& error) {
  out << "PERSISTENT UNKNOWN - " << error.message() << "\n";
}

ordered_json check_error_json(const Error& error) {
  return ordered_json{{"status", "UNKNOWN"},
                      {"exit_status", int(CheckStatus::kUnknown)},
                      {"summary", error.message()},
                      {"events", 0},
                      {"findings", ordered_json::array()},
                      {"error", ordered_json{{"kind", std::string(kind_name(error.kind()))},
                                             {"message", error.message()}}}};
}

}  // namespace pp::check

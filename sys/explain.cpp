#include "sys/explain.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/cpu_list.h"
#include "base/strings.h"
#include "sys/clock.h"
#include "sys/kernel.h"
#include "sys/process.h"

namespace pp::sys {

namespace {

// What the system says, read once per explanation; every field may be
// missing (a fake tree, a kernel without the file).
class Facts {
 public:
  explicit Facts(const ExplainEnv& env) : proc_(env.proc_root), sysfs_(env.sysfs_root) {}

  std::optional<long> proc_number(std::string_view path) const {
    auto text = proc_.read(path);
    if (!text.ok())
      return std::nullopt;
    std::string value(trim(*text));
    char* end = nullptr;
    long number = std::strtol(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0')
      return std::nullopt;
    return number;
  }

  std::optional<long> paranoid() const { return proc_number("sys/kernel/perf_event_paranoid"); }
  std::optional<long> mlock_kb() const { return proc_number("sys/kernel/perf_event_mlock_kb"); }
  std::optional<long> max_sample_rate() const {
    return proc_number("sys/kernel/perf_event_max_sample_rate");
  }

  std::string osrelease() const {
    auto text = proc_.read("sys/kernel/osrelease");
    return text.ok() ? std::string(trim(*text)) : "";
  }

  // CapEff from <proc>/self/status: "CapEff:\t000001ffffffffff".
  std::optional<uint64_t> cap_eff() const {
    auto text = proc_.read("self/status");
    if (!text.ok())
      return std::nullopt;
    for (std::string_view line : split(*text, '\n')) {
      if (!starts_with(line, "CapEff:"))
        continue;
      std::string hex(trim(line.substr(7)));
      char* end = nullptr;
      uint64_t caps = std::strtoull(hex.c_str(), &end, 16);
      if (hex.empty() || *end != '\0')
        return std::nullopt;
      return caps;
    }
    return std::nullopt;
  }

  bool has_cap(int cap) const {
    auto caps = cap_eff();
    return caps && (*caps >> cap) & 1;
  }

  // "Max open files            1024                 524288               files"
  std::optional<std::pair<long, long>> fd_limits() const {
    auto text = proc_.read("self/limits");
    if (!text.ok())
      return std::nullopt;
    for (std::string_view line : split(*text, '\n')) {
      if (!starts_with(line, "Max open files"))
        continue;
      std::string rest(line.substr(14));
      long soft = 0, hard = 0;
      char hard_text[32] = {};
      if (std::sscanf(rest.c_str(), "%ld %31s", &soft, hard_text) < 2)
        return std::nullopt;
      hard = std::strcmp(hard_text, "unlimited") == 0 ? -1 : std::strtol(hard_text, nullptr, 10);
      return std::make_pair(soft, hard);
    }
    return std::nullopt;
  }

  std::optional<size_t> open_fds() const {
    auto names = proc_.list("self/fd");
    return names.ok() ? std::optional<size_t>(names->size()) : std::nullopt;
  }

  std::optional<std::vector<int>> online_cpus() const {
    auto text = sysfs_.read("devices/system/cpu/online");
    if (!text.ok())
      return std::nullopt;
    auto cpus = parse_cpu_list(*text);
    return cpus.ok() ? std::optional<std::vector<int>>(*cpus) : std::nullopt;
  }

 private:
  Tree proc_;
  Tree sysfs_;
};

bool is_persistent(const FailedCall& call) {
  return call.persistent_type != 0 && call.attr && call.attr->attr.type == call.persistent_type;
}

std::string event_text(const FailedCall& call) {
  std::string out;
  if (!call.event.empty())
    out = "event '" + call.event + "'";
  else if (is_persistent(call))
    out = "persistent event " + std::to_string(call.attr->attr.config);
  else if (call.attr)
    out = "event (type " + std::to_string(call.attr->attr.type) + ", config " +
          std::to_string(call.attr->attr.config) + ")";
  else
    out = "the event";
  if (call.cpu >= 0)
    out += " on CPU " + std::to_string(call.cpu);
  else if (call.pid > 0)
    out += " for pid " + std::to_string(call.pid);
  return out;
}

std::string headline(int err, const FailedCall& call) {
  std::string what = event_text(call);
  std::string line;
  switch (call.call) {
    case PerfCall::kOpen:
      line = "cannot open " + what;
      break;
    case PerfCall::kMmap:
      line = "cannot map the buffer of " + what;
      if (call.length)
        line += " (" + std::to_string(call.length / 1024) + " KiB)";
      break;
    case PerfCall::kIoctl:
      line = perf_ioctl_name(call.request) + " failed on " + what;
      break;
    case PerfCall::kRead:
      line = "cannot read the count of " + what;
      break;
  }
  return line + ": " + std::strerror(err) + " (" + errno_name(err) + ")";
}

std::string paranoid_meaning(long level) {
  if (level <= -1)
    return "anyone may use every event, and the per-user locked-memory limit "
           "(perf_event_mlock_kb) is not enforced";
  if (level == 0)
    return "without CAP_PERFMON a user may profile any process and whole CPUs, user and "
           "kernel space, but not read raw tracepoint data";
  if (level == 1)
    return "without CAP_PERFMON a user may only profile their own processes (no CPU-wide "
           "events), user and kernel space";
  if (level == 2)
    return "without CAP_PERFMON a user may only profile their own processes, in user space "
           "(no CPU-wide events, no kernel samples)";
  // Debian's and Android's kernels add this level; their check is
  // capable(CAP_SYS_ADMIN), before and whatever CAP_PERFMON allows.
  return "without CAP_SYS_ADMIN no process may open any perf event, CAP_PERFMON is not enough "
         "(a distribution setting above the kernel's 2)";
}

// Whether the process holds what perf_event_paranoid `level` asks of a
// privileged opener (perf_capable_at()); false when its capabilities are
// unknown.
bool privileged_for(const Facts& facts, std::optional<long> level) {
  auto caps = facts.cap_eff();
  return caps && perf_capable_at(*caps, level);
}

std::string caps_line(const Facts& facts, std::optional<long> level) {
  auto caps = facts.cap_eff();
  if (!caps)
    return "";
  char hex[20];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(*caps));
  bool perfmon = (*caps >> kCapPerfmon) & 1;
  bool admin = (*caps >> kCapSysAdmin) & 1;
  if (!perfmon && !admin)
    return std::string("this process has neither CAP_PERFMON nor CAP_SYS_ADMIN (CapEff ") + hex +
           ")";
  if (!privileged_for(facts, level))
    return std::string("this process has CAP_PERFMON but not CAP_SYS_ADMIN (CapEff ") + hex +
           "), which setting " + std::to_string(*level) + " asks for";
  return std::string("this process has ") + (admin ? "CAP_SYS_ADMIN" : "CAP_PERFMON") +
         " (CapEff " + hex + "), so the setting is not what refused it";
}

void permission(int err, const FailedCall& call, const Facts& facts,
                std::vector<std::string>& lines) {
  if (call.call == PerfCall::kMmap && err == EACCES && (call.prot & PROT_WRITE)) {
    lines.push_back("a persistent event's buffer is shared by every reader and maps read-only");
    lines.push_back("try: map it with PROT_READ only");
    return;
  }
  if (call.call == PerfCall::kMmap) {
    if (facts.has_cap(kCapIpcLock)) {
      lines.push_back(
          "this process has CAP_IPC_LOCK, which lifts the locked-memory limit, so "
          "something else refused the mapping (a security module?)");
      lines.push_back("try: check the audit log (journalctl -k) for a denial");
      return;
    }
    auto mlock = facts.mlock_kb();
    lines.push_back("the buffer is over this user's locked-memory allowance" +
                    (mlock ? ": kernel.perf_event_mlock_kb is " + std::to_string(*mlock) +
                                 " KiB per CPU, plus RLIMIT_MEMLOCK (ulimit -l)"
                           : std::string()));
    lines.push_back(
        "try: a smaller buffer (-m PAGES), run with CAP_IPC_LOCK, or raise it: "
        "sysctl kernel.perf_event_mlock_kb=" +
        std::to_string(std::max<long>(mlock.value_or(516) * 2, long(call.length / 1024) + 4)));
    return;
  }
  if (call.call == PerfCall::kIoctl && call.request == PERF_EVENT_IOC_SET_OUTPUT) {
    lines.push_back(
        "a persistent event's buffer is shared and read-only: no output may be "
        "redirected to or from it");
    lines.push_back("try: give each event its own buffer");
    return;
  }
  if (is_persistent(call)) {
    lines.push_back(
        "persistent events are per CPU and need root or CAP_PERFMON "
        "(CAP_SYS_ADMIN before Linux 5.8)");
    if (std::string caps = caps_line(facts, std::nullopt); !caps.empty())
      lines.push_back(caps);
    lines.push_back(
        "try: run as root, or give the program CAP_PERFMON "
        "(setcap cap_perfmon+ep ...)");
    return;
  }
  auto level = facts.paranoid();
  if (level)
    lines.push_back("kernel.perf_event_paranoid is " + std::to_string(*level) + ": " +
                    paranoid_meaning(*level));
  if (std::string caps = caps_line(facts, level); !caps.empty())
    lines.push_back(caps);
  if (level && *level >= 3 && !privileged_for(facts, level)) {
    lines.push_back(
        "try: run as root with CAP_SYS_ADMIN (a systemd unit: add it to "
        "CapabilityBoundingSet=), or lower it: sysctl kernel.perf_event_paranoid=2");
    return;
  }
  if (privileged_for(facts, level)) {
    lines.push_back(
        "a security module (SELinux, AppArmor, lockdown) or a seccomp filter may "
        "be refusing perf_event_open");
    lines.push_back("try: check the audit log (journalctl -k) for a denial");
    return;
  }
  std::string advice = "try: run as root, give the program CAP_PERFMON (setcap cap_perfmon+ep ...)";
  // The highest setting that allows this event without privilege.
  long wanted = 2;
  if (call.pid == -1)
    wanted = 0;  // CPU-wide
  else if (!call.attr || !call.attr->attr.exclude_kernel)
    wanted = 1;  // kernel samples of one's own process
  if (call.attr && call.attr->attr.type == PERF_TYPE_TRACEPOINT &&
      (call.attr->attr.sample_type & PERF_SAMPLE_RAW))
    wanted = -1;  // raw tracepoint data
  if (!level || *level > wanted)
    advice += ", or allow it: sysctl kernel.perf_event_paranoid=" + std::to_string(wanted);
  lines.push_back(advice);
}

void not_found(const FailedCall& call, std::vector<std::string>& lines) {
  if (call.call == PerfCall::kIoctl) {
    lines.push_back("the event is being destroyed");
    return;
  }
  if (is_persistent(call)) {
    lines.push_back("there is no persistent event with id " +
                    std::to_string(call.attr->attr.config) +
                    (call.cpu >= 0 ? " on CPU " + std::to_string(call.cpu) : std::string()) +
                    "; it may have been killed, or never covered this CPU");
    lines.push_back("try: perf persistent list");
    return;
  }
  uint32_t type = call.attr ? call.attr->attr.type : UINT32_MAX;
  if (type == PERF_TYPE_HARDWARE || type == PERF_TYPE_HW_CACHE || type == PERF_TYPE_RAW) {
    lines.push_back("this machine exposes no hardware counters (virtual machines often do not)");
    lines.push_back("try: a software event such as cpu-clock, or a tracepoint");
    return;
  }
  if (type == PERF_TYPE_SOFTWARE) {
    lines.push_back("this kernel does not have that software event");
    lines.push_back("try: perf list sw");
    return;
  }
  if (type == PERF_TYPE_TRACEPOINT) {
    lines.push_back("this kernel does not have that tracepoint");
    lines.push_back("try: perf list tracepoint");
    return;
  }
  lines.push_back("this kernel has no PMU of that type, or the PMU does not know the event" +
                  (call.attr ? " (type " + std::to_string(type) + ")" : std::string()));
  lines.push_back("try: ls /sys/bus/event_source/devices/ and perf list");
}

void invalid(const FailedCall& call, const Facts& facts, std::vector<std::string>& lines) {
  if (call.call == PerfCall::kIoctl) {
    if (call.request == kIocDetach) {
      lines.push_back("only per-CPU events can be made persistent, not per-task ones");
      lines.push_back("try: open the event with pid -1 on each CPU");
    } else if (call.request == kIocAttach) {
      lines.push_back("the event is not persistent (already attached or killed)");
      lines.push_back("try: perf persistent list");
    } else if (call.request == PERF_EVENT_IOC_SET_FILTER) {
      lines.push_back(
          "the filter does not parse, names a field the tracepoint lacks, or the "
          "event is not a tracepoint");
      lines.push_back("try: the fields in the tracepoint's format file (perf list --long)");
    } else {
      lines.push_back("the kernel refused the request's argument");
    }
    return;
  }
  if (call.call == PerfCall::kMmap) {
    size_t page = page_size();
    lines.push_back(
        "a perf buffer maps 1 + 2^n pages, and a buffer that already exists (a "
        "persistent event's) only at its own size" +
        (call.length ? "; asked for " + std::to_string(call.length / page) + " pages"
                     : std::string()));
    lines.push_back("try: the size the event was created with (perf persistent list shows it)");
    return;
  }
  if (call.cpu >= 0) {
    if (auto online = facts.online_cpus();
        online && !std::binary_search(online->begin(), online->end(), call.cpu)) {
      lines.push_back("CPU " + std::to_string(call.cpu) +
                      " is not online (online: " + format_cpu_list(*online) + ")");
      lines.push_back("try: -C with CPUs from that list");
      return;
    }
  }
  if (is_persistent(call) && call.pid != -1) {
    lines.push_back("persistent events are per CPU: open them with pid -1");
    return;
  }
  if (call.call == PerfCall::kOpen && call.attr && call.attr->attr.use_clockid &&
      !clock_is_nmi_safe(call.attr->attr.clockid)) {
    lines.push_back("the kernel takes clock " + clock_name(call.attr->attr.clockid) +
                    " only for events that never sample in NMI context (software events); "
                    "tracepoints and hardware events take only monotonic and monotonic_raw");
    lines.push_back("try: -k monotonic (the default), or -k monotonic_raw");
    return;
  }
  if (call.attr && call.attr->attr.write_backward) {
    std::string release = facts.osrelease();
    int major = 0, minor = 0;
    if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) == 2 &&
        (major < 4 || (major == 4 && minor < 7))) {
      lines.push_back("write_backward needs Linux 4.7 or later; this kernel is " + release);
      lines.push_back("try: a forward buffer (the reader handles both)");
      return;
    }
  }
  if (call.attr && call.attr->attr.freq) {
    auto rate = facts.max_sample_rate();
    if (rate && call.attr->attr.sample_freq > uint64_t(*rate)) {
      lines.push_back("a sampling frequency of " + std::to_string(call.attr->attr.sample_freq) +
                      " Hz is above kernel.perf_event_max_sample_rate (" + std::to_string(*rate) +
                      ")");
      lines.push_back("try: a lower -F, or sysctl kernel.perf_event_max_sample_rate=" +
                      std::to_string(call.attr->attr.sample_freq));
      return;
    }
  }
  std::string release = facts.osrelease();
  lines.push_back("the kernel" + (release.empty() ? std::string() : " (" + release + ")") +
                  " refused an attribute: one it does not support, an invalid period or "
                  "frequency, or a pid and CPU that do not go together");
  lines.push_back("try: perf stat -vv with the same event to compare what perf sends");
}

void too_many_files(const ExplainEnv& env, std::vector<std::string>& lines) {
  auto usage = fd_usage(env);
  std::string line = "this process is at its limit of open files";
  if (usage) {
    line += ": " + std::to_string(usage->open) + " open, limit " + std::to_string(usage->limit) +
            " (ulimit -n)";
    if (usage->hard_limit >= 0)
      line += ", hard limit " + std::to_string(usage->hard_limit);
  }
  lines.push_back(line + "; every event takes one fd per CPU");
  long wanted = usage ? suggested_fd_limit(*usage) : 65536;
  // LimitNOFILE= sets the hard limit too: a service is never stuck under it.
  if (!env.service.empty()) {
    lines.push_back("try: " + limit_nofile_advice(env.service, wanted) +
                    ", or fewer events or CPUs (-C)");
    return;
  }
  if (usage && usage->hard_limit >= 0)
    wanted = std::min(wanted, usage->hard_limit);
  if (usage && wanted <= usage->limit)
    lines.push_back(
        "try: fewer events or CPUs (-C), or a higher hard limit (LimitNOFILE= for "
        "a service, limits.conf for a login)");
  else
    lines.push_back("try: ulimit -n " + std::to_string(wanted) + ", or fewer events or CPUs (-C)");
}

void no_memory(const FailedCall& call, const Facts& facts, std::vector<std::string>& lines) {
  if (call.call == PerfCall::kMmap ||
      (call.call == PerfCall::kIoctl && call.request == kIocDetach)) {
    auto mlock = facts.mlock_kb();
    lines.push_back(
        "the kernel could not allocate the buffer" +
        (call.length ? " of " + std::to_string(call.length / 1024) + " KiB" : std::string()) +
        (mlock ? "; kernel.perf_event_mlock_kb is " + std::to_string(*mlock) + " KiB"
               : std::string()));
    lines.push_back("try: a smaller buffer (-m PAGES) or fewer CPUs (-C)");
    return;
  }
  lines.push_back("the kernel is out of memory for perf events");
}

void no_tty(const FailedCall& call, std::vector<std::string>& lines) {
  if (call.call == PerfCall::kIoctl && (call.request == kIocDetach || call.request == kIocAttach)) {
    lines.push_back(
        "this kernel does not have the persistent-event ioctls (the seed patch "
        "set's ABI); mainline kernels do not");
    lines.push_back("try: the broker backend, which works everywhere: perf persistent daemon");
    return;
  }
  lines.push_back("the fd is not a perf event, or this kernel does not know the request");
}

}  // namespace

std::string perf_ioctl_name(unsigned long request) {
  switch (request) {
    case PERF_EVENT_IOC_ENABLE:
      return "PERF_EVENT_IOC_ENABLE";
    case PERF_EVENT_IOC_DISABLE:
      return "PERF_EVENT_IOC_DISABLE";
    case PERF_EVENT_IOC_REFRESH:
      return "PERF_EVENT_IOC_REFRESH";
    case PERF_EVENT_IOC_RESET:
      return "PERF_EVENT_IOC_RESET";
    case PERF_EVENT_IOC_PERIOD:
      return "PERF_EVENT_IOC_PERIOD";
    case PERF_EVENT_IOC_SET_OUTPUT:
      return "PERF_EVENT_IOC_SET_OUTPUT";
    case PERF_EVENT_IOC_SET_FILTER:
      return "PERF_EVENT_IOC_SET_FILTER";
    case PERF_EVENT_IOC_ID:
      return "PERF_EVENT_IOC_ID";
    case PERF_EVENT_IOC_SET_BPF:
      return "PERF_EVENT_IOC_SET_BPF";
    case PERF_EVENT_IOC_PAUSE_OUTPUT:
      return "PERF_EVENT_IOC_PAUSE_OUTPUT";
    case PERF_EVENT_IOC_QUERY_BPF:
      return "PERF_EVENT_IOC_QUERY_BPF";
    case PERF_EVENT_IOC_MODIFY_ATTRIBUTES:
      return "PERF_EVENT_IOC_MODIFY_ATTRIBUTES";
    case kIocDetach:
      return "PERF_EVENT_IOC_DETACH";
    case kIocAttach:
      return "PERF_EVENT_IOC_ATTACH";
    default: {
      char buf[24];
      std::snprintf(buf, sizeof(buf), "ioctl %#lx", request);
      return buf;
    }
  }
}

std::optional<FdUsage> fd_usage(const ExplainEnv& env) {
  Facts facts(env);
  auto limits = facts.fd_limits();
  auto open = facts.open_fds();
  if (!limits || !open)
    return std::nullopt;
  return FdUsage{.open = *open, .limit = limits->first, .hard_limit = limits->second};
}

long suggested_fd_limit(const FdUsage& usage, size_t more) {
  return std::max({1024L, 4 * usage.limit, long(2 * (usage.open + more))});
}

std::string limit_nofile_advice(const std::string& service, long wanted) {
  return "raise LimitNOFILE= (e.g. LimitNOFILE=" + std::to_string(wanted) + ", 'systemctl edit " +
         service + "') and restart it";
}

Error explain(int err, const FailedCall& call, const ExplainEnv& env) {
  Facts facts(env);
  std::vector<std::string> lines;
  switch (err) {
    case EACCES:
    case EPERM:
      permission(err, call, facts, lines);
      break;
    case ENOENT:
      not_found(call, lines);
      break;
    case EINVAL:
      invalid(call, facts, lines);
      break;
    case EMFILE:
      too_many_files(env, lines);
      break;
    case ENFILE:
      lines.push_back("the system's file table is full (fs.file-max)");
      lines.push_back("try: close other programs' files, or sysctl fs.file-max=<more>");
      break;
    case EBUSY:
      if (call.call == PerfCall::kIoctl && call.request == kIocDetach) {
        lines.push_back(
            "the event already has a buffer (it was mapped, or its output was "
            "redirected); the seed's DETACH needs an event without one");
        lines.push_back("try: make the event persistent before mapping it");
      } else if (call.call == PerfCall::kIoctl && call.request == PERF_EVENT_IOC_SET_OUTPUT) {
        lines.push_back("the event's own buffer is mapped");
      } else {
        lines.push_back(
            "the PMU is taken: another tool holds an exclusive or pinned event "
            "(the NMI watchdog holds a hardware counter on many machines)");
        lines.push_back("try: stop the other tool, or sysctl kernel.nmi_watchdog=0");
      }
      break;
    case EEXIST:
      lines.push_back("the event is already persistent");
      lines.push_back("try: perf persistent list");
      break;
    case ENOMEM:
      no_memory(call, facts, lines);
      break;
    case ENODEV:
      lines.push_back(
          "the PMU does not support this kind of event here (a per-task event on "
          "a CPU-only PMU, or sampling on a counting-only one)");
      lines.push_back("try: the event per CPU (-a or -C), or counting instead of sampling");
      break;
    case EOPNOTSUPP:
      if (call.attr && (call.attr->words[5] & (1ull << 23)) && call.persistent_type != 0 &&
          !is_persistent(call)) {
        lines.push_back(
            "a new event cannot be opened persistent (the seed kernel refuses "
            "attr.persistent)");
        lines.push_back("try: perf persistent create, which makes an open event persistent");
      } else {
        lines.push_back(
            "the PMU cannot do what the attributes ask: sampling, an exclude_* "
            "bit, branch stacks or precise_ip");
        lines.push_back("try: the event without those modifiers");
      }
      break;
    case E2BIG: {
      std::string release = facts.osrelease();
      lines.push_back(
          "this kernel's struct perf_event_attr is older than the one sent" +
          (call.attr ? " (" + std::to_string(call.attr->attr.size) + " bytes)" : std::string()) +
          " and a field it does not know is set" +
          (release.empty() ? std::string() : "; the kernel is " + release));
      lines.push_back("try: the event without the newer attributes (e.g. config3)");
      break;
    }
    case ENOTTY:
      no_tty(call, lines);
      break;
    case ESRCH:
      lines.push_back("no process has pid " + std::to_string(call.pid));
      break;
    case EBADF:
      lines.push_back("the fd is not an open perf event");
      break;
    case ENOSPC:
      lines.push_back(
          "the buffer given to read(2) is smaller than the event's read_format "
          "needs");
      break;
    case EINTR:
      lines.push_back("interrupted by a signal");
      break;
    default:
      break;
  }
  std::string message = headline(err, call);
  for (const std::string& line : lines)
    message += "\n  " + line;
  return Error(err, std::move(message));
}

Error explain(const Error& error, const FailedCall& call, const ExplainEnv& env) {
  return explain(error.code(), call, env);
}

}  // namespace pp::sys

// The errno explainer over fake proc and sysfs trees: each case is an errno,
// the call that failed, the files the system would show, and the lines the
// message must contain, in order.
#include "sys/explain.h"

#include <sys/mman.h>

#include <gtest/gtest.h>
#include <map>

#include "sys/kernel.h"
#include "tests/support/temp_dir.h"

namespace pp::sys {
namespace {

constexpr uint32_t kPersistentType = 13;

EventAttr make_attr(uint32_t type, uint64_t config, uint64_t sample_type = 0) {
  EventAttr attr;
  attr.attr.type = type;
  attr.attr.size = kAttrSizeVer7;
  attr.attr.config = config;
  attr.attr.sample_type = sample_type;
  attr.attr.sample_period = 1;
  return attr;
}

EventAttr with(EventAttr attr, void (*change)(EventAttr&)) {
  change(attr);
  return attr;
}

const EventAttr kTracepoint = make_attr(PERF_TYPE_TRACEPOINT, 305, PERF_SAMPLE_RAW);
const EventAttr kCpuClock = make_attr(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
const EventAttr kPersistent = make_attr(kPersistentType, 7);

constexpr const char* kNoCaps = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t0000000000000000\n";
constexpr const char* kPerfmon = "Name:\tx\nCapEff:\t0000004000000000\n";  // bit 38

struct Case {
  const char* name;
  int err;
  FailedCall call;
  std::map<std::string, std::string> proc;  // overrides of the default fake proc
  std::vector<std::string> expected;        // in this order
  std::vector<std::string> absent{};
  const char* service = "";  // ExplainEnv::service
};

class Explain : public ::testing::TestWithParam<Case> {};

std::string explain_in_fake_system(const Case& c) {
  testing::TempDir proc, sysfs;
  std::map<std::string, std::string> files = {
      {"sys/kernel/perf_event_paranoid", "2\n"},
      {"sys/kernel/perf_event_mlock_kb", "516\n"},
      {"sys/kernel/perf_event_max_sample_rate", "100000\n"},
      {"sys/kernel/osrelease", "6.1.0-18-amd64\n"},
      {"self/status", kNoCaps},
      {"self/limits",
       "Limit                     Soft Limit           Hard Limit           Units     \n"
       "Max cpu time              unlimited            unlimited            seconds   \n"
       "Max open files            1024                 4096                 files     \n"},
  };
  for (const auto& [path, content] : c.proc)
    files[path] = content;
  for (const auto& [path, content] : files)
    if (content != "-")  // "-": the file does not exist
      proc.write(path, content);
  for (int fd = 0; fd < 10; ++fd)
    proc.write("self/fd/" + std::to_string(fd), "");
  sysfs.write("devices/system/cpu/online", "0-1\n");
  return explain(c.err, c.call,
                 {.proc_root = proc.path(), .sysfs_root = sysfs.path(), .service = c.service})
      .message();
}

TEST_P(Explain, SaysWhatFailedWhyAndWhatToTry) {
  const Case& c = GetParam();
  std::string message = explain_in_fake_system(c);
  size_t at = 0;
  for (const std::string& part : c.expected) {
    size_t found = message.find(part, at);
    ASSERT_NE(found, std::string::npos) << "missing, or out of order: '" << part << "' in\n"
                                        << message;
    at = found + part.size();
  }
  for (const std::string& part : c.absent)
    EXPECT_EQ(message.find(part), std::string::npos) << "unexpected '" << part << "' in\n"
                                                     << message;
  EXPECT_NE(message.find("\n  "), std::string::npos)
      << "the first line says what failed; the lines after it why and what to try";
}

const Case kCases[] = {
    {"unprivileged_tracepoint_per_cpu",
     EACCES,
     {.event = "syscalls:sys_enter_getppid", .cpu = 0, .attr = kTracepoint},
     {},
     {"cannot open event 'syscalls:sys_enter_getppid' on CPU 0: Permission denied (EACCES)",
      "\n  kernel.perf_event_paranoid is 2: ", "no CPU-wide events",
      "\n  this process has neither CAP_PERFMON nor CAP_SYS_ADMIN (CapEff 0000000000000000)",
      "\n  try: run as root, give the program CAP_PERFMON",
      "sysctl kernel.perf_event_paranoid=-1"}},
    {"unprivileged_cpu_clock_paranoid_1",
     EACCES,
     {.event = "cpu-clock", .cpu = 1, .attr = kCpuClock},
     {{"sys/kernel/perf_event_paranoid", "1\n"}},
     {"cannot open event 'cpu-clock' on CPU 1", "perf_event_paranoid is 1",
      "only profile their own processes", "sysctl kernel.perf_event_paranoid=0"}},
    {"unprivileged_own_process_kernel_samples",
     EACCES,
     {.event = "cpu-clock", .pid = 4242, .attr = kCpuClock},
     {},
     {"cannot open event 'cpu-clock' for pid 4242", "no kernel samples",
      "sysctl kernel.perf_event_paranoid=1"}},
    {"out_of_fds_at_the_hard_limit",
     EMFILE,
     {.event = "sched:sched_switch", .cpu = 1, .attr = kTracepoint},
     {{"self/limits",
       "Max open files            4096                 4096                 files\n"}},
     {"limit 4096 (ulimit -n), hard limit 4096",
      "try: fewer events or CPUs (-C), or a higher hard limit"},
     {"ulimit -n 4096"}},
    {"map_refused_despite_cap_ipc_lock",
     EPERM,
     {.call = PerfCall::kMmap, .event = "cpu-clock", .cpu = 0, .length = 528384},
     {{"self/status", "CapEff:\t0000000000004000\n"}},
     {"has CAP_IPC_LOCK, which lifts the locked-memory limit", "journalctl"},
     {"perf_event_mlock_kb"}},
    {"debian_paranoid_3",
     EACCES,
     {.event = "cpu-clock", .pid = 1, .attr = kCpuClock},
     {{"sys/kernel/perf_event_paranoid", "3\n"}},
     {"perf_event_paranoid is 3", "no process may open any perf event"}},
    // Debian's level 3 asks for CAP_SYS_ADMIN: CAP_PERFMON alone is refused,
    // and that is no security module's doing.
    {"debian_paranoid_3_with_only_cap_perfmon",
     EACCES,
     {.event = "mce:mce_record", .cpu = 0, .attr = kTracepoint},
     {{"sys/kernel/perf_event_paranoid", "3\n"}, {"self/status", kPerfmon}},
     {"perf_event_paranoid is 3", "CAP_PERFMON is not enough",
      "has CAP_PERFMON but not CAP_SYS_ADMIN (CapEff 0000004000000000), which setting 3 asks for",
      "CapabilityBoundingSet=", "sysctl kernel.perf_event_paranoid=2"},
     {"security module", "not what refused it"}},
    {"debian_paranoid_3_with_cap_sys_admin",
     EACCES,
     {.event = "mce:mce_record", .cpu = 0, .attr = kTracepoint},
     {{"sys/kernel/perf_event_paranoid", "3\n"}, {"self/status", "CapEff:\t0000004000200000\n"}},
     {"has CAP_SYS_ADMIN", "not what refused it", "security module"},
     {"CAP_PERFMON but not"}},
    {"privileged_yet_refused",
     EACCES,
     {.event = "cpu-clock", .cpu = 0, .attr = kCpuClock},
     {{"self/status", kPerfmon}},
     {"this process has CAP_PERFMON (CapEff 0000004000000000)", "security module", "journalctl"},
     {"sysctl kernel.perf_event_paranoid"}},
    {"unprivileged_persistent_open",
     EACCES,
     {.event = "persistent/mce_record/",
      .cpu = 0,
      .attr = kPersistent,
      .persistent_type = kPersistentType},
     {},
     {"cannot open event 'persistent/mce_record/' on CPU 0",
      "persistent events are per CPU and need root or CAP_PERFMON", "neither CAP_PERFMON",
      "setcap cap_perfmon+ep"},
     {"perf_event_paranoid"}},
    {"raw_tracepoint_eperm",
     EPERM,
     {.event = "sched:sched_switch", .pid = 99, .attr = kTracepoint},
     {{"sys/kernel/perf_event_paranoid", "0\n"}},
     {"Operation not permitted (EPERM)", "not read raw tracepoint data",
      "sysctl kernel.perf_event_paranoid=-1"}},
    {"writable_map_of_a_persistent_buffer",
     EACCES,
     {.call = PerfCall::kMmap,
      .event = "persistent/mce_record/",
      .cpu = 1,
      .length = 528384,
      .prot = PROT_READ | PROT_WRITE},
     {},
     {"cannot map the buffer of event 'persistent/mce_record/' on CPU 1 (516 KiB)",
      "maps read-only", "try: map it with PROT_READ only"}},
    {"map_over_the_mlock_allowance",
     EPERM,
     {.call = PerfCall::kMmap,
      .event = "cpu-clock",
      .cpu = 0,
      .length = 2101248,
      .prot = PROT_READ | PROT_WRITE},
     {},
     {"cannot map the buffer", "(2052 KiB)", "kernel.perf_event_mlock_kb is 516 KiB per CPU",
      "sysctl kernel.perf_event_mlock_kb=2056"}},
    {"set_output_on_a_persistent_event",
     EACCES,
     {.call = PerfCall::kIoctl,
      .event = "persistent/ctxsw/",
      .cpu = 0,
      .request = PERF_EVENT_IOC_SET_OUTPUT},
     {},
     {"PERF_EVENT_IOC_SET_OUTPUT failed on event 'persistent/ctxsw/' on CPU 0",
      "no output may be redirected"}},
    {"no_such_persistent_id",
     ENOENT,
     {.cpu = 1, .attr = kPersistent, .persistent_type = kPersistentType},
     {},
     {"cannot open persistent event 7 on CPU 1: No such file or directory (ENOENT)",
      "no persistent event with id 7 on CPU 1", "try: perf persistent list"}},
    {"no_hardware_pmu",
     ENOENT,
     {.event = "cycles", .cpu = 0, .attr = make_attr(PERF_TYPE_HARDWARE, 0)},
     {},
     {"cannot open event 'cycles'", "no hardware counters", "cpu-clock"}},
    {"no_such_tracepoint",
     ENOENT,
     {.event = "mce:mce_record", .cpu = 0, .attr = make_attr(PERF_TYPE_TRACEPOINT, 9999)},
     {},
     {"does not have that tracepoint", "perf list tracepoint"}},
    {"no_such_pmu",
     ENOENT,
     {.cpu = 0, .attr = make_attr(42, 1)},
     {},
     {"cannot open event (type 42, config 1) on CPU 0", "no PMU of that type", "(type 42)"}},
    {"cpu_not_online",
     EINVAL,
     {.event = "cpu-clock", .cpu = 5, .attr = kCpuClock},
     {},
     {"on CPU 5: Invalid argument (EINVAL)", "CPU 5 is not online (online: 0-1)"}},
    {"write_backward_on_an_old_kernel",
     EINVAL,
     {.event = "sched:sched_switch",
      .cpu = 0,
      .attr = with(kTracepoint, [](EventAttr& a) { a.attr.write_backward = 1; })},
     {{"sys/kernel/osrelease", "4.4.0-210-generic\n"}},
     {"write_backward needs Linux 4.7 or later; this kernel is 4.4.0-210-generic"}},
    {"a_clock_the_tracepoint_cannot_read_in_nmi",
     EINVAL,
     {.event = "sched:sched_switch",
      .cpu = 0,
      .attr = with(kTracepoint,
                   [](EventAttr& a) {
                     a.attr.use_clockid = 1;
                     a.attr.clockid = 7;
                   })},
     {},
     {"the kernel takes clock boottime only for events that never sample in NMI context",
      "try: -k monotonic (the default), or -k monotonic_raw"}},
    {"frequency_over_the_maximum",
     EINVAL,
     {.event = "cpu-clock",
      .cpu = 0,
      .attr = with(kCpuClock,
                   [](EventAttr& a) {
                     a.attr.freq = 1;
                     a.attr.sample_freq = 200000;
                   })},
     {},
     {"200000 Hz is above kernel.perf_event_max_sample_rate (100000)",
      "sysctl kernel.perf_event_max_sample_rate=200000"}},
    {"unknown_attribute",
     EINVAL,
     {.event = "cpu-clock", .cpu = 0, .attr = kCpuClock},
     {},
     {"the kernel (6.1.0-18-amd64) refused an attribute", "perf stat -vv"}},
    {"mapping_of_the_wrong_size",
     EINVAL,
     {.call = PerfCall::kMmap,
      .event = "persistent/mce_record/",
      .cpu = 0,
      .length = 3 * page_size(),
      .prot = PROT_READ},
     {},
     {"1 + 2^n pages", "at its own size; asked for 3 pages"}},
    {"detach_of_a_per_task_event",
     EINVAL,
     {.call = PerfCall::kIoctl, .event = "cpu-clock", .pid = 77, .request = kIocDetach},
     {},
     {"PERF_EVENT_IOC_DETACH failed on event 'cpu-clock' for pid 77",
      "only per-CPU events can be made persistent"}},
    {"attach_of_an_ordinary_event",
     EINVAL,
     {.call = PerfCall::kIoctl, .cpu = 0, .request = kIocAttach},
     {},
     {"PERF_EVENT_IOC_ATTACH failed on the event on CPU 0", "not persistent"}},
    {"bad_filter",
     EINVAL,
     {.call = PerfCall::kIoctl,
      .event = "sched:sched_switch",
      .cpu = 0,
      .request = PERF_EVENT_IOC_SET_FILTER},
     {},
     {"PERF_EVENT_IOC_SET_FILTER failed", "the filter does not parse"}},
    {"out_of_fds",
     EMFILE,
     {.event = "sched:sched_switch", .cpu = 1, .attr = kTracepoint},
     {},
     {"Too many open files (EMFILE)", "10 open, limit 1024 (ulimit -n), hard limit 4096",
      "one fd per CPU", "try: ulimit -n 4096"}},
    // A service's soft limit is its hard one (the broker raises it), and
    // LimitNOFILE= raises both: the advice is that, once, not ulimit -n.
    {"out_of_fds_in_a_service",
     EMFILE,
     {.event = "sched:sched_switch", .cpu = 1, .attr = kTracepoint},
     {{"self/limits",
       "Max open files            1024                 1024                 files\n"}},
     {"10 open, limit 1024 (ulimit -n), hard limit 1024",
      "try: raise LimitNOFILE= (e.g. LimitNOFILE=4096, 'systemctl edit "
      "perf-persistent.service') and restart it, or fewer events or CPUs (-C)"},
     {"ulimit -n 4096", "limits.conf"},
     "perf-persistent.service"},
    {"out_of_fds_unknown_limits",
     EMFILE,
     {.event = "sched:sched_switch", .cpu = 1, .attr = kTracepoint},
     {{"self/limits", "-"}},
     {"at its limit of open files; every event takes one fd per CPU", "ulimit -n 65536"}},
    {"detach_after_mmap",
     EBUSY,
     {.call = PerfCall::kIoctl, .event = "sched:sched_switch", .cpu = 0, .request = kIocDetach},
     {},
     {"Device or resource busy (EBUSY)", "already has a buffer",
      "make the event persistent before mapping it"}},
    {"pmu_taken",
     EBUSY,
     {.event = "cycles", .cpu = 0, .attr = make_attr(PERF_TYPE_HARDWARE, 0)},
     {},
     {"the PMU is taken", "nmi_watchdog"}},
    {"detach_twice",
     EEXIST,
     {.call = PerfCall::kIoctl, .cpu = 0, .request = kIocDetach},
     {},
     {"already persistent"}},
    {"buffer_too_big",
     ENOMEM,
     {.call = PerfCall::kMmap, .event = "cpu-clock", .cpu = 0, .length = 528384},
     {},
     {"Cannot allocate memory (ENOMEM)", "could not allocate the buffer of 516 KiB",
      "kernel.perf_event_mlock_kb is 516 KiB", "smaller buffer"}},
    {"no_such_device",
     ENODEV,
     {.event = "uncore_imc/cas_count_read/", .pid = 5, .attr = make_attr(17, 4)},
     {},
     {"No such device (ENODEV)", "per-task event"}},
    {"persistent_flag_on_a_new_event",
     EOPNOTSUPP,
     {.event = "sched:sched_switch",
      .cpu = 0,
      .attr = with(kTracepoint, [](EventAttr& a) { a.words[5] |= 1ull << 23; }),
      .persistent_type = kPersistentType},
     {},
     {"(EOPNOTSUPP)", "cannot be opened persistent", "perf persistent create"}},
    {"sampling_not_supported",
     EOPNOTSUPP,
     {.event = "msr/tsc/", .cpu = 0, .attr = make_attr(9, 0)},
     {},
     {"the PMU cannot do what the attributes ask"}},
    {"attr_too_new",
     E2BIG,
     {.event = "cpu-clock",
      .cpu = 0,
      .attr = with(kCpuClock, [](EventAttr& a) { a.attr.size = kAttrSizeVer8; })},
     {{"sys/kernel/osrelease", "5.10.0\n"}},
     {"(E2BIG)", "older than the one sent (136 bytes)", "the kernel is 5.10.0", "config3"}},
    {"mainline_kernel_has_no_detach",
     ENOTTY,
     {.call = PerfCall::kIoctl, .event = "sched:sched_switch", .cpu = 0, .request = kIocDetach},
     {},
     {"PERF_EVENT_IOC_DETACH failed", "(ENOTTY)", "does not have the persistent-event ioctls",
      "perf persistent daemon"}},
    {"no_such_process",
     ESRCH,
     {.event = "cpu-clock", .pid = 123456, .attr = kCpuClock},
     {},
     {"(ESRCH)", "no process has pid 123456"}},
    {"short_read",
     ENOSPC,
     {.call = PerfCall::kRead, .event = "persistent/mce_record/", .cpu = 0},
     {},
     {"cannot read the count of event 'persistent/mce_record/' on CPU 0",
      "smaller than the event's read_format needs"}},
    {"system_without_proc_files",
     EACCES,
     {.event = "cpu-clock", .cpu = 0, .attr = kCpuClock},
     {{"sys/kernel/perf_event_paranoid", "-"}, {"self/status", "-"}},
     {"cannot open event 'cpu-clock' on CPU 0",
      "try: run as root, give the program CAP_PERFMON (setcap cap_perfmon+ep ...), or allow "
      "it: sysctl kernel.perf_event_paranoid=0"},
     {"CapEff", "perf_event_paranoid is"}},
};

INSTANTIATE_TEST_SUITE_P(Sys, Explain, ::testing::ValuesIn(kCases),
                         [](const auto& param) { return std::string(param.param.name); });

TEST(Explain, KeepsTheErrno) {
  Error refused(EACCES, "perf_event_open: Permission denied");
  Error explained = explain(refused, {.event = "cpu-clock", .cpu = 0});
  EXPECT_EQ(explained.code(), EACCES);
  EXPECT_EQ(explained.message().rfind("cannot open event 'cpu-clock' on CPU 0", 0), 0u);
}

TEST(Explain, UnknownErrnoStillSaysWhatFailed) {
  Error explained = explain(EXDEV, {.event = "cpu-clock", .cpu = 0});
  EXPECT_EQ(explained.message(),
            "cannot open event 'cpu-clock' on CPU 0: Invalid cross-device link (EXDEV)");
}

TEST(Explain, NamesPerfIoctls) {
  EXPECT_EQ(perf_ioctl_name(kIocDetach), "PERF_EVENT_IOC_DETACH");
  EXPECT_EQ(perf_ioctl_name(kIocAttach), "PERF_EVENT_IOC_ATTACH");
  EXPECT_EQ(perf_ioctl_name(PERF_EVENT_IOC_PAUSE_OUTPUT), "PERF_EVENT_IOC_PAUSE_OUTPUT");
  EXPECT_EQ(perf_ioctl_name(0x1234), "ioctl 0x1234");
}

}  // namespace
}  // namespace pp::sys

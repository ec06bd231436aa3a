#include "check/check.h"

#include <linux/perf_event.h>

#include <filesystem>
#include <functional>
#include <gtest/gtest.h>
#include <sstream>

#include "base/json.h"
#include "sys/perf_abi_sample.h"
#include "tests/support/temp_dir.h"

namespace pp::check {
namespace {

using pp::testing::TempDir;

constexpr int64_t kNow = 1700000000;
constexpr uint64_t kMceId = 123;
constexpr int kBrokerPid = 4242;

// The broker's answers, as given.
class FakeBackend final : public persistent::Backend {
 public:
  std::string_view name() const override { return "broker"; }
  Result<std::vector<persistent::EventInfo>> list(bool verbose, std::string*) override {
    verbose_asked = verbose;
    if (refuse)
      return Error(EACCES, "the broker's socket is root's");
    if (down)
      return Error(ErrorKind::kBrokerDown, ECONNREFUSED, "the broker is not running");
    return events;
  }
  std::vector<persistent::EventInfo> down_events() override {
    std::vector<persistent::EventInfo> saved = events;
    for (persistent::EventInfo& e : saved)
      e.state = "down", e.error = "no broker runs for /run/perf-persistent";
    return down ? saved : std::vector<persistent::EventInfo>{};
  }
  Result<persistent::EventInfo> create(const persistent::CreateRequest&, std::string*) override {
    return Error(EPERM, "create");
  }
  Result<persistent::EventInfo> kill(std::string_view) override { return Error(EPERM, "kill"); }
  Result<persistent::Buffer> open(uint64_t, int) override { return Error(EPERM, "open"); }

  std::vector<persistent::EventInfo> events;
  bool refuse = false;
  bool down = false;  // the broker is not running; `events` is its saved registry
  bool verbose_asked = false;
};

persistent::EventInfo mce_event() {
  persistent::EventInfo e;
  e.id = 1;
  e.name = "mce_record";
  e.event = "mce:mce_record";
  e.backend = "broker";
  e.attr.attr.type = PERF_TYPE_TRACEPOINT;
  e.attr.attr.config = kMceId;
  e.attr.attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;
  e.cpus = {0, 1};
  e.pages = 128;
  e.page_size = 4096;
  e.created = e.buffer_start = kNow - 1000;
  e.counts = std::vector<persistent::CpuCount>{{0, 5}, {1, 3}};
  return e;
}

// A healthy x86 host under a temp dir: tracefs with mce_record, a broker
// under systemd, enabled, with CAP_SYS_ADMIN, polling on, no collector.
class CheckTest : public ::testing::Test {
 public:
  CheckTest() {
    dir.write("proc/sys/kernel/arch", "x86_64\n");
    dir.write("proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n");
    dir.write("proc/sys/kernel/perf_event_paranoid", "2\n");
    dir.write("proc/sys/kernel/perf_event_mlock_kb", "516\n");
    dir.write("sys/kernel/tracing/events/mce/mce_record/id", std::to_string(kMceId) + "\n");
    dir.write("sys/kernel/debug/sched/verbose", "N\n");
    dir.write("sys/devices/system/cpu/online", "0-1\n");
    for (int cpu : {0, 1}) {
      std::string mc = "sys/devices/system/machinecheck/machinecheck" + std::to_string(cpu) + "/";
      dir.write(mc + "check_interval", "300\n");
      dir.write(mc + "ignore_ce", "0\n");
      dir.write(mc + "cmci_disabled", "0\n");
    }
    dir.write("etc/systemd/system/multi-user.target.wants/perf-persistent.service", "");
    dir.write("run/broker.lock", std::to_string(kBrokerPid) + "\n");
    dir.mkdir("run/systemd/system");  // systemd runs the host (sd_booted())
    dir.write("proc/sys/kernel/osrelease", "6.1.0-27-amd64\n");
    broker("/usr/libexec/perf-core/perf-persistent");
    dir.write("proc/1/comm", "systemd\n");
    dir.write("proc/1/cmdline", std::string("/sbin/init\0", 11));
    backend.events = {mce_event()};
  }

  void broker(const std::string& argv0) {
    std::string p = "proc/" + std::to_string(kBrokerPid) + "/";
    dir.write(p + "comm", "perf-persisten\n");
    dir.write(p + "cmdline", argv0 + std::string("\0daemon\0", 8));
    dir.write(p + "cgroup", "0::/system.slice/perf-persistent.service\n");
    dir.write(p + "status", "Name:\tperf-persisten\nUid:\t0\t0\t0\t0\nCapEff:\t000001ffffffffff\n");
    dir.write(p + "limits",
              "Limit                     Soft Limit           Hard Limit           Units\n"
              "Max locked memory         8388608              8388608              bytes\n"
              "Max open files            1024                 524288               files\n");
    for (int fd = 0; fd < 10; fd++)
      dir.write(p + "fd/" + std::to_string(fd), "");
  }

  std::string pid_file(std::string_view name) const {
    return "proc/" + std::to_string(kBrokerPid) + "/" + std::string(name);
  }

  CheckReport run() {
    CheckInputs in = check_inputs_under(dir.path());
    in.run_dir = dir.path("run");
    in.backend = &backend;
    in.now = kNow;
    return run_checks(in);
  }

  TempDir dir;
  FakeBackend backend;
};

// Every finding of `report` with this id.
std::vector<Finding> with_id(const CheckReport& report, std::string_view id) {
  std::vector<Finding> out;
  for (const Finding& f : report.findings)
    if (f.id == id)
      out.push_back(f);
  return out;
}

std::string text_of(const CheckReport& report, bool verbose) {
  std::ostringstream out;
  print_check_text(out, report, verbose);
  return out.str();
}

const char* const kIds[] = {
    "tracefs-not-mounted",
    "mce-tracepoint-absent",
    "broker-not-running",
    "broker-not-enabled",
    "broker-not-under-systemd",
    "event-failed",
    "event-tampered",
    "buffers-lost",
    "no-mce-event",
    "ras-event-unkept",
    "ras-cec-absorbs-corrected",
    "mce-polling-disabled",
    "mce-ignore-ce",
    "cmci-disabled",
    "mce-cmdline",
    "other-consumer",
    "perf-event-paranoid",
    "mlock-limit",
    "fd-limit",
    "events-losing",
    "watch-not-alive",
    "metrics-stale",
    "boot-mapped-instance",
    "previous-boot-unkept",
};

TEST_F(CheckTest, HealthyHostIsOkWithEveryCheckOnce) {
  CheckReport report = run();
  EXPECT_EQ(report.status(), CheckStatus::kOk) << text_of(report, true);
  EXPECT_EQ(report.exit_status(), 0);
  EXPECT_TRUE(backend.verbose_asked) << "the counts come from list -v";
  EXPECT_EQ(report.events, 1u);
  for (const char* id : kIds) {
    auto found = with_id(report, id);
    ASSERT_EQ(found.size(), 1u) << id;
    EXPECT_EQ(found[0].status, CheckStatus::kOk) << id << ": " << found[0].found;
    EXPECT_FALSE(found[0].source.empty()) << id;
  }
  EXPECT_EQ(report.findings.size(), std::size(kIds));
  std::string text = text_of(report, false);
  EXPECT_EQ(text.rfind("PERSISTENT OK - 24 checks passed, 1 event(s) held | critical=0 "
                       "warning=0 unknown=0 acknowledged=0 events=1 errors=U\n",
                       0),
            0u)
      << text;
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "without -v only the plugin line: " << text;
  EXPECT_NE(text_of(report, true).find("OK no-mce-event: event 1 'mce_record'"), std::string::npos)
      << text_of(report, true);
}

// One cause: what makes it appear, the status it must have, and a near
// miss that must leave the host OK.
struct Cause {
  const char* id;
  CheckStatus status;
  std::function<void(CheckTest&)> make;
  std::function<void(CheckTest&)> near_miss;  // may be null
  const char* found;                          // a part of the finding's text
};

class CheckCause : public CheckTest, public ::testing::WithParamInterface<Cause> {};

// A boot-mapped instance "bb" on the command line and in tracefs; armed
// (as the broker leaves it) or holding the previous boot's 12 records.
void boot_mapped(CheckTest& t, bool armed) {
  t.dir.write("proc/cmdline",
              "root=/dev/sda1 memmap=12M$0x10000000 trace_instance=bb^traceoff@0x10000000:12M\n");
  t.dir.write("proc/sys/kernel/random/boot_id", "6f0c\n");
  const std::string i = "sys/kernel/tracing/instances/bb/";
  t.dir.write(i + "set_event", armed ? "mce:mce_record\n" : "");
  t.dir.write(i + "tracing_on", armed ? "1\n" : "0\n");
  t.dir.write(i + "last_boot_info", armed ? "# Current\n" : "text delta:\t0\n");
  t.dir.write(i + "per_cpu/cpu0/stats", armed ? "entries: 0\n" : "entries: 5\noverrun: 0\n");
  t.dir.write(i + "per_cpu/cpu1/stats", armed ? "entries: 0\n" : "entries: 7\noverrun: 0\n");
}

const Cause kCauses[] = {
    {"boot-mapped-instance", CheckStatus::kWarning,
     [](CheckTest& t) {
       boot_mapped(t, true);
       std::filesystem::remove_all(t.dir.path("sys/kernel/tracing/instances/bb"));
     },
     [](CheckTest& t) { boot_mapped(t, true); }, "but tracefs has no"},
    {"previous-boot-unkept", CheckStatus::kWarning, [](CheckTest& t) { boot_mapped(t, false); },
     [](CheckTest& t) {
       boot_mapped(t, true);
       t.dir.write("var/lib/perf-persistent/previous-boot/1796285031-6f0c/kept.json",
                   R"({"version": 1, "instance": "bb", "boot_id": "6f0c", "cpus": 2})");
     },
     "still holds 12 records of the previous boot, and no copy was kept"},
    {"tracefs-not-mounted", CheckStatus::kCritical,
     [](CheckTest& t) {
       std::filesystem::remove_all(t.dir.path("sys/kernel/tracing"));
       t.dir.mkdir("sys/kernel/tracing");
     },
     nullptr, "tracefs is not mounted"},
    {"mce-tracepoint-absent", CheckStatus::kCritical,
     [](CheckTest& t) {
       std::filesystem::remove_all(t.dir.path("sys/kernel/tracing/events/mce"));
       t.dir.write("sys/kernel/tracing/events/sched/sched_switch/id", "316\n");
     },
     [](CheckTest& t) {
       // Not x86: no machine checks to miss.
       std::filesystem::remove_all(t.dir.path("sys/kernel/tracing/events/mce"));
       std::filesystem::remove_all(t.dir.path("sys/devices/system/machinecheck"));
       t.dir.write("sys/kernel/tracing/events/sched/sched_switch/id", "316\n");
       t.dir.write("proc/sys/kernel/arch", "aarch64\n");
     },
     "no mce:mce_record tracepoint"},
    {"broker-not-running", CheckStatus::kCritical,
     [](CheckTest& t) { std::filesystem::remove_all(t.dir.path(t.pid_file(""))); },
     [](CheckTest& t) { t.broker("/usr/bin/perf-persistent"); }, "no broker runs"},
    {"broker-not-running", CheckStatus::kCritical,
     [](CheckTest& t) {
       // A stale lock: its pid now belongs to another program.
       t.dir.write(t.pid_file("cmdline"), std::string("-bash\0", 6));
     },
     nullptr, "the pid in its lock file is no running broker"},
    {"broker-not-running", CheckStatus::kCritical,
     [](CheckTest& t) { std::filesystem::remove(t.dir.path("run/broker.lock")); }, nullptr,
     "no lock file"},
    {"broker-not-enabled", CheckStatus::kWarning,
     [](CheckTest& t) {
       std::filesystem::remove(
           t.dir.path("etc/systemd/system/multi-user.target.wants/perf-persistent.service"));
       t.dir.write("etc/systemd/system/multi-user.target.wants/cron.service", "");
     },
     [](CheckTest& t) {
       std::filesystem::remove(
           t.dir.path("etc/systemd/system/multi-user.target.wants/perf-persistent.service"));
       t.dir.write("etc/systemd/system/sysinit.target.wants/perf-persistent.service", "");
     },
     "is not enabled"},
    {"broker-not-under-systemd", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.dir.write(t.pid_file("cgroup"), "0::/user.slice/user-0.slice/session-3.scope\n");
     },
     [](CheckTest& t) {
       t.dir.write(t.pid_file("cgroup"),
                   "12:pids:/\n1:name=systemd:/system.slice/perf-persistent.service\n");
     },
     "not as a systemd service"},
    {"event-failed", CheckStatus::kWarning,
     [](CheckTest& t) {
       persistent::EventInfo e = mce_event();
       e.id = 2;
       e.name = "getppid";
       e.event = "syscalls:sys_enter_getppid";
       e.state = "failed";
       e.error = "no tracepoint syscalls:sys_enter_getppid";
       t.backend.events.push_back(e);
     },
     nullptr, "event 2 'getppid' (syscalls:sys_enter_getppid) failed: no tracepoint"},
    {"event-tampered", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.backend.events[0].tamper_count = 3;
       t.backend.events[0].tampered = {{kNow - 5, 1, "disabled; re-enabled", "uid 1000 (pid 77)"}};
     },
     nullptr, "3 time(s); the last on CPU 1: disabled; re-enabled, held by uid 1000 (pid 77)"},
    {"buffers-lost", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.backend.events[0].buffer_start = kNow - 30;
       t.backend.events[0].lost_reason = "broker restart: nothing kept its buffers mapped";
     },
     [](CheckTest& t) {
       t.backend.events[0].buffer_start = kNow - 2 * kBuffersLostWindowSeconds;
       t.backend.events[0].lost_reason = "broker restart";
     },
     "lost the samples its buffers held before 30 s ago (broker restart: nothing kept its "
     "buffers mapped)"},
    {"no-mce-event", CheckStatus::kCritical,
     [](CheckTest& t) { t.backend.events[0].state = "failed"; }, nullptr,
     "no persistent event holds mce:mce_record"},
    // The kernel has aer_event and mc_event; only mc_event is kept (by its
    // event string). Fixed: aer_event kept, by its tracepoint id alone.
    {"ras-event-unkept", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.dir.write("sys/kernel/tracing/events/ras/aer_event/id", "1224\n");
       t.dir.write("sys/kernel/tracing/events/ras/mc_event/id", "1227\n");
       persistent::EventInfo e = mce_event();
       e.id = 2;
       e.name = "mc_event";
       e.event = "ras:mc_event";
       e.attr.attr.config = 1227;
       t.backend.events.push_back(e);
     },
     [](CheckTest& t) {
       t.dir.write("sys/kernel/tracing/events/ras/aer_event/id", "1224\n");
       persistent::EventInfo e = mce_event();
       e.id = 2;
       e.name = "pcie";
       e.event = "persistent/pcie/";
       e.attr.attr.config = 1224;
       t.backend.events.push_back(e);
     },
     "1 RAS tracepoint that no persistent event keeps: ras:aer_event; errors"},
    // Before 5.7 the collector ended the notifier chain: mce_record missed
    // what it absorbed. Since, it marks the error handled and the chain
    // goes on: only /dev/mcelog, EDAC and extlog miss it (an OK note).
    {"ras-cec-absorbs-corrected", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.dir.write("sys/kernel/debug/ras/cec/action_threshold", "1023\n");
       t.dir.write("proc/sys/kernel/osrelease", "5.4.0-150-generic\n");
     },
     [](CheckTest& t) {
       t.dir.write("sys/kernel/debug/ras/cec/action_threshold", "1023\n");
       t.dir.write("proc/sys/kernel/osrelease", "5.7.0\n");
     },
     "(before 5.7) stops there"},
    {"mce-polling-disabled", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.dir.write("sys/devices/system/machinecheck/machinecheck1/check_interval", "0\n");
     },
     [](CheckTest& t) {
       t.dir.write("sys/devices/system/machinecheck/machinecheck1/check_interval", "10\n");
     },
     "check_interval 0): corrected errors in banks that raise no interrupt are never found on "
     "CPU(s) 1"},
    {"mce-ignore-ce", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.dir.write("sys/devices/system/machinecheck/machinecheck0/ignore_ce", "1\n");
       t.dir.write("sys/devices/system/machinecheck/machinecheck1/ignore_ce", "1\n");
     },
     nullptr, "on CPU(s) 0-1"},
    {"cmci-disabled", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.dir.write("sys/devices/system/machinecheck/machinecheck0/cmci_disabled", "1\n");
     },
     [](CheckTest& t) {
       // AMD has no CMCI: no such file is no problem.
       std::filesystem::remove(
           t.dir.path("sys/devices/system/machinecheck/machinecheck0/cmci_disabled"));
       std::filesystem::remove(
           t.dir.path("sys/devices/system/machinecheck/machinecheck1/cmci_disabled"));
     },
     "CMCI is off"},
    {"cmci-disabled", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.dir.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\n");
       t.dir.write("sys/devices/system/machinecheck/machinecheck1/cmci_disabled", "1\n");
     },
     [](CheckTest& t) {
       // AMD has no CMCI: the setting (and mce=no_cmci) changes nothing.
       t.dir.write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\n");
       t.dir.write("sys/devices/system/machinecheck/machinecheck1/cmci_disabled", "1\n");
       t.dir.write("proc/cmdline", "root=/dev/sda1 mce=no_cmci\n");
     },
     "on CPU(s) 1"},
    {"mce-cmdline", CheckStatus::kCritical,
     [](CheckTest& t) { t.dir.write("proc/cmdline", "root=/dev/sda1 mce=off quiet\n"); },
     [](CheckTest& t) { t.dir.write("proc/cmdline", "root=/dev/sda1 mce=bootlog\n"); }, "mce=off"},
    {"mce-cmdline", CheckStatus::kWarning,
     [](CheckTest& t) { t.dir.write("proc/cmdline", "root=/dev/sda1 mce=dont_log_ce,no_cmci\n"); },
     [](CheckTest& t) { t.dir.write("proc/cmdline", "root=/dev/sda1 nomce_cmci=1\n"); },
     "booted with mce=dont_log_ce, mce=no_cmci"},
    // rasdaemon beside it reads the same tracepoints: a note, not a problem.
    {"other-consumer", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.dir.write("proc/812/comm", "mcelog\n");
       t.dir.write("proc/812/cmdline", std::string("/usr/sbin/mcelog\0--daemon\0", 26));
     },
     [](CheckTest& t) {
       t.dir.write("proc/812/comm", "rasdaemon\n");
       t.dir.write("proc/812/cmdline", std::string("/usr/sbin/rasdaemon\0-f\0-r\0", 25));
     },
     "mcelog (pid 812) also consumes machine checks"},
    {"other-consumer", CheckStatus::kWarning,
     [](CheckTest& t) {
       // comm can be renamed; argv[0] still says mcelog.
       t.dir.write("proc/900/comm", "worker\n");
       t.dir.write("proc/900/cmdline", std::string("/usr/sbin/mcelog\0--daemon\0", 26));
     },
     nullptr, "mcelog (pid 900)"},
    {"perf-event-paranoid", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.dir.write(t.pid_file("status"), "Uid:\t998\t998\t998\t998\nCapEff:\t0000000000000000\n");
     },
     [](CheckTest& t) {
       t.dir.write(t.pid_file("status"), "Uid:\t998\t998\t998\t998\nCapEff:\t0000004000000000\n");
     },
     "has neither CAP_PERFMON nor CAP_SYS_ADMIN"},
    // Debian's level 3: CAP_PERFMON alone opens nothing; CAP_SYS_ADMIN does.
    {"perf-event-paranoid", CheckStatus::kCritical,
     [](CheckTest& t) {
       t.dir.write("proc/sys/kernel/perf_event_paranoid", "3\n");
       t.dir.write(t.pid_file("status"), "Uid:\t0\t0\t0\t0\nCapEff:\t0000004000000000\n");
     },
     [](CheckTest& t) {
       t.dir.write("proc/sys/kernel/perf_event_paranoid", "3\n");
       t.dir.write(t.pid_file("status"), "Uid:\t0\t0\t0\t0\nCapEff:\t0000004000200000\n");
     },
     "has CAP_PERFMON without it: every event it creates is refused"},
    {"mlock-limit", CheckStatus::kWarning,
     [](CheckTest& t) {
       // No CAP_IPC_LOCK; 2 CPUs x 516 KiB + 64 KiB of RLIMIT_MEMLOCK, and
       // 2 x 129 pages of 4 KiB locked: 1056768 of 1122304 bytes.
       t.dir.write(t.pid_file("status"), "Uid:\t0\t0\t0\t0\nCapEff:\t0000004000200000\n");
       t.dir.write(t.pid_file("limits"),
                   "Max locked memory         65536                65536                bytes\n"
                   "Max open files            1024                 4096                 files\n");
     },
     [](CheckTest& t) {
       t.dir.write(t.pid_file("status"), "Uid:\t0\t0\t0\t0\nCapEff:\t0000004000200000\n");
       t.dir.write("proc/sys/kernel/perf_event_mlock_kb", "8192\n");
     },
     "the buffers lock 1056768 of the 1122304 bytes"},
    {"fd-limit", CheckStatus::kWarning,
     [](CheckTest& t) {
       t.dir.write(t.pid_file("limits"),
                   "Max open files            12                   4096                 files\n");
     },
     [](CheckTest& t) {
       t.dir.write(t.pid_file("limits"),
                   "Max open files            13                   4096                 files\n");
     },
     "holds 10 fds of its limit of 12"},
    {"events-losing", CheckStatus::kWarning,
     [](CheckTest& t) {
       // 512 KiB of 24-byte samples hold 21845; 100000 in 1000 s: 218 s kept.
       t.backend.events[0].attr.attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
       t.backend.events[0].counts = std::vector<persistent::CpuCount>{{0, 10}, {1, 100000}};
     },
     [](CheckTest& t) {
       // The same count over a day: the buffer holds more than an hour.
       t.backend.events[0].attr.attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
       t.backend.events[0].counts = std::vector<persistent::CpuCount>{{0, 10}, {1, 100000}};
       t.backend.events[0].buffer_start = kNow - 86400;
     },
     "on CPU 1: 100000 records in 16 min 40 s, and its buffer holds about 21845, 3 min 38 s "
     "of history at this rate"},
};

TEST_P(CheckCause, Appears) {
  const Cause& cause = GetParam();
  cause.make(*this);
  CheckReport report = run();
  const Finding* f = nullptr;
  for (const Finding& each : report.findings)
    if (each.id == cause.id && each.status != CheckStatus::kOk)
      f = &each;
  ASSERT_NE(f, nullptr) << cause.id << " did not appear:\n" << text_of(report, true);
  EXPECT_EQ(f->status, cause.status) << f->found;
  EXPECT_NE(f->found.find(cause.found), std::string::npos) << f->found;
  EXPECT_FALSE(f->action.empty()) << "a problem says what to do";
  EXPECT_FALSE(f->source.empty());
  EXPECT_EQ(report.status(), cause.status) << text_of(report, true);
  EXPECT_EQ(report.exit_status(), int(cause.status));
  std::string text = text_of(report, false);
  std::string first = text.substr(0, text.find('\n'));
  EXPECT_EQ(
      first.rfind(std::string("PERSISTENT ") + std::string(check_status_name(cause.status)) + " - ",
                  0),
      0u)
      << first;
  EXPECT_NE(first.find(cause.id), std::string::npos) << first;
  EXPECT_NE(text.find("    what to do: " + f->action), std::string::npos) << text;
}

TEST_P(CheckCause, NearMissIsOk) {
  const Cause& cause = GetParam();
  if (cause.near_miss)
    cause.near_miss(*this);
  CheckReport report = run();
  EXPECT_EQ(report.status(), CheckStatus::kOk) << cause.id << ":\n" << text_of(report, true);
  EXPECT_NE(report.find(cause.id), nullptr) << cause.id;
}

INSTANTIATE_TEST_SUITE_P(Each, CheckCause, ::testing::ValuesIn(kCauses),
                         [](const ::testing::TestParamInfo<Cause>& param) {
                           std::string name = param.param.id;
                           for (char& c : name)
                             if (c == '-')
                               c = '_';
                           return name + "_" + std::to_string(param.index);
                         });

TEST_F(CheckTest, BrokerUnreachableIsUnknownNotOk) {
  backend.refuse = true;
  CheckReport report = run();
  EXPECT_EQ(report.find("event-failed")->status, CheckStatus::kUnknown);
  EXPECT_EQ(report.find("no-mce-event")->status, CheckStatus::kUnknown);
  EXPECT_EQ(report.find("events-losing")->status, CheckStatus::kUnknown);
  EXPECT_EQ(report.status(), CheckStatus::kUnknown);
  EXPECT_EQ(report.exit_status(), 3);
}

// A broker that is down holds nothing: its saved events are each critical,
// and no running event holds mce_record, though the registry names one.
TEST_F(CheckTest, BrokerDownListsItsSavedEventsAsDown) {
  backend.down = true;
  CheckReport report = run();
  const auto* failed = report.find("event-failed");
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->status, CheckStatus::kCritical);
  EXPECT_NE(failed->found.find("event 1 'mce_record' (mce:mce_record) is down"), std::string::npos)
      << failed->found;
  EXPECT_EQ(report.find("no-mce-event")->status, CheckStatus::kCritical);
  EXPECT_EQ(report.exit_status(), 2);
}

// A flight recorder wraps by design: a note, and check stays OK; the same
// rate on mce_record is a warning (events-losing's cause above).
TEST_F(CheckTest, AFlightRecorderThatWrapsIsANote) {
  persistent::EventInfo ctxsw = mce_event();
  ctxsw.id = 2;
  ctxsw.name = "ctxsw";
  ctxsw.event = "sched:sched_switch";
  ctxsw.attr.attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
  ctxsw.counts = std::vector<persistent::CpuCount>{{0, 10}, {1, 100000}};
  backend.events.push_back(ctxsw);
  CheckReport report = run();
  std::string text = text_of(report, true);
  EXPECT_EQ(report.exit_status(), 0) << text;
  EXPECT_NE(text.find("OK events-losing: event 2 'ctxsw' (sched:sched_switch) is a flight "
                      "recorder: on CPU 1 its buffer keeps about 3 min 38 s of records"),
            std::string::npos)
      << text;
}

// The states of a correct setup that once warned: a VM without virtual
// machine checks, a host without systemd, rasdaemon and a collector on a
// current kernel are notes (OK), so check exits 0 there.
TEST_F(CheckTest, AVmWithoutSystemdAndWithRasdaemonIsOk) {
  std::filesystem::remove_all(dir.path("sys/kernel/tracing/events/mce"));
  std::filesystem::remove_all(dir.path("run/systemd"));
  std::filesystem::remove_all(dir.path("etc/systemd"));
  dir.write(pid_file("cgroup"), "0::/\n");
  dir.write("proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme hypervisor lahf_lm\n");
  dir.write("proc/812/comm", "rasdaemon\n");
  dir.write("sys/kernel/debug/ras/cec/action_threshold", "1023\n");
  backend.events[0].state = "unavailable";
  CheckReport report = run();
  std::string text = text_of(report, true);
  EXPECT_EQ(report.exit_status(), 0) << text;
  for (const char* id : {"mce-tracepoint-absent", "broker-not-enabled", "broker-not-under-systemd",
                         "other-consumer", "ras-cec-absorbs-corrected"})
    EXPECT_EQ(report.find(id)->status, CheckStatus::kOk) << id << "\n" << text;
  EXPECT_NE(text.find("this is a virtual machine"), std::string::npos) << text;
  EXPECT_NE(text.find("systemd does not run this host"), std::string::npos) << text;
  // Without the hypervisor flag the missing tracepoint is critical again.
  dir.write("proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme lahf_lm\n");
  EXPECT_EQ(run().find("mce-tracepoint-absent")->status, CheckStatus::kCritical);
}

TEST_F(CheckTest, DebugfsNotMountedIsUnknown) {
  std::filesystem::remove_all(dir.path("sys/kernel/debug"));
  dir.mkdir("sys/kernel/debug");
  CheckReport report = run();
  EXPECT_EQ(report.find("ras-cec-absorbs-corrected")->status, CheckStatus::kUnknown);
  EXPECT_EQ(report.exit_status(), 3);
}

TEST_F(CheckTest, KernelBackendNeedsNoBroker) {
  std::filesystem::remove_all(dir.path(pid_file("")));
  dir.write("sys/bus/event_source/devices/persistent/type", "6\n");
  std::filesystem::remove(
      dir.path("etc/systemd/system/multi-user.target.wants/perf-persistent.service"));
  CheckReport report = run();
  EXPECT_EQ(report.status(), CheckStatus::kOk) << text_of(report, true);
  EXPECT_NE(report.find("broker-not-running")->found.find("the kernel holds"), std::string::npos);
}

// The worst wins, and UNKNOWN ranks between OK and WARNING: a check that
// could not tell neither hides a problem nor passes for OK.
TEST(CheckStatus, WorstWinsWithUnknownBelowWarning) {
  auto status_of = [](std::vector<CheckStatus> statuses) {
    CheckReport r;
    for (CheckStatus s : statuses)
      r.findings.push_back({"x", s, "", "", ""});
    return r.status();
  };
  EXPECT_EQ(status_of({}), CheckStatus::kOk);
  EXPECT_EQ(status_of({CheckStatus::kOk, CheckStatus::kUnknown}), CheckStatus::kUnknown);
  EXPECT_EQ(status_of({CheckStatus::kUnknown, CheckStatus::kWarning}), CheckStatus::kWarning);
  EXPECT_EQ(status_of({CheckStatus::kCritical, CheckStatus::kUnknown, CheckStatus::kWarning}),
            CheckStatus::kCritical);
  EXPECT_EQ(int(CheckStatus::kOk), 0);
  EXPECT_EQ(int(CheckStatus::kWarning), 1);
  EXPECT_EQ(int(CheckStatus::kCritical), 2);
  EXPECT_EQ(int(CheckStatus::kUnknown), 3);
  EXPECT_EQ(check_status_name(CheckStatus::kCritical), "CRITICAL");
}

TEST_F(CheckTest, TwoProblemsAreCountedAndNamed) {
  dir.write("proc/cmdline", "mce=off\n");
  backend.events.clear();
  CheckReport report = run();
  std::string text = text_of(report, false);
  EXPECT_EQ(text.rfind("PERSISTENT CRITICAL - 2 problems: no-mce-event, mce-cmdline | critical=2 "
                       "warning=0 unknown=0 acknowledged=0 events=0 errors=U\n",
                       0),
            0u)
      << text;
}

TEST_F(CheckTest, JsonHasEveryFindingInItsShape) {
  dir.write("sys/kernel/debug/ras/cec/pfns", "0\n");
  dir.write("proc/sys/kernel/osrelease", "4.19.0\n");
  ordered_json doc = check_json(run());
  EXPECT_EQ(doc["status"], "WARNING");
  EXPECT_EQ(doc["exit_status"], 1);
  EXPECT_EQ(doc["summary"], "1 problem: ras-cec-absorbs-corrected");
  EXPECT_EQ(doc["events"], 1);
  ASSERT_TRUE(doc["findings"].is_array());
  EXPECT_EQ(doc["findings"].size(), std::size(kIds));
  for (const auto& f : doc["findings"]) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : f.items()) {
      keys.push_back(k);
      EXPECT_TRUE(k == "acknowledged" ? v.is_boolean() : v.is_string()) << k;
    }
    EXPECT_EQ(keys, (std::vector<std::string>{"id", "status", "found", "source", "action",
                                              "acknowledged"}));
  }
  auto keys = std::vector<std::string>{};
  for (const auto& [k, v] : doc.items())
    keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"status", "exit_status", "summary", "events", "errors",
                                            "findings"}));
  EXPECT_TRUE(doc["errors"].is_null()) << "no history to count";
}

// --ignore acknowledges a known condition: OK, marked, counted in the
// performance data; a typo of an id is refused, never taken as acknowledged.
TEST_F(CheckTest, IgnoreAcknowledgesAKnownProblemAndRefusesAnUnknownId) {
  dir.write("sys/kernel/debug/ras/cec/pfns", "0\n");
  dir.write("proc/sys/kernel/osrelease", "4.19.0\n");
  CheckReport report = run();
  ASSERT_EQ(report.exit_status(), 1);
  ASSERT_TRUE(acknowledge(report, {"ras-cec-absorbs-corrected", "fd-limit"}).ok());
  EXPECT_EQ(report.exit_status(), 0);
  const Finding* f = report.find("ras-cec-absorbs-corrected");
  EXPECT_TRUE(f->acknowledged);
  EXPECT_EQ(f->found.rfind("acknowledged (was WARNING): ", 0), 0u) << f->found;
  EXPECT_FALSE(report.find("fd-limit")->acknowledged);  // it was OK: nothing to acknowledge
  std::string text = text_of(report, false);
  EXPECT_NE(text.find("critical=0 warning=0 unknown=0 acknowledged=1 events=1 errors=U\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(check_json(report)["findings"][size_t(f - report.findings.data())]["acknowledged"],
            true);
  Status typo = acknowledge(report, {"ras-cec"});
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.error().kind(), ErrorKind::kUsage);
  EXPECT_NE(typo.error().message().find("--ignore ras-cec: no check has that id"),
            std::string::npos)
      << typo.error().message();
}

// watch's liveness, from the facts cmd/check reads (watch/liveness.h).
class WatchLivenessTest : public CheckTest {
 public:
  WatchLivenessTest() {
    WatchFacts& w = watch;
    w.config = "/etc/perf-persistent-watch.conf";
    w.db = "/var/lib/perf-persistent/history.db";
    w.db_exists = true;
    w.heartbeat_table = true;
    w.heartbeat = true;
    w.pid = 777;
    w.interval_s = 60;
    w.started_ns = ns(kNow - 86400);
    w.beat_ns = ns(kNow - 30);
    w.machine_checks = 3;
    w.prometheus = "/var/lib/prometheus/node-exporter/perf-persistent.prom";
    w.prometheus_interval_ms = 15000;
    w.prometheus_mtime_ns = ns(kNow - 10);
    w.watch_up = true;
  }
  static uint64_t ns(int64_t s) { return uint64_t(s) * 1000000000ull; }
  CheckReport run_with_watch() {
    CheckInputs in = check_inputs_under(dir.path());
    in.run_dir = dir.path("run");
    in.backend = &backend;
    in.now = kNow;
    in.watch = watch;
    return run_checks(in);
  }
  static Finding one(const CheckReport& report, std::string_view id) {
    const Finding* f = report.find(id);
    return f ? *f : Finding{};
  }
  WatchFacts watch;
};

TEST_F(WatchLivenessTest, ABeatingWatchAndAFreshFileAreOkAndTheErrorsArePerfData) {
  CheckReport report = run_with_watch();
  EXPECT_EQ(report.status(), CheckStatus::kOk) << text_of(report, true);
  EXPECT_NE(one(report, "watch-not-alive").found.find("watch (pid 777, started "),
            std::string::npos)
      << one(report, "watch-not-alive").found;
  std::string text = text_of(report, false);
  EXPECT_NE(text.find(" events=1 errors=3c\n"), std::string::npos) << text;
  EXPECT_EQ(check_json(report)["errors"], 3);
}

TEST_F(WatchLivenessTest, AHeartbeatOlderThanThreeIntervalsIsAWarning) {
  watch.beat_ns = ns(kNow - 181);
  CheckReport report = run_with_watch();
  Finding f = one(report, "watch-not-alive");
  EXPECT_EQ(f.status, CheckStatus::kWarning) << f.found;
  EXPECT_NE(f.found.find("beat last 3 min 1 s ago"), std::string::npos) << f.found;
  EXPECT_NE(f.action.find("systemctl status perf-persistent-watch"), std::string::npos);
  watch.beat_ns = ns(kNow - 179);  // the near miss
  EXPECT_EQ(one(run_with_watch(), "watch-not-alive").status, CheckStatus::kOk);
}

TEST_F(WatchLivenessTest, AStoppedWatchIsAWarningEvenWithARecentBeat) {
  watch.beat_ns = watch.stopped_ns = ns(kNow - 5);
  Finding f = one(run_with_watch(), "watch-not-alive");
  EXPECT_EQ(f.status, CheckStatus::kWarning);
  EXPECT_NE(f.found.find("stopped 5 s ago"), std::string::npos) << f.found;
}

TEST_F(WatchLivenessTest, AHistoryWithoutHeartbeatOrNeverWrittenIsAWarning) {
  watch.heartbeat = false;
  watch.heartbeat_table = false;
  EXPECT_EQ(one(run_with_watch(), "watch-not-alive").status, CheckStatus::kWarning);
  watch.db_exists = false;
  Finding f = one(run_with_watch(), "watch-not-alive");
  EXPECT_EQ(f.status, CheckStatus::kWarning);
  EXPECT_NE(f.found.find("has never written its history"), std::string::npos) << f.found;
  watch.config.clear();  // no config and no history: watch is not set up here
  EXPECT_EQ(one(run_with_watch(), "watch-not-alive").status, CheckStatus::kOk);
  watch.config = "/etc/perf-persistent-watch.conf";
  watch.db_exists = true;
  watch.db_error = "not a history";
  EXPECT_EQ(one(run_with_watch(), "watch-not-alive").status, CheckStatus::kUnknown);
  watch.db.clear();  // db = none
  EXPECT_EQ(one(run_with_watch(), "watch-not-alive").status, CheckStatus::kOk);
}

TEST_F(WatchLivenessTest, AMetricsFileOlderThanItsIntervalsMissingOrDownIsAWarning) {
  watch.prometheus_mtime_ns = ns(kNow - 61);  // 3 x 15 s, but at least 60 s
  Finding f = one(run_with_watch(), "metrics-stale");
  EXPECT_EQ(f.status, CheckStatus::kWarning) << f.found;
  EXPECT_NE(f.found.find("written last 1 min 1 s ago"), std::string::npos) << f.found;
  watch.prometheus_mtime_ns = ns(kNow - 59);
  EXPECT_EQ(one(run_with_watch(), "metrics-stale").status, CheckStatus::kOk);
  watch.prometheus_interval_ms = 30000;  // 3 x 30 s
  watch.prometheus_mtime_ns = ns(kNow - 91);
  EXPECT_EQ(one(run_with_watch(), "metrics-stale").status, CheckStatus::kWarning);
  watch.prometheus_mtime_ns = ns(kNow - 1);
  watch.watch_up = false;
  EXPECT_NE(one(run_with_watch(), "metrics-stale").found.find("perf_persistent_watch_up 0"),
            std::string::npos);
  watch.prometheus_mtime_ns.reset();
  watch.prometheus_error = "cannot stat x: No such file or directory";
  EXPECT_EQ(one(run_with_watch(), "metrics-stale").status, CheckStatus::kWarning);
  watch.prometheus.clear();
  EXPECT_EQ(one(run_with_watch(), "metrics-stale").status, CheckStatus::kOk);
}

TEST_F(WatchLivenessTest, TheConfigFilesAcknowledgementNamesItsFileOnATypo) {
  watch.beat_ns = ns(kNow - 600);
  CheckReport report = run_with_watch();
  ASSERT_TRUE(acknowledge(report, {"watch-not-alive"}, "/etc/w.conf [check] ignore").ok());
  EXPECT_EQ(report.status(), CheckStatus::kOk);
  Status typo = acknowledge(report, {"watch-dead"}, "/etc/w.conf [check] ignore");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message().find("/etc/w.conf [check] ignore watch-dead: no check"),
            std::string::npos)
      << typo.error().message();
}

TEST(CheckJson, ErrorIsUnknown) {
  ordered_json doc = check_error_json(usage_error("unknown option 'x'"));
  EXPECT_EQ(doc["status"], "UNKNOWN");
  EXPECT_EQ(doc["exit_status"], 3);
  EXPECT_EQ(doc["error"]["kind"], "usage");
  EXPECT_TRUE(doc["findings"].empty());
}

TEST(CheckEstimate, SampleBytesAndTracepointSize) {
  sys::EventAttr attr;
  attr.attr.sample_type = PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
  EXPECT_EQ(estimated_sample_bytes(attr, 0), 24u);
  attr.attr.sample_type |= PERF_SAMPLE_RAW;
  EXPECT_EQ(estimated_sample_bytes(attr, 0), 96u);     // 24 + 4 + 64, rounded up
  EXPECT_EQ(estimated_sample_bytes(attr, 100), 128u);  // 24 + 4 + 100
  EXPECT_EQ(
      tracepoint_raw_bytes("name: x\nID: 5\nformat:\n"
                           "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
                           "\tfield:u64 mcgcap;\toffset:8;\tsize:8;\tsigned:0;\n"
                           "\tfield:u8 bank;\toffset:120;\tsize:1;\tsigned:0;\n"),
      121u);
  EXPECT_EQ(tracepoint_raw_bytes(""), 0u);
}

// The estimate is the record sys/perf_abi_sample lays out (its one table of
// fields), for fields an older, spelled-out list here left out too.
TEST(CheckEstimate, SampleBytesAreTheRecordTheSampleTableLaysOut) {
  struct Case {
    uint64_t sample_type;
    uint64_t expected;  // header + fields, counted by hand
  };
  const Case cases[] = {
      // a lean tracepoint event: 8 + ip 8 + pid/tid 8 + time 8 + raw (4 + 100, to 104)
      {PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW, 136},
      // perf record's: + identifier, cpu/res, period
      {PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
           PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW,
       160},
      // memory sampling: seven u64 fields
      {PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_WEIGHT |
           PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_PHYS_ADDR,
       64},
      // an empty callchain is its nr; cgroup and code page size a u64 each
      {PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CGROUP | PERF_SAMPLE_CODE_PAGE_SIZE,
       40},
  };
  for (const Case& c : cases) {
    sys::EventAttr attr;
    attr.attr.sample_type = c.sample_type;
    EXPECT_EQ(estimated_sample_bytes(attr, 100), c.expected) << std::hex << c.sample_type;

    std::vector<uint8_t> payload(100, 0xa5);
    std::vector<uint8_t> raw = sys::pad_raw(payload);
    sys::Sample sample;
    sample.raw = raw;
    std::vector<uint8_t> record;
    sys::encode_sample(attr.attr, sample, 0, record);
    EXPECT_EQ(estimated_sample_bytes(attr, 100), record.size()) << std::hex << c.sample_type;
    EXPECT_EQ(sys::sample_fields_end(attr.attr, record), record.size())
        << std::hex << c.sample_type;
  }
}

// A field added to the table reaches the estimate with no change here.
TEST(CheckEstimate, EveryFieldOfTheSampleTableCounts) {
  const uint64_t base = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW;
  for (const sys::SampleField& f : sys::sample_fields()) {
    // The read block is left out of the estimate (check/sample_size.h).
    if ((f.bits & base) || f.bits == PERF_SAMPLE_READ)
      continue;
    sys::EventAttr without, with;
    without.attr.sample_type = base;
    with.attr.sample_type = base | f.bits;
    EXPECT_GE(estimated_sample_bytes(with, 40), estimated_sample_bytes(without, 40) + 8) << f.name;
  }
}

}  // namespace
}  // namespace pp::check

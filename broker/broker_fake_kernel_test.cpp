// The broker over the fake kernel (sys/testing/fake_kernel.h): what it opens, maps,
// counts and closes for create, list, open and kill, and what a restart
// re-creates. The clients are BrokerBackends, the broker serves on a thread.
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <gtest/gtest.h>
#include <thread>

#include "broker/broker.h"
#include "broker/testing/broker_thread.h"
#include "persistent/broker_client.h"
#include "persistent/kernel_backend.h"
#include "persistent/testing/test_doubles.h"
#include "persistent/tracking.h"
#include "sys/testing/fake_kernel.h"
#include "sys/tree.h"
#include "tests/support/temp_dir.h"

namespace pp::broker {
namespace {

constexpr uint64_t kGetppid = persistent::testing::kGetppidId;

class BrokerFakeKernelTest : public ::testing::Test {
 protected:
  explicit BrokerFakeKernelTest(const sys::testing::FakeKernelOptions& options = {.cpus = 2}) {
    sysfs_.write("devices/system/cpu/online", "0-1\n");
    kernel_ = std::make_unique<sys::testing::FakeKernel>(options);
    config_.run_dir = tmp_.path("run");
    config_.sysfs_root = sysfs_.path();
    config_.kernel = kernel_.get();
    config_.resolver = &resolver_;
    config_.clock = [this] { return now_.load(); };
  }

  ~BrokerFakeKernelTest() override { stop(); }

  void start() {
    Status started = broker_.start(config_);
    ASSERT_TRUE(started.ok()) << started.error().message();
  }

  void stop() { broker_.stop(); }

  std::unique_ptr<persistent::BrokerBackend> client() {
    persistent::BackendOptions options;
    options.run_dir = config_.run_dir;
    return std::make_unique<persistent::BrokerBackend>(options);
  }

  persistent::EventInfo create(persistent::BrokerBackend& b,
                               const persistent::CreateRequest& request,
                               std::string* note = nullptr) {
    auto created = b.create(request, note);
    EXPECT_TRUE(created.ok()) << created.error().message();
    return created.ok() ? *created : persistent::EventInfo{};
  }

  // The events, without the context streams (persistent/tracking.h).
  std::vector<persistent::EventInfo> list(bool verbose = false) {
    std::vector<persistent::EventInfo> events = list_all(verbose);
    std::erase_if(events, [](const persistent::EventInfo& e) { return e.is_context; });
    return events;
  }

  std::vector<persistent::EventInfo> list_all(bool verbose = false) {
    auto events = client()->list(verbose, nullptr);
    EXPECT_TRUE(events.ok()) << events.error().message();
    return events.ok() ? *events : std::vector<persistent::EventInfo>{};
  }

  // The broker's own /proc for the fd checks: `open` fds under self/fd and
  // the open-files limits in self/limits; <proc>/<pid>/status, the client's
  // credentials, copied from the real one.
  void fake_proc(int open, int soft, int hard) {
    auto status = sys::Tree("/proc").read("self/status");
    ASSERT_TRUE(status.ok());
    proc_.write(std::to_string(::getpid()) + "/status", *status);
    proc_.write("self/limits",
                "Limit                     Soft Limit           Hard Limit           Units\n"
                "Max open files            " +
                    std::to_string(soft) + "                   " + std::to_string(hard) +
                    "                   files\n");
    for (int i = 0; i < open; i++)
      proc_.write("self/fd/" + std::to_string(i), "");
    config_.proc_root = proc_.path();
  }

  ::pp::testing::TempDir tmp_, sysfs_, proc_;
  std::unique_ptr<sys::testing::FakeKernel> kernel_;
  persistent::testing::TestResolver resolver_;
  BrokerConfig config_;
  std::atomic<int64_t> now_{1700000000};
  testing::BrokerThread broker_;
};

const persistent::CreateRequest kGetppidRequest = {"syscalls:sys_enter_getppid", "", 0, "", ""};

TEST_F(BrokerFakeKernelTest, CreateOpensMapsAndPublishes) {
  start();
  auto b = client();
  persistent::EventInfo e = create(*b, kGetppidRequest);
  EXPECT_EQ(e.id, 1u);
  EXPECT_EQ(e.name, "sys_enter_getppid");
  EXPECT_EQ(e.backend, "broker");
  EXPECT_EQ(e.layout, persistent::Layout::kBackward);
  EXPECT_EQ(e.cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(e.pages, persistent::kDefaultPages);
  EXPECT_EQ(e.created, 1700000000);
  EXPECT_FALSE(e.restarted());
  EXPECT_EQ(e.attr.attr.write_backward, 1u);
  // Its two CPUs, and the two of its context stream.
  EXPECT_EQ(kernel_->open_fds(), 4u);
  EXPECT_EQ(kernel_->mappings(), 4u);
  sys::Tree run(config_.run_dir);
  EXPECT_EQ(*run.read("devices/persistent/events/sys_enter_getppid"), "persistent,config=1\n");
  EXPECT_NE(run.read("state.json")->find("\"name\": \"sys_enter_getppid\""), std::string::npos);
}

// STYLE.md 11: exactly what reaches the kernel for `create -e
// syscalls:sys_enter_getppid`: perf record's sampling attr, lean (IP|TID|TIME|RAW:
// readers supply IP, CPU, PERIOD, IDENTIFIER; persistent/sample_layout.h), with
// write_backward and the default clock (CLOCK_MONOTONIC), per CPU, each
// buffer mapped read-only (1 + 128 pages); then its context stream: perf
// record's tracking event (comm, task, no mmap for a tracepoint) on the same
// clock, per CPU, 1 + 32 pages. Readers of both are woken at a quarter of
// the buffer (wakeup_watermark). After each, PERF_EVENT_IOC_ID of every
// CPU's fd: the perf ids the registry saves, by which a restarted broker
// knows the fds handed back to it.
TEST_F(BrokerFakeKernelTest, CreateCallsGolden) {
  start();
  create(*client(), kGetppidRequest);
  std::string attr =
      "{type=tracepoint, config=0x13c, sample_period=1, "
      "sample_type=IP|TID|TIME|RAW, read_format=TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|LOST, "
      "flags=watermark|sample_id_all|use_clockid|write_backward, wakeup_watermark=" +
      std::to_string(32 * sys::page_size()) + ", clockid=1}";
  std::string pass_all = "PERF_EVENT_IOC_SET_FILTER, \"common_pid != -1\") = 0\n";
  std::string context =
      "{type=software, config=0x9, sample_period=1, sample_type=TID|TIME|CPU|IDENTIFIER, "
      "read_format=TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|LOST, "
      "flags=comm|task|watermark|sample_id_all|exclude_guest|comm_exec|use_clockid|"
      "write_backward, wakeup_watermark=" +
      std::to_string(8 * sys::page_size()) + ", clockid=1}";
  std::string length = std::to_string(129 * sys::page_size());
  std::string context_length = std::to_string(33 * sys::page_size());
  EXPECT_EQ(kernel_->render_calls(),
            "perf_event_open(" + attr + ", pid=-1, cpu=0, group_fd=-1, flags=0) = fd#1\n" +
                "ioctl(fd#1, " + pass_all + "mmap(fd#1, " + length + ", PROT_READ) = map#1\n" +
                "perf_event_open(" + attr + ", pid=-1, cpu=1, group_fd=-1, flags=0) = fd#2\n" +
                "ioctl(fd#2, " + pass_all + "mmap(fd#2, " + length + ", PROT_READ) = map#2\n" +
                "ioctl(fd#1, PERF_EVENT_IOC_ID, &id) = 0 (id 1)\n" +
                "ioctl(fd#2, PERF_EVENT_IOC_ID, &id) = 0 (id 2)\n" + "perf_event_open(" + context +
                ", pid=-1, cpu=0, group_fd=-1, flags=0) = fd#3\n" + "mmap(fd#3, " + context_length +
                ", PROT_READ) = map#3\n" + "perf_event_open(" + context +
                ", pid=-1, cpu=1, group_fd=-1, flags=0) = fd#4\n" + "mmap(fd#4, " + context_length +
                ", PROT_READ) = map#4\n" + "ioctl(fd#3, PERF_EVENT_IOC_ID, &id) = 0 (id 3)\n" +
                "ioctl(fd#4, PERF_EVENT_IOC_ID, &id) = 0 (id 4)\n");
}

// --no-context: the event alone reaches the kernel.
TEST_F(BrokerFakeKernelTest, NoContextOpensTheEventOnly) {
  start();
  persistent::CreateRequest request = kGetppidRequest;
  request.context = false;
  persistent::EventInfo e = create(*client(), request);
  EXPECT_EQ(e.context, 0u);
  EXPECT_EQ(kernel_->open_fds(), 2u);
  EXPECT_EQ(list_all().size(), 1u);
}

// One stream per kind serves every event of that kind; it goes with the last;
// it cannot be killed by itself; `kill --all` leaves nothing behind.
TEST_F(BrokerFakeKernelTest, ContextStreamsAreSharedAndGoWithTheirLastEvent) {
  start();
  auto b = client();
  persistent::EventInfo a = create(*b, {"syscalls:sys_enter_getppid", "a", 0, "", ""});
  persistent::EventInfo c = create(*b, {"syscalls:sys_enter_getppid", "c", 0, "0", ""});
  persistent::EventInfo ip = create(*b, {"cpu-clock", "ip", 0, "", ""});
  ASSERT_NE(a.context, 0u);
  EXPECT_EQ(a.context, c.context) << "the tracepoints share one stream";
  EXPECT_EQ(a.context, persistent::kFirstContextId);
  EXPECT_NE(ip.context, a.context) << "an IP event needs MMAP records";
  EXPECT_EQ(ip.id, 3u) << "streams take no event id";
  std::vector<persistent::EventInfo> all = list_all();
  ASSERT_EQ(all.size(), 5u);
  const persistent::EventInfo& stream = all[3];
  EXPECT_TRUE(stream.is_context);
  EXPECT_EQ(stream.name, "[context]");
  EXPECT_EQ(stream.pages, persistent::kContextPages);
  EXPECT_EQ(stream.cpus, (std::vector<int>{0, 1})) << "every online CPU, whatever -C said";
  EXPECT_EQ(stream.attr.attr.mmap, 0u);
  EXPECT_EQ(all[4].name, "[context-mmap]");
  EXPECT_EQ(all[4].attr.attr.mmap, 1u);
  EXPECT_FALSE(sys::Tree(config_.run_dir).exists("devices/persistent/events/[context]"));

  auto refused = b->kill("[context]");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind(), ErrorKind::kUsage);
  EXPECT_NE(refused.error().message().find("context stream of a, c"), std::string::npos)
      << refused.error().message();

  ASSERT_TRUE(b->kill("a").ok());
  EXPECT_EQ(list_all().size(), 4u) << "c still uses it";
  ASSERT_TRUE(b->kill("c").ok());
  all = list_all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].name, "[context-mmap]");
  auto report = persistent::kill_events(*b, {}, true);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->failed.empty());
  EXPECT_TRUE(list_all().empty());
  EXPECT_EQ(kernel_->open_fds(), 0u);
}

// A restart re-creates the stream with its id, and the event still names it.
TEST_F(BrokerFakeKernelTest, ContextStreamSurvivesARestart) {
  start();
  persistent::EventInfo a = create(*client(), kGetppidRequest);
  stop();
  now_ += 60;
  start();
  std::vector<persistent::EventInfo> all = list_all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].context, a.context);
  EXPECT_EQ(all[1].id, a.context);
  EXPECT_TRUE(all[1].is_context);
  EXPECT_EQ(all[1].state, "running");
  EXPECT_EQ(all[1].buffer_start, now_.load());
  EXPECT_EQ(kernel_->open_fds(), 4u);
  EXPECT_NE(broker_->start_summary().find("1 event restored"), std::string::npos)
      << broker_->start_summary();
}

TEST_F(BrokerFakeKernelTest, OtherEventsSampleByFrequencyWithAFilterAndFewerPages) {
  start();
  persistent::EventInfo e = create(*client(), {"cpu-clock", "", 8, "1", ""});
  EXPECT_EQ(e.name, "1") << "not a tracepoint: named after its id";
  EXPECT_EQ(e.cpus, std::vector<int>{1});
  EXPECT_EQ(e.attr.attr.freq, 1u);
  EXPECT_EQ(e.attr.attr.sample_freq, 4000u);
  EXPECT_NE(kernel_->render_calls().find("mmap(fd#1, " + std::to_string(9 * sys::page_size())),
            std::string::npos)
      << kernel_->render_calls();
  kernel_->clear_calls();
  create(*client(), {"syscalls:sys_enter_getppid", "f", 0, "0", "common_pid != 0"});
  EXPECT_NE(kernel_->render_calls().find("PERF_EVENT_IOC_SET_FILTER, \"common_pid != 0\""),
            std::string::npos)
      << kernel_->render_calls();
}

TEST_F(BrokerFakeKernelTest, VerboseListCountsEachCpu) {
  start();
  create(*client(), kGetppidRequest);
  for (int i = 0; i < 7; i++)
    kernel_->emit(0, {PERF_TYPE_TRACEPOINT, kGetppid});
  kernel_->emit(1, {PERF_TYPE_TRACEPOINT, kGetppid});
  auto events = list(true);
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].counts.has_value());
  ASSERT_EQ(events[0].counts->size(), 2u);
  EXPECT_EQ((*events[0].counts)[0].count, 7u);
  EXPECT_EQ((*events[0].counts)[1].count, 1u);
  EXPECT_EQ(events[0].readers, 0);
  EXPECT_FALSE(list(false)[0].counts.has_value());
}

TEST_F(BrokerFakeKernelTest, KillClosesEverythingAndUnpublishes) {
  start();
  auto b = client();
  create(*b, kGetppidRequest);
  auto killed = b->kill("sys_enter_getppid");
  ASSERT_TRUE(killed.ok()) << killed.error().message();
  EXPECT_EQ(killed->id, 1u);
  EXPECT_EQ(kernel_->open_fds(), 0u);
  EXPECT_EQ(kernel_->mappings(), 0u);
  EXPECT_EQ(kernel_->live_events(), 0u);
  EXPECT_TRUE(list().empty());
  sys::Tree run(config_.run_dir);
  EXPECT_TRUE(run.list("devices/persistent/events")->empty());
  EXPECT_EQ(run.read("state.json")->find("sys_enter_getppid"), std::string::npos);
  persistent::EventInfo again = create(*b, kGetppidRequest);
  EXPECT_EQ(again.id, 2u) << "ids are not reused";
}

// Whether this process holds `path` open (its /proc/self/fd links).
bool holds_open(const std::string& path) {
  auto fds = sys::Tree("/proc").list("self/fd");
  if (!fds.ok())
    return false;
  for (const std::string& fd : *fds) {
    char target[4096];
    ssize_t n = ::readlink(("/proc/self/fd/" + fd).c_str(), target, sizeof(target));
    if (n > 0 && std::string(target, size_t(n)) == path)
      return true;
  }
  return false;
}

// The kernel emits ras:extlog_mem_event only while ras/daemon_active is
// held open: the broker holds it exactly while an event keeps the
// tracepoint (two here: it stays held until the last is killed), and
// never for another event.
TEST_F(BrokerFakeKernelTest, HoldsDaemonActiveWhileAnEventKeepsExtlog) {
  sysfs_.write("kernel/debug/ras/daemon_active", "0\n");
  std::string gate = sysfs_.path() + "/kernel/debug/ras/daemon_active";
  start();
  auto b = client();
  create(*b, kGetppidRequest);
  EXPECT_FALSE(holds_open(gate)) << "no event keeps extlog";
  create(*b, {"ras:extlog_mem_event", "extlog", 0, "", ""});
  EXPECT_TRUE(holds_open(gate));
  create(*b, {"ras:extlog_mem_event", "extlog2", 0, "", ""});
  ASSERT_TRUE(b->kill("extlog").ok());
  EXPECT_TRUE(holds_open(gate)) << "extlog2 still keeps it";
  ASSERT_TRUE(b->kill("extlog2").ok());
  EXPECT_FALSE(holds_open(gate));
  create(*b, {"ras:extlog_mem_events_of_another_name", "other", 0, "", ""});
  EXPECT_FALSE(holds_open(gate)) << "only that tracepoint";
}

// Without debugfs the event is still made; only the gate is missing, and
// the broker's log says why.
TEST_F(BrokerFakeKernelTest, ExtlogWithoutDebugfsStillCreates) {
  start();
  auto b = client();
  persistent::EventInfo e = create(*b, {"ras:extlog_mem_event", "extlog", 0, "", ""});
  EXPECT_EQ(e.state, "running");
}

TEST_F(BrokerFakeKernelTest, OpenHandsAnFdAndCountsTheReader) {
  start();
  persistent::EventInfo e = create(*client(), kGetppidRequest);
  {
    auto reader = client();
    auto buffer = reader->open(e.id, 1);
    ASSERT_TRUE(buffer.ok()) << buffer.error().message();
    EXPECT_TRUE(buffer->fd.valid());
    EXPECT_EQ(buffer->cpu, 1);
    EXPECT_EQ(buffer->layout, persistent::Layout::kBackward);
    EXPECT_EQ(buffer->mmap_length, 129 * sys::page_size());
    auto second = reader->open(e.id, 0);
    ASSERT_TRUE(second.ok());
    EXPECT_EQ(list(true)[0].readers, 1) << "one connection, one reader";
    auto missing = reader->open(e.id, 5);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.error().code(), ENOENT);
    EXPECT_NE(missing.error().message().find("no buffer on CPU 5 (its CPUs: 0-1)"),
              std::string::npos);
  }
  int readers = -1;
  for (int i = 0; i < 200 && readers != 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    readers = list(true)[0].readers.value_or(-1);
  }
  EXPECT_EQ(readers, 0) << "a reader that hung up is no longer counted";
}

// What poll(2) says of `fd` at once: 0, POLLHUP...
short poll_now(int fd) {
  pollfd p = {fd, POLLIN, 0};
  return ::poll(&p, 1, 0) < 0 ? short(-1) : p.revents;
}

// A reader's fd keeps the kernel event after a kill, so the broker passes
// a hangup pipe beside it: quiet while the event lives, POLLHUP once it is
// killed. One pipe per event, whichever CPU or reader opened it; the
// keeper and a client that asks with "hangup" alone get none (such a
// client takes exactly one fd for a perf event).
TEST_F(BrokerFakeKernelTest, AReaderIsToldByItsHangupPipeThatTheEventWasKilled) {
  start();
  persistent::EventInfo e = create(*client(), kGetppidRequest);
  auto reader = client(), other = client();
  auto cpu0 = reader->open(e.id, 0);
  auto cpu1 = other->open(e.id, 1);
  ASSERT_TRUE(cpu0.ok()) << cpu0.error().message();
  ASSERT_TRUE(cpu1.ok()) << cpu1.error().message();
  ASSERT_TRUE(cpu0->hangup.valid());
  ASSERT_TRUE(cpu1->hangup.valid());
  EXPECT_TRUE(cpu0->pollable);
  struct stat a {
  }, b{};
  ASSERT_EQ(::fstat(cpu0->hangup.get(), &a), 0);
  ASSERT_EQ(::fstat(cpu1->hangup.get(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino) << "one pipe per event, not per open";
  EXPECT_EQ(poll_now(cpu0->hangup.get()), 0) << "the event lives";

  persistent::BackendOptions options;
  options.run_dir = config_.run_dir;
  options.keep = true;
  persistent::BrokerBackend keeper(options);
  auto kept = keeper.open(e.id, 0);
  ASSERT_TRUE(kept.ok()) << kept.error().message();
  EXPECT_FALSE(kept->hangup.valid()) << "the keeper reads nothing and gets no pipe";

  // A client from before "hangup_perf": one fd, as it always took.
  auto older = persistent::BrokerConnection::connect(persistent::RunDir(config_.run_dir));
  ASSERT_TRUE(older.ok()) << older.error().message();
  persistent::Request open;
  open.op = persistent::Op::kOpen;
  open.id = e.id;
  open.hangup = true;
  std::vector<sys::Fd> fds;
  auto reply = older->call(open, &fds);
  ASSERT_TRUE(reply.ok()) << reply.error().message();
  EXPECT_EQ(fds.size(), 1u);
  EXPECT_FALSE(reply->contains("hangup")) << reply->dump();

  ASSERT_TRUE(client()->kill(std::to_string(e.id)).ok());
  EXPECT_TRUE(poll_now(cpu0->hangup.get()) & POLLHUP);
  EXPECT_TRUE(poll_now(cpu1->hangup.get()) & POLLHUP);
}

// The guard (persistent/guard.h) reads an event's count only once one of
// its fds left the broker: an event nobody opened cannot be changed, and a
// broker with no reader wakes up for nothing. fd#1 and fd#2 are the event's
// CPUs 0 and 1 (CreateCallsGolden), fd#3 and fd#4 its context stream's.
TEST_F(BrokerFakeKernelTest, GuardReadsNothingNobodyWasHanded) {
  config_.guard_interval_ms = 5;
  config_.guard_max_interval_ms = 5;
  start();
  auto b = client();
  create(*b, kGetppidRequest);
  // Each request is a pass of the loop, which runs every check that is due.
  for (int i = 0; i < 20; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    (void)list();
  }
  for (int handle = 1; handle <= 4; handle++)
    EXPECT_EQ(kernel_->reads(handle), 0u) << "fd#" << handle << " was read";
}

TEST_F(BrokerFakeKernelTest, GuardChecksTheHandedOutCpuOnly) {
  config_.guard_interval_ms = 5;
  config_.guard_max_interval_ms = 5;
  start();
  persistent::EventInfo e = create(*client(), kGetppidRequest);
  auto reader = client();
  auto buffer = reader->open(e.id, 1);
  ASSERT_TRUE(buffer.ok()) << buffer.error().message();
  for (int i = 0; i < 400 && kernel_->reads(2) < 5; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(kernel_->reads(2), 5u) << "CPU 1's fd was handed out: checked every 5 ms";
  EXPECT_EQ(kernel_->reads(1), 0u) << "CPU 0's fd never left the broker";
  EXPECT_EQ(kernel_->reads(3) + kernel_->reads(4), 0u) << "nor did the context stream's";
}

// "keep": true is any perfmon client's to claim, and the keeper's fd is an
// O_RDWR fd like a reader's: its opens are guarded from the moment the fd
// leaves, and a finding names it as the keeper.
TEST_F(BrokerFakeKernelTest, TheKeepersOpensAreGuardedToo) {
  config_.guard_interval_ms = 5;
  config_.guard_max_interval_ms = 5;
  start();
  persistent::EventInfo e = create(*client(), kGetppidRequest);
  persistent::BackendOptions options;
  options.run_dir = config_.run_dir;
  options.keep = true;
  persistent::BrokerBackend keeper(options);
  size_t before = kernel_->reads(1);
  auto fd = keeper.open(e.id, 0);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  for (int i = 0; i < 400 && kernel_->reads(1) < before + 5; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(kernel_->reads(1), before + 5) << "CPU 0's fd went to the keeper: checked every 5 ms";
  // As the keeper could through its fd (the same event: the fake knows it
  // by the broker's fd number).
  ASSERT_TRUE(sys::disable_event(*kernel_, kernel_->fd_of(1)).ok());
  std::vector<persistent::EventInfo> listed;
  for (int i = 0; i < 400; i++) {
    listed = list();
    if (!listed.empty() && !listed[0].tampered.empty())
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(listed.empty());
  ASSERT_FALSE(listed[0].tampered.empty()) << "the keeper's disable was found";
  EXPECT_NE(listed[0].tampered[0].what.find("re-enabled"), std::string::npos)
      << listed[0].tampered[0].what;
  EXPECT_NE(listed[0].tampered[0].holders.find("the keeper"), std::string::npos)
      << listed[0].tampered[0].holders;
}

// Checks that find nothing come ever less often (10 ms doubling to 80 ms
// here); a finding brings them back to the shortest interval. Counted in
// reads of CPU 0's fd, which only the guard makes.
TEST_F(BrokerFakeKernelTest, GuardBacksOffAndTightensAfterAFinding) {
  // Bounds far apart (10 ms and 400 ms), so that what is asserted holds on
  // a loaded machine: delays only make checks rarer, never more frequent.
  config_.guard_interval_ms = 10;
  config_.guard_max_interval_ms = 400;
  start();
  persistent::EventInfo e = create(*client(), kGetppidRequest);
  auto reader = client();
  auto buffer = reader->open(e.id, 0);
  ASSERT_TRUE(buffer.ok()) << buffer.error().message();
  size_t at_open = kernel_->reads(1);
  EXPECT_GE(at_open, 1u) << "the baseline is taken at the hand-out";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  size_t checks = kernel_->reads(1) - at_open;
  // 10, 20, 40, 80, 160 ms apart: about 5 in 0.5 s (50 at 10 ms).
  EXPECT_GE(checks, 3u);
  EXPECT_LE(checks, 12u) << "no back-off";
  // Another holder of the same open file disables the event.
  ASSERT_TRUE(kernel_->ioctl(kernel_->fd_of(1), PERF_EVENT_IOC_DISABLE, 0).ok());
  uint64_t tampered = 0;
  for (int i = 0; i < 300 && tampered == 0; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto events = list();
    tampered = events.empty() ? 0 : events[0].tamper_count;
  }
  ASSERT_EQ(tampered, 1u) << "the disable was not found within 1.5 s";
  // Back to 10 ms: two more checks come 10 and 30 ms after the finding;
  // still backed off, they would take 400 ms at least.
  size_t after_finding = kernel_->reads(1);
  auto found = std::chrono::steady_clock::now();
  while (kernel_->reads(1) - after_finding < 2 &&
         std::chrono::steady_clock::now() - found < std::chrono::seconds(2))
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto took = std::chrono::steady_clock::now() - found;
  EXPECT_LT(took, std::chrono::milliseconds(300)) << "not back to the shortest interval";
}

// A create that would run the broker out of fds midway is refused before
// anything is opened, with the figures and what to raise; the fds of the
// connections it may still accept count (3 at most, 1 open: 2 more). The
// fds and the limit come from a fake <proc>/self: 43 open of 64, then 42.
TEST_F(BrokerFakeKernelTest, CreatePastTheFdLimitIsRefusedBeforeOpening) {
  ASSERT_NO_FATAL_FAILURE(fake_proc(43, 64, 64));
  config_.max_clients = 3;
  start();
  kernel_->clear_calls();
  auto refused = client()->create(kGetppidRequest, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), EMFILE);
  const std::string& message = refused.error().message();
  for (const char* part :
       {"cannot create 'sys_enter_getppid': it needs 2 file descriptors (one per CPU, 2 CPUs) and "
        "2 for its context stream",
        "the broker holds 43 fds of its limit of 64 (RLIMIT_NOFILE, hard limit 64) for 0 events",
        "keeping 16 free for clients and its own files and 2 for the connections it may still "
        "accept",
        "ulimit -n 1024", "perf persistent kill"})
    EXPECT_NE(message.find(part), std::string::npos) << part << "\n" << message;
  EXPECT_EQ(kernel_->render_calls(), "") << "nothing is opened";
  EXPECT_TRUE(list_all().empty());
  // 42 open: 2 + 2 + 16 + 2 more fit under 64.
  ASSERT_EQ(::unlink(proc_.path("self/fd/42").c_str()), 0);
  EXPECT_EQ(create(*client(), kGetppidRequest).id, 1u);
}

// Readers fill the broker up to max_clients less reserved_clients; the
// rest stay for clients that hold no buffer, so a list still gets in when
// every other connection reads, and a refused reader is told which bound.
TEST_F(BrokerFakeKernelTest, ReadersLeaveRoomForListAndKill) {
  config_.max_clients = 6;
  config_.reserved_clients = 2;
  start();
  persistent::EventInfo e = create(*client(), kGetppidRequest);
  persistent::RunDir dir(config_.run_dir);
  std::vector<persistent::BrokerConnection> readers;
  std::vector<sys::Fd> fds;
  std::string refused;
  for (int i = 0; i < 6; i++) {
    auto connection = persistent::BrokerConnection::connect(dir);
    ASSERT_TRUE(connection.ok()) << connection.error().message();
    persistent::Request open;
    open.op = persistent::Op::kOpen;
    open.id = e.id;
    auto reply = connection->call(open, &fds);
    if (!reply.ok())
      refused = reply.error().message();
    readers.push_back(std::move(*connection));
  }
  EXPECT_EQ(fds.size(), 4u) << "6 connections less 2 kept";
  EXPECT_NE(refused.find("the broker serves 4 connections that read event buffers already, the "
                         "most (6 connections less 2 kept for list, kill and check)"),
            std::string::npos)
      << refused;
  EXPECT_EQ(list().size(), 1u);
  auto killed = client()->kill(std::to_string(e.id));
  EXPECT_TRUE(killed.ok()) << killed.error().message();
}

// The kernel refuses an open for want of fds although the room check let
// the create through: sys::explain says the figures and what to raise, once.
TEST_F(BrokerFakeKernelTest, OutOfFdsAtAnOpenIsExplainedOnce) {
  ASSERT_NO_FATAL_FAILURE(fake_proc(20, 64, 1024));
  config_.max_clients = 4;  // 20 + 4 + 16 + 3 fit under 64
  start();
  kernel_->inject_error(sys::testing::KernelCall::Kind::kOpen, EMFILE);
  auto refused = client()->create(kGetppidRequest, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), EMFILE);
  const std::string& message = refused.error().message();
  EXPECT_NE(message.find("20 open, limit 64 (ulimit -n), hard limit 1024"), std::string::npos)
      << message;
  EXPECT_NE(message.find("try: ulimit -n 1024"), std::string::npos) << message;
  EXPECT_EQ(message.find("try:"), message.rfind("try:")) << "explained twice:\n" << message;
  EXPECT_EQ(message.find("the broker holds"), std::string::npos) << message;
}

TEST_F(BrokerFakeKernelTest, KernelWithoutWriteBackwardGetsForwardBuffersAndANote) {
  kernel_ = std::make_unique<sys::testing::FakeKernel>(
      sys::testing::FakeKernelOptions{.cpus = 2, .write_backward = false});
  config_.kernel = kernel_.get();
  start();
  std::string note;
  persistent::EventInfo e = create(*client(), kGetppidRequest, &note);
  EXPECT_EQ(e.layout, persistent::Layout::kForward);
  EXPECT_EQ(e.attr.attr.write_backward, 0u);
  EXPECT_NE(note.find("refuses write_backward"), std::string::npos) << note;
  auto buffer = client()->open(e.id, 0);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(buffer->layout, persistent::Layout::kForward);
}

TEST_F(BrokerFakeKernelTest, RestartRecreatesTheSameIdsAndNames) {
  start();
  auto b = client();
  create(*b, kGetppidRequest);
  create(*b, {"cpu-clock", "clock", 16, "", ""});
  create(*b, {"syscalls:sys_enter_getppid", "doomed", 0, "0", ""});
  ASSERT_TRUE(b->kill("doomed").ok());
  b.reset();
  stop();
  EXPECT_EQ(kernel_->open_fds(), 0u) << "a stopped broker holds nothing";
  EXPECT_TRUE(sys::Tree(config_.run_dir).list("devices/persistent/events")->empty());

  now_ = 1700000100;
  kernel_->clear_calls();
  start();
  EXPECT_EQ(broker_->start_summary(), "2 events restored");
  auto events = list();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].id, 1u);
  EXPECT_EQ(events[0].name, "sys_enter_getppid");
  EXPECT_EQ(events[1].id, 2u);
  EXPECT_EQ(events[1].name, "clock");
  EXPECT_EQ(events[1].pages, 16u);
  for (const persistent::EventInfo& e : events) {
    EXPECT_EQ(e.created, 1700000000);
    EXPECT_EQ(e.buffer_start, 1700000100);
    EXPECT_TRUE(e.restarted());
  }
  // Two events and two context streams (the tracepoint's, and cpu-clock's
  // with MMAP2), on 2 CPUs each.
  EXPECT_EQ(kernel_->open_fds(), 8u);
  EXPECT_EQ(*sys::Tree(config_.run_dir).list("devices/persistent/events"),
            (std::vector<std::string>{"1", "2", "clock", "sys_enter_getppid"}));
  EXPECT_EQ(create(*client(), {"cpu-clock", "next", 0, "", ""}).id, 4u)
      << "the killed event's id 3 is not reused";
}

TEST_F(BrokerFakeKernelTest, ConfigFileEventsAreCreatedOnce) {
  tmp_.write("pp.conf", "[getppid]\nevent = syscalls:sys_enter_getppid\npages = 4\n");
  config_.config_file = tmp_.path("pp.conf");
  start();
  EXPECT_EQ(broker_->start_summary(), "0 events restored, 1 created from " + tmp_.path("pp.conf"));
  auto events = list();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "getppid");
  EXPECT_EQ(events[0].pages, 4u);
  EXPECT_EQ(events[0].creator_pid, ::getpid());
  stop();
  start();
  EXPECT_EQ(broker_->start_summary(), "1 event restored") << "not created a second time";
  EXPECT_EQ(list().size(), 1u);
}

// One create path (persistent/create.h): an invalid request reads the same,
// code and message, through the broker and through the kernel backend. Only
// -m differs, by design: the seed kernel's buffers have one size.
TEST_F(BrokerFakeKernelTest, InvalidRequestsReadTheSameInBothBackends) {
  start();
  auto broker = client();
  ::pp::testing::TempDir kernel_sysfs, kernel_run, tracefs;
  kernel_sysfs.write("devices/system/cpu/online", "0-1\n");
  sys::testing::FakeKernel seed({.cpus = 2, .sysfs_root = kernel_sysfs.path()});
  persistent::KernelBackend kernel(seed, sys::Tree(kernel_sysfs.path()),
                                   persistent::RunDir(kernel_run.path("run")), &resolver_,
                                   tracefs.path());
  // The same event in each, so that a name is taken in both, by id 1.
  ASSERT_EQ(create(*broker, {"syscalls:sys_enter_getppid", "g", 0, "", ""}).id, 1u);
  auto made = kernel.create({"syscalls:sys_enter_getppid", "g", 0, "", ""}, nullptr);
  ASSERT_TRUE(made.ok()) << made.error().message();
  ASSERT_EQ(made->id, 1u);

  const persistent::CreateRequest cases[] = {
      {"a:b", "bad name", 0, "", ""},
      {"a:b", "12", 0, "", ""},
      {"", "", 0, "", ""},
      {"nocolon", "", 0, "", ""},
      {"a:b", "", 0, "0-7", ""},
      {"a:b", "", 0, "x", ""},
      {"a:b", "g", 0, "", ""},
      {"nocolon", "bad name", 0, "9", ""},
  };
  for (const persistent::CreateRequest& request : cases) {
    auto via_broker = broker->create(request, nullptr);
    auto via_kernel = kernel.create(request, nullptr);
    ASSERT_FALSE(via_broker.ok()) << request.event << " '" << request.name << "'";
    ASSERT_FALSE(via_kernel.ok()) << request.event << " '" << request.name << "'";
    EXPECT_EQ(via_broker.error().code(), via_kernel.error().code()) << via_kernel.error().message();
    EXPECT_EQ(via_broker.error().message(), via_kernel.error().message());
  }

  // A filter the kernel calls invalid is the request's fault in both, and
  // both name the filter.
  kernel_->inject_error(sys::testing::KernelCall::Kind::kIoctl, EINVAL, 1,
                        PERF_EVENT_IOC_SET_FILTER);
  seed.inject_error(sys::testing::KernelCall::Kind::kIoctl, EINVAL, 1, PERF_EVENT_IOC_SET_FILTER);
  persistent::CreateRequest filtered = {"syscalls:sys_enter_getppid", "f", 0, "0",
                                        "common_pid !! 0"};
  auto via_broker = broker->create(filtered, nullptr);
  auto via_kernel = kernel.create(filtered, nullptr);
  ASSERT_FALSE(via_broker.ok());
  ASSERT_FALSE(via_kernel.ok());
  EXPECT_EQ(via_broker.error().code(), EINVAL);
  EXPECT_EQ(via_kernel.error().code(), EINVAL);
  for (const Error& e : {via_broker.error(), via_kernel.error()})
    EXPECT_EQ(e.message().rfind("the filter 'common_pid !! 0' was refused: ", 0), 0u)
        << e.message();
  EXPECT_EQ(via_broker.error().message(), via_kernel.error().message());
}

}  // namespace
}  // namespace pp::broker

namespace pp::broker {
namespace {

// The id counter at its end refuses, rather than wrap to 0 and then to 1,
// the id of an event that still lives.
TEST_F(BrokerFakeKernelTest, IdsNeverWrapOntoALiveId) {
  start();
  auto b = client();
  persistent::EventInfo first = create(*b, kGetppidRequest);
  ASSERT_EQ(first.id, 1u);
  stop();
  persistent::RunDir dir(config_.run_dir);
  auto state = persistent::load_state(dir);
  ASSERT_TRUE(state.ok()) << state.error().message();
  state->next_id = persistent::kMaxEventId;
  ASSERT_TRUE(persistent::save_state(dir, *state).ok());
  start();
  b = client();
  persistent::EventInfo last = create(*b, {"syscalls:sys_enter_getppid", "last", 0, "", ""});
  EXPECT_EQ(last.id, persistent::kMaxEventId);
  auto after = b->create({"syscalls:sys_enter_getppid", "after", 0, "", ""}, nullptr);
  ASSERT_FALSE(after.ok()) << "got id " << after->id;
  EXPECT_EQ(after.error().code(), ENOSPC);
  EXPECT_NE(after.error().message().find("no event ids are left"), std::string::npos)
      << after.error().message();
  std::vector<persistent::EventInfo> events = list();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].id, 1u);
  EXPECT_EQ(events[0].name, "sys_enter_getppid");
}

}  // namespace
}  // namespace pp::broker

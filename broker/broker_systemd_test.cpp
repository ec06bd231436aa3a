// The broker under a service manager, against the fake systemd seam
// (sys/testing/fake_systemd.h) and the fake kernel: readiness, status and
// the watchdog; what goes into the fd store and what comes out of it at a
// restart (by name, in shuffled order, stale and duplicate fds, ids that do
// not match); whether samples survive; reloads of the config file, failed
// and optional events; and who starts a broker where systemd manages one.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <gtest/gtest.h>
#include <sstream>
#include <thread>

#include "base/strings.h"
#include "broker/broker.h"
#include "broker/daemon.h"
#include "broker/fd_store.h"
#include "broker/testing/broker_thread.h"
#include "persistent/broker_client.h"
#include "persistent/event_json.h"
#include "persistent/testing/test_doubles.h"
#include "persistent/tracking.h"
#include "sys/testing/fake_kernel.h"
#include "sys/testing/fake_systemd.h"
#include "sys/tree.h"
#include "tests/support/temp_dir.h"

namespace pp::broker {
namespace {

constexpr uint64_t kGetppid = persistent::testing::kGetppidId;

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

size_t count_prefix(const std::vector<std::string>& v, const std::string& prefix) {
  return size_t(std::count_if(v.begin(), v.end(),
                              [&](const std::string& s) { return s.rfind(prefix, 0) == 0; }));
}

class BrokerSystemdTest : public ::testing::Test {
 protected:
  BrokerSystemdTest()
      : kernel_({.cpus = 2}), systemd_({.duplicate = [this](int fd) {
          return kernel_.is_fake_fd(fd) ? kernel_.duplicate(fd) : sys::duplicate(fd);
        }}) {
    sysfs_.write("devices/system/cpu/online", "0-1\n");
    config_.run_dir = tmp_.path("run");
    config_.sysfs_root = sysfs_.path();
    config_.kernel = &kernel_;
    config_.resolver = &resolver_;
    config_.clock = [this] { return now_.load(); };
    config_.systemd = &systemd_;
  }
  ~BrokerSystemdTest() override { stop(); }

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

  persistent::EventInfo create(persistent::CreateRequest request) {
    auto created = client()->create(request, nullptr);
    EXPECT_TRUE(created.ok()) << created.error().message();
    return created.ok() ? *created : persistent::EventInfo{};
  }

  std::vector<persistent::EventInfo> list(bool verbose = false) {
    auto events = client()->list(verbose, nullptr);
    EXPECT_TRUE(events.ok()) << events.error().message();
    std::vector<persistent::EventInfo> out =
        events.ok() ? *events : std::vector<persistent::EventInfo>{};
    std::erase_if(out, [](const persistent::EventInfo& e) { return e.is_context; });
    return out;
  }

  Result<json> reload() {
    PP_ASSIGN_OR_RETURN(persistent::BrokerConnection connection,
                        persistent::BrokerConnection::connect(persistent::RunDir(config_.run_dir)));
    persistent::Request request;
    request.op = persistent::Op::kReload;
    return connection.call(request);
  }

  size_t opens() const {
    return size_t(std::count_if(kernel_.calls().begin(), kernel_.calls().end(),
                                [](const sys::testing::KernelCall& c) {
                                  return c.kind == sys::testing::KernelCall::Kind::kOpen;
                                }));
  }

  // Holds event `id`'s buffer on `cpu` mapped, as the keeper does.
  sys::Mapping keep(uint64_t id, int cpu, uint64_t pages = persistent::kDefaultPages) {
    auto fd = systemd_.stored_copy(event_fd_name(id, cpu));
    EXPECT_TRUE(fd.ok()) << fd.error().message();
    auto mapping = kernel_.mmap(fd->get(), (1 + pages) * sys::page_size(), PROT_READ);
    EXPECT_TRUE(mapping.ok()) << mapping.error().message();
    kept_fds_.push_back(std::move(*fd));
    return mapping.ok() ? std::move(*mapping) : sys::Mapping();
  }

  ::pp::testing::TempDir tmp_, sysfs_;
  sys::testing::FakeKernel kernel_;
  sys::testing::FakeSystemd systemd_;
  persistent::testing::TestResolver resolver_;
  BrokerConfig config_;
  std::atomic<int64_t> now_{1700000000};
  std::unique_ptr<sys::testing::FakeKernel>
      narrow_;  // a kernel of a test's own; outlives the broker
  testing::BrokerThread broker_;
  std::vector<sys::Fd> kept_fds_;
};

const persistent::CreateRequest kGetppidRequest = {"syscalls:sys_enter_getppid", "", 0, "", ""};

// Type=notify: READY=1 only once the registry is restored and the socket
// listens, a STATUS= line for systemctl status, STOPPING=1 on the way out.
TEST_F(BrokerSystemdTest, ReadyAfterRestoreAndListenThenStopping) {
  start();
  std::vector<std::string> m = systemd_.messages();
  ASSERT_GE(m.size(), 3u);
  EXPECT_EQ(m[0], "STATUS=restoring the registry");
  EXPECT_EQ(m.back(), "READY=1\nSTATUS=serving 0 event(s); 0 events restored");
  EXPECT_TRUE(sys::Tree(config_.run_dir).exists("broker.sock")) << "listening before READY=1";
  EXPECT_TRUE(client()->list(false, nullptr).ok());
  stop();
  EXPECT_EQ(systemd_.messages().back(), "STOPPING=1\nSTATUS=stopping");
}

// WatchdogSec=: a loop with nothing to do still pings at half the interval,
// so an idle broker is never killed by the watchdog.
TEST_F(BrokerSystemdTest, WatchdogPingedFromAnIdleLoop) {
  systemd_.set_watchdog_usec(200'000);  // 200 ms: a ping every 100 ms
  auto broker = Broker::start(config_);
  ASSERT_TRUE(broker.ok()) << broker.error().message();
  int stop[2];
  ASSERT_EQ(::pipe2(stop, O_CLOEXEC), 0);
  // serve_once with no timeout of its own: only the watchdog wakes it.
  auto pass = std::async(std::launch::async, [&] { return (*broker)->serve_once(stop[0], -1); });
  bool woke = pass.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!woke) {
    EXPECT_EQ(::write(stop[1], "x", 1), 1);
  }
  auto result = pass.get();
  EXPECT_TRUE(woke) << "the loop slept past the watchdog interval";
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(*result);
  EXPECT_EQ(systemd_.count("WATCHDOG=1"), 1u);
  for (int i = 0; i < 3; i++)
    ASSERT_TRUE((*broker)->serve_once(stop[0], -1).ok());
  EXPECT_EQ(systemd_.count("WATCHDOG=1"), 4u);
  ::close(stop[0]);
  ::close(stop[1]);
}

// Every per-CPU fd of an event and of its context stream goes into the
// store once, FDPOLL=0 (systemd would close a perf fd within milliseconds
// otherwise), named by id and CPU; the socket too. A kill removes its fds.
TEST_F(BrokerSystemdTest, EachFdStoredOnceByNameAndRemovedWithItsEvent) {
  start();
  persistent::EventInfo e = create(kGetppidRequest);
  std::string ctx = std::to_string(persistent::kFirstContextId);
  std::vector<std::string> names = systemd_.stored_names();
  EXPECT_EQ(names, (std::vector<std::string>{"pp-listener", "pp-event-" + ctx + "-cpu-0",
                                             "pp-event-" + ctx + "-cpu-1", "pp-event-1-cpu-0",
                                             "pp-event-1-cpu-1"}));
  std::vector<std::string> m = systemd_.messages();
  EXPECT_TRUE(contains(m, "FDSTORE=1\nFDPOLL=0\nFDNAME=pp-event-1-cpu-0"));
  EXPECT_EQ(count_prefix(m, "FDSTORE=1"), 5u);
  EXPECT_EQ(systemd_.duplicates_ignored(), 0u) << "nothing is stored twice";
  for (const std::string& name : names)
    EXPECT_TRUE(sys::valid_fd_name(name)) << name;
  // A name says which event and CPU.
  auto parsed = parse_event_fd_name("pp-event-1-cpu-1");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->id, 1u);
  EXPECT_EQ(parsed->cpu, 1);
  EXPECT_FALSE(parse_event_fd_name("pp-event-01-cpu-1"));
  EXPECT_FALSE(parse_event_fd_name("pp-listener"));

  ASSERT_TRUE(client()->kill(std::to_string(e.id)).ok());
  m = systemd_.messages();
  EXPECT_TRUE(contains(m, "FDSTOREREMOVE=1\nFDNAME=pp-event-1-cpu-0"));
  EXPECT_TRUE(contains(m, "FDSTOREREMOVE=1\nFDNAME=pp-event-1-cpu-1"));
  EXPECT_TRUE(contains(m, "FDSTOREREMOVE=1\nFDNAME=pp-event-" + ctx + "-cpu-0"));
  EXPECT_EQ(systemd_.stored_names(), (std::vector<std::string>{"pp-listener"}));
}

// A restart under systemd (restart, crash, SIGKILL with Restart=always):
// the store hands the fds back in another order; the broker picks them by
// name, checks them against the saved perf ids, and adopts the events: no
// perf_event_open, same ids and names, counts going on. With a mapping kept
// meanwhile (the keeper), the samples stay: buffer_start unchanged. Nothing
// is stored again (systemd would ignore the copies as duplicates).
TEST_F(BrokerSystemdTest, RestartAdoptsTheStoredFdsAndKeepsTheSamples) {
  start();
  persistent::EventInfo a = create(kGetppidRequest);
  persistent::EventInfo b = create({"cpu-clock", "clock", 8, "0", ""});
  for (int i = 0; i < 5; i++)
    kernel_.emit(0, {PERF_TYPE_TRACEPOINT, kGetppid}, {.pid = 42});
  sys::Mapping kept0 = keep(a.id, 0), kept1 = keep(a.id, 1), kept_b = keep(b.id, 0, 8);
  stop();
  systemd_.clear_messages();
  kernel_.clear_calls();
  now_ += 60;
  start();
  EXPECT_EQ(opens(), 0u) << kernel_.render_calls();
  std::vector<persistent::EventInfo> events = list(true);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].id, a.id);
  EXPECT_EQ(events[0].name, a.name);
  EXPECT_EQ(events[0].perf_ids.size(), 2u);
  EXPECT_FALSE(events[0].restarted()) << "the samples survived";
  EXPECT_EQ(events[0].buffer_start, a.buffer_start);
  ASSERT_TRUE(events[0].counts);
  EXPECT_EQ((*events[0].counts)[0].count, 5u) << "the same kernel event, still counting";
  EXPECT_EQ(events[1].name, "clock");
  EXPECT_FALSE(events[1].restarted());
  EXPECT_EQ(count_prefix(systemd_.messages(), "FDSTORE=1"), 0u)
      << "adopted fds are in the store already";
  EXPECT_EQ(count_prefix(systemd_.messages(), "FDSTOREREMOVE=1"), 0u);
  EXPECT_NE(broker_->start_summary().find("2 taken back with their fds, 2 with their samples"),
            std::string::npos)
      << broker_->start_summary();
  kernel_.emit(0, {PERF_TYPE_TRACEPOINT, kGetppid}, {.pid = 42});
  EXPECT_EQ((*list(true)[0].counts)[0].count, 6u);
}

// Nothing kept the buffers mapped (no keeper): the events come back, but the
// kernel freed their buffers with the old broker's mapping; list says so.
TEST_F(BrokerSystemdTest, RestartWithoutAKeeperKeepsTheEventsButNotTheSamples) {
  start();
  persistent::EventInfo a = create(kGetppidRequest);
  kernel_.emit(0, {PERF_TYPE_TRACEPOINT, kGetppid}, {.pid = 42});
  kernel_.emit(1, {PERF_TYPE_TRACEPOINT, kGetppid}, {.pid = 42});
  stop();
  kernel_.clear_calls();
  now_ += 30;
  start();
  EXPECT_EQ(opens(), 0u) << "the events themselves came back";
  std::vector<persistent::EventInfo> events = list();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].id, a.id);
  EXPECT_TRUE(events[0].restarted());
  EXPECT_EQ(events[0].buffer_start, now_.load());
  EXPECT_NE(events[0].lost_reason.find("nothing kept its buffers mapped"), std::string::npos)
      << events[0].lost_reason;
}

// The same within the second the event was created (times are in seconds):
// the restart still shows, in list and in its JSON.
TEST_F(BrokerSystemdTest, ARestartWithinTheSameSecondStillShows) {
  start();
  create(kGetppidRequest);
  kernel_.emit(0, {PERF_TYPE_TRACEPOINT, kGetppid}, {.pid = 42});
  stop();
  start();
  std::vector<persistent::EventInfo> events = list();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].buffer_start, events[0].created) << "the clock did not move";
  EXPECT_TRUE(events[0].restarted());
  json j = persistent::event_to_json(events[0]);
  EXPECT_TRUE(j["restarted"].get<bool>());
  EXPECT_NE(j["buffers_lost"]["reason"].get<std::string>().find("nothing kept its buffers"),
            std::string::npos)
      << j.dump();
}

// `systemctl stop` releases the store: the next start re-creates the events
// (same ids and names, new kernel events) and stores their new fds.
TEST_F(BrokerSystemdTest, AReleasedStoreMeansEventsCreatedAgain) {
  start();
  persistent::EventInfo a = create(kGetppidRequest);
  stop();
  systemd_.release_store();
  kernel_.clear_calls();
  now_ += 10;
  start();
  EXPECT_EQ(opens(), 4u) << "the event and its context stream, on 2 CPUs";
  std::vector<persistent::EventInfo> events = list();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].id, a.id);
  EXPECT_TRUE(events[0].restarted());
  EXPECT_NE(events[0].lost_reason.find("so it was created again"), std::string::npos);
  EXPECT_EQ(systemd_.stored(), 5u);
}

// What the store gives back that is not the registry's: an fd under the
// name of an event that is gone, a second fd under a live event's name, an
// fd under an event's name that is another kernel event (its perf id
// differs). The right ones are adopted; every other one is closed and
// removed by name, and a live fd whose name had to be removed is stored
// again; an event not all of whose fds fit is created anew.
TEST_F(BrokerSystemdTest, StaleDuplicateAndMismatchedFdsAreDroppedByName) {
  start();
  persistent::CreateRequest bare = kGetppidRequest;
  bare.context = false;
  bare.name = "a";
  persistent::EventInfo a = create(bare);
  bare.name = "b";
  persistent::EventInfo b = create(bare);
  stop();
  sys::EventAttr attr;
  attr.attr.size = sys::kAttrSizeVer7;
  attr.attr.type = PERF_TYPE_SOFTWARE;
  attr.attr.config = PERF_COUNT_SW_DUMMY;
  auto other = [&]() -> sys::Fd {
    auto fd = kernel_.perf_event_open(attr, -1, 0, -1, 0);
    return fd.ok() ? std::move(*fd) : sys::Fd();
  };
  systemd_.add_to_store("pp-event-99-cpu-0", other());     // an event that is gone
  systemd_.add_to_store(event_fd_name(a.id, 0), other());  // a second fd under a's name
  size_t fds = kernel_.open_fds();
  systemd_.clear_messages();
  kernel_.clear_calls();
  start();
  EXPECT_EQ(opens(), 0u) << "both events adopted";
  std::vector<std::string> m = systemd_.messages();
  EXPECT_TRUE(contains(m, "FDSTOREREMOVE=1\nFDNAME=pp-event-99-cpu-0"));
  auto removed = std::find(m.begin(), m.end(), "FDSTOREREMOVE=1\nFDNAME=" + event_fd_name(a.id, 0));
  auto stored =
      std::find(m.begin(), m.end(), "FDSTORE=1\nFDPOLL=0\nFDNAME=" + event_fd_name(a.id, 0));
  ASSERT_NE(removed, m.end());
  ASSERT_NE(stored, m.end());
  EXPECT_LT(removed - m.begin(), stored - m.begin()) << "removed, then the live one stored again";
  std::vector<std::string> names = systemd_.stored_names();
  EXPECT_EQ(std::count(names.begin(), names.end(), event_fd_name(a.id, 0)), 1);
  EXPECT_FALSE(contains(names, "pp-event-99-cpu-0"));
  EXPECT_EQ(names.size(), 5u) << "the socket and 2 fds each of a and b";
  EXPECT_EQ(kernel_.open_fds(), fds - 2 + 4)
      << "the store's 4 and the broker's 4 copies of a's and b's fds: the 2 stale ones closed";
  EXPECT_FALSE(list()[0].restarted());

  // b's CPU 1 replaced by another kernel event under its name.
  stop();
  (void)systemd_.remove_fds(event_fd_name(b.id, 1));
  systemd_.add_to_store(event_fd_name(b.id, 1), other());
  systemd_.clear_messages();
  kernel_.clear_calls();
  now_ += 10;
  start();
  EXPECT_EQ(opens(), 2u) << "b alone is created again, on its 2 CPUs";
  std::vector<persistent::EventInfo> events = list();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].id, a.id);
  EXPECT_EQ(events[1].id, b.id);
  EXPECT_NE(events[1].perf_ids[0].id, b.perf_ids[0].id) << "a new kernel event";
  EXPECT_NE(events[1].lost_reason.find("so it was created again"), std::string::npos);
  names = systemd_.stored_names();
  EXPECT_EQ(std::count(names.begin(), names.end(), event_fd_name(b.id, 1)), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), event_fd_name(b.id, 0)), 1);
  EXPECT_EQ(names.size(), 5u);
}

// A reload applies the difference: a config event gone from the file is
// killed, a new one created, a changed one killed and created again under a
// new id; an unchanged one keeps its id, kernel event and samples; one made
// by `create` is left alone, even when the file names it.
// A start or reload of many events holds the event loop (1,024 events took
// about 24 s, the watchdog is 30 s): between two events the broker tells
// the manager it is busy but alive, with the watchdog's ping when one runs.
// busy_notify_ms 0: at every event, so the count is exact.
TEST_F(BrokerSystemdTest, LongStartsAndReloadsExtendTheTimeoutAndPingTheWatchdog) {
  std::string conf;
  for (int i = 0; i < 20; i++)
    conf += "[e" + std::to_string(i) + "]\nevent = syscalls:sys_enter_getppid\n";
  tmp_.write("pp.conf", conf);
  config_.config_file = tmp_.path("pp.conf");
  config_.busy_notify_ms = 0;
  systemd_.set_watchdog_usec(60'000'000);
  const std::string busy = "EXTEND_TIMEOUT_USEC=10000000\nWATCHDOG=1";
  start();
  std::vector<std::string> m = systemd_.messages();
  EXPECT_EQ(systemd_.count(busy), 20u);
  auto ready = std::find_if(m.begin(), m.end(),
                            [](const std::string& s) { return s.rfind("READY=1", 0) == 0; });
  ASSERT_NE(ready, m.end());
  EXPECT_EQ(std::find(ready, m.end(), busy), m.end()) << "all of them before READY=1";
  systemd_.clear_messages();
  conf.clear();
  for (int i = 0; i < 20; i++)
    conf += "[e" + std::to_string(i) + "]\nevent = syscalls:sys_enter_getppid\npages = 4\n";
  tmp_.write("pp.conf", conf);
  auto reply = reload();
  ASSERT_TRUE(reply.ok()) << reply.error().message();
  EXPECT_EQ((*reply)["reload"]["recreated"].size(), 20u);
  m = systemd_.messages();
  auto reloading = std::find_if(
      m.begin(), m.end(), [](const std::string& s) { return s.rfind("RELOADING=1", 0) == 0; });
  ASSERT_NE(reloading, m.end());
  EXPECT_EQ(std::find(m.begin(), reloading, busy), reloading) << "all of them after RELOADING=1";
  EXPECT_EQ(systemd_.count(busy), 20u);
  EXPECT_EQ(m.back().rfind("READY=1", 0), 0u) << m.back();
}

TEST_F(BrokerSystemdTest, ReloadAppliesOnlyTheDifference) {
  tmp_.write("pp.conf",
             "[gone]\nevent = syscalls:sys_enter_getppid\n"
             "[same]\nevent = syscalls:sys_enter_getppid\npages = 8\n"
             "[changed]\nevent = syscalls:sys_enter_getppid\npages = 4\n");
  config_.config_file = tmp_.path("pp.conf");
  start();
  persistent::EventInfo mine = create({"cpu-clock", "mine", 0, "", ""});
  std::vector<persistent::EventInfo> before = list();
  ASSERT_EQ(before.size(), 4u);
  EXPECT_EQ(before[0].origin, persistent::kOriginConfig);
  EXPECT_EQ(mine.origin, persistent::kOriginCreate);
  kernel_.emit(0, {PERF_TYPE_TRACEPOINT, kGetppid}, {.pid = 42});
  tmp_.write("pp.conf",
             "[same]\nevent = syscalls:sys_enter_getppid\npages = 8\n"
             "[changed]\nevent = syscalls:sys_enter_getppid\npages = 16\n"
             "[new]\nevent = syscalls:sys_enter_getppid\n"
             "[mine]\nevent = syscalls:sys_enter_getppid\n");
  kernel_.clear_calls();
  auto reply = reload();
  ASSERT_TRUE(reply.ok()) << reply.error().message();
  const json& r = (*reply)["reload"];
  EXPECT_EQ(r["killed"], json::array({"gone"}));
  EXPECT_EQ(r["recreated"], json::array({"changed"}));
  EXPECT_EQ(r["created"], json::array({"new"}));
  EXPECT_EQ(r["unchanged"], json::array({"same"}));
  EXPECT_EQ(r["left_alone"], json::array({"mine"}));
  EXPECT_EQ(opens(), 4u) << "changed and new, 2 CPUs each: nothing else reopened";
  std::ostringstream text;
  print_reload_report(text, *reply);
  EXPECT_EQ(text.str().substr(0, text.str().find('\n')),
            "reloaded " + tmp_.path("pp.conf") +
                ": 1 created, 1 killed, 1 re-created (changed), 1 left alone (made by create), 1 "
                "unchanged");
  std::vector<persistent::EventInfo> after = list(true);
  ASSERT_EQ(after.size(), 4u);
  auto find = [&](const std::string& name) {
    return *std::find_if(after.begin(), after.end(),
                         [&](const persistent::EventInfo& e) { return e.name == name; });
  };
  persistent::EventInfo same = find("same");
  EXPECT_EQ(same.id, before[1].id);
  EXPECT_EQ(same.perf_ids[0].id, before[1].perf_ids[0].id) << "the same kernel event";
  EXPECT_EQ((*same.counts)[0].count, 1u);
  persistent::EventInfo changed = find("changed");
  EXPECT_GT(changed.id, mine.id) << "a changed event gets a new id";
  EXPECT_EQ(changed.pages, 16u);
  EXPECT_EQ(find("mine").id, mine.id);
  EXPECT_EQ(find("mine").event, "cpu-clock");
}

// A config file that no longer parses changes nothing; the reload reports
// the error, of kind config (daemon --reload exits 9).
TEST_F(BrokerSystemdTest, ABadConfigOnReloadChangesNothing) {
  tmp_.write("pp.conf", "[a]\nevent = syscalls:sys_enter_getppid\n");
  config_.config_file = tmp_.path("pp.conf");
  start();
  tmp_.write("pp.conf", "[a]\nevent = syscalls:sys_enter_getppid\ncolour = red\n");
  kernel_.clear_calls();
  auto reply = reload();
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind(), ErrorKind::kConfig);
  EXPECT_NE(reply.error().message().find("pp.conf:3: unknown key 'colour'"), std::string::npos)
      << reply.error().message();
  EXPECT_TRUE(kernel_.calls().empty()) << kernel_.render_calls();
  ASSERT_EQ(list().size(), 1u);
  EXPECT_EQ(list()[0].state, "running");
}

// An event that fails never stops the others; it is listed failed with the
// kernel's reason and tried again at every reload, keeping its id. An
// optional one is unavailable, no failure.
TEST_F(BrokerSystemdTest, FailedAndOptionalEventsAreRetriedAtReload) {
  tmp_.write("pp.conf",
             "[ok]\nevent = syscalls:sys_enter_getppid\n"
             "[clock]\nevent = cpu-clock\n"
             "[mce]\nevent = mce:mce_record\noptional = yes\n");
  config_.config_file = tmp_.path("pp.conf");
  // This host has getppid's tracepoint and no mce one; its first open fails.
  narrow_ = std::make_unique<sys::testing::FakeKernel>(
      sys::testing::FakeKernelOptions{.cpus = 2, .tracepoints = {kGetppid}});
  resolver_.absent = {"mce:mce_record"};
  config_.kernel = narrow_.get();
  config_.systemd = nullptr;
  narrow_->inject_error(sys::testing::KernelCall::Kind::kOpen, EMFILE, 1);
  start();
  std::vector<persistent::EventInfo> events = list();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].name, "ok");
  EXPECT_EQ(events[0].state, "failed");
  EXPECT_NE(events[0].error.find("EMFILE"), std::string::npos) << events[0].error;
  EXPECT_EQ(events[1].name, "clock");
  EXPECT_EQ(events[1].state, "running") << "one failure stops nothing else";
  EXPECT_EQ(events[2].name, "mce");
  EXPECT_EQ(events[2].state, "unavailable");
  EXPECT_TRUE(events[2].optional);
  uint64_t ok_id = events[0].id;
  auto reply = reload();
  ASSERT_TRUE(reply.ok()) << reply.error().message();
  const json& r = (*reply)["reload"];
  EXPECT_EQ(r["retried"], json::array({"ok"}));
  EXPECT_EQ(r["unavailable"].size(), 1u);
  EXPECT_TRUE(r["failed"].empty());
  events = list();
  EXPECT_EQ(events[0].state, "running");
  EXPECT_EQ(events[0].id, ok_id) << "the same id, now working";
  EXPECT_FALSE(events[0].restarted()) << "it never ran before: no samples lost";
  EXPECT_EQ(events[2].state, "unavailable");
  stop();
}

// Where systemd manages the broker (PID 1 is systemd, the unit is
// installed, the run directory is the unit's), a create that finds no
// broker asks systemd to start the unit and waits for its socket: it never
// spawns one itself. Elsewhere it starts its own.
TEST_F(BrokerSystemdTest, CreateAsksSystemdToStartTheBrokerWhereItManagesOne) {
  sys::testing::FakeSystemd manager({.booted = true, .installed_units = {persistent::kBrokerUnit}});
  EXPECT_TRUE(*persistent::systemd_manages_broker(manager, persistent::kDefaultRunDir,
                                                  persistent::kDefaultRunDir));
  EXPECT_FALSE(
      *persistent::systemd_manages_broker(manager, "/tmp/elsewhere", persistent::kDefaultRunDir))
      << "the unit serves /run/perf-persistent only";
  sys::testing::FakeSystemd not_booted(
      {.booted = false, .installed_units = {persistent::kBrokerUnit}});
  EXPECT_FALSE(*persistent::systemd_manages_broker(not_booted, persistent::kDefaultRunDir,
                                                   persistent::kDefaultRunDir));
  sys::testing::FakeSystemd no_unit({.booted = true});
  EXPECT_FALSE(*persistent::systemd_manages_broker(no_unit, persistent::kDefaultRunDir,
                                                   persistent::kDefaultRunDir));

  // systemd "starts the unit": the test's broker comes up on its thread.
  sys::testing::FakeSystemd pid1({.booted = true,
                                  .installed_units = {persistent::kBrokerUnit},
                                  .on_start_unit = [this](const std::string&) {
                                    start();
                                    return ok_status();
                                  }});
  persistent::BackendOptions options;
  options.run_dir = config_.run_dir;
  options.systemd = &pid1;
  options.systemd_run_dir = config_.run_dir;
  options.daemon_command = {"/bin/true"};  // starts no broker: the create would fail
  persistent::BrokerBackend backend(options);
  auto created = backend.create(kGetppidRequest, nullptr);
  ASSERT_TRUE(created.ok()) << created.error().message();
  EXPECT_EQ(pid1.units_started(), (std::vector<std::string>{persistent::kBrokerUnit}));

  // Not managed: today's detached start, here a command that fails. (The
  // store is released, as by `systemctl stop`: while it holds the socket,
  // a client's connection waits in its backlog for the next broker.)
  stop();
  systemd_.release_store();
  sys::testing::FakeSystemd plain({.booted = false});
  options.systemd = &plain;
  persistent::BrokerBackend other(options);
  auto refused = other.create(kGetppidRequest, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind(), ErrorKind::kBrokerDown);
  EXPECT_TRUE(plain.units_started().empty());
}

}  // namespace
}  // namespace pp::broker

namespace pp::broker {
namespace {

// The handover of daemon --replace, the old broker's side: every fd by
// name, page by page, the registry frozen meanwhile (a create gets EAGAIN),
// and a handover whose new broker goes away is abandoned. A broker under
// systemd refuses it: systemd restarts it instead.
TEST_F(BrokerSystemdTest, HandoverFreezesHandsEveryFdByNameAndCanBeAbandoned) {
  start();
  create(kGetppidRequest);
  auto refused = persistent::BrokerConnection::connect(persistent::RunDir(config_.run_dir));
  ASSERT_TRUE(refused.ok());
  persistent::Request handover;
  handover.op = persistent::Op::kHandover;
  auto no = refused->call(handover);
  ASSERT_FALSE(no.ok());
  EXPECT_EQ(no.error().code(), EPERM);
  EXPECT_NE(no.error().message().find("systemctl restart perf-persistent"), std::string::npos);
  stop();

  config_.systemd = nullptr;
  config_.handover_timeout_ms = 300;
  start();
  auto early = client();  // connected before the handover: served during it
  ASSERT_TRUE(early->list(false, nullptr).ok());
  // Only what could be the broker may take over: the token in the run
  // directory (mode 0600) is what shows it.
  auto token = sys::Tree(config_.run_dir).read("handover.token", 4096);
  ASSERT_TRUE(token.ok()) << token.error().message();
  struct stat st {};
  ASSERT_EQ(::stat((config_.run_dir + "/handover.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  {
    auto guesser = persistent::BrokerConnection::connect(persistent::RunDir(config_.run_dir));
    ASSERT_TRUE(guesser.ok());
    handover.token = std::string(32, '0');
    auto wrong = guesser->call(handover);
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.error().code(), EACCES);
    EXPECT_NE(wrong.error().message().find("its token is not the one in"), std::string::npos)
        << wrong.error().message();
  }
  handover.token = std::string(trim(*token));
  {
    auto taker = persistent::BrokerConnection::connect(persistent::RunDir(config_.run_dir));
    ASSERT_TRUE(taker.ok());
    std::vector<sys::Fd> fds;
    auto reply = taker->call(handover, &fds);
    ASSERT_TRUE(reply.ok()) << reply.error().message();
    std::vector<std::string> names;
    for (const json& f : (*reply)["fds"])
      names.push_back(f["name"].get<std::string>());
    std::string ctx = std::to_string(persistent::kFirstContextId);
    EXPECT_EQ(names, (std::vector<std::string>{"pp-event-1-cpu-0", "pp-event-1-cpu-1",
                                               "pp-event-" + ctx + "-cpu-0",
                                               "pp-event-" + ctx + "-cpu-1"}))
        << "the listening socket goes only to the lock's next holder";
    EXPECT_EQ(fds.size(), 4u);
    EXPECT_EQ((*reply)["fds"][0]["mmap_bytes"], (1 + persistent::kDefaultPages) * sys::page_size());
    EXPECT_EQ((*reply)["more"], false) << "every fd fits one page";
    persistent::Request listener;
    listener.op = persistent::Op::kHandoverListener;
    auto early_listener = taker->call(listener);
    ASSERT_FALSE(early_listener.ok()) << "not before handover-done and the lock";
    // Frozen: a change waits for the new broker. (New connections wait in
    // the backlog for it.)
    EXPECT_TRUE(early->list(false, nullptr).ok());
    auto frozen = early->create({"cpu-clock", "c", 0, "", ""}, nullptr);
    ASSERT_FALSE(frozen.ok());
    EXPECT_EQ(frozen.error().code(), EAGAIN);
    EXPECT_NE(frozen.error().message().find("try again in a moment"), std::string::npos);
    // A taker that keeps its connection and never finishes: abandoned at
    // the deadline, and the broker serves on.
    bool thawed = false;
    for (int i = 0; i < 200 && !thawed; i++) {
      thawed = early->create({"cpu-clock", "c", 0, "", ""}, nullptr).ok();
      if (!thawed)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(thawed) << "the stalled handover still freezes the registry";
  }
  // The taker went away: the broker serves on.
  auto again = client()->create({"cpu-clock", "d", 0, "", ""}, nullptr);
  EXPECT_TRUE(again.ok()) << again.error().message();
}

// The host's boot config belongs to the host's broker: a broker of any
// other run directory (a test's, a benchmark's) reads none by default.
TEST(DefaultConfigFile, OnlyTheSystemRunDirectoryReadsTheSystemConfig) {
  EXPECT_EQ(default_config_file(persistent::kDefaultRunDir), kDefaultConfigFile);
  EXPECT_EQ(default_config_file(std::string(persistent::kDefaultRunDir) + "/"), kDefaultConfigFile);
  EXPECT_EQ(default_config_file("/tmp/pp-test-x/run"), "");
  EXPECT_EQ(default_config_file("/run/perf-persistent-other"), "");
}

}  // namespace
}  // namespace pp::broker

// The broker backend (the client side) against a broker serving on a thread.
#include "persistent/broker_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <sstream>
#include <thread>

#include "broker/broker.h"
#include "broker/testing/broker_thread.h"
#include "persistent/create.h"
#include "persistent/names.h"
#include "persistent/testing/test_doubles.h"
#include "tests/support/temp_dir.h"

namespace pp::broker {
namespace {

// A broker serving on its own thread until the fixture ends.
class BrokerClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sysfs_.write("devices/system/cpu/online", "0-1\n");
    run_dir_ = tmp_.path("run");
  }

  void start_broker() {
    BrokerConfig config;
    config.run_dir = run_dir_;
    config.sysfs_root = sysfs_.path();
    config.kernel = &kernel_;
    config.resolver = &resolver_;
    Status started = broker_.start(config);
    ASSERT_TRUE(started.ok()) << started.error().message();
  }

  void TearDown() override {
    if (broker_.running()) {
      broker_.stop();
      EXPECT_TRUE(broker_.served().ok()) << broker_.served().error().message();
    }
  }

  persistent::BrokerBackend backend(std::vector<std::string> daemon = {}) {
    persistent::BackendOptions options;
    options.run_dir = run_dir_;
    options.daemon_command = std::move(daemon);
    options.notes = &notes_;
    return persistent::BrokerBackend(options);
  }

  ::pp::testing::TempDir tmp_, sysfs_;
  std::string run_dir_;
  persistent::testing::RefusingKernel kernel_{EINVAL};
  persistent::testing::TestResolver resolver_;
  testing::BrokerThread broker_;
  std::ostringstream notes_;
};

// A broker that is not running is said to be so, never taken for an empty
// registry or a missing event.
TEST_F(BrokerClientTest, NoBrokerIsBrokerDownNeverNoEvents) {
  auto b = backend();
  std::string note;
  auto list = b.list(true, &note);
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().kind(), ErrorKind::kBrokerDown);
  EXPECT_EQ(list.error().code(), ECONNREFUSED);
  EXPECT_NE(list.error().message().find("the broker is not running"), std::string::npos)
      << list.error().message();
  EXPECT_TRUE(b.down_events().empty()) << "nothing saved";

  auto kill = b.kill("ctxsw");
  ASSERT_FALSE(kill.ok());
  EXPECT_EQ(kill.error().kind(), ErrorKind::kBrokerDown);

  auto open = b.open(1, 0);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().kind(), ErrorKind::kBrokerDown);

  persistent::CreateRequest request;
  request.event = "a:b";
  auto create = b.create(request, nullptr);
  ASSERT_FALSE(create.ok()) << "no daemon command: nothing may be started";
  EXPECT_EQ(create.error().kind(), ErrorKind::kBrokerDown);
  EXPECT_NE(create.error().message().find("perf persistent daemon --run-dir " + run_dir_),
            std::string::npos)
      << create.error().message();
}

TEST_F(BrokerClientTest, NoBrokerButSavedEventsListsThemDown) {
  persistent::RunDir dir(run_dir_);
  ASSERT_TRUE(dir.prepare().ok());
  persistent::RegistryState state;
  state.next_id = 2;
  persistent::EventInfo e;
  e.id = 1;
  e.name = "x";
  e.event = "a:b";
  e.cpus = {0};
  e.pages = 1;
  state.events.push_back(e);
  ASSERT_TRUE(persistent::save_state(dir, state).ok());
  auto list = backend().list(false, nullptr);
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().kind(), ErrorKind::kBrokerDown);
  EXPECT_NE(list.error().message().find("its 1 saved event(s) are down"), std::string::npos)
      << list.error().message();
  std::vector<persistent::EventInfo> down = backend().down_events();
  ASSERT_EQ(down.size(), 1u);
  EXPECT_EQ(down[0].name, "x");
  EXPECT_EQ(down[0].state, "down");
  EXPECT_EQ(down[0].error, "no broker runs for " + run_dir_);
}

TEST_F(BrokerClientTest, StartingTheBrokerReportsItAndAFailedStart) {
  persistent::CreateRequest request;
  request.event = "a:b";
  auto b = backend({"/bin/sh", "-c", "echo cannot start >&2; exit 7"});
  auto create = b.create(request, nullptr);
  ASSERT_FALSE(create.ok());
  EXPECT_EQ(create.error().code(), ECONNREFUSED);
  EXPECT_NE(create.error().message().find("exited with status 7"), std::string::npos)
      << create.error().message();
  EXPECT_NE(notes_.str().find("no broker runs for " + run_dir_ + "; starting one (/bin/sh -c"),
            std::string::npos)
      << notes_.str();
  // No broker.log was written: the message does not send the user to it.
  EXPECT_NE(
      create.error().message().find("it stopped before it opened " + run_dir_ + "/broker.log"),
      std::string::npos)
      << create.error().message();
}

TEST_F(BrokerClientTest, ListKillOpenThroughARunningBroker) {
  start_broker();
  auto b = backend();
  auto list = b.list(true, nullptr);
  ASSERT_TRUE(list.ok()) << list.error().message();
  EXPECT_TRUE(list->empty());
  auto kill = b.kill("7");
  ASSERT_FALSE(kill.ok());
  EXPECT_EQ(kill.error().code(), ENOENT);
  EXPECT_EQ(kill.error().message(), "no persistent event '7'; see 'perf persistent list'");
  auto open = b.open(7, 0);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().code(), ENOENT);
}

TEST_F(BrokerClientTest, TheBrokersRefusalArrivesWithItsCode) {
  start_broker();
  auto b = backend({"/bin/false"});
  persistent::CreateRequest request;
  request.event = "syscalls:sys_enter_getppid";
  auto create = b.create(request, nullptr);
  ASSERT_FALSE(create.ok());
  EXPECT_EQ(create.error().kind(), ErrorKind::kRefused)
      << "a kernel EINVAL is a refusal, not a usage error";
  EXPECT_EQ(create.error().code(), EINVAL) << "the kernel's own errno, not remapped";
  EXPECT_NE(create.error().message().find("(EINVAL)"), std::string::npos);
  EXPECT_EQ(notes_.str(), "") << "a broker answered: none was started";
}

TEST(BackendSelection, KernelAbiPicksTheKernelBackend) {
  ::pp::testing::TempDir sysfs;
  persistent::BackendOptions options;
  options.sysfs_root = sysfs.path();
  options.run_dir = sysfs.path("run");
  EXPECT_EQ(persistent::make_backend(options)->name(), "broker");
  sysfs.write("bus/event_source/devices/persistent/type", "6\n");
  EXPECT_TRUE(persistent::kernel_has_persistent_pmu(sys::Tree(sysfs.path())));
  EXPECT_EQ(persistent::make_backend(options)->name(), "kernel");
}

TEST(BackendSelection, RunDirFromTheEnvironment) {
  ::unsetenv(persistent::kRunDirEnv);
  EXPECT_EQ(persistent::default_run_dir(), "/run/perf-persistent");
  ::setenv(persistent::kRunDirEnv, "/tmp/elsewhere", 1);
  EXPECT_EQ(persistent::default_run_dir(), "/tmp/elsewhere");
  ::setenv(persistent::kRunDirEnv, "", 1);
  EXPECT_EQ(persistent::default_run_dir(), "/run/perf-persistent");
  ::unsetenv(persistent::kRunDirEnv);
}

TEST(BackendSelection, FailureClassesComeFromTheKindNotTheErrno) {
  EXPECT_EQ(persistent::validate_name("a b").error().kind(), ErrorKind::kUsage);
  EXPECT_EQ(persistent::find_event({}, "ctxsw").error().kind(), ErrorKind::kNotFound);
  EXPECT_EQ(persistent::validate_pages(3).error().kind(), ErrorKind::kUsage);
  // A system or kernel errno, whatever its value, is a refusal.
  for (int code :
       {EINVAL, EEXIST, ENOENT, EACCES, EPERM, EOPNOTSUPP, ENODEV, ECONNREFUSED, EMFILE, EBUSY})
    EXPECT_EQ(Error(code, "").kind(), ErrorKind::kRefused) << errno_name(code);
}

}  // namespace
}  // namespace pp::broker

namespace pp::broker {
namespace {

TEST(BackendSelection, BrokerEventsAreKnownByTheirType) {
  sys::EventAttr attr;
  attr.attr.type = persistent::kBrokerPmuType;
  attr.attr.config = 7;
  EXPECT_TRUE(persistent::is_broker_event(attr));
  attr.attr.type = 13;  // a kernel persistent PMU's type
  EXPECT_FALSE(persistent::is_broker_event(attr));
  EXPECT_GT(uint64_t(persistent::kBrokerPmuType), uint64_t(INT32_MAX))
      << "the kernel's PMU types stop there";
}

// A client asks no broker whose run directory or socket another user could
// have made: not one behind a link, in a directory others may write, or of
// a uid that is neither root nor the caller. Nothing connects.
TEST(BrokerConnectionTrust, RefusesARunDirectoryAnotherUserControls) {
  ::pp::testing::TempDir tmp;
  std::string dir = tmp.path("run");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  auto listener = sys::UnixListener::listen(dir + "/broker.sock", 0666);
  ASSERT_TRUE(listener.ok()) << listener.error().message();
  auto refused = [&](const std::string& root, const std::string& why) {
    auto c = persistent::BrokerConnection::connect(persistent::RunDir(root));
    ASSERT_FALSE(c.ok()) << root;
    EXPECT_EQ(c.error().code(), EPERM);
    EXPECT_NE(c.error().message().find(why), std::string::npos) << c.error().message();
    EXPECT_FALSE(listener->accept().ok()) << "it connected all the same";
  };
  ASSERT_EQ(::chmod(dir.c_str(), 0757), 0);
  refused(dir, "has mode 0757: another user could replace its socket");
  ASSERT_EQ(::chmod(dir.c_str(), 0711), 0);
  std::string link = tmp.path("link");
  ASSERT_EQ(::symlink(dir.c_str(), link.c_str()), 0);
  refused(link, "is a symbolic link");
  if (::geteuid() == 0) {  // as root, a directory of nobody's
    ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
    refused(dir, "belongs to uid 65534, neither root nor uid 0");
    ASSERT_EQ(::chown(dir.c_str(), 0, 0), 0);
    ASSERT_EQ(::lchown((dir + "/broker.sock").c_str(), 65534, 65534), 0);
    refused(dir, "the broker socket " + dir + "/broker.sock belongs to uid 65534");
    ASSERT_EQ(::lchown((dir + "/broker.sock").c_str(), 0, 0), 0);
  }
  auto mine = persistent::BrokerConnection::connect(persistent::RunDir(dir));
  EXPECT_TRUE(mine.ok()) << mine.error().message();
  EXPECT_TRUE(listener->accept().ok()) << "a directory of the caller's own is asked";
}

}  // namespace
}  // namespace pp::broker

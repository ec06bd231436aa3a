// A large registry and repeated creates, through BrokerBackend clients and a
// broker over the fake kernel on a thread: every list is paged so that no
// reply nears the frame limit, kill and kill --all work at any size, an
// event over the size bounds is refused, and the same create again reports
// the event it made.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <gtest/gtest.h>
#include <thread>

#include "broker/broker.h"
#include "broker/testing/broker_thread.h"
#include "persistent/backend.h"
#include "persistent/broker_client.h"
#include "persistent/limits.h"
#include "persistent/names.h"
#include "persistent/testing/test_doubles.h"
#include "sys/testing/fake_kernel.h"
#include "tests/support/temp_dir.h"

namespace pp::broker {
namespace {

class BrokerRegistryTest : public ::testing::Test {
 protected:
  BrokerRegistryTest() {
    sysfs_.write("devices/system/cpu/online", "0-1\n");
    kernel_ =
        std::make_unique<sys::testing::FakeKernel>(sys::testing::FakeKernelOptions{.cpus = 2});
    config_.run_dir = tmp_.path("run");
    config_.sysfs_root = sysfs_.path();
    config_.kernel = kernel_.get();
    config_.resolver = &resolver_;
    config_.clock = [] { return int64_t(1700000000); };
  }
  ~BrokerRegistryTest() override { stop(); }

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

  ::pp::testing::TempDir tmp_, sysfs_;
  std::unique_ptr<sys::testing::FakeKernel> kernel_;
  persistent::testing::TestResolver resolver_;
  BrokerConfig config_;
  testing::BrokerThread broker_;
};

// 280 events, each with the longest event string, name and filter allowed:
// list, list -v, kill NAME, the lookup record makes, and kill --all all work.
// (Before the bounds and the paging, 280 events of 64 KiB made every list
// reply exceed the 16 MiB frame limit.)
TEST_F(BrokerRegistryTest, TwoHundredEightyMaximalEventsListAndKill) {
  config_.list_page_bytes = 256 * 1024;  // several pages, as 16 MiB would need thousands
  start();
  auto b = client();
  std::string tail(persistent::kMaxEventStringBytes - 8, 'e');
  std::string filter(persistent::kMaxFilterBytes, 'f');
  for (int i = 0; i < 280; i++) {
    std::string name = "n" + std::to_string(i) + "x";
    name += std::string(persistent::kMaxNameLength - name.size(), 'x');
    persistent::CreateRequest request{"sys" + std::to_string(1000 + i).substr(1) + "x:" + tail,
                                      name, 1, "", filter};
    ASSERT_EQ(request.event.size(), persistent::kMaxEventStringBytes);
    auto created = b->create(request, nullptr);
    ASSERT_TRUE(created.ok()) << i << ": " << created.error().message();
  }
  auto listed = b->list(false, nullptr);
  ASSERT_TRUE(listed.ok()) << listed.error().message();
  ASSERT_EQ(std::erase_if(*listed, [](const persistent::EventInfo& e) { return e.is_context; }), 1u)
      << "one context stream serves them all";
  ASSERT_EQ(listed->size(), 280u);
  EXPECT_EQ(listed->front().id, 1u);
  EXPECT_EQ(listed->back().id, 280u);
  EXPECT_EQ(listed->back().filter, filter);
  auto verbose = client()->list(true, nullptr);
  ASSERT_TRUE(verbose.ok()) << verbose.error().message();
  EXPECT_EQ(verbose->size(), 281u);

  // What record does to find its event: list, then look the name up.
  std::string last = listed->back().name;
  auto found = persistent::find_event(*listed, last);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ((*found)->id, 280u);
  auto opened = client()->open(280, 0);
  EXPECT_TRUE(opened.ok()) << opened.error().message();

  auto one = persistent::kill_events(*client(), {last}, false);
  ASSERT_TRUE(one.ok()) << one.error().message();
  EXPECT_EQ(one->killed.size(), 1u);
  auto all = persistent::kill_events(*client(), {}, true);
  ASSERT_TRUE(all.ok()) << all.error().message();
  EXPECT_EQ(all->killed.size(), 279u);
  EXPECT_TRUE(all->failed.empty());
  EXPECT_TRUE(client()->list(false, nullptr)->empty());
}

TEST_F(BrokerRegistryTest, EventOverTheBoundsIsRefusedSayingWhich) {
  start();
  auto b = client();
  persistent::CreateRequest big{"sys:" + std::string(persistent::kMaxEventStringBytes, 'e'), "big",
                                0, "", ""};
  auto r = b->create(big, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kUsage);
  EXPECT_NE(r.error().message().find("the event string is 4100 bytes, over the limit of 4096 for "
                                     "a persistent event (-e)"),
            std::string::npos)
      << r.error().message();
  persistent::CreateRequest filtered{"syscalls:sys_enter_getppid", "f", 0, "",
                                     std::string(4096, 'f')};
  auto f = b->create(filtered, nullptr);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("the filter is 4096 bytes, over the limit of 4095"),
            std::string::npos)
      << f.error().message();
  EXPECT_EQ(kernel_->open_fds(), 0u);
}

TEST_F(BrokerRegistryTest, RegistryIsBounded) {
  config_.max_events = 3;
  start();
  auto b = client();
  for (int i = 0; i < 3; i++)
    ASSERT_TRUE(b->create({"sys:e" + std::to_string(i), "", 1, "", ""}, nullptr).ok());
  auto r = b->create({"sys:e9", "", 1, "", ""}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ENOSPC);
  EXPECT_NE(r.error().message().find("holds 3 persistent events, the most it keeps"),
            std::string::npos)
      << r.error().message();
}

// A create repeated (after a lost reply, say) reports the event it made; a
// different definition under the name is name-taken.
TEST_F(BrokerRegistryTest, SameCreateAgainReportsTheEventItMade) {
  start();
  auto b = client();
  persistent::CreateRequest request{"syscalls:sys_enter_getppid", "x", 4, "0-1", "common_pid == 1"};
  auto first = b->create(request, nullptr);
  ASSERT_TRUE(first.ok()) << first.error().message();
  std::string note;
  auto again = client()->create(request, &note);
  ASSERT_TRUE(again.ok()) << again.error().message();
  EXPECT_EQ(again->id, first->id);
  EXPECT_EQ(note,
            "persistent event 1 'x' exists already with this definition; nothing was "
            "created");
  EXPECT_EQ(kernel_->open_fds(), 4u)
      << "nothing more was opened (the event and its context stream)";
  persistent::CreateRequest other = request;
  other.filter = "common_pid == 2";
  auto taken = client()->create(other, nullptr);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().code(), EEXIST);
  other = request;
  other.pages = 8;
  EXPECT_EQ(client()->create(other, nullptr).error().code(), EEXIST);
  auto listed = client()->list(false, nullptr);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(std::count_if(listed->begin(), listed->end(),
                          [](const persistent::EventInfo& e) { return !e.is_context; }),
            1);
}

}  // namespace
}  // namespace pp::broker

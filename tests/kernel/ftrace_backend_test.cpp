// `create --backend ftrace` on this machine's kernel: the broker owns one
// ftrace instance per event and is its only consumer, republishing every
// record into shared rings that any number of readers map. Judged by the
// real perf script. Each test has its own run directory and broker, and
// event names of its own (instances are machine-wide), all removed at the
// end whatever happened.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "sys/child.h"
#include "sys/tree.h"
#include "tests/kernel/kernel_env.h"
#include "tests/support/broker.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class FtraceBackend : public PrivateBrokerTest {
 protected:
  void SetUp() override {
    PrivateBrokerTest::SetUp();
    if (IsSkipped())
      return;
    tracefs_ = tracefs_root();
    PP_SKIP_UNLESS(!tracefs_.empty(), "no tracefs with events/");
    PP_SKIP_UNLESS(sys::Tree(tracefs_).is_directory("instances"), "tracefs has no instances/");
  }

  void TearDown() override {
    background_.clear();
    if (!run_dir_.empty() && broker_pid() > 0)
      (void)pp({"kill", "--all"});
    PrivateBrokerTest::TearDown();
    // Whatever the test left (a broker that died mid-test): the instances go.
    for (const std::string& name : names_)
      ::rmdir(instance_path(name).c_str());
  }

  // A name no other run on this machine uses: instances are machine-wide.
  std::string name(const std::string& base) {
    names_.push_back(base + std::to_string(::getpid()));
    return names_.back();
  }

  std::string instance_path(const std::string& name) const {
    return tracefs_ + "/instances/perf-persistent." + name;
  }

  // CPU 0's republished count of `name`, from list -v --json; -1 when absent.
  long count(const std::string& name) {
    CommandResult r = pp({"list", "-v", "--json"});
    json doc = json::parse(r.out, nullptr, false);
    if (doc.is_discarded())
      return -1;
    for (const json& e : doc.value("events", json::array()))
      if (e.value("name", "") == name)
        for (const json& c : e.value("counts", json::array()))
          if (c.value("cpu", -1) == 0)
            return c.value("count", -1L);
    return -1;
  }

  // Waits until the broker has republished `want` records of `name`.
  bool wait_for_count(const std::string& name, long want) {
    for (int i = 0; i < 300; i++) {
      if (count(name) >= want)
        return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  sys::Child& start_record(const std::string& event, const std::string& output,
                           const std::string& err_file) {
    std::string cmd = "exec '" + binary_path() + "' record -e persistent/" + event + "/ -o '" +
                      output + "' --run-dir='" + run_dir_ + "' 2>'" + err_file + "'";
    auto child = sys::Child::spawn({"sh", "-c", cmd});
    EXPECT_TRUE(child.ok()) << child.error().message();
    background_.push_back(std::move(child).value());
    return background_.back();
  }

  std::string tracefs_;
  std::vector<std::string> names_;
  std::deque<sys::Child> background_;
};

// Three readers at once, none taking anything from another: each gets every
// one of 200,000 calls (the broker drains the instance once and every
// reader maps the same shared ring). Three runs, one event each, filtered
// on that run's caller.
TEST_F(FtraceBackend, ThreeConcurrentReadersEachGetEverySampleOfABurst) {
  constexpr long kBurst = 200000;
  for (int run = 0; run < 3; run++) {
    SCOPED_TRACE("run " + std::to_string(run));
    GetppidCaller caller(kBurst);
    ASSERT_GT(caller.pid(), 0);
    std::string event = name("burst" + std::to_string(run));
    // 4 MiB of ftrace buffer holds the burst (16-byte records); the shared
    // ring, four times that, holds it as perf samples (72 bytes each).
    CommandResult created =
        pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", event, "--backend", "ftrace",
            "-m", "1024", "-C", "0", "--filter", caller.filter()});
    ASSERT_EQ(created.status, 0) << created.err;
    struct stat st {};
    ASSERT_EQ(::stat(instance_path(event).c_str(), &st), 0) << instance_path(event);
    EXPECT_EQ(st.st_mode & 07777, 0700u) << "the instance is root's alone";

    std::vector<std::string> files;
    for (int r = 0; r < 3; r++) {
      files.push_back(tmp_.path("run" + std::to_string(run) + "-r" + std::to_string(r) + ".data"));
      start_record(event, files.back(), files.back() + ".err");
    }
    for (const std::string& f : files)
      ASSERT_TRUE(wait_for_record_start(f)) << f << " never started: " << f + ".err";
    ASSERT_TRUE(caller.run());
    ASSERT_TRUE(wait_for_count(event, kBurst)) << "the broker republished " << count(event);
    EXPECT_EQ(count(event), kBurst);
    // Each reader wakes by time at least every flush interval: by now it
    // has read the ring's end; SIGINT makes it drain once more and finish.
    std::this_thread::sleep_for(300ms);
    for (sys::Child& c : background_)
      ASSERT_TRUE(c.kill(SIGINT).ok());
    for (sys::Child& c : background_)
      EXPECT_TRUE(c.wait().ok());
    background_.clear();
    for (const std::string& f : files) {
      std::string err;
      EXPECT_EQ(perf_script_count(f, caller.pid(), &err), kBurst) << f << ": " << err;
    }
    EXPECT_EQ(pp({"kill", event}).status, 0);
    EXPECT_FALSE(sys::Tree(tracefs_).exists("instances/perf-persistent." + event))
        << "kill removes the instance";
  }
}

// An ftrace-backend event's ring hangs up once it is written no more, as a
// perf fd does when its event has exited (a perf-backend event's follower
// gets the same pipe: PersistentBroker.AFollowingRecordEndsOnceEveryEventIsKilled).
// A record following two such events goes on when one is killed and ends
// once the other's broker stops, with everything written before in its
// file. About a second.
TEST_F(FtraceBackend, AFollowingRecordEndsWhenEveryEventItFollowsIsGone) {
  GetppidCaller caller(300);
  ASSERT_GT(caller.pid(), 0);
  std::string killed = name("hupk"), stopped = name("hups");
  for (const std::string& event : {killed, stopped}) {
    CommandResult created =
        pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", event, "--backend", "ftrace",
            "-m", "64", "-C", "0", "--filter", caller.filter()});
    ASSERT_EQ(created.status, 0) << created.err;
  }
  std::string file = tmp_.path("hup.data"), err = file + ".err", summary = file + ".json";
  std::string cmd = "exec '" + binary_path() + "' record -e persistent/" + killed +
                    "/ -e persistent/" + stopped + "/ -o '" + file + "' --json='" + summary +
                    "' --run-dir='" + run_dir_ + "' 2>'" + err + "'";
  auto spawned = sys::Child::spawn({"sh", "-c", cmd});
  ASSERT_TRUE(spawned.ok()) << spawned.error().message();
  background_.push_back(std::move(spawned).value());
  sys::Child& rec = background_.back();
  ASSERT_TRUE(wait_for_record_start(file)) << slurp(err);
  ASSERT_TRUE(caller.run());
  for (const std::string& event : {killed, stopped})
    ASSERT_TRUE(wait_for_count(event, 300)) << "the broker republished " << count(event);

  // Ends by itself within `ms`, or not.
  auto ended_within = [&](int ms) -> std::optional<sys::ExitStatus> {
    for (int waited = 0; waited <= ms; waited += 20) {
      auto done = rec.try_wait();
      if (!done.ok() || *done)
        return done.ok() ? *done : std::nullopt;
      std::this_thread::sleep_for(20ms);
    }
    return std::nullopt;
  };
  ASSERT_EQ(pp({"kill", killed}).status, 0);
  EXPECT_FALSE(ended_within(500)) << "one event is left to follow: " << slurp(err);
  ASSERT_EQ(pp({"daemon", "--stop"}).status, 0);
  std::optional<sys::ExitStatus> ended = ended_within(3000);
  ASSERT_TRUE(ended) << "record still follows rings nobody writes: " << slurp(err);
  EXPECT_TRUE(ended->success()) << ended->describe() << ": " << slurp(err);
  EXPECT_NE(slurp(err).find("every event followed is gone"), std::string::npos) << slurp(err);
  json doc = json::parse(slurp(summary), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << slurp(summary);
  EXPECT_EQ(doc["exit_reason"], "events-gone") << doc;
  // Both rings had every call by the kill: the file has them twice.
  std::string script_err;
  EXPECT_EQ(perf_script_count(file, caller.pid(), &script_err), 600) << script_err;
}

// The keeper holds perf buffers mapped across a broker restart; an
// ftrace-backend event's records outlive the broker in its instance and its
// shared rings die with the broker, so the keeper leaves it alone: it maps
// none of its rings, and list does not call it kept. About 3 s.
TEST_F(FtraceBackend, TheKeeperLeavesFtraceBackendEventsAlone) {
  std::string log = tmp_.path("keeper.log");
  auto keeper =
      sys::Child::spawn({"sh", "-c",
                         "exec '" + binary_path() + "' daemon --keeper --foreground --run-dir='" +
                             run_dir_ + "' 2>'" + log + "'"});
  ASSERT_TRUE(keeper.ok()) << keeper.error().message();
  background_.push_back(std::move(keeper).value());
  std::string ftrace = name("keepf"), perf = name("keepp");
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", ftrace, "--backend",
                "ftrace", "-m", "16", "-C", "0"})
                .status,
            0);
  // Created after it: the keeper has synced past the ftrace event by the
  // time it keeps this one.
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", perf, "-C", "0"}).status,
            0);
  auto kept = [&](const std::string& event) {
    json doc = json::parse(pp({"list", "-v", "--json"}).out, nullptr, false);
    for (const json& e : doc.value("events", json::array()))
      if (e.value("name", "") == event)
        return e.value("kept", false);
    return false;
  };
  bool perf_kept = false;
  for (int i = 0; i < 300 && !perf_kept; i++) {
    perf_kept = kept(perf);
    if (!perf_kept)
      std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(perf_kept) << "the keeper keeps a perf-backend event: " << slurp(log);
  EXPECT_FALSE(kept(ftrace)) << slurp(log);
  EXPECT_EQ(slurp(log).find("'" + ftrace + "'"), std::string::npos) << slurp(log);
}

// Nobody reads while a burst overflows the shared ring: a snapshot then
// holds the newest records (all of a later caller's, some of the first
// one's) and says the older ones were lost.
TEST_F(FtraceBackend, ASnapshotWhileNobodyReadHoldsTheLastRecords) {
  GetppidCaller first(20000), last(50);
  ASSERT_GT(first.pid(), 0);
  ASSERT_GT(last.pid(), 0);
  std::string event = name("snap");
  std::string filter = first.filter() + " || " + last.filter();
  // 64 KiB of ftrace buffer, a 256 KiB shared ring: about 3,600 samples.
  CommandResult created = pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", event,
                              "--backend", "ftrace", "-m", "16", "-C", "0", "--filter", filter});
  ASSERT_EQ(created.status, 0) << created.err;
  ASSERT_TRUE(first.go());
  // The broker drains while it runs (a 64 KiB buffer wakes it early):
  // fewer than all 20,000 may reach the ring, never more.
  ASSERT_TRUE(first.wait());
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(last.run());
  std::string file = tmp_.path("snap.data");
  CommandResult rec = pp({"record", "-e", "persistent/" + event + "/", "--no-follow", "-o", file});
  ASSERT_EQ(rec.status, 0) << rec.err;
  std::string err;
  EXPECT_EQ(perf_script_count(file, last.pid(), &err), 50) << err;
  int older = perf_script_count(file, first.pid(), &err);
  EXPECT_GT(older, 2000) << "the ring holds thousands of the newest";
  EXPECT_LT(older, 20000) << "and not the oldest";
  EXPECT_NE(rec.err.find("lost"), std::string::npos) << "the overwritten are counted: " << rec.err;
}

// The instance outlives the broker and is taken over with what it gathered
// meanwhile; settings changed behind the broker's back are put back and
// listed; a refused event says why.
TEST_F(FtraceBackend, RestartAdoptsTheInstanceAndTheGuardUndoesForeignChanges) {
  GetppidCaller before(700), during(500);
  ASSERT_GT(before.pid(), 0);
  ASSERT_GT(during.pid(), 0);
  std::string event = name("keep");
  CommandResult created =
      pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", event, "--backend", "ftrace",
          "-C", "0", "--filter", before.filter() + " || " + during.filter()});
  ASSERT_EQ(created.status, 0) << created.err;
  CommandResult listed = pp({"list"});
  EXPECT_NE(listed.out.find(" ftrace "), std::string::npos) << listed.out;
  CommandResult listed_json = pp({"list", "--json"});
  json doc = json::parse(listed_json.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << listed_json.out;
  EXPECT_EQ(doc["events"][0]["ring"], "ftrace");
  EXPECT_EQ(doc["events"][0]["instance"], "perf-persistent." + event);
  ASSERT_TRUE(before.run());
  // Nobody reads it: the broker leaves the instance alone (past several
  // 100 ms drain turns), and an open takes what it holds.
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(count(event), 0) << "republished with no reader";
  std::string first = tmp_.path("before.data");
  CommandResult snap =
      pp({"record", "-e", "persistent/" + event + "/", "--no-follow", "-o", first});
  ASSERT_EQ(snap.status, 0) << snap.err;
  std::string snap_err;
  ASSERT_EQ(perf_script_count(first, before.pid(), &snap_err), 700) << snap_err;
  EXPECT_GE(count(event), 700);

  ASSERT_TRUE(stop_broker(run_dir_));
  ASSERT_TRUE(sys::Tree(tracefs_).is_directory("instances/perf-persistent." + event))
      << "the instance outlives the broker";
  ASSERT_TRUE(during.run());  // recorded by the instance alone
  {
    std::ofstream off(instance_path(event) + "/tracing_on");
    off << "0\n";
  }
  ASSERT_EQ(pp({"daemon"}).status, 0);
  std::string file = tmp_.path("after.data");
  CommandResult rec = pp({"record", "-e", "persistent/" + event + "/", "--no-follow", "-o", file});
  ASSERT_EQ(rec.status, 0) << rec.err;
  std::string err;
  EXPECT_EQ(perf_script_count(file, during.pid(), &err), 500)
      << "what the instance gathered while no broker ran: " << err;
  EXPECT_EQ(perf_script_count(file, before.pid(), &err), 0)
      << "what the old broker took from the instance died with its shared rings: " << err;
  EXPECT_EQ(sys::Tree(instance_path(event)).read("tracing_on").value_or(""), "1\n");

  // A foreign change while the broker runs: put back within a second.
  {
    std::ofstream on(instance_path(event) + "/events/sched/sched_switch/enable");
    on << "1\n";
  }
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(sys::Tree(instance_path(event)).read("events/sched/sched_switch/enable").value_or(""),
            "0\n");
  CommandResult after = pp({"list", "--json"});
  json after_doc = json::parse(after.out, nullptr, false);
  ASSERT_FALSE(after_doc.is_discarded()) << after.out;
  std::string findings = after_doc["events"][0].value("tampered", json::array()).dump();
  EXPECT_NE(findings.find("tracing_on was '0'"), std::string::npos) << findings;
  EXPECT_NE(findings.find("sched:sched_switch was enabled"), std::string::npos) << findings;

  CommandResult refused =
      pp({"create", "-e", "cpu-clock", "--backend", "ftrace", "--name", name("clock")});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("is no tracepoint"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace pp::testing

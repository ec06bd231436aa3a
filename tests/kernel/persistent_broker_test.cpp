// Persistent events through the broker on this machine's real kernel, driven
// as a user drives them: `perf-persistent create | list | kill | daemon`,
// each test with its own run directory and broker, which it stops at the end
// whatever happened.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "persistent/broker_client.h"
#include "persistent/protocol.h"
#include "sys/child.h"
#include "sys/kernel.h"
#include "sys/process.h"
#include "sys/tree.h"
#include "sys/unix_socket.h"
#include "tests/kernel/kernel_env.h"
#include "tests/support/broker.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

using json = nlohmann::json;

class PersistentBroker : public PrivateBrokerTest {
 protected:
  // Stops the broker with `signal` and waits until it is gone.
  void stop_broker(int signal) {
    if (!testing::stop_broker(run_dir_, signal))
      ADD_FAILURE() << "the broker ignored signal " << signal;
  }

  // The events of list -v --json, without the context streams (the tracking
  // tests look at those).
  json list_json() {
    CommandResult r = pp({"list", "-v", "--json"});
    EXPECT_EQ(r.status, 0) << r.err;
    json doc = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << r.out;
    if (doc.is_discarded())
      return json::object();
    json events = json::array();
    for (const json& e : doc.value("events", json::array()))
      if (e.value("role", "") == "event")
        events.push_back(e);
    doc["events"] = events;
    return doc;
  }

  // CPU `cpu`'s count of the event called `name`, from list -v --json.
  int64_t count(const std::string& name, int cpu) {
    json doc = list_json();
    for (const json& e : doc.value("events", json::array()))
      if (e.value("name", "") == name)
        for (const json& c : e.value("counts", json::array()))
          if (c.value("cpu", -1) == cpu)
            return c.value("count", int64_t(-1));
    ADD_FAILURE() << "no count for '" << name << "' on CPU " << cpu << " in " << doc.dump();
    return -1;
  }
};

// The whole life of an event: create starts the broker, the event counts
// exactly the calls made on CPU 0 after the creating process and every client
// are gone, and kill removes it and its registry entry.
TEST_F(PersistentBroker, CreateCountListAndKill) {
  GetppidCaller caller(1000);
  ASSERT_GT(caller.pid(), 0);
  std::string filter = "common_pid == " + std::to_string(caller.pid());
  CommandResult created =
      pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "mine", "--filter", filter});
  ASSERT_EQ(created.status, 0) << created.err;
  EXPECT_EQ(created.out, "1\n");
  EXPECT_NE(created.err.find("no broker runs for " + run_dir_ + "; starting one"),
            std::string::npos)
      << created.err;
  // The same tracepoint unfiltered, with its default name.
  CommandResult all = pp({"create", "-e", "syscalls:sys_enter_getppid", "--json"});
  ASSERT_EQ(all.status, 0) << all.err;
  json all_doc = json::parse(all.out, nullptr, false);
  ASSERT_FALSE(all_doc.is_discarded()) << all.out;
  EXPECT_EQ(all_doc["event"]["id"], 2);
  EXPECT_EQ(all_doc["event"]["name"], "sys_enter_getppid");
  EXPECT_EQ(all_doc["event"]["layout"], "backward");
  EXPECT_EQ(all_doc["event"]["cpus"], json::array({0, 1}));
  EXPECT_EQ(all_doc["event"]["buffer_bytes"], 128 * 4096);

  json before = list_json();
  ASSERT_EQ(before["events"].size(), 2u) << before.dump();
  json& mine = before["events"][0];
  EXPECT_EQ(mine["name"], "mine");
  EXPECT_EQ(mine["filter"], filter);
  EXPECT_EQ(mine["readers"], 0);
  pid_t creator = mine["creator"]["pid"];
  EXPECT_FALSE(sys::process_exists(creator)) << "the creating process is gone";
  EXPECT_NE(creator, broker_pid());
  int64_t mine0 = count("mine", 0), all0 = count("sys_enter_getppid", 0);

  ASSERT_TRUE(caller.run());
  EXPECT_EQ(count("mine", 0) - mine0, 1000) << "CPU 0 counted exactly the 1000 calls";
  EXPECT_EQ(count("mine", 1), 0) << "the caller never ran on CPU 1";
  EXPECT_GE(count("sys_enter_getppid", 0) - all0, 1000);

  CommandResult text = pp({"list"});
  EXPECT_EQ(text.status, 0);
  EXPECT_EQ(text.out.substr(0, text.out.find('\n')),
            "ID  NAME               EVENT                       CPUS  BUFFER  BACKEND  AGE");
  EXPECT_NE(text.out.find("1   mine               syscalls:sys_enter_getppid  0-1   512KiB  "
                          "broker"),
            std::string::npos)
      << text.out;
  EXPECT_TRUE(sys::Tree(run_dir_).exists("devices/persistent/events/mine"));

  CommandResult killed = pp({"kill", "mine"});
  EXPECT_EQ(killed.status, 0) << killed.err;
  EXPECT_EQ(killed.out, "killed 1 mine\n");
  json after = list_json();
  ASSERT_EQ(after["events"].size(), 1u);
  EXPECT_EQ(after["events"][0]["name"], "sys_enter_getppid");
  EXPECT_FALSE(sys::Tree(run_dir_).exists("devices/persistent/events/mine"));
  EXPECT_EQ(sys::Tree(run_dir_).read("state.json")->find("\"mine\""), std::string::npos);

  EXPECT_EQ(pp({"kill", "--all"}).status, 0);
  CommandResult empty = pp({"list"});
  EXPECT_EQ(empty.status, 0);
  EXPECT_EQ(empty.out, "ID  NAME  EVENT  CPUS  BUFFER  BACKEND  AGE\n");
}

TEST_F(PersistentBroker, SameNameTwiceExits3AndUnknownIdExits4) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "x"}).status, 0);
  CommandResult twice = pp({"create", "-e", "syscalls:sys_enter_getpid", "--name", "x"});
  EXPECT_EQ(twice.status, 3) << twice.err;
  EXPECT_NE(twice.err.find("the name 'x' is taken by persistent event 1"), std::string::npos)
      << twice.err;
  CommandResult json_twice =
      pp({"create", "-e", "syscalls:sys_enter_getpid", "--name", "x", "--json"});
  EXPECT_EQ(json_twice.status, 3);
  json err = json::parse(json_twice.out, nullptr, false);
  ASSERT_FALSE(err.is_discarded()) << json_twice.out;
  EXPECT_EQ(err["error"]["errno"], "EEXIST");
  EXPECT_EQ(err["error"]["exit_status"], 3);

  CommandResult unknown = pp({"kill", "42"});
  EXPECT_EQ(unknown.status, 4);
  EXPECT_EQ(unknown.err,
            "perf persistent kill: no persistent event '42'; see 'perf persistent list'\n");
  CommandResult mixed = pp({"kill", "nosuch", "x"});
  EXPECT_EQ(mixed.status, 4) << "one was not found";
  EXPECT_EQ(mixed.out, "killed 1 x\n") << "the other was killed";

  CommandResult parse = pp({"create", "-e", "syscalls:no_such_tracepoint"});
  EXPECT_EQ(parse.status, 1) << parse.err;
  EXPECT_NE(parse.err.find("event syntax error"), std::string::npos) << parse.err;
}

// An unprivileged user gets a clear permission error and changes nothing:
// where the run directory stops them (its default mode, 0700), where the
// broker's own check does (the directory opened up), and where no broker
// runs yet (none may be started for them).
TEST_F(PersistentBroker, UnprivilegedUserIsRefusedAndChangesNothing) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "keep"}).status, 0);
  std::string state = *sys::Tree(run_dir_).read("state.json");
  auto as_nobody = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"setpriv", "--reuid",        "65534",      "--regid",
                                     "65534",   "--clear-groups", binary_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--run-dir=" + run_dir_);
    return run_command(argv);
  };

  CommandResult gate = as_nobody({"create", "-e", "syscalls:sys_enter_getppid", "--name", "x"});
  EXPECT_EQ(gate.status, 2) << gate.err;
  EXPECT_NE(gate.err.find("permission denied reaching the broker"), std::string::npos) << gate.err;
  EXPECT_NE(gate.err.find("CAP_PERFMON"), std::string::npos) << gate.err;

  ASSERT_EQ(::chmod(tmp_.path().c_str(), 0711), 0);
  ASSERT_EQ(::chmod(run_dir_.c_str(), 0711), 0);
  CommandResult broker = as_nobody({"create", "-e", "syscalls:sys_enter_getppid", "--name", "x"});
  EXPECT_EQ(broker.status, 2) << broker.err;
  EXPECT_NE(broker.err.find("uid 65534"), std::string::npos) << broker.err;
  EXPECT_NE(broker.err.find("may not create persistent events"), std::string::npos) << broker.err;
  CommandResult kill = as_nobody({"kill", "keep"});
  EXPECT_EQ(kill.status, 2) << kill.err;
  EXPECT_NE(kill.err.find("may not kill"), std::string::npos) << kill.err;
  CommandResult list = as_nobody({"list"});
  EXPECT_EQ(list.status, 0) << "anyone who reaches the socket may list: " << list.err;

  EXPECT_EQ(*sys::Tree(run_dir_).read("state.json"), state) << "nothing changed";
  json doc = list_json();
  ASSERT_EQ(doc["events"].size(), 1u);
  EXPECT_EQ(doc["events"][0]["name"], "keep");

  // No broker yet for another directory: none is started for nobody.
  std::string other = tmp_.path("other");
  CommandResult start = run_command({"setpriv", "--reuid", "65534", "--regid", "65534",
                                     "--clear-groups", binary_path(), "create", "-e",
                                     "syscalls:sys_enter_getppid", "--run-dir=" + other});
  EXPECT_EQ(start.status, 2) << start.err;
  EXPECT_NE(start.err.find("only root or a process with CAP_PERFMON may create"), std::string::npos)
      << start.err;
  EXPECT_FALSE(sys::Tree(tmp_.path()).exists("other")) << "no run directory was made";
}

// 1,000 random and truncated messages, some on fresh connections and some
// on a long-lived one, some left half-sent: the broker stays up and serves
// list exactly as before.
TEST_F(PersistentBroker, SurvivesAThousandHostileMessages) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "a"}).status, 0);
  ASSERT_EQ(pp({"create", "-e", "cpu-clock", "--name", "b", "-m", "4"}).status, 0);
  CommandResult before = pp({"list", "--json"});  // no ages, no counts: nothing that moves
  ASSERT_EQ(before.status, 0);
  pid_t pid = broker_pid();

  std::mt19937 rng(20241202);
  auto random_bytes = [&](size_t n) {
    std::string s(n, '\0');
    for (char& c : s)
      c = char(rng());
    return s;
  };
  const std::vector<std::string> payloads = {
      "{\"op\":\"list\"}", "{\"op\":\"create\",\"event\":\"syscalls:sys_enter_getppid\"}",
      "{\"op\":\"kill\",\"ref\":\"a\"}", "{\"op\":\"open\",\"id\":1,\"cpu\":0}"};
  std::string socket = run_dir_ + "/broker.sock";
  auto persistent = sys::UnixSocket::connect(socket);
  ASSERT_TRUE(persistent.ok());
  ASSERT_TRUE(persistent->set_nonblocking(true).ok());
  std::vector<sys::UnixSocket> held;
  int sent = 0;
  for (int i = 0; i < 1000; i++) {
    std::string message;
    switch (rng() % 6) {
      case 0:  // noise
        message = random_bytes(1 + rng() % 300);
        break;
      case 1:  // a valid header, a random payload
        message =
            persistent::encode_frame(persistent::FrameKind::kRequest, random_bytes(rng() % 200));
        break;
      case 2: {  // a real request with bytes flipped
        message = persistent::encode_frame(persistent::FrameKind::kRequest,
                                           payloads[rng() % payloads.size()]);
        for (int k = 0; k < 3; k++)
          message[rng() % message.size()] = char(rng());
        break;
      }
      case 3: {  // a real request, truncated
        std::string full = persistent::encode_frame(persistent::FrameKind::kRequest,
                                                    payloads[rng() % payloads.size()]);
        message = full.substr(0, rng() % full.size());
        break;
      }
      case 4: {  // a header that lies about its length or version
        message = persistent::encode_frame(persistent::FrameKind::kRequest, "{}");
        message[4 + rng() % 8] = char(rng());
        break;
      }
      default:  // JSON that is almost a request
        message = persistent::encode_frame(
            persistent::FrameKind::kRequest,
            "{\"op\":\"" + random_bytes(rng() % 8) + "\",\"id\":" + std::to_string(rng()) + "}");
        break;
    }
    if (message.empty())
      message = "\x01";
    auto bytes =
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(message.data()), message.size());
    if (i % 5 == 0) {  // on the long-lived connection, which the broker may close
      if (persistent->valid() && !persistent->send_some(bytes).ok())
        persistent->close();
      continue;
    }
    auto s = sys::UnixSocket::connect(socket);
    ASSERT_TRUE(s.ok()) << "message " << i << ": " << s.error().message();
    ASSERT_TRUE(s->set_timeouts(2000).ok());
    if (s->send(bytes).ok())
      sent++;
    if (i % 50 == 1)
      held.push_back(std::move(*s));  // left open mid-message
  }
  EXPECT_GT(sent, 700);
  CommandResult after = pp({"list", "--json"});
  EXPECT_EQ(after.status, 0) << after.err;
  EXPECT_EQ(after.out, before.out) << "the registry is what it was";
  EXPECT_EQ(broker_pid(), pid);
  EXPECT_TRUE(sys::process_exists(pid)) << "the broker died";
  json doc = list_json();
  ASSERT_EQ(doc["events"].size(), 2u);
  EXPECT_EQ(doc["events"][0]["counts"].size(), 2u) << "and still counts";
}

// The registry survives the broker: after SIGTERM and after SIGKILL a new
// broker lists the same ids and names, and says their buffers restarted.
TEST_F(PersistentBroker, RestartAfterSigtermAndSigkillKeepsIdsAndNames) {
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "ras"}).status, 0);
  ASSERT_EQ(pp({"create", "-e", "cpu-clock", "-m", "8", "-C", "1"}).status, 0);
  ASSERT_EQ(pp({"create", "-e", "syscalls:sys_enter_getpid", "--name", "gone"}).status, 0);
  ASSERT_EQ(pp({"kill", "gone"}).status, 0);
  auto ids_and_names = [&]() {
    std::vector<std::pair<int, std::string>> out;
    json doc = list_json();
    for (const json& e : doc["events"])
      out.emplace_back(e["id"].get<int>(), e["name"].get<std::string>());
    return out;
  };
  const std::vector<std::pair<int, std::string>> expected = {{1, "ras"}, {2, "2"}};
  ASSERT_EQ(ids_and_names(), expected);

  for (int signal : {SIGTERM, SIGKILL}) {
    SCOPED_TRACE(signal == SIGTERM ? "SIGTERM" : "SIGKILL");
    pid_t old = broker_pid();
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // so buffer_start moves on
    stop_broker(signal);
    ASSERT_FALSE(sys::process_exists(old));
    // The broker is down: list says so (8) and shows its saved events down.
    CommandResult none = pp({"list"});
    EXPECT_EQ(none.status, exit_status_of(ErrorKind::kBrokerDown));
    EXPECT_NE(none.err.find("its 2 saved event(s) are down"), std::string::npos) << none.err;
    EXPECT_NE(none.out.find("1   ras"), std::string::npos) << none.out;
    EXPECT_NE(none.out.find("down"), std::string::npos) << none.out;

    CommandResult daemon = pp({"daemon"});
    ASSERT_EQ(daemon.status, 0) << daemon.err;
    EXPECT_NE(broker_pid(), old);
    EXPECT_EQ(ids_and_names(), expected);
    json doc = list_json();
    for (const json& e : doc["events"]) {
      EXPECT_EQ(e["state"], "running") << e.dump();
      EXPECT_TRUE(e["restarted"].get<bool>()) << e.dump();
      EXPECT_GT(e["buffer_start"].get<int64_t>(), e["created"].get<int64_t>());
    }
    EXPECT_EQ(doc["events"][1]["cpus"], json::array({1}));
    EXPECT_EQ(doc["events"][1]["pages"], 8);
    CommandResult text = pp({"list"});
    EXPECT_NE(text.out.find("*\n"), std::string::npos) << text.out;
    EXPECT_NE(text.err.find("the buffers restarted"), std::string::npos) << text.err;
    EXPECT_NE(text.err.find("broker restart"), std::string::npos) << text.err;
  }
  CommandResult next = pp({"create", "-e", "syscalls:sys_enter_getpid"});
  EXPECT_EQ(next.out, "4\n") << "id 3 (killed) is never reused";
}

// A reader holding an event's buffer keeps its mapping after the event is
// killed, but kill disables the event first: nothing made after the kill
// reaches it (tests/kernel/broker_integrity_test.cpp counts samples).
TEST_F(PersistentBroker, KilledEventStopsWritingForItsReader) {
  GetppidCaller caller(100);
  std::string filter = "common_pid == " + std::to_string(caller.pid());
  ASSERT_EQ(
      pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "r", "--filter", filter}).status,
      0);
  persistent::BackendOptions options;
  options.run_dir = run_dir_;
  persistent::BrokerBackend reader(options);
  auto buffer = reader.open(1, 0);
  ASSERT_TRUE(buffer.ok()) << buffer.error().message();
  EXPECT_EQ(buffer->layout, persistent::Layout::kBackward);
  auto map = sys::real_kernel().mmap(buffer->fd.get(), buffer->mmap_length, PROT_READ);
  ASSERT_TRUE(map.ok()) << map.error().message();
  EXPECT_EQ(list_json()["events"][0]["readers"], 1);

  ASSERT_EQ(pp({"kill", "r"}).status, 0);
  EXPECT_TRUE(list_json()["events"].empty());
  auto* page = reinterpret_cast<const perf_event_mmap_page*>(map->data());
  uint64_t head_before = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
  ASSERT_TRUE(caller.run());
  uint64_t head_after = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
  EXPECT_EQ(head_after, head_before) << "the killed event kept writing for its reader";
  auto reading =
      sys::read_event(sys::real_kernel(), buffer->fd.get(), PERF_FORMAT_TOTAL_TIME_ENABLED);
  ASSERT_TRUE(reading.ok()) << reading.error().message();
  EXPECT_EQ(reading->value, 0u);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// How `child` ended, if it did within `ms`.
std::optional<sys::ExitStatus> ended_within(sys::Child& child, int ms) {
  for (int waited = 0; waited <= ms; waited += 20) {
    auto done = child.try_wait();
    if (!done.ok() || *done)
      return done.ok() ? *done : std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

// A record of `events` into `file` in the background (its stderr in
// file.err, its --json in file.json), once it is attached.
std::optional<sys::Child> following_record(const std::string& run_dir,
                                           const std::vector<std::string>& events,
                                           const std::string& file) {
  std::string cmd = "exec '" + binary_path() + "' record";
  for (const std::string& e : events)
    cmd += " -e persistent/" + e + "/";
  cmd += " -o '" + file + "' --json='" + file + ".json' --run-dir='" + run_dir + "' 2>'" + file +
         ".err'";
  auto spawned = sys::Child::spawn({"sh", "-c", cmd});
  EXPECT_TRUE(spawned.ok()) << spawned.error().message();
  if (!spawned.ok())
    return std::nullopt;
  EXPECT_TRUE(wait_for_record_start(file)) << slurp(file + ".err");
  return std::move(*spawned);
}

// The kill disables the event, but a follower's own fd keeps it and never
// hangs up: the broker's hangup pipe, closed when the event goes, says so
// instead. A record following two perf-backend events goes on when one is
// killed and ends once the other is, after draining its rings: every call
// made before the kills is in its file, once per event. About 2 s.
TEST_F(PersistentBroker, AFollowingRecordEndsOnceEveryEventIsKilled) {
  GetppidCaller caller(300);
  ASSERT_GT(caller.pid(), 0);
  for (const char* event : {"hupa", "hupb"}) {
    CommandResult created = pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", event, "-C",
                                "0", "--filter", caller.filter()});
    ASSERT_EQ(created.status, 0) << created.err;
  }
  std::string file = tmp_.path("hup.data"), err = file + ".err";
  std::optional<sys::Child> rec = following_record(run_dir_, {"hupa", "hupb"}, file);
  ASSERT_TRUE(rec);
  ASSERT_TRUE(caller.run());
  ASSERT_EQ(pp({"kill", "hupa"}).status, 0);
  EXPECT_FALSE(ended_within(*rec, 500)) << "one event is left to follow: " << slurp(err);
  ASSERT_EQ(pp({"kill", "hupb"}).status, 0);
  std::optional<sys::ExitStatus> ended = ended_within(*rec, 3000);
  ASSERT_TRUE(ended) << "record still follows events that were killed: " << slurp(err);
  EXPECT_TRUE(ended->success()) << ended->describe() << ": " << slurp(err);
  EXPECT_NE(slurp(err).find("every event followed is gone"), std::string::npos) << slurp(err);
  json doc = json::parse(slurp(file + ".json"), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << slurp(file + ".json");
  EXPECT_EQ(doc["exit_reason"], "events-gone") << doc;
  std::string script_err;
  EXPECT_EQ(perf_script_count(file, caller.pid(), &script_err), 600) << script_err;
}

// The old broker's pipe closes at a `daemon --replace` too, but the new
// broker serves the same kernel event: the record asks it, takes its pipe
// and goes on, with the calls made before and after the handover, and ends
// at the kill. About 2 s.
TEST_F(PersistentBroker, AFollowingRecordGoesOnAcrossAReplaceAndEndsAtTheKill) {
  GetppidCaller before(200), after(200);
  ASSERT_GT(before.pid(), 0);
  ASSERT_GT(after.pid(), 0);
  CommandResult created = pp({"create", "-e", "syscalls:sys_enter_getppid", "--name", "hupr", "-C",
                              "0", "--filter", before.filter() + " || " + after.filter()});
  ASSERT_EQ(created.status, 0) << created.err;
  std::string file = tmp_.path("replace.data"), err = file + ".err";
  std::optional<sys::Child> rec = following_record(run_dir_, {"hupr"}, file);
  ASSERT_TRUE(rec);
  ASSERT_TRUE(before.run());
  pid_t old = broker_pid();
  CommandResult replaced = pp({"daemon", "--replace"});
  ASSERT_EQ(replaced.status, 0) << replaced.err;
  for (int i = 0; i < 250 && sys::process_exists(old); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(sys::process_exists(old)) << "the old broker never exited";
  EXPECT_FALSE(ended_within(*rec, 500)) << "record ended at the handover: " << slurp(err);
  EXPECT_NE(slurp(err).find("following the same events through the new one"), std::string::npos)
      << slurp(err);
  ASSERT_TRUE(after.run());
  ASSERT_EQ(pp({"kill", "hupr"}).status, 0);
  std::optional<sys::ExitStatus> ended = ended_within(*rec, 3000);
  ASSERT_TRUE(ended) << "record still follows an event that was killed: " << slurp(err);
  json doc = json::parse(slurp(file + ".json"), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << slurp(file + ".json");
  EXPECT_EQ(doc["exit_reason"], "events-gone") << doc;
  std::string script_err;
  EXPECT_EQ(perf_script_count(file, before.pid(), &script_err), 200) << script_err;
  EXPECT_EQ(perf_script_count(file, after.pid(), &script_err), 200) << script_err;
}

}  // namespace
}  // namespace pp::testing

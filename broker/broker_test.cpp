// The broker in-process, driven one loop pass at a time (serve_once), with
// clients on raw sockets: what it publishes, how it answers good, bad and
// hostile requests, and who may do what. Creating real events needs a kernel:
// these tests use kernels that refuse (the fake kernel's tests, in
// broker_fake_kernel_test.cpp, and tests/kernel/ cover the rest).
#include "broker/broker.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <map>

#include "persistent/event_json.h"
#include "persistent/protocol.h"
#include "persistent/testing/test_doubles.h"
#include "sys/tree.h"
#include "tests/support/temp_dir.h"

namespace pp::broker {
namespace {

class BrokerTest : public ::testing::Test {
 protected:
  BrokerTest() {
    sysfs_.write("devices/system/cpu/online", "0-1\n");
    config_.run_dir = tmp_.path("run");
    config_.sysfs_root = sysfs_.path();
    config_.kernel = &kernel_;
    config_.resolver = &resolver_;
    config_.clock = [] { return int64_t(1700000000); };
  }

  std::unique_ptr<Broker> start() {
    auto broker = Broker::start(config_);
    EXPECT_TRUE(broker.ok()) << broker.error().message();
    return broker.ok() ? std::move(*broker) : nullptr;
  }

  void pump(Broker& broker, int passes = 5) {
    for (int i = 0; i < passes; i++) {
      auto r = broker.serve_once(-1, 5);
      ASSERT_TRUE(r.ok()) << r.error().message();
    }
  }

  sys::UnixSocket connect() {
    auto s = sys::UnixSocket::connect(config_.run_dir + "/broker.sock");
    EXPECT_TRUE(s.ok()) << s.error().message();
    EXPECT_TRUE(s->set_timeouts(2000).ok());
    return std::move(*s);
  }

  static void send_raw(sys::UnixSocket& s, const std::string& bytes) {
    ASSERT_TRUE(s.send(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                bytes.size()))
                    .ok());
  }

  static void send_request(sys::UnixSocket& s, const std::string& payload) {
    send_raw(s, persistent::encode_frame(persistent::FrameKind::kRequest, payload));
  }

  // Pumps the broker until a whole reply arrives: its body, or its error.
  Result<json> reply(Broker& broker, sys::UnixSocket& s) {
    PP_ASSIGN_OR_RETURN(std::string payload, raw_reply(broker, s));
    return persistent::decode_reply(payload);
  }

  // Pumps the broker until a whole reply arrives: its payload as sent.
  Result<std::string> raw_reply(Broker& broker, sys::UnixSocket& s) {
    // One reader per connection: a receive may bring the next reply too.
    persistent::FrameReader& reader =
        readers_.try_emplace(s.fd(), persistent::FrameKind::kReply, persistent::kMaxReplyPayload)
            .first->second;
    (void)s.set_nonblocking(true);
    for (int i = 0; i < 400; i++) {
      auto frame = reader.next();
      if (!frame.ok())
        return frame.error();
      if (frame->has_value())
        return **frame;
      pump(broker, 1);
      uint8_t buf[65536];
      auto n = s.receive(buf, nullptr);
      if (n.ok() && *n == 0)
        return Error(ECONNRESET, "closed without a reply");
      if (n.ok())
        reader.append(std::span<const uint8_t>(buf, *n));
    }
    return Error(ETIMEDOUT, "no reply");
  }

  // Whether the broker closed this connection (after any reply).
  bool closed(Broker& broker, sys::UnixSocket& s) {
    (void)s.set_nonblocking(true);
    for (int i = 0; i < 100; i++) {
      pump(broker, 1);
      uint8_t buf[4096];
      auto n = s.receive(buf, nullptr);
      if (n.ok() && *n == 0)
        return true;
      if (!n.ok() && n.error().code() != EAGAIN)
        return true;
    }
    return false;
  }

  ::pp::testing::TempDir tmp_, sysfs_;
  std::map<int, persistent::FrameReader> readers_;
  persistent::testing::RefusingKernel kernel_{EACCES};
  persistent::testing::TestResolver resolver_;
  BrokerConfig config_;
};

TEST_F(BrokerTest, StartPublishesTheRegistryAndListens) {
  auto broker = start();
  ASSERT_TRUE(broker);
  sys::Tree run(config_.run_dir);
  EXPECT_EQ(*run.read("devices/persistent/type"), "4294901760\n");
  EXPECT_EQ(*run.read("devices/persistent/format/persistent"), "attr5:23\n");
  EXPECT_TRUE(run.list("devices/persistent/events")->empty());
  EXPECT_NE(run.read("state.json")->find("\"next_id\": 1"), std::string::npos);
  struct stat st;
  ASSERT_EQ(::stat(config_.run_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((config_.run_dir + "/broker.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(broker->start_summary(), "0 events restored");
}

TEST_F(BrokerTest, OneBrokerPerRunDirectory) {
  auto first = start();
  ASSERT_TRUE(first);
  auto second = Broker::start(config_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), EBUSY);
  EXPECT_NE(second.error().message().find("a broker already serves " + config_.run_dir),
            std::string::npos)
      << second.error().message();
  EXPECT_NE(second.error().message().find("pid " + std::to_string(::getpid())), std::string::npos);
  // The refused one removed nothing of the first's.
  auto s = connect();
  send_request(s, "{\"op\":\"ping\"}");
  auto r = reply(*first, s);
  ASSERT_TRUE(r.ok()) << r.error().message();
}

TEST_F(BrokerTest, StopRemovesSocketAndPublishedEventsKeepsState) {
  {
    auto broker = start();
    ASSERT_TRUE(broker);
  }
  sys::Tree run(config_.run_dir);
  EXPECT_FALSE(run.exists("broker.sock"));
  EXPECT_TRUE(run.exists("state.json"));
  auto again = start();
  EXPECT_TRUE(again) << "a stopped broker's directory is reusable";
}

TEST_F(BrokerTest, PingAndEmptyList) {
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  send_request(s, "{\"op\":\"ping\"}");
  auto ping = reply(*broker, s);
  ASSERT_TRUE(ping.ok()) << ping.error().message();
  EXPECT_EQ((*ping)["pid"], ::getpid());
  EXPECT_EQ((*ping)["protocol"], 3);
  EXPECT_EQ((*ping)["run_dir"], config_.run_dir);
  send_request(s, "{\"op\":\"list\",\"verbose\":true}");
  auto list = reply(*broker, s);
  ASSERT_TRUE(list.ok()) << list.error().message();
  EXPECT_EQ((*list)["events"], json::array());
}

// The bytes of the replies that carry no event (Documentation/protocol.txt):
// a plain list is the events serialised once each, "ok" first.
TEST_F(BrokerTest, ReplyBytes) {
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  const std::pair<std::string, std::string> cases[] = {
      {"{\"op\":\"list\"}", "{\"ok\":true,\"events\":[]}"},
      {"{\"op\":\"list\",\"verbose\":true}", "{\"ok\":true,\"events\":[]}"},
      {"{\"op\":\"ping\"}", "{\"events\":0,\"ok\":true,\"pid\":" + std::to_string(::getpid()) +
                                ",\"protocol\":3,\"run_dir\":\"" + config_.run_dir + "\"}"},
  };
  for (const auto& [request, expected] : cases) {
    send_request(s, request);
    auto payload = raw_reply(*broker, s);
    ASSERT_TRUE(payload.ok()) << request << ": " << payload.error().message();
    EXPECT_EQ(*payload, expected) << request;
  }
}

TEST_F(BrokerTest, PipelinedRequestsAreAnsweredInOrder) {
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  std::string three;
  for (int i = 0; i < 3; i++)
    three += persistent::encode_frame(persistent::FrameKind::kRequest,
                                      i == 1 ? "{\"op\":\"list\"}" : "{\"op\":\"ping\"}");
  send_raw(s, three);
  auto a = reply(*broker, s);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->contains("pid"));
  auto b = reply(*broker, s);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->contains("events"));
  auto c = reply(*broker, s);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->contains("pid"));
}

TEST_F(BrokerTest, MalformedRequestGetsAnErrorAndTheConnectionStays) {
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  for (const char* bad : {"{not json", "{\"op\":\"explode\"}", "{\"op\":\"open\",\"id\":1}"}) {
    send_request(s, bad);
    auto r = reply(*broker, s);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), EINVAL) << bad << ": " << r.error().message();
  }
  send_request(s, "{\"op\":\"ping\"}");
  EXPECT_TRUE(reply(*broker, s).ok());
}

TEST_F(BrokerTest, CorruptStreamsGetAnErrorThenTheConnectionCloses) {
  auto broker = start();
  ASSERT_TRUE(broker);
  std::string future_version =
      persistent::encode_frame(persistent::FrameKind::kRequest, "{\"op\":\"ping\"}");
  future_version[4] = 4;
  std::string huge = persistent::encode_frame(persistent::FrameKind::kRequest, "").substr(0, 8) +
                     std::string("\0\0\0\x7f", 4);
  struct Case {
    std::string bytes;
    int code;
    const char* expect;
  } cases[] = {
      {"GET / HTTP/1.1\r\n\r\n", EPROTO, "bad magic"},
      {future_version, EPROTONOSUPPORT, "version 4 is not spoken here"},
      {persistent::encode_frame(persistent::FrameKind::kReply, "{}"), EPROTO, "out of order"},
      {huge, EMSGSIZE, "over the limit"},
  };
  for (const Case& c : cases) {
    auto s = connect();
    send_raw(s, c.bytes);
    auto r = reply(*broker, s);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), c.code) << r.error().message();
    EXPECT_NE(r.error().message().find(c.expect), std::string::npos) << r.error().message();
    EXPECT_TRUE(closed(*broker, s));
  }
  EXPECT_EQ(broker->client_count(), 0u);
}

TEST_F(BrokerTest, StalledClientIsDroppedAndOthersAreServed) {
  config_.stall_timeout_ms = 50;
  auto broker = start();
  ASSERT_TRUE(broker);
  auto stalled = connect();
  send_raw(
      stalled,
      persistent::encode_frame(persistent::FrameKind::kRequest, "{\"op\":\"ping\"}").substr(0, 15));
  auto other = connect();
  send_request(other, "{\"op\":\"ping\"}");
  EXPECT_TRUE(reply(*broker, other).ok());
  ::usleep(100 * 1000);
  EXPECT_TRUE(closed(*broker, stalled));
  send_request(other, "{\"op\":\"list\"}");
  EXPECT_TRUE(reply(*broker, other).ok()) << "an idle complete client is not stalled";
}

// Full of a privileged user's own connections (the 1000 hostile messages of
// the real-kernel test leave such), the broker still serves a privileged
// newcomer: the longest-idle connection makes room.
TEST_F(BrokerTest, AFullBrokerStillServesAPrivilegedClient) {
  config_.max_clients = 2;
  auto broker = start();
  ASSERT_TRUE(broker);
  auto a = connect();
  auto b = connect();
  pump(*broker);
  send_request(b, "{\"op\":\"ping\"}");
  ASSERT_TRUE(reply(*broker, b).ok());
  auto c = connect();
  send_request(c, "{\"op\":\"ping\"}");
  auto r = reply(*broker, c);
  EXPECT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(broker->client_count(), 2u);
  send_request(b, "{\"op\":\"ping\"}");
  EXPECT_TRUE(reply(*broker, b).ok()) << "the more recently active one stays";
  EXPECT_FALSE(reply(*broker, a).ok()) << "the longest idle made room";
}

TEST_F(BrokerTest, DescriptorsSentToTheBrokerAreClosed) {
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  sys::Fd read_end(p[0]), write_end(p[1]);
  std::string frame =
      persistent::encode_frame(persistent::FrameKind::kRequest, "{\"op\":\"ping\"}");
  int fds[] = {read_end.get()};
  ASSERT_TRUE(
      s.send(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(frame.data()), frame.size()),
             fds)
          .ok());
  read_end.reset();
  EXPECT_TRUE(reply(*broker, s).ok());
  ::signal(SIGPIPE, SIG_IGN);
  EXPECT_EQ(::write(write_end.get(), "x", 1), -1) << "the broker kept a client's fd";
  EXPECT_EQ(errno, EPIPE);
}

TEST_F(BrokerTest, KernelRefusalIsExplainedAndChangesNothing) {
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  send_request(s, persistent::encode_request([] {
                 persistent::Request r;
                 r.op = persistent::Op::kCreate;
                 r.create.event = "syscalls:sys_enter_getppid";
                 return r;
               }()));
  auto r = reply(*broker, s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), EACCES);
  EXPECT_NE(r.error().message().find("cannot open event 'syscalls:sys_enter_getppid' on CPU 0"),
            std::string::npos)
      << r.error().message();
  EXPECT_EQ(kernel_.opens, 1);
  EXPECT_TRUE(sys::Tree(config_.run_dir).list("devices/persistent/events")->empty());
  EXPECT_NE(sys::Tree(config_.run_dir).read("state.json")->find("\"next_id\": 1"),
            std::string::npos)
      << "a failed create uses no id";
}

TEST_F(BrokerTest, BadCreateRequestsAreUsageErrorsBeforeTheKernel) {
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  struct Case {
    persistent::CreateRequest request;
    const char* expect;
  } cases[] = {
      {{"nocolon", "", 0, "", ""}, "event syntax error"},
      {{"a:b", "bad name", 0, "", ""}, "invalid name 'bad name'"},
      {{"a:b", "12", 0, "", ""}, "it is a number"},
      {{"a:b", "", 3, "", ""}, "power of two"},
      {{"a:b", "", 0, "0-7", ""}, "CPU 2 is not online"},
      {{"", "", 0, "", ""}, "no event given"},
  };
  for (const Case& c : cases) {
    persistent::Request r;
    r.op = persistent::Op::kCreate;
    r.create = c.request;
    send_request(s, persistent::encode_request(r));
    auto result = reply(*broker, s);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code(), EINVAL) << result.error().message();
    EXPECT_NE(result.error().message().find(c.expect), std::string::npos)
        << result.error().message();
  }
  EXPECT_EQ(kernel_.opens, 0);
}

TEST_F(BrokerTest, UnknownEventsAreNotFound) {
  auto broker = start();
  ASSERT_TRUE(broker);
  auto s = connect();
  send_request(s, "{\"op\":\"kill\",\"ref\":\"nosuch\"}");
  auto kill = reply(*broker, s);
  ASSERT_FALSE(kill.ok());
  EXPECT_EQ(kill.error().code(), ENOENT);
  EXPECT_EQ(kill.error().message(), "no persistent event 'nosuch'; see 'perf persistent list'");
  send_request(s, "{\"op\":\"open\",\"id\":3,\"cpu\":0}");
  auto open = reply(*broker, s);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().code(), ENOENT);
}

// A saved event whose event string no longer resolves comes back "failed":
// listed with the reason, not openable, and killable.
TEST_F(BrokerTest, RestoredEventThatCannotBeRecreatedIsListedAsFailed) {
  persistent::RunDir dir(config_.run_dir);
  ASSERT_TRUE(dir.prepare().ok());
  persistent::RegistryState state;
  state.next_id = 8;
  persistent::EventInfo gone;
  gone.id = 7;
  gone.name = "gone";
  gone.event = "nolongerparses";
  gone.cpus = {0};
  gone.pages = 8;
  gone.created = 1600000000;
  state.events.push_back(gone);
  ASSERT_TRUE(persistent::save_state(dir, state).ok());

  auto broker = start();
  ASSERT_TRUE(broker);
  EXPECT_EQ(broker->start_summary(), "1 event restored (1 could not be re-created)")
      << "counted as failed";
  auto s = connect();
  send_request(s, "{\"op\":\"list\"}");
  auto list = reply(*broker, s);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ((*list)["events"].size(), 1u);
  auto e = persistent::event_from_json((*list)["events"][0], "list");
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->id, 7u);
  EXPECT_EQ(e->state, "failed");
  EXPECT_NE(e->error.find("event syntax error"), std::string::npos) << e->error;
  EXPECT_EQ(*sys::Tree(config_.run_dir).list("devices/persistent/events"),
            (std::vector<std::string>{"7", "gone"}))
      << "published by name and by id";

  send_request(s, "{\"op\":\"open\",\"id\":7,\"cpu\":0}");
  auto open = reply(*broker, s);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().code(), ENODEV);
  send_request(s, "{\"op\":\"kill\",\"ref\":\"gone\"}");
  auto kill = reply(*broker, s);
  ASSERT_TRUE(kill.ok()) << kill.error().message();
  EXPECT_TRUE(sys::Tree(config_.run_dir).list("devices/persistent/events")->empty());
  auto saved = persistent::load_state(dir);
  ASSERT_TRUE(saved.ok());
  EXPECT_TRUE(saved->events.empty());
  EXPECT_EQ(saved->next_id, 8u) << "ids are never reused";
}

TEST_F(BrokerTest, CorruptStateStopsTheStartAndSaysWhere) {
  persistent::RunDir dir(config_.run_dir);
  ASSERT_TRUE(dir.prepare().ok());
  tmp_.write("run/state.json", "{\"version\": 1, \"next_id\": \"x\"}");
  auto broker = Broker::start(config_);
  ASSERT_FALSE(broker.ok());
  EXPECT_NE(broker.error().message().find(dir.state()), std::string::npos)
      << broker.error().message();
}

// A config event the kernel refuses never stops the broker: it is listed
// as failed with the kernel's reason. An optional one that this host lacks
// is unavailable; an optional one the kernel refuses (here EACCES) is
// failed all the same: a refusal is no missing feature. A config file that
// cannot be read or parsed is a config error (exit 9).
TEST_F(BrokerTest, ConfigFileEventsAreCreatedAtStart) {
  tmp_.write("pp.conf",
             "[ras]\nevent = mce:mce_record\n[opt]\nevent = x:y\noptional = yes\n"
             "[refused]\nevent = a:b\noptional = yes\n");
  config_.config_file = tmp_.path("pp.conf");
  resolver_.absent = {"x:y"};
  {
    auto broker = start();
    ASSERT_TRUE(broker) << "a failing event does not stop the broker";
    EXPECT_EQ(kernel_.opens, 2) << "x:y never reaches the kernel";
    EXPECT_EQ(broker->start_summary(),
              "0 events restored, 2 failed, 1 unavailable (optional) from " + tmp_.path("pp.conf"));
    auto s = connect();
    send_request(s, "{\"op\": \"list\"}");
    auto listed = reply(*broker, s);
    ASSERT_TRUE(listed.ok()) << listed.error().message();
    const json& events = (*listed)["events"];
    ASSERT_EQ(events.size(), 3u) << listed->dump();
    EXPECT_EQ(events[0]["name"], "ras");
    EXPECT_EQ(events[0]["state"], "failed");
    EXPECT_EQ(events[0]["origin"], "config");
    EXPECT_NE(events[0]["error"].get<std::string>().find("perf_event_open"), std::string::npos)
        << events[0].dump();
    EXPECT_EQ(events[1]["name"], "opt");
    EXPECT_EQ(events[1]["state"], "unavailable");
    EXPECT_EQ(events[1]["optional"], true);
    EXPECT_EQ(events[2]["name"], "refused");
    EXPECT_EQ(events[2]["state"], "failed") << events[2].dump();
    EXPECT_EQ(events[2]["optional"], true);
    EXPECT_NE(events[2]["error"].get<std::string>().find("EACCES"), std::string::npos)
        << events[2].dump();
  }

  config_.config_file = tmp_.path("missing.conf");
  EXPECT_TRUE(start()) << "a missing default config file is no events";
  config_.config_required = true;
  auto required = Broker::start(config_);
  ASSERT_FALSE(required.ok());
  EXPECT_EQ(required.error().kind(), ErrorKind::kConfig);
  tmp_.write("bad.conf", "[ras]\nevent = mce:mce_record\ncolour = red\n");
  config_.config_file = tmp_.path("bad.conf");
  auto bad = Broker::start(config_);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kConfig);
  EXPECT_NE(bad.error().message().find("bad.conf:3: unknown key 'colour'"), std::string::npos)
      << bad.error().message();
}

// An unprivileged process reaches the socket (the run directory is opened up
// for the test) and is refused by SO_PEERCRED for create, kill and open; it
// may list.
TEST_F(BrokerTest, UnprivilegedPeerMayListButNotCreateKillOrOpen) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "needs root to become another user";
  auto broker = start();
  ASSERT_TRUE(broker);
  ASSERT_EQ(::chmod(tmp_.path().c_str(), 0711), 0);
  ASSERT_EQ(::chmod(config_.run_dir.c_str(), 0711), 0);
  std::string socket = config_.run_dir + "/broker.sock";
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0)
      ::_exit(10);
    auto s = sys::UnixSocket::connect(socket);
    if (!s.ok())
      ::_exit(11);
    (void)s->set_timeouts(5000);
    const char* requests[] = {
        "{\"op\":\"create\",\"event\":\"syscalls:sys_enter_getppid\"}",
        "{\"op\":\"kill\",\"ref\":\"1\"}",
        "{\"op\":\"open\",\"id\":1,\"cpu\":0}",
        "{\"op\":\"list\"}",
    };
    int expect[] = {EACCES, EACCES, EACCES, 0};
    persistent::FrameReader reader(persistent::FrameKind::kReply, persistent::kMaxReplyPayload);
    for (int i = 0; i < 4; i++) {
      std::string frame = persistent::encode_frame(persistent::FrameKind::kRequest, requests[i]);
      if (!s->send(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(frame.data()),
                                            frame.size()))
               .ok())
        ::_exit(12);
      std::optional<std::string> payload;
      while (!payload) {
        uint8_t buf[4096];
        auto n = s->receive(buf, nullptr);
        if (!n.ok() || *n == 0)
          ::_exit(13);
        reader.append(std::span<const uint8_t>(buf, *n));
        auto next = reader.next();
        if (!next.ok())
          ::_exit(14);
        payload = *next;
      }
      auto r = persistent::decode_reply(*payload);
      int got = r.ok() ? 0 : r.error().code();
      if (got != expect[i])
        ::_exit(20 + i);
      if (!r.ok() && r.error().message().find("uid 65534") == std::string::npos)
        ::_exit(30 + i);
    }
    ::_exit(0);
  }
  int status = 0;
  for (int i = 0; i < 2000; i++) {
    pump(*broker, 1);
    if (::waitpid(child, &status, WNOHANG) == child)
      break;
  }
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the exit codes in the child above";
  EXPECT_EQ(kernel_.opens, 0) << "the refused create reached the kernel";
}

}  // namespace
}  // namespace pp::broker

namespace pp::broker {
namespace {

TEST_F(BrokerTest, TemporariesOfAKilledBrokerAreRemovedAtStart) {
  persistent::RunDir dir(config_.run_dir);
  ASSERT_TRUE(dir.prepare().ok());
  tmp_.write("run/.state.json.tmp.4242", "{\"half\": ");
  tmp_.write("run/devices/persistent/.type.tmp.77", "42");
  tmp_.write("run/devices/persistent/format/.persistent.tmp.77", "attr");
  tmp_.write("run/.notes.tmp.txt", "not a temporary: kept");
  tmp_.write("run/notes.tmp.77", "not one of ours (no dot): kept");
  auto broker = start();
  ASSERT_TRUE(broker);
  sys::Tree run(config_.run_dir);
  EXPECT_FALSE(run.exists(".state.json.tmp.4242"));
  EXPECT_FALSE(run.exists("devices/persistent/.type.tmp.77"));
  EXPECT_FALSE(run.exists("devices/persistent/format/.persistent.tmp.77"));
  EXPECT_TRUE(run.exists(".notes.tmp.txt"));
  EXPECT_TRUE(run.exists("notes.tmp.77"));
}

TEST_F(BrokerTest, RunDirectoryThatIsASymlinkOrOpenToOthersIsRefused) {
  std::string real = tmp_.path("real");
  ASSERT_EQ(::mkdir(real.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(real.c_str(), config_.run_dir.c_str()), 0);
  auto linked = Broker::start(config_);
  ASSERT_FALSE(linked.ok());
  EXPECT_EQ(linked.error().code(), EPERM);
  EXPECT_NE(linked.error().message().find("symbolic link"), std::string::npos)
      << linked.error().message();
  EXPECT_FALSE(sys::Tree(real).exists("broker.sock")) << "nothing made through the link";
}

}  // namespace
}  // namespace pp::broker

// Each exit status of Documentation/perf-persistent.txt (EXIT STATUS) that
// needs no kernel, through the real binary; the rest (3, 5, 6 and perf's
// dispatcher) are in tests/kernel/exit_status_test.cpp. A fake broker (a
// socket that answers every request with one reply) shows that the broker's
// kind crosses the protocol and decides the client's status. Under --json
// every error has the one shape, even with invalid UTF-8 in what it quotes.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <thread>

#include "base/json.h"
#include "persistent/protocol.h"
#include "persistent/run_dir.h"
#include "tests/support/broker.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace pp::testing {
namespace {

// Listens at <run_dir>/broker.sock and answers each request frame with
// `reply` (a protocol payload) until destroyed.
class FakeBroker {
 public:
  FakeBroker(const std::string& run_dir, std::string reply) : reply_(std::move(reply)) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::string path = run_dir + "/broker.sock";
    path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
    ok_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
          ::listen(fd_, 8) == 0;
    if (ok_)
      thread_ = std::thread([this] { serve(); });
  }
  ~FakeBroker() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable())
      thread_.join();
    ::close(fd_);
  }
  bool ok() const { return ok_; }

 private:
  void serve() {
    while (!stop_) {
      int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0)
        return;
      persistent::FrameReader reader(persistent::FrameKind::kRequest,
                                     persistent::kMaxRequestPayload);
      uint8_t buf[4096];
      for (;;) {
        auto frame = reader.next();
        if (!frame.ok())
          break;
        if (frame->has_value()) {
          std::string out = persistent::encode_frame(persistent::FrameKind::kReply, reply_);
          if (::write(client, out.data(), out.size()) != ssize_t(out.size()))
            break;
          continue;
        }
        ssize_t n = ::read(client, buf, sizeof(buf));
        if (n <= 0)
          break;
        reader.append(std::span<const uint8_t>(buf, size_t(n)));
      }
      ::close(client);
    }
  }

  std::string reply_;
  int fd_ = -1;
  bool ok_ = false;
  std::atomic<bool> stop_ = false;
  std::thread thread_;
};

nlohmann::json parse(const std::string& text) {
  return nlohmann::json::parse(text, nullptr, false);
}

// The one error shape, with `kind` and its status.
void expect_error_shape(const CommandResult& r, const char* kind, int status) {
  EXPECT_EQ(r.status, status) << r.out << r.err;
  nlohmann::json j = parse(r.out);
  ASSERT_FALSE(j.is_discarded()) << "not JSON: " << r.out;
  ASSERT_TRUE(j.contains("error")) << r.out;
  const nlohmann::json& e = j["error"];
  EXPECT_EQ(e.size(), 4u) << r.out;
  EXPECT_EQ(e["kind"], kind) << r.out;
  EXPECT_EQ(e["exit_status"], status) << r.out;
  EXPECT_TRUE(e["errno"].is_string()) << r.out;
  EXPECT_EQ(e["errno"].get<std::string>().rfind('E', 0), 0u) << r.out;
  EXPECT_TRUE(e["message"].is_string()) << r.out;
}

std::string broker_error(ErrorKind kind, int code, const std::string& message) {
  return persistent::encode_error_reply(Error(kind, code, message));
}

class ExitStatus : public ::testing::Test {
 protected:
  // `create` starts a broker when none runs, even for a request the broker
  // then refuses: stop it, or it outlives the test and its run directory.
  void TearDown() override { EXPECT_TRUE(stop_broker(dir_.path(""))); }
  std::string run_dir() const { return "--run-dir=" + dir_.path(""); }
  TempDir dir_;
};

// A broker that answers every request with an empty list.
std::string empty_list() {
  return persistent::encode_ok_reply({{"events", nlohmann::json::array()}, {"more", false}});
}

TEST_F(ExitStatus, Status0Success) {
  EXPECT_EQ(run_pp({"version"}).status, 0);
  FakeBroker broker(dir_.path(""), empty_list());
  ASSERT_TRUE(broker.ok());
  CommandResult r = run_pp({"list", "--json", run_dir()});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(parse(r.out)["events"], nlohmann::json::array()) << r.out;
}

TEST_F(ExitStatus, Status1Usage) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"list", "--bogus"},
                                             {"create", "--json"},
                                             {"kill", "--json"},
                                             {"attr", "--json", "-e", "cpu-clock:x"},
                                             {"create", "--json", "-e", "cpu-clock", "-m", "3"}}) {
    std::vector<std::string> argv = args;
    argv.push_back(run_dir());
    CommandResult r = run_pp(argv);
    if (args[1] == "--bogus")
      EXPECT_EQ(r.status, 1) << r.err;
    else
      expect_error_shape(r, "usage", 1);
  }
}

TEST_F(ExitStatus, Status2RefusedByTheSystemOrTheBroker) {
  // A run directory that cannot be one: the system refuses (ENOTDIR).
  dir_.write("file", "");
  CommandResult r = run_pp({"list", "--json", "--run-dir", dir_.path("file/run")});
  expect_error_shape(r, "refused", 2);
  EXPECT_EQ(parse(r.out)["error"]["errno"], "ENOTDIR") << r.out;

  FakeBroker broker(dir_.path(""), broker_error(ErrorKind::kRefused, EACCES, "not for you"));
  ASSERT_TRUE(broker.ok());
  r = run_pp({"list", "--json", run_dir()});
  expect_error_shape(r, "refused", 2);
  EXPECT_EQ(parse(r.out)["error"]["errno"], "EACCES");
  EXPECT_EQ(parse(r.out)["error"]["message"], "not for you");
}

// A missing input file is status 2 in every verb that reads one, the
// history (report --db) as a perf.data (report -i) or a log (decode --log);
// 4 is kept for a missing persistent event.
TEST_F(ExitStatus, Status2ForAMissingInputFileInEveryVerb) {
  std::string missing = dir_.path("missing");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"report", "-i", missing}, {"report", "--db", missing}, {"decode", "--log", missing}}) {
    CommandResult r = run_pp(args);
    EXPECT_EQ(r.status, 2) << args[0] << " " << args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
  }
}

TEST_F(ExitStatus, Status3NameTakenAsTheBrokerSaysIt) {
  FakeBroker broker(dir_.path(""), broker_error(ErrorKind::kNameTaken, EEXIST, "taken"));
  ASSERT_TRUE(broker.ok());
  CommandResult r = run_pp({"create", "-e", "cpu-clock", "--name", "x", run_dir()});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.err, "perf persistent create: taken\n");
}

TEST_F(ExitStatus, Status4NotFound) {
  FakeBroker broker(dir_.path(""), empty_list());
  ASSERT_TRUE(broker.ok());
  CommandResult r = run_pp({"kill", "nosuch", run_dir()});
  EXPECT_EQ(r.status, 4) << r.err;
  r = run_pp({"kill", "--json", "nosuch", run_dir()});
  EXPECT_EQ(r.status, 4) << r.err;
  nlohmann::json j = parse(r.out);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["exit_status"], 4);
  ASSERT_EQ(j["errors"].size(), 1u) << r.out;
  EXPECT_EQ(j["errors"][0]["ref"], "nosuch");
  EXPECT_EQ(j["errors"][0]["error"]["kind"], "not-found");
  EXPECT_EQ(j["errors"][0]["error"]["exit_status"], 4);
  EXPECT_EQ(j["errors"][0]["error"]["errno"], "ENOENT");
}

// No broker runs: every command that needs it says so with status 8 and
// kind broker-down, apart from "no such event" (4); list shows what the
// registry holds as down.
TEST_F(ExitStatus, Status8BrokerDown) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"list"},
           {"kill", "x"},
           {"kill", "--all"},
           {"record", "-e", "persistent/x/", "-o", dir_.path("out.data"), "--", "true"},
           {"top", "--stdio"},
           {"report", "-e", "persistent/x/"}}) {
    std::vector<std::string> argv = args;
    // After the verb: record's COMMAND (after --) must not take it.
    argv.insert(argv.begin() + 1, run_dir());
    CommandResult r = run_pp(argv);
    EXPECT_EQ(r.status, 8) << args[0] << " " << args[1] << ": " << r.err;
    EXPECT_NE(r.err.find("the broker is not running"), std::string::npos) << r.err;
    argv.insert(argv.begin() + 1, "--json");
    if (args[0] == "top")
      argv = {"top", "--json", run_dir()};
    if (args[0] == "list" || args[0] == "kill" || args[0] == "top" || args[0] == "record") {
      r = run_pp(argv);
      EXPECT_EQ(r.status, 8) << r.err;
      nlohmann::json j = parse(args[0] == "record" ? r.err : r.out);  // record's is on stderr
      ASSERT_FALSE(j.is_discarded()) << args[0] << ": " << r.out;
      const nlohmann::json& e = j.contains("error") ? j["error"] : j["errors"][0]["error"];
      EXPECT_EQ(e["kind"], "broker-down") << r.out;
      EXPECT_EQ(e["exit_status"], 8) << r.out;
    }
  }
  // A registry the broker saved before it stopped: its events are down.
  persistent::RunDir run(dir_.path(""));
  ASSERT_TRUE(run.prepare().ok());
  persistent::RegistryState state;
  state.next_id = 2;
  persistent::EventInfo e;
  e.id = 1;
  e.name = "mce";
  e.event = "mce:mce_record";
  e.cpus = {0, 1};
  e.pages = 8;
  e.page_size = 4096;
  state.events.push_back(e);
  ASSERT_TRUE(persistent::save_state(run, state).ok());
  CommandResult r = run_pp({"list", run_dir()});
  EXPECT_EQ(r.status, 8) << r.err;
  EXPECT_NE(r.out.find("1   mce   mce:mce_record  0-1   down"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("its 1 saved event(s) are down"), std::string::npos) << r.err;
  r = run_pp({"list", "--json", run_dir()});
  EXPECT_EQ(r.status, 8) << r.err;
  nlohmann::json j = parse(r.out);
  EXPECT_EQ(j["broker"], "down") << r.out;
  EXPECT_EQ(j["error"]["kind"], "broker-down") << r.out;
  ASSERT_EQ(j["events"].size(), 1u) << r.out;
  EXPECT_EQ(j["events"][0]["name"], "mce");
  EXPECT_EQ(j["events"][0]["state"], "down");
}

TEST_F(ExitStatus, Status7InternalAsTheBrokerSaysIt) {
  FakeBroker broker(dir_.path(""), broker_error(ErrorKind::kInternal, EINVAL, "a bug"));
  ASSERT_TRUE(broker.ok());
  CommandResult r = run_pp({"list", "--json", run_dir()});
  expect_error_shape(r, "internal", 7);
  r = run_pp({"kill", "1", run_dir()});
  EXPECT_EQ(r.status, 7) << r.err;
}

// The same shape from every command, for the same error.
TEST_F(ExitStatus, OneErrorShapeAcrossCommands) {
  FakeBroker broker(dir_.path(""), broker_error(ErrorKind::kRefused, EPERM, "no"));
  ASSERT_TRUE(broker.ok());
  nlohmann::json list = parse(run_pp({"list", "--json", run_dir()}).out);
  nlohmann::json create = parse(run_pp({"create", "--json", "-e", "cpu-clock", run_dir()}).out);
  EXPECT_EQ(list, create);
  EXPECT_EQ(list, parse(dump_json(error_json(Error(EPERM, "no")))));
  nlohmann::json attr = parse(run_pp({"attr", "--json", "-e", "cpu-clock:x"}).out);
  ASSERT_TRUE(attr.contains("error"));
  for (const auto& [key, value] : list["error"].items())
    EXPECT_TRUE(attr["error"].contains(key)) << key;
  EXPECT_EQ(attr["error"].size(), list["error"].size());
}

// Invalid UTF-8 on every --json path: valid JSON, each bad byte as \xNN, and
// the status of the error's kind.
TEST_F(ExitStatus, InvalidUtf8OnEveryJsonPath) {
  CommandResult r = run_pp({"attr", "-j", "-e", "\xff"});
  expect_error_shape(r, "usage", 1);
  EXPECT_NE(parse(r.out)["error"]["message"].get<std::string>().find("'\\xff'"), std::string::npos)
      << r.out;

  r = run_pp({"create", "--json", "-e", "cpu-clock", "--name", "n\xfe", run_dir()});
  expect_error_shape(r, "usage", 1);
  EXPECT_NE(parse(r.out)["error"]["message"].get<std::string>().find("n\\xfe"), std::string::npos)
      << r.out;

  r = run_pp({"kill", "--json", "k\xc3", run_dir()});
  EXPECT_EQ(r.status, 4);
  nlohmann::json j = parse(r.out);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["errors"][0]["ref"], "k\\xc3");

  dir_.write("f\xff", "");
  r = run_pp({"list", "--json", "--run-dir", dir_.path("f\xff/run")});
  expect_error_shape(r, "refused", 2);
  EXPECT_NE(parse(r.out)["error"]["message"].get<std::string>().find("f\\xff"), std::string::npos)
      << r.out;
}

TEST_F(ExitStatus, ConfigWordsAreHexStrings) {
  CommandResult r = run_pp({"attr", "-e", "r8000000000000001", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json j = parse(r.out);
  EXPECT_EQ(j["events"][0]["attr"]["config"], "0x8000000000000001") << r.out;
  EXPECT_EQ(j["events"][0]["attr"]["words"][1], "0x8000000000000001") << r.out;
  EXPECT_TRUE(j["events"][0]["attr"]["sample_type"].is_string()) << r.out;
  EXPECT_TRUE(j["events"][0]["attr"]["size"].is_number()) << "a size stays a number";
}

}  // namespace
}  // namespace pp::testing

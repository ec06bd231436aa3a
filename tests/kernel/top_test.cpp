// `perf persistent top` on this machine's kernel, driven as a user drives it:
// its screen under tmux (keys in with send-keys, frames out with
// capture-pane, the terminal's modes compared with stty -a before and
// after), --json and --stdio read line by line while loads run, and a
// persistent cpu-clock event whose hottest symbol must be the busy loop of
// a binary built for the test.
//
// The loads are a small C program compiled at test time: the persistent
// syscall events are created with a filter on its pid, so other processes'
// calls (tests of other suites run beside these) never reach the counts,
// and every count is exact.
//
//   pp_top_load         pin to CPU 0, print "pid P", then per line on stdin:
//     ppid N            make N getppid(2) calls, print "done"
//     pgid N            make N getpgid(0) calls, print "done"
//     busy S            spin S seconds in pp_top_busy_loop(), print "done"
//
// One file for the verb's real-kernel tests, long because they share the
// load, the fixture and the tmux driver.
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "cmd/exit_codes.h"
#include "sys/child.h"
#include "tests/kernel/kernel_env.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

extern char** environ;

namespace pp::testing {
namespace {

// Ordered: the key order of a line is part of what is checked.
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kLoadSource = R"(#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    perror("sched_setaffinity");
    exit(2);
  }
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) unsigned long pp_top_busy_loop(double seconds) {
  volatile unsigned long x = 1;
  double end = now() + seconds;
  while (now() < end)
    for (int i = 0; i < 200000; i++)
      x = x * 6364136223846793005ul + 1442695040888963407ul;
  return x;
}

int main(void) {
  pin(0);
  printf("pid %d\n", (int)getpid());
  fflush(stdout);
  char what[16];
  double n;
  while (scanf("%15s %lf", what, &n) == 2) {
    if (strcmp(what, "busy") == 0)
      pp_top_busy_loop(n);
    for (long i = 0; strcmp(what, "busy") != 0 && i < (long)n; i++) {
      if (strcmp(what, "ppid") == 0)
        syscall(SYS_getppid);
      else
        syscall(SYS_getpgid, 0);
    }
    printf("done\n");
    fflush(stdout);
  }
  return 0;
}
)";

// The load binary, built once for the whole run ("" and `error` when cc
// fails).
const std::string& load_binary(std::string* error) {
  static TempDir dir;
  static std::string built, failure;
  static bool tried = false;
  if (!tried) {
    tried = true;
    dir.write("pp_top_load.c", kLoadSource);
    CommandResult r = run_command(
        {"cc", "-O1", "-fno-inline", "-o", dir.path("pp_top_load"), dir.path("pp_top_load.c")});
    if (r.status == 0)
      built = dir.path("pp_top_load");
    else
      failure =
          "cc -O1 -fno-inline pp_top_load.c: status " + std::to_string(r.status) + ": " + r.err;
  }
  if (error)
    *error = failure;
  return built;
}

// Waits up to `timeout` for `done()`, checking every 50 ms.
bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto end = Clock::now() + timeout;
  for (;;) {
    if (done())
      return true;
    if (Clock::now() >= end)
      return false;
    std::this_thread::sleep_for(50ms);
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The complete lines of a file another process is writing.
std::vector<std::string> complete_lines(const std::string& path) {
  std::string text = slurp(path);
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  return lines;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

// The load (pp_top_load), talked to through a socket pair on
// its standard input and output.
class Load {
 public:
  explicit Load(const std::string& binary) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      ADD_FAILURE() << "socketpair: " << std::strerror(errno);
      return;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, sv[1], 0);
    posix_spawn_file_actions_adddup2(&actions, sv[1], 1);
    char* argv[] = {const_cast<char*>(binary.c_str()), nullptr};
    int spawned = ::posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(sv[1]);
    fd_ = sv[0];
    if (spawned != 0) {
      ADD_FAILURE() << "posix_spawn " << binary << ": " << std::strerror(spawned);
      pid_ = -1;
      return;
    }
    std::string line = read_line();
    std::smatch m;
    if (std::regex_match(line, m, std::regex("pid ([0-9]+)")))
      serving_pid_ = pid_t(std::stol(m[1]));
    EXPECT_EQ(serving_pid_, pid_) << "the load said '" << line << "'";
  }
  ~Load() {
    if (fd_ >= 0)
      ::close(fd_);  // end of input: the load exits
    if (pid_ > 0) {
      int status = 0;
      for (int i = 0; i < 100 && ::waitpid(pid_, &status, WNOHANG) == 0; i++)
        std::this_thread::sleep_for(20ms);
      if (::waitpid(pid_, &status, WNOHANG) == 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
      }
    }
  }
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  pid_t pid() const { return serving_pid_; }

  // Makes exactly `calls` calls ("ppid" or "pgid") and returns when they
  // are made.
  void run(const std::string& what, long calls) {
    start(what, calls);
    wait();
  }
  // The same in two halves: the command, and the wait for its "done".
  void start(const std::string& what, long n) {
    std::string command = what + " " + std::to_string(n) + "\n";
    ASSERT_EQ(::send(fd_, command.data(), command.size(), MSG_NOSIGNAL), ssize_t(command.size()))
        << "the load is gone";
  }
  void wait() { EXPECT_EQ(read_line(), "done") << "the load did not finish its command"; }
  // Whether the command started is done (the load said so).
  bool done() const {
    pollfd p = {fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }

 private:
  // One line from the load, waiting up to 20 s.
  std::string read_line() {
    std::string line;
    for (;;) {
      pollfd p = {fd_, POLLIN, 0};
      if (::poll(&p, 1, 20000) <= 0)
        return line + "[no answer from the load in 20 s]";
      char c;
      if (::read(fd_, &c, 1) != 1)
        return line + "[the load closed its output]";
      if (c == '\n')
        return line;
      line += c;
    }
  }

  pid_t pid_ = -1;
  pid_t serving_pid_ = -1;
  int fd_ = -1;
};

// The persistent syscall events of these tests: only the load's calls,
// 4 MiB a CPU so a burst of 12345 records is never overwritten before top
// drains it.
class Top : public PrivateBrokerTest {
 protected:
  void SetUp() override {
    PrivateBrokerTest::SetUp();
    if (IsSkipped())
      return;
    PP_SKIP_UNLESS(tracepoint_id("syscalls", "sys_enter_getpgid") >= 0,
                   "no syscalls:sys_enter_getpgid in tracefs");
    std::string error;
    load_ = load_binary(&error);
    ASSERT_FALSE(load_.empty()) << error;
  }

  void TearDown() override {
    background_.clear();  // SIGTERM and reap a top still running
    PrivateBrokerTest::TearDown();
  }

  // A persistent `tracepoint` named `name` that records only `pid`'s calls.
  void create_for(const std::string& name, const std::string& tracepoint, pid_t pid) {
    CommandResult r = pp({"create", "-e", tracepoint, "--name", name, "--filter",
                          "common_pid == " + std::to_string(pid), "-m", "1024"});
    ASSERT_EQ(r.status, 0) << r.err;
  }

  // perf-persistent top ARGS in the background, its output in `out`.
  sys::Child& start_top(const std::vector<std::string>& args, const std::string& out) {
    std::string cmd = "exec '" + binary_path() + "' top";
    for (const std::string& a : args)
      cmd += " '" + a + "'";
    cmd += " '--run-dir=" + run_dir_ + "' >'" + out + "' 2>'" + out + ".err'";
    auto child = sys::Child::spawn({"sh", "-c", cmd});
    EXPECT_TRUE(child.ok()) << child.error().message();
    background_.push_back(std::move(child).value());
    return background_.back();
  }

  // SIGINT to a background top: it must exit 0 and say nothing on stderr.
  void interrupt(sys::Child& top, const std::string& out) {
    ASSERT_TRUE(top.kill(SIGINT).ok());
    auto status = top.wait();
    ASSERT_TRUE(status.ok()) << status.error().message();
    EXPECT_EQ(*status, cmd::kExitOk) << slurp(out + ".err");
    EXPECT_EQ(slurp(out + ".err"), "");
  }

  // The JSON lines of `out` (each must parse).
  static std::vector<json> json_lines(const std::string& out) {
    std::vector<json> lines;
    for (const std::string& line : complete_lines(out)) {
      json j = json::parse(line, nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << "not JSON: " << line;
      if (!j.is_discarded())
        lines.push_back(std::move(j));
    }
    return lines;
  }

  // The event named `text` ("persistent/gp/") in one JSON line, or null.
  static json event_of(const json& line, const std::string& text) {
    for (const json& e : line.value("events", json::array()))
      if (e.value("event", "") == text)
        return e;
    return nullptr;
  }

  static uint64_t total_of(const json& line, const std::string& text) {
    json e = event_of(line, text);
    return e.is_object() && e["total"].is_number_unsigned() ? e["total"].get<uint64_t>() : 0;
  }

  // Every refresh line has the documented keys, in order, of the types
  // documented; `detail`: the events carry their tracepoint tables.
  static void expect_schema(json line, bool overview, bool detail) {
    ASSERT_TRUE(line.is_object()) << line;
    std::vector<std::string> keys;
    for (auto it = line.begin(); it != line.end(); ++it)
      keys.push_back(it.key());
    EXPECT_EQ(keys, (std::vector<std::string>{"time", "interval", "overview", "events"})) << line;
    EXPECT_TRUE(std::regex_match(line.value("time", ""),
                                 std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z")))
        << line["time"];
    EXPECT_TRUE(line["interval"].is_number()) << line;
    EXPECT_EQ(line["overview"], overview);
    ASSERT_TRUE(line["events"].is_array()) << line;
    for (json e : line["events"]) {
      for (const char* key : {"event", "name", "kind"})
        EXPECT_TRUE(e[key].is_string()) << key << " in " << e;
      for (const char* key : {"id", "total", "lost"})
        EXPECT_TRUE(e[key].is_number_unsigned()) << key << " in " << e;
      for (const char* key : {"rate", "fill"})
        EXPECT_TRUE(e[key].is_number()) << key << " in " << e;
      // top is the one reader of these events.
      EXPECT_EQ(e["readers"], 1) << e;
      EXPECT_EQ(e["lost"], 0) << e;
      EXPECT_EQ(e["kind"], "tracepoint") << e;
      ASSERT_TRUE(e["cpus"].is_array()) << e;
      uint64_t sum = 0;
      for (json c : e["cpus"]) {
        for (const char* key : {"cpu", "total", "lost"})
          EXPECT_TRUE(c[key].is_number_unsigned()) << key << " in " << c;
        for (const char* key : {"rate", "fill"})
          EXPECT_TRUE(c[key].is_number()) << key << " in " << c;
        sum += c.value("total", uint64_t(0));
      }
      EXPECT_EQ(sum, e.value("total", uint64_t(0))) << "the CPUs' totals add up to the total";
      EXPECT_EQ(e.contains("top"), detail) << e;
      if (detail) {
        EXPECT_EQ(e["undecodable"], 0) << e;
        EXPECT_EQ(e["filtered"], 0) << e;
        EXPECT_EQ(e["counted"], e["total"]) << e;
        EXPECT_TRUE(e["sort"].is_array()) << e;
      }
    }
  }

  std::string load_;
  std::deque<sys::Child> background_;  // a deque: references stay valid
};

constexpr long kCalls = 12345;

TEST_F(Top, JsonCountsEveryCallExactly) {
  Load load(load_);
  ASSERT_GT(load.pid(), 0);
  create_for("gp", "syscalls:sys_enter_getppid", load.pid());
  std::string out = tmp_.path("top.json");
  sys::Child& top = start_top({"--json", "-d", "0.5", "-e", "persistent/gp/"}, out);
  ASSERT_TRUE(wait_until([&] { return !complete_lines(out).empty(); }, 10s))
      << "no first line; stderr: " << slurp(out + ".err");

  load.run("ppid", kCalls);
  ASSERT_TRUE(wait_until(
      [&] {
        auto lines = json_lines(out);
        return !lines.empty() && total_of(lines.back(), "persistent/gp/") == uint64_t(kCalls);
      },
      10s))
      << "no line showed " << kCalls << " calls; the last:\n"
      << (complete_lines(out).empty() ? "" : complete_lines(out).back());
  interrupt(top, out);

  std::vector<json> lines = json_lines(out);
  ASSERT_GE(lines.size(), 2u);
  uint64_t previous = 0;
  for (const json& line : lines) {
    expect_schema(line, /*overview=*/false, /*detail=*/true);
    EXPECT_EQ(line.value("events", json::array()).size(), 1u);
    // A refresh may fall in the burst; no count is ever more than was made.
    uint64_t total = total_of(line, "persistent/gp/");
    EXPECT_LE(total, uint64_t(kCalls)) << line;
    EXPECT_GE(total, previous) << "totals never go down";
    previous = total;
  }
  // The first frame comes at once, before any call; every later one about
  // -d apart.
  EXPECT_EQ(total_of(lines.front(), "persistent/gp/"), 0u);
  EXPECT_EQ(lines.front()["interval"], 0.0);
  for (size_t i = 1; i < lines.size(); ++i)
    EXPECT_NEAR(lines[i]["interval"].get<double>(), 0.5, 0.25) << lines[i];

  json gp = event_of(lines.back(), "persistent/gp/");
  EXPECT_EQ(gp["name"], "syscalls:sys_enter_getppid");
  EXPECT_EQ(gp["total"], kCalls);
  // The load is pinned to CPU 0: all of it there.
  for (json c : gp["cpus"])
    EXPECT_EQ(c["total"], c["cpu"] == 0 ? kCalls : 0) << c;
  // The default table of an event without a text field counts by pid.
  EXPECT_EQ(gp["sort"], json::array({"pid"}));
  ASSERT_EQ(gp["top"].size(), 1u) << gp;
  EXPECT_EQ(gp["top"][0]["values"]["pid"], std::to_string(load.pid()));
  EXPECT_EQ(gp["top"][0]["count"], kCalls);
}

TEST_F(Top, OverviewCountsEachEventExactly) {
  Load load(load_);
  ASSERT_GT(load.pid(), 0);
  create_for("gp", "syscalls:sys_enter_getppid", load.pid());
  create_for("pg", "syscalls:sys_enter_getpgid", load.pid());
  std::string out = tmp_.path("top.json");
  sys::Child& top = start_top({"--json", "-d", "0.5"}, out);
  ASSERT_TRUE(wait_until([&] { return !complete_lines(out).empty(); }, 10s))
      << "no first line; stderr: " << slurp(out + ".err");

  constexpr long kPpid = 3000, kPgid = 4321;
  load.run("ppid", kPpid);
  load.run("pgid", kPgid);
  ASSERT_TRUE(wait_until(
      [&] {
        auto lines = json_lines(out);
        return !lines.empty() && total_of(lines.back(), "persistent/gp/") == uint64_t(kPpid) &&
               total_of(lines.back(), "persistent/pg/") == uint64_t(kPgid);
      },
      10s))
      << "no line showed " << kPpid << " and " << kPgid << "; the last:\n"
      << (complete_lines(out).empty() ? "" : complete_lines(out).back());
  interrupt(top, out);

  std::vector<json> lines = json_lines(out);
  for (const json& line : lines) {
    // The overview keeps no table (no event is chosen with `e`).
    expect_schema(line, /*overview=*/true, /*detail=*/false);
    ASSERT_EQ(line.value("events", json::array()).size(), 2u)
        << "one row per event, no context stream: " << line;
  }
  const json& last = lines.back();
  EXPECT_EQ(event_of(last, "persistent/gp/")["name"], "syscalls:sys_enter_getppid");
  EXPECT_EQ(event_of(last, "persistent/pg/")["name"], "syscalls:sys_enter_getpgid");
  EXPECT_EQ(total_of(last, "persistent/gp/"), uint64_t(kPpid));
  EXPECT_EQ(total_of(last, "persistent/pg/"), uint64_t(kPgid));
}

TEST_F(Top, StdioShowsTheExactCount) {
  Load load(load_);
  ASSERT_GT(load.pid(), 0);
  create_for("gp", "syscalls:sys_enter_getppid", load.pid());
  std::string out = tmp_.path("top.txt");
  sys::Child& top = start_top({"--stdio", "-d", "0.5", "-e", "persistent/gp/"}, out);
  ASSERT_TRUE(wait_until([&] { return slurp(out).find("\n\n") != std::string::npos; }, 10s))
      << "no first block; stderr: " << slurp(out + ".err");

  load.run("ppid", kCalls);
  std::string head = "persistent/gp/ syscalls:sys_enter_getppid: ";
  std::string counted = " " + std::to_string(kCalls) + " since attach, 0 lost, 1 reader";
  ASSERT_TRUE(wait_until([&] { return slurp(out).find(counted) != std::string::npos; }, 10s))
      << "no block showed '" << counted << "':\n"
      << slurp(out);
  interrupt(top, out);

  // Blocks of "perf persistent top: TIME, every 0.5 s", the event's line,
  // its CPUs, and its table, each ended by an empty line.
  std::string text = slurp(out);
  ASSERT_TRUE(text.ends_with("\n\n")) << text;
  std::vector<std::string> blocks;
  for (size_t start = 0, end; (end = text.find("\n\n", start)) != std::string::npos;
       start = end + 2)
    blocks.push_back(text.substr(start, end - start));
  ASSERT_GE(blocks.size(), 2u);
  for (const std::string& block : blocks) {
    std::vector<std::string> lines = split_lines(block);
    ASSERT_GE(lines.size(), 3u) << block;
    EXPECT_TRUE(std::regex_match(lines[0], std::regex("perf persistent top: [0-9T:.Z-]+, every "
                                                      "0\\.5 s")))
        << lines[0];
    EXPECT_TRUE(lines[1].starts_with(head)) << lines[1];
  }
  EXPECT_NE(blocks.front().find(" 0 since attach, 0 lost, 1 reader"), std::string::npos)
      << blocks.front();
  // The last block: the count on CPU 0, and the table's one row, the load's pid.
  std::vector<std::string> last = split_lines(blocks.back());
  EXPECT_NE(last[1].find(counted), std::string::npos) << last[1];
  bool cpu0 = false, row = false;
  for (const std::string& line : last) {
    cpu0 |= std::regex_match(
        line, std::regex(" +0 +[0-9.]+ +" + std::to_string(kCalls) + " +0 +[0-9]+%"));
    row |= std::regex_match(line, std::regex(" +" + std::to_string(kCalls) + " +100\\.00% +" +
                                             std::to_string(load.pid())));
  }
  EXPECT_TRUE(cpu0) << "no CPU 0 row with " << kCalls << ":\n" << blocks.back();
  EXPECT_TRUE(row) << "no table row '" << kCalls << " 100.00% " << load.pid() << "':\n"
                   << blocks.back();
}

TEST_F(Top, CpuClockNamesTheBusyFunctionFirst) {
  CommandResult r = pp({"create", "-e", "cpu-clock", "--name", "cc"});
  ASSERT_EQ(r.status, 0) << r.err;
  // Its samples carry the instruction pointer (attr word 3 is sample_type).
  r = pp({"list", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  json listed = json::parse(r.out, nullptr, false);
  uint64_t sample_type = 0;
  for (const json& e : listed.value("events", json::array()))
    if (e.value("name", "") == "cc")
      sample_type = std::stoull(e["attr"][3].get<std::string>(), nullptr, 16);
  ASSERT_NE(sample_type & PERF_SAMPLE_IP, 0u) << r.out;

  // Two readers at once: one top of every sample, one of the loop's
  // process only (--filter), whose table does not depend on what else this
  // machine runs beside the test.
  Load load(load_);
  ASSERT_GT(load.pid(), 0);
  std::string all = tmp_.path("all.json"), own = tmp_.path("own.json");
  sys::Child& top_all = start_top({"--json", "-d", "1", "-e", "persistent/cc/"}, all);
  sys::Child& top_own = start_top({"--json", "-d", "1", "-e", "persistent/cc/", "--filter",
                                   "pid==" + std::to_string(load.pid())},
                                  own);
  for (const std::string& out : {all, own})
    ASSERT_TRUE(wait_until([&] { return !complete_lines(out).empty(); }, 10s))
        << "no first line; stderr: " << slurp(out + ".err");

  auto symbols = [](json line) {
    json e = line["events"].empty() ? json::object() : line["events"][0];
    return e["symbols"].is_array() ? e["symbols"] : json::array();
  };
  auto first_symbol = [&](const std::string& out) {
    std::vector<json> lines = json_lines(out);
    json table = lines.empty() ? json::array() : symbols(lines.back());
    return table.empty() ? std::string() : table[0].value("symbol", "");
  };
  load.start("busy", 4);
  // While the loop runs, a refresh names it first.
  bool named_while_running =
      wait_until([&] { return !load.done() && first_symbol(own) == "pp_top_busy_loop"; }, 4s);
  load.wait();
  EXPECT_TRUE(named_while_running) << "no refresh named pp_top_busy_loop first while it ran:\n"
                                   << slurp(own);
  // Once it is over too (the tables count since attach).
  size_t seen = complete_lines(own).size();
  ASSERT_TRUE(wait_until([&] { return complete_lines(own).size() > seen + 1; }, 5s));
  interrupt(top_all, all);
  interrupt(top_own, own);

  json last = json_lines(own).back();
  json cc = last["events"][0];
  EXPECT_EQ(cc["event"], "persistent/cc/");
  EXPECT_EQ(cc["kind"], "symbols");
  json table = symbols(last);
  ASSERT_FALSE(table.empty()) << cc;
  json hot = table[0];
  EXPECT_EQ(hot["symbol"], "pp_top_busy_loop") << table;
  EXPECT_EQ(hot["dso"], load_) << hot;
  EXPECT_EQ(hot["kernel"], false) << hot;
  // 4 s at cpu-clock's 4000 Hz, less what other work took of CPU 0.
  EXPECT_GT(hot["count"].get<uint64_t>(), 1000u) << hot;
  EXPECT_GT(hot["percent"].get<double>(), 90.0) << "the loop is what its process did: " << table;
  // Every sample of the event, whoever ran: the loop is among the hottest.
  bool listed_in_all = false;
  for (const json& row : symbols(json_lines(all).back()))
    listed_in_all |= row.value("symbol", "") == "pp_top_busy_loop" && row.value("dso", "") == load_;
  EXPECT_TRUE(listed_in_all) << complete_lines(all).back();
}

// Without a terminal, the screen refuses (and says what to use instead);
// bad options are usage errors; an unknown event is not found. Under --json
// the error is JSON on standard output.
TEST_F(Top, ErrorsSayWhatToDo) {
  // No broker yet: said so (8), never "no event".
  CommandResult r = pp({"top", "--stdio"});
  EXPECT_EQ(r.status, exit_status_of(ErrorKind::kBrokerDown)) << r.err;
  EXPECT_NE(r.err.find("the broker is not running"), std::string::npos) << r.err;
  // A broker with nothing to show: the overview needs a running event.
  Load first(load_);
  ASSERT_GT(first.pid(), 0);
  create_for("gone", "syscalls:sys_enter_getppid", first.pid());
  ASSERT_EQ(pp({"kill", "gone"}).status, 0);
  r = pp({"top", "--stdio"});
  EXPECT_EQ(r.status, cmd::kExitNotFound) << r.err;
  EXPECT_NE(r.err.find("no persistent event is running to show"), std::string::npos) << r.err;

  Load load(load_);
  ASSERT_GT(load.pid(), 0);
  create_for("gp", "syscalls:sys_enter_getppid", load.pid());
  r = pp({"top"});
  EXPECT_EQ(r.status, cmd::kExitUsage) << r.err;
  EXPECT_NE(r.err.find("needs a terminal on standard input and output; use --stdio"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.out, "");

  r = pp({"top", "--stdio", "--json"});
  EXPECT_EQ(r.status, cmd::kExitUsage);
  json error = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(error.is_discarded()) << r.out;
  EXPECT_EQ(error["error"]["kind"], "usage") << r.out;
  EXPECT_EQ(error["error"]["exit_status"], cmd::kExitUsage) << r.out;

  for (const char* delay : {"0", "abc", "3601", "0.05"}) {
    r = pp({"top", "--stdio", "-d", delay});
    EXPECT_EQ(r.status, cmd::kExitUsage) << delay << ": " << r.err;
    EXPECT_NE(r.err.find("-d '" + std::string(delay) + "': the refresh delay is seconds from 0.1"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "") << "nothing shown before the error";
  }

  r = pp({"top", "--stdio", "-e", "persistent/nosuch/"});
  EXPECT_EQ(r.status, cmd::kExitNotFound) << r.err;
  EXPECT_NE(r.err.find("no persistent event 'nosuch'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the persistent events are: gp"), std::string::npos) << r.err;

  r = pp({"top", "--json", "-e", "persistent/nosuch/"});
  EXPECT_EQ(r.status, cmd::kExitNotFound);
  error = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(error.is_discarded()) << r.out;
  EXPECT_EQ(error["error"]["kind"], "not-found") << r.out;

  r = pp({"top", "--stdio", "-e", "persistent/gp/", "-s", "nosuchfield"});
  EXPECT_EQ(r.status, cmd::kExitUsage) << r.err;
  EXPECT_NE(r.err.find("sort key 'nosuchfield' is no field of the events shown; "
                       "syscalls:sys_enter_getppid has __syscall_nr"),
            std::string::npos)
      << r.err;
}

// A tmux server of its own (a socket in the test's directory), one session
// "top" of 160x50 running a script; killed with everything in it when the
// test ends.
class Tmux {
 public:
  explicit Tmux(std::string socket) : socket_(std::move(socket)) {}
  ~Tmux() { tmux({"kill-server"}); }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  CommandResult tmux(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"tmux", "-S", socket_, "-f", "/dev/null"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, {.input = "", .env = {}, .timeout_seconds = 20});
  }

  void start(const std::string& script) const {
    CommandResult r =
        tmux({"new-session", "-d", "-s", "top", "-x", "160", "-y", "50", "sh " + script});
    ASSERT_EQ(r.status, 0) << r.err;
  }

  std::string screen() const { return tmux({"capture-pane", "-p", "-t", "top"}).out; }

  // The pane's last row (of 50): top's status line, or a prompt.
  std::string bottom() const {
    std::vector<std::string> lines = split_lines(screen());
    return lines.size() == 50 ? lines.back() : "[" + std::to_string(lines.size()) + " rows]";
  }

  void keys(const std::vector<std::string>& keys) const {
    std::vector<std::string> args = {"send-keys", "-t", "top"};
    args.insert(args.end(), keys.begin(), keys.end());
    CommandResult r = tmux(args);
    EXPECT_EQ(r.status, 0) << r.err;
  }
  void type(const std::string& text) const {
    CommandResult r = tmux({"send-keys", "-t", "top", "-l", text});
    EXPECT_EQ(r.status, 0) << r.err;
  }

  // Waits until a prompt (a regex) is on the last row, with top's frame
  // kept above it.
  bool wait_prompt(const std::string& pattern) const {
    std::regex re(pattern);
    return wait_until(
        [&] {
          std::string text = screen();
          std::vector<std::string> lines = split_lines(text);
          return text.starts_with("perf persistent top  ") && lines.size() == 50 &&
                 std::regex_match(lines.back(), re);
        },
        10s);
  }

  // Waits until the screen matches `pattern` (a regex searched in it).
  bool wait_for(const std::string& pattern,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) const {
    std::regex re(pattern);
    return wait_until([&] { return std::regex_search(screen(), re); }, timeout);
  }

 private:
  std::string socket_;
};

// top's screen under tmux: the first frame at once, the script's
// surroundings (stty -a before and after, the exit status) in files.
class TopScreen : public Top {
 protected:
  void SetUp() override {
    Top::SetUp();
    if (IsSkipped() || HasFatalFailure())
      return;
    CommandResult r = run_command({"tmux", "-V"});
    ASSERT_EQ(r.status, 0) << "tmux is needed (scripts/setup --test installs it): " << r.err;
  }

  // Runs top with `args` in the pane: the script records stty -a before
  // and after, top's pid and its exit status, says "top exited", and
  // stays (so the screen after can be read).
  void start_screen(Tmux& tmux, const std::string& args) {
    std::string dir = tmp_.path();
    tmp_.write("screen.sh", "cd '" + dir + "'\n" + "stty -a > before\n" +
                                "sh -c 'echo $$ > top.pid; exec \"$@\"' sh '" + binary_path() +
                                "' top " + args + " '--run-dir=" + run_dir_ + "'\n" +
                                "echo $? > rc\n" + "stty -a > after.tmp && mv after.tmp after\n" +
                                "echo top exited\n" + "sleep 60\n");
    tmux.start(tmp_.path("screen.sh"));
  }

  // After top ended: its status, the terminal's modes as before, and no
  // trace of its screen or prompts left in the pane.
  void expect_restored(const Tmux& tmux) {
    ASSERT_TRUE(wait_until([&] { return !slurp(tmp_.path("after")).empty(); }, 10s))
        << "top did not exit; the screen:\n"
        << tmux.screen();
    EXPECT_EQ(slurp(tmp_.path("rc")), "0\n");
    std::string before = slurp(tmp_.path("before"));
    EXPECT_NE(before.find("speed"), std::string::npos) << before;
    EXPECT_EQ(slurp(tmp_.path("after")), before) << "stty -a differs after top";
    ASSERT_TRUE(tmux.wait_for("top exited"));
    std::string screen = tmux.screen();
    for (const char* left : {"perf persistent top", "sort keys:", "filter:", "event:", "Keys"})
      EXPECT_EQ(screen.find(left), std::string::npos) << "'" << left << "' left:\n" << screen;
  }

  pid_t top_pid() const {
    std::string text = slurp(tmp_.path("top.pid"));
    return text.empty() ? -1 : pid_t(std::stol(text));
  }
};

// The event's line on the screen shows `n` since attach.
std::string since_attach(const std::string& event, long n) {
  return event + " syscalls:sys_enter_[a-z]+: [0-9.]+/s, " + std::to_string(n) +
         " since attach, 0 lost, 1 reader";
}

TEST_F(TopScreen, KeysWorkUnderTmuxAndTheTerminalIsRestored) {
  Load load(load_);
  ASSERT_GT(load.pid(), 0);
  create_for("gp", "syscalls:sys_enter_getppid", load.pid());
  create_for("pg", "syscalls:sys_enter_getpgid", load.pid());
  Tmux tmux(tmp_.path("tmux.sock"));
  start_screen(tmux, "-d 1 -e persistent/gp/ -e persistent/pg/");
  const std::string gp = "persistent/gp/", pg = "persistent/pg/";
  ASSERT_TRUE(tmux.wait_for("^perf persistent top  [0-9:]+  every 1 s  2 events"))
      << tmux.screen() << slurp(tmp_.path("rc"));
  ASSERT_TRUE(tmux.wait_for(since_attach(gp, 0))) << tmux.screen();
  EXPECT_EQ(tmux.bottom(), "h help, q quit");

  // N calls show within two refreshes of -d 1, in the event's line and in
  // CPU 0's TOTAL column.
  load.run("ppid", kCalls);
  auto made = Clock::now();
  ASSERT_TRUE(tmux.wait_for(since_attach(gp, kCalls))) << tmux.screen();
  EXPECT_LT(Clock::now() - made, 2500ms) << "later than two refreshes";
  EXPECT_TRUE(tmux.wait_for("\n +0 +[0-9.]+ +" + std::to_string(kCalls) + " +0 +[0-9]+%"))
      << tmux.screen();

  // s: the sort keys, read at a prompt on the last line; the tables'
  // heading names them.
  tmux.keys({"s"});
  ASSERT_TRUE(tmux.wait_prompt("sort keys: ?")) << tmux.screen();
  tmux.type("__syscall_nr");
  ASSERT_TRUE(tmux.wait_prompt("sort keys: __syscall_nr")) << "what is typed shows";
  tmux.keys({"Enter"});
  ASSERT_TRUE(tmux.wait_for("COUNT +% +__syscall_nr")) << tmux.screen();
  EXPECT_EQ(tmux.bottom(), "sorted by __syscall_nr | h help, q quit");

  // f: a filter; the status line shows it, the tables count what it lets
  // through.
  tmux.keys({"f"});
  ASSERT_TRUE(tmux.wait_prompt("filter: ?")) << tmux.screen();
  std::string filter = "pid==" + std::to_string(load.pid());
  tmux.type(filter);
  tmux.keys({"Enter"});
  ASSERT_TRUE(tmux.wait_for("filter " + filter + " \\| h help, q quit")) << tmux.screen();
  EXPECT_EQ(tmux.bottom(), "filter " + filter + " | h help, q quit");
  load.run("ppid", 1000);
  ASSERT_TRUE(tmux.wait_for(since_attach(gp, kCalls + 1000))) << tmux.screen();
  ASSERT_TRUE(tmux.wait_for("filter " + filter + ": 1000 counted, 0 left out")) << tmux.screen();
  EXPECT_TRUE(tmux.wait_for("\n +1000 +100\\.00% +" + std::to_string(SYS_getppid) + " *\n"))
      << tmux.screen();

  // p: the display stops (the counting does not) ...
  tmux.keys({"p"});
  ASSERT_TRUE(tmux.wait_for("PAUSED \\(p resumes\\)")) << tmux.screen();
  auto body = [&] {
    std::vector<std::string> lines = split_lines(tmux.screen());
    return lines.size() > 2 ? std::vector<std::string>(lines.begin() + 1, lines.end())
                            : std::vector<std::string>{};
  };
  std::vector<std::string> paused = body();
  load.run("ppid", 2000);
  std::this_thread::sleep_for(2500ms);  // two refreshes and a half
  EXPECT_EQ(body(), paused) << "the numbers changed while paused:\n" << tmux.screen();
  EXPECT_TRUE(std::regex_search(tmux.screen(), std::regex(since_attach(gp, kCalls + 1000))));
  // ... and p again shows what came meanwhile.
  tmux.keys({"p"});
  ASSERT_TRUE(tmux.wait_for(since_attach(gp, kCalls + 3000), 2500ms)) << tmux.screen();
  EXPECT_EQ(tmux.screen().find("PAUSED"), std::string::npos);

  // z: every count from zero.
  tmux.keys({"z"});
  ASSERT_TRUE(tmux.wait_for(since_attach(gp, 0))) << tmux.screen();
  EXPECT_TRUE(tmux.wait_for("counts zeroed \\| filter " + filter)) << tmux.screen();
  EXPECT_TRUE(tmux.wait_for("filter " + filter + ": 0 counted, 0 left out")) << tmux.screen();

  // f and an empty line: no filter.
  tmux.keys({"f"});
  ASSERT_TRUE(tmux.wait_prompt("filter: ?")) << tmux.screen();
  tmux.keys({"Enter"});
  ASSERT_TRUE(tmux.wait_for("\nno filter \\| h help, q quit")) << tmux.screen();

  // f and a mistake: the status line says where (the caret is for a
  // terminal's lines, not the status line), and nothing changes.
  tmux.keys({"f"});
  ASSERT_TRUE(tmux.wait_prompt("filter: ?")) << tmux.screen();
  tmux.type("pid = 1");
  tmux.keys({"Enter"});
  ASSERT_TRUE(
      tmux.wait_for("\nfilter 'pid = 1': at column 5: expected an operator "
                    "\\(==, !=, <, <=, >, >=, ~\\) \\| h help, q quit"))
      << tmux.screen();

  // e: one of the two events alone.
  EXPECT_NE(tmux.screen().find(pg + " syscalls:sys_enter_getpgid"), std::string::npos);
  tmux.keys({"e"});
  ASSERT_TRUE(tmux.wait_prompt("event: ?")) << tmux.screen();
  tmux.type(pg);
  tmux.keys({"Enter"});
  ASSERT_TRUE(tmux.wait_for(since_attach(pg, 0))) << tmux.screen();
  EXPECT_TRUE(wait_until([&] { return tmux.screen().find(gp) == std::string::npos; }, 2s))
      << tmux.screen();
  load.run("pgid", 777);
  ASSERT_TRUE(tmux.wait_for(since_attach(pg, 777))) << tmux.screen();
  EXPECT_TRUE(tmux.wait_for("\n +777 +100\\.00% +" + std::to_string(SYS_getpgid) + " *\n"))
      << tmux.screen();
  EXPECT_EQ(tmux.screen().find(gp), std::string::npos) << tmux.screen();

  // h: the help; any key goes back.
  tmux.keys({"h"});
  ASSERT_TRUE(tmux.wait_for("\nKeys *\n  q  quit")) << tmux.screen();
  for (const char* key : {"  s  ", "  f  ", "  p  ", "  z  ", "  e  ", "  h  "})
    EXPECT_NE(tmux.screen().find(key), std::string::npos) << key << " in\n" << tmux.screen();
  tmux.keys({"x"});
  ASSERT_TRUE(tmux.wait_for(since_attach(pg, 777))) << tmux.screen();
  EXPECT_EQ(tmux.screen().find("Keys"), std::string::npos);

  // A resized window: the frame is drawn again to its size (and back, so
  // that stty -a agrees at the end).
  for (std::pair<int, int> size : {std::pair{100, 30}, std::pair{160, 50}}) {
    int columns = size.first, rows = size.second;
    CommandResult r = tmux.tmux(
        {"resize-window", "-t", "top", "-x", std::to_string(columns), "-y", std::to_string(rows)});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(wait_until(
        [&] {
          std::vector<std::string> lines = split_lines(tmux.screen());
          return lines.size() == size_t(rows) && lines.front().starts_with("perf persistent top") &&
                 lines.back() == "h help, q quit";
        },
        5s))
        << columns << "x" << rows << ":\n"
        << tmux.screen();
  }

  // q: top exits 0 and the terminal is as it was.
  tmux.keys({"q"});
  expect_restored(tmux);
}

TEST_F(TopScreen, SigtermAtAPromptRestoresTheTerminal) {
  Load load(load_);
  ASSERT_GT(load.pid(), 0);
  create_for("gp", "syscalls:sys_enter_getppid", load.pid());
  Tmux tmux(tmp_.path("tmux.sock"));
  start_screen(tmux, "-d 1");
  ASSERT_TRUE(tmux.wait_for(
      "persistent/gp/ +syscalls:sys_enter_getppid +[0-9.]+ +0 +0 +1 +[0-9]+%"))  // the overview
      << tmux.screen();
  // A prompt open, half typed (readline has the terminal's modes now).
  tmux.keys({"f"});
  ASSERT_TRUE(tmux.wait_prompt("filter: ?")) << tmux.screen();
  tmux.type("pid==");
  ASSERT_TRUE(tmux.wait_prompt("filter: pid==")) << tmux.screen();
  pid_t pid = top_pid();
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  expect_restored(tmux);
}

}  // namespace
}  // namespace pp::testing

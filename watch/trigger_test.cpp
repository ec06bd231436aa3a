#include "watch/trigger.h"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <thread>

#include "base/json.h"
#include "sys/clock.h"
#include "tests/support/temp_dir.h"

namespace pp::watch {
namespace {

using nlohmann::ordered_json;

ordered_json mce_json(std::string_view severity, int cpu, uint64_t bank,
                      std::string_view addr = "0x12345678") {
  return {{"origin", "live"},
          {"event", "mce_record"},
          {"tracepoint", "mce:mce_record"},
          {"cpu", cpu},
          {"pid", 0},
          {"fields", {{"bank", bank}, {"prev-comm", "x"}}},
          {"mce",
           {{"status", "0xbe00000000000150"},
            {"addr", addr},
            {"cpu", cpu},
            {"bank", bank},
            {"status_bits", {"VAL", "UC", "PCC"}},
            {"severity", severity}}},
          {"key", "live:1:2"}};
}

// A command that never runs: it ends after `polls` polls with `code`.
struct FakeWorld {
  int64_t mono = 1'000'000;
  int64_t wall = 1'700'000'000'000;
  std::vector<TriggerCommand> requests;
  int polls_to_exit = 0;  // 0: at the first poll; -1: never
  int exit_code = 0;
  int next_pid = 100;
  std::vector<int> signals;

  struct Process : TriggerProcess {
    FakeWorld* world;
    pid_t id;
    int polls = 0;
    bool done = false;
    Process(FakeWorld* w, pid_t p) : world(w), id(p) {}
    pid_t pid() const override { return id; }
    Result<std::optional<sys::ExitStatus>> poll() override {
      if (!done && world->polls_to_exit >= 0 && polls++ >= world->polls_to_exit)
        done = true;
      if (!done)
        return std::optional<sys::ExitStatus>();
      sys::ExitStatus s;
      s.code = world->exit_code;
      return std::optional<sys::ExitStatus>(s);
    }
    Status kill_group(int signal) override {
      world->signals.push_back(signal);
      done = true;
      return ok_status();
    }
  };

  TriggerOptions options(std::ostream* log = nullptr) {
    TriggerOptions o;
    o.log = log;
    o.monotonic_ms = [this] { return mono; };
    o.wall_ms = [this] { return wall; };
    o.spawn = [this](const TriggerCommand& r) -> Result<std::unique_ptr<TriggerProcess>> {
      requests.push_back(r);
      return std::unique_ptr<TriggerProcess>(std::make_unique<Process>(this, next_pid++));
    };
    return o;
  }
};

std::unique_ptr<Triggers> make(std::vector<TriggerRule> rules, TriggerOptions options) {
  auto t = Triggers::create(std::move(rules), std::move(options));
  EXPECT_TRUE(t.ok()) << t.error().message();
  return t.ok() ? std::move(*t) : nullptr;
}

TriggerRule rule(std::string match, std::string threshold, std::vector<std::string> key = {}) {
  TriggerRule r;
  r.name = "ce";
  r.match = std::move(match);
  r.threshold = std::move(threshold);
  r.key = std::move(key);
  r.exec = "true";
  r.rate_limit = "none";
  return r;
}

// Feeds a record that happened at `wall_ms` (0: no wall time).
void feed(Triggers& t, const ordered_json& j, int64_t wall_ms) {
  WatchRecord r;
  r.wall_ns = uint64_t(wall_ms) * 1'000'000;
  ASSERT_TRUE(t.record(r, j).ok());
}

std::string env_of(const TriggerCommand& r, const std::string& name) {
  for (const auto& [n, v] : r.env)
    if (n == name)
      return v;
  return "<unset>";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---- thresholds -----------------------------------------------------------

TEST(TriggerThreshold, FiresExactlyAtNNotAtNMinusOne) {
  FakeWorld w;
  auto t = make({rule("severity == corrected", "3 in 1s")}, w.options());
  ASSERT_TRUE(t);
  ordered_json ce = mce_json("corrected", 0, 7);
  feed(*t, ce, 10'000);
  feed(*t, ce, 10'400);
  EXPECT_EQ(t->stats()[0].fired, 0u) << "N-1 matches within the window do not fire";
  EXPECT_EQ(t->stats()[0].matched, 2u);
  feed(*t, mce_json("fatal", 0, 7), 10'500);
  EXPECT_EQ(t->stats()[0].fired, 0u) << "a record the expression does not take does not count";
  feed(*t, ce, 10'999);
  EXPECT_EQ(t->stats()[0].fired, 1u) << "the N-th match fires";
  ASSERT_EQ(w.requests.size(), 1u);
  EXPECT_EQ(env_of(w.requests[0], "PERF_PERSISTENT_COUNT"), "3");
}

TEST(TriggerThreshold, MatchesAgeOutOfTheWindow) {
  FakeWorld w;
  auto t = make({rule("", "3 in 1s")}, w.options());
  ASSERT_TRUE(t);
  ordered_json ce = mce_json("corrected", 0, 7);
  feed(*t, ce, 0 + 5000);
  feed(*t, ce, 500 + 5000);
  feed(*t, ce, 1000 + 5000);  // exactly a window after the first: the first is out
  EXPECT_EQ(t->stats()[0].fired, 0u);
  feed(*t, ce, 1499 + 5000);  // 500, 1000, 1499: within 1 s of each other
  EXPECT_EQ(t->stats()[0].fired, 1u);
}

TEST(TriggerThreshold, BucketEmptiesAfterFiring) {
  FakeWorld w;
  auto t = make({rule("", "2 in 1h")}, w.options());
  ASSERT_TRUE(t);
  ordered_json ce = mce_json("corrected", 0, 7);
  for (int64_t ms : {1000, 2000})
    feed(*t, ce, ms);
  EXPECT_EQ(t->stats()[0].fired, 1u);
  feed(*t, ce, 3000);
  EXPECT_EQ(t->stats()[0].fired, 1u) << "the matches before the firing no longer count";
  feed(*t, ce, 4000);
  EXPECT_EQ(t->stats()[0].fired, 2u);
}

TEST(TriggerThreshold, PerKeyBucketsAreIndependent) {
  FakeWorld w;
  auto t = make({rule("", "3 in 1m", {"cpu", "bank"})}, w.options());
  ASSERT_TRUE(t);
  int64_t ms = 1000;
  for (int i = 0; i < 2; i++) {
    feed(*t, mce_json("corrected", 0, 7), ms += 10);
    feed(*t, mce_json("corrected", 1, 7), ms += 10);
    feed(*t, mce_json("corrected", 0, 8), ms += 10);
  }
  EXPECT_EQ(t->stats()[0].fired, 0u) << "six matches, but two per (cpu, bank)";
  feed(*t, mce_json("corrected", 1, 7), ms += 10);
  ASSERT_EQ(t->stats()[0].fired, 1u);
  ASSERT_EQ(w.requests.size(), 1u);
  EXPECT_EQ(env_of(w.requests[0], "PERF_PERSISTENT_KEY"), "cpu=1,bank=7");
  feed(*t, mce_json("corrected", 0, 7), ms += 10);
  EXPECT_EQ(t->stats()[0].fired, 2u) << "cpu 0's bucket kept its two";
  EXPECT_EQ(env_of(w.requests[1], "PERF_PERSISTENT_KEY"), "cpu=0,bank=7");
}

TEST(TriggerThreshold, PageAndAddressRangeKeys) {
  FakeWorld w;
  auto t = make({rule("", "", {"page", "addr/20", "nosuch"})}, w.options());
  ASSERT_TRUE(t);
  feed(*t, mce_json("corrected", 0, 7, "0x12345678"), 1000);
  ASSERT_EQ(w.requests.size(), 1u);
  EXPECT_EQ(env_of(w.requests[0], "PERF_PERSISTENT_KEY"), "page=0x12345,addr/20=0x123,nosuch=?");
}

TEST(TriggerThreshold, RecordWithoutWallTimeUsesTheClock) {
  FakeWorld w;
  auto t = make({rule("", "2 in 10s")}, w.options());
  ASSERT_TRUE(t);
  ordered_json ce = mce_json("corrected", 0, 7);
  feed(*t, ce, 0);
  w.wall += 11'000;
  feed(*t, ce, 0);
  EXPECT_EQ(t->stats()[0].fired, 0u) << "11 s apart on the wall clock";
  w.wall += 9'000;
  feed(*t, ce, 0);
  EXPECT_EQ(t->stats()[0].fired, 1u);
}

TEST(TriggerThreshold, ARecordFromThePastCountsWhereItBelongs) {
  FakeWorld w;
  auto t = make({rule("", "3 in 1s")}, w.options());
  ASSERT_TRUE(t);
  ordered_json ce = mce_json("corrected", 0, 7);
  feed(*t, ce, 10'000);
  feed(*t, ce, 5'000);  // far older: out of the window at once
  EXPECT_EQ(t->stats()[0].fired, 0u);
  feed(*t, ce, 9'500);  // older, but within 1 s of 10'000
  feed(*t, ce, 10'100);
  EXPECT_EQ(t->stats()[0].fired, 1u);
}

TEST(TriggerThreshold, BucketsAreBoundedOldestForgotten) {
  FakeWorld w;
  std::ostringstream log;
  TriggerOptions o = w.options(&log);
  o.max_buckets = 2;
  auto t = make({rule("", "2 in 1h", {"cpu"})}, std::move(o));
  ASSERT_TRUE(t);
  feed(*t, mce_json("corrected", 0, 7), 1000);
  feed(*t, mce_json("corrected", 1, 7), 1001);
  feed(*t, mce_json("corrected", 2, 7), 1002);  // cpu 0's bucket goes
  EXPECT_EQ(t->stats()[0].evicted, 1u);
  feed(*t, mce_json("corrected", 0, 7), 1003);
  EXPECT_EQ(t->stats()[0].fired, 0u) << "cpu 0 starts again from one";
  feed(*t, mce_json("corrected", 2, 7), 1004);
  EXPECT_EQ(t->stats()[0].fired, 1u) << "cpu 2, recently matched, was kept";
  EXPECT_NE(log.str().find("more than 2 keys"), std::string::npos) << log.str();
}

// ---- rate limit -----------------------------------------------------------

TEST(TriggerRateLimit, NRunsThenSuppressedThenAllowedAgain) {
  FakeWorld w;
  std::ostringstream log;
  TriggerRule r = rule("", "");
  r.rate_limit = "2 per 1m";
  auto t = make({r}, w.options(&log));
  ASSERT_TRUE(t);
  ordered_json ce = mce_json("corrected", 0, 7);
  for (int i = 0; i < 5; i++) {
    feed(*t, ce, 1000 + i);
    w.mono += 1000;
  }
  TriggerStats s = t->stats()[0];
  EXPECT_EQ(s.fired, 5u);
  EXPECT_EQ(s.ran, 2u);
  EXPECT_EQ(s.suppressed, 3u);
  EXPECT_NE(log.str().find("trigger 'ce': not run: rate limit 2 per 1m reached"), std::string::npos)
      << log.str();
  w.mono += 60'000;
  feed(*t, ce, 2000);
  EXPECT_EQ(t->stats()[0].ran, 3u) << "a minute later the window allows runs again";
  EXPECT_NE(log.str().find("trigger 'ce': 3 runs were suppressed by the rate limit 2 per 1m"),
            std::string::npos)
      << log.str();
}

// A key holds what the record holds, a task name too: the log line a
// person reads shows its control characters escaped, never raw.
TEST(TriggerRateLimit, LogLinesEscapeWhatTheRecordChose) {
  FakeWorld w;
  std::ostringstream log;
  TriggerRule r = rule("", "", {"comm"});
  r.rate_limit = "1 per 1m";
  auto t = make({r}, w.options(&log));
  ASSERT_TRUE(t);
  ordered_json named = {{"comm", "\x1b]0;PWN\x07\x1b[2J"}};
  feed(*t, named, 1000);
  feed(*t, named, 1001);
  EXPECT_EQ(t->stats()[0].suppressed, 1u);
  EXPECT_EQ(log.str().find('\x1b'), std::string::npos) << log.str();
  EXPECT_EQ(log.str().find('\x07'), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("\\x1b]0;PWN\\x07\\x1b[2J"), std::string::npos) << log.str();
}

TEST(TriggerRateLimit, DefaultIsSixtyPerHourAndNoneLifts) {
  FakeWorld w;
  TriggerRule limited = rule("", "");
  limited.rate_limit = "";
  TriggerRule unlimited = rule("", "");
  unlimited.name = "all";
  auto t = make({limited, unlimited}, w.options());
  ASSERT_TRUE(t);
  for (int i = 0; i < 61; i++) {
    feed(*t, mce_json("corrected", 0, 7), 1000 + i);
    ASSERT_TRUE(t->tick(uint64_t(w.mono), false).ok());  // reap, so slots free up
  }
  EXPECT_EQ(t->stats()[0].ran, 60u);
  EXPECT_EQ(t->stats()[0].suppressed, 1u);
  EXPECT_EQ(t->stats()[1].ran, 61u);
  EXPECT_EQ(t->stats()[1].suppressed, 0u);
}

// ---- queue and child limit -------------------------------------------------

TEST(TriggerQueue, OverflowIsDroppedAndCountedQueuedRunLater) {
  FakeWorld w;
  w.polls_to_exit = -1;  // they run until told
  std::ostringstream log;
  TriggerOptions o = w.options(&log);
  o.max_children = 2;
  o.max_queued = 1;
  auto t = make({rule("", "")}, std::move(o));
  ASSERT_TRUE(t);
  for (int i = 0; i < 5; i++)
    feed(*t, mce_json("corrected", 0, 7), 1000 + i);
  EXPECT_EQ(t->running(), 2u);
  EXPECT_EQ(t->queued(), 1u);
  EXPECT_EQ(t->stats()[0].dropped, 2u);
  EXPECT_EQ(t->stats()[0].ran, 2u);
  EXPECT_NE(log.str().find("dropped: 2 commands run and 1 wait already"), std::string::npos)
      << log.str();
  w.polls_to_exit = 0;
  ASSERT_TRUE(t->tick(uint64_t(w.mono), false).ok());
  EXPECT_EQ(t->stats()[0].ran, 3u) << "the queued run starts once a slot is free";
  EXPECT_EQ(t->queued(), 0u);
}

TEST(TriggerQueue, FinalTickSaysWhatWasStillQueued) {
  FakeWorld w;
  w.polls_to_exit = -1;
  std::ostringstream log;
  TriggerOptions o = w.options(&log);
  o.max_children = 1;
  o.kill_grace_ms = 0;
  TriggerRule r = rule("", "");
  r.timeout_ms = 1;
  auto t = make({r}, std::move(o));
  ASSERT_TRUE(t);
  for (int i = 0; i < 3; i++)
    feed(*t, mce_json("corrected", 0, 7), 1000 + i);
  w.mono += 5;
  ASSERT_TRUE(t->tick(uint64_t(w.mono), true).ok());
  EXPECT_EQ(t->running(), 0u);
  EXPECT_EQ(t->queued(), 0u);
  EXPECT_EQ(t->stats()[0].ran, 1u);
  EXPECT_EQ(t->stats()[0].dropped, 2u);
  EXPECT_EQ(t->stats()[0].timed_out, 1u);
  EXPECT_NE(log.str().find("triggers: exiting with 2 runs still queued, not started ('ce' 2)"),
            std::string::npos)
      << log.str();
}

TEST(TriggerQueue, SpawnFailureAndExitStatusAreFailures) {
  FakeWorld w;
  w.exit_code = 3;
  std::ostringstream log;
  TriggerOptions o = w.options(&log);
  auto t = make({rule("", "", {"cpu"})}, o);
  ASSERT_TRUE(t);
  feed(*t, mce_json("corrected", 1, 7), 1000);
  w.mono += 12;
  ASSERT_TRUE(t->tick(uint64_t(w.mono), false).ok());
  EXPECT_EQ(t->stats()[0].failed, 1u);
  EXPECT_NE(log.str().find("trigger 'ce' key cpu=1: pid 100 exited with status 3 after 0.012 s"),
            std::string::npos)
      << log.str();

  o.spawn = [](const TriggerCommand&) -> Result<std::unique_ptr<TriggerProcess>> {
    return Error(EAGAIN, "cannot run '/bin/sh -c true': Resource temporarily unavailable");
  };
  auto broken = make({rule("", "")}, o);
  ASSERT_TRUE(broken);
  feed(*broken, mce_json("corrected", 1, 7), 1000);
  EXPECT_EQ(broken->stats()[0].failed, 1u);
  EXPECT_EQ(broken->stats()[0].ran, 0u);
  EXPECT_NE(log.str().find("trigger 'ce': cannot run '/bin/sh -c true'"), std::string::npos);
}

// ---- lost samples ----------------------------------------------------------

TEST(TriggerLost, OnLostRuleFiresOnANoticeOnly) {
  FakeWorld w;
  TriggerRule r = rule("records >= 10 && event == mce_record", "", {"cpu"});
  r.on_lost = true;
  auto t = make({r, rule("", "")}, w.options());
  ASSERT_TRUE(t);
  LostNotice small{"mce_record", 2, 5, 0};
  ASSERT_TRUE(t->lost(small).ok());
  EXPECT_EQ(t->stats()[0].fired, 0u) << "5 lost: the expression says at least 10";
  LostNotice big{"mce_record", 2, 20, 1'700'000'000'000'000'000};
  ASSERT_TRUE(t->lost(big).ok());
  EXPECT_EQ(t->stats()[0].fired, 1u);
  EXPECT_EQ(t->stats()[1].fired, 0u) << "a record rule does not take lost notices";
  ASSERT_EQ(w.requests.size(), 1u);
  EXPECT_EQ(env_of(w.requests[0], "PERF_PERSISTENT_RECORDS"), "20");
  EXPECT_EQ(env_of(w.requests[0], "PERF_PERSISTENT_LOST"), "true");
  EXPECT_EQ(env_of(w.requests[0], "PERF_PERSISTENT_KEY"), "cpu=2");
  EXPECT_NE(w.requests[0].stdin_data.find("\"records\":20"), std::string::npos);
  feed(*t, mce_json("corrected", 0, 7), 1000);
  EXPECT_EQ(t->stats()[0].matched, 1u) << "an on_lost rule does not take records";
  EXPECT_EQ(t->stats()[1].fired, 1u);
}

// ---- validation -------------------------------------------------------------

struct BadRule {
  TriggerRule rule;
  const char* message;
};

TEST(TriggerCreate, EveryRuleIsCheckedAndNamed) {
  auto base = [] {
    TriggerRule r;
    r.exec = "true";
    return r;
  };
  std::vector<BadRule> cases;
  auto add = [&](auto change, const char* message) {
    TriggerRule r = base();
    change(r);
    cases.push_back({r, message});
  };
  add([](TriggerRule& r) { r.match = "bank = 7"; },
      "trigger rule 'rule 1' match 'bank = 7': at column 6: expected an operator");
  add([](TriggerRule& r) { r.threshold = "10 per 24h"; },
      "trigger rule 'rule 1': threshold '10 per 24h': expected 'N in DURATION'");
  add([](TriggerRule& r) { r.threshold = "0 in 1h"; },
      "trigger rule 'rule 1': threshold '0 in 1h': '0' is no count (1 to 100000)");
  add([](TriggerRule& r) { r.threshold = "10 in 24"; },
      "threshold '10 in 24': '24' is no duration: a number and a unit, ms, s, m, h, d or w");
  add([](TriggerRule& r) { r.threshold = "10 in 1y"; }, "'1y' is no duration");
  add([](TriggerRule& r) { r.threshold = "10 in 0s"; }, "'0s' is no window");
  add([](TriggerRule& r) { r.rate_limit = "5 in 1h"; },
      "trigger rule 'rule 1': rate limit '5 in 1h': expected 'N per DURATION'");
  add([](TriggerRule& r) { r.key = {"addr/99"}; },
      "trigger rule 'rule 1': key 'addr/99': the shift after 'addr/' must be 1 to 63");
  add([](TriggerRule& r) { r.key = {"cpu bank"}; },
      "key 'cpu bank': expected a field name (cpu, bank, ...), 'page' or 'addr/N'");
  add([](TriggerRule& r) { r.exec = "  "; }, "trigger rule 'rule 1': no command to run");
  add([](TriggerRule& r) { r.timeout_ms = 0; }, "the timeout must be more than 0 ms");
  for (const BadRule& c : cases) {
    auto t = Triggers::create({c.rule}, {});
    ASSERT_FALSE(t.ok()) << c.message;
    EXPECT_EQ(t.error().kind(), ErrorKind::kUsage);
    EXPECT_NE(t.error().message().find(c.message), std::string::npos) << t.error().message();
  }
  TriggerRule named = base();
  named.name = "dimm";
  named.threshold = "x";
  TriggerRule ok = base();
  auto t = Triggers::create({ok, named}, {});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("trigger rule 'dimm': threshold 'x'"), std::string::npos);
}

TEST(TriggerCreate, DurationsThresholdsAndRateLimits) {
  // The window is base's parse_duration_ms(), more than 0 ms.
  EXPECT_EQ(parse_threshold("1 in 500ms")->window_ms, 500u);
  EXPECT_EQ(parse_threshold("1 in 1s")->window_ms, 1000u);
  EXPECT_EQ(parse_threshold("1 in 90m")->window_ms, 5'400'000u);
  EXPECT_EQ(parse_threshold("1 in 24h")->window_ms, 86'400'000u);
  EXPECT_EQ(parse_threshold("1 in 7 d")->window_ms, 604'800'000u);
  EXPECT_EQ(parse_rate_limit("1 per 2w")->window_ms, 1'209'600'000u);
  for (const char* bad :
       {"", "h", "0s", "1.5h", "-1s", "1hh", "9999999999999h", "9999999999999d"}) {
    EXPECT_FALSE(parse_threshold(std::string("1 in ") + bad).ok()) << bad;
    EXPECT_FALSE(parse_rate_limit(std::string("1 per ") + bad).ok()) << bad;
  }
  auto t = parse_threshold("10 in 24h");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->count, 10u);
  EXPECT_EQ(t->window_ms, 86'400'000u);
  EXPECT_EQ(parse_threshold("3 in 90 m")->window_ms, 5'400'000u);
  EXPECT_FALSE(parse_threshold("100001 in 1h").ok());
  auto r = parse_rate_limit("60 per 1h");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->runs, 60u);
  EXPECT_EQ(r->window_ms, 3'600'000u);
  EXPECT_EQ(parse_rate_limit("none")->runs, 0u);
  EXPECT_FALSE(parse_rate_limit("0 per 1h").ok());
}

// ---- environment --------------------------------------------------------------

TEST(TriggerEnvironment, ScalarsByNameMachineCheckFirst) {
  ordered_json j = mce_json("fatal", 3, 7);
  j["fields"]["text"] = std::string("a\0b", 3);
  j["fields"]["long"] = std::string(kMaxEnvValue + 10, 'x');
  auto env = trigger_environment(j);
  auto get = [&](const std::string& name) {
    for (const auto& [n, v] : env)
      if (n == name)
        return v;
    return std::string("<unset>");
  };
  EXPECT_EQ(get("PERF_PERSISTENT_SEVERITY"), "fatal");
  EXPECT_EQ(get("PERF_PERSISTENT_STATUS"), "0xbe00000000000150");
  EXPECT_EQ(get("PERF_PERSISTENT_STATUS_BITS"), "VAL UC PCC");
  EXPECT_EQ(get("PERF_PERSISTENT_CPU"), "3");
  EXPECT_EQ(get("PERF_PERSISTENT_TRACEPOINT"), "mce:mce_record");
  EXPECT_EQ(get("PERF_PERSISTENT_RECORD_KEY"), "live:1:2");
  EXPECT_EQ(get("PERF_PERSISTENT_KEY"), "<unset>") << "the bucket's key is the rule's to set";
  EXPECT_EQ(get("PERF_PERSISTENT_FIELD_BANK"), "7");
  EXPECT_EQ(get("PERF_PERSISTENT_FIELD_PREV_COMM"), "x") << "'-' becomes '_'";
  EXPECT_EQ(get("PERF_PERSISTENT_FIELD_TEXT"), "a") << "cut at the NUL";
  EXPECT_EQ(get("PERF_PERSISTENT_FIELD_LONG").size(), kMaxEnvValue);
  EXPECT_EQ(get("PERF_PERSISTENT_MCE"), "<unset>") << "objects are not variables";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

// Ticks with the real clock until nothing runs or queues (at most `limit_ms`);
// calls `each` after every tick.
void run_out(Triggers& t, int limit_ms, const std::function<void()>& each = {}) {
  int64_t end = sys::monotonic_ms() + limit_ms;
  while ((t.running() || t.queued()) && sys::monotonic_ms() < end) {
    ASSERT_TRUE(t.tick(uint64_t(sys::monotonic_ms()), false).ok());
    if (each)
      each();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(TriggerCommand, EnvironmentAndStdinReachTheCommand) {
  testing::TempDir dir;
  std::string out = dir.path("out"), in = dir.path("stdin");
  TriggerRule r = rule("severity >= ucna", "", {"cpu"});
  r.name = "ue";
  r.exec = "env | grep '^PERF_PERSISTENT_' | sort > " + out + "; cat > " + in;
  std::ostringstream log;
  TriggerOptions o;
  o.log = &log;
  auto t = make({r}, o);
  ASSERT_TRUE(t);
  ordered_json j = mce_json("fatal", 1, 7);
  feed(*t, j, 1000);
  run_out(*t, 5000);
  ASSERT_EQ(t->running(), 0u) << log.str();
  std::vector<std::string> env = lines_of(read_file(out));
  for (const char* want : {"PERF_PERSISTENT_RULE=ue", "PERF_PERSISTENT_COUNT=1",
                           "PERF_PERSISTENT_KEY=cpu=1", "PERF_PERSISTENT_SEVERITY=fatal",
                           "PERF_PERSISTENT_BANK=7", "PERF_PERSISTENT_STATUS=0xbe00000000000150",
                           "PERF_PERSISTENT_FIELD_BANK=7", "PERF_PERSISTENT_EVENT=mce_record"})
    EXPECT_NE(std::find(env.begin(), env.end(), want), env.end()) << want << "\n" << read_file(out);
  EXPECT_EQ(read_file(in), dump_json(j) + "\n") << "one JSON line, then EOF";
  EXPECT_EQ(t->stats()[0].ran, 1u);
  EXPECT_EQ(t->stats()[0].failed, 0u) << log.str();
  EXPECT_NE(log.str().find("trigger 'ue' key cpu=1: pid "), std::string::npos) << log.str();
  EXPECT_NE(log.str().find(" exited with status 0 after "), std::string::npos) << log.str();
}

TEST(TriggerCommand, TimeoutKillsTheGroupAndIsLogged) {
  TriggerRule r = rule("", "");
  r.exec = "sleep 30";
  r.timeout_ms = 200;
  std::ostringstream log;
  TriggerOptions o;
  o.log = &log;
  auto t = make({r}, o);
  ASSERT_TRUE(t);
  auto start = std::chrono::steady_clock::now();
  feed(*t, mce_json("corrected", 0, 7), 1000);
  EXPECT_EQ(t->running(), 1u);
  run_out(*t, 5000);
  EXPECT_EQ(t->running(), 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  TriggerStats s = t->stats()[0];
  EXPECT_EQ(s.timed_out, 1u);
  EXPECT_EQ(s.failed, 0u) << "a timeout is counted as such, not as a failure";
  EXPECT_NE(log.str().find("timed out after 0.2 s, killed by SIGTERM after 0."), std::string::npos)
      << log.str();
}

TEST(TriggerCommand, NeverMoreThanMaxChildrenAlive) {
  testing::TempDir dir;
  std::string alive = dir.path("alive"), seen = dir.path("seen");
  dir.mkdir("alive");
  // Each run marks itself alive, notes how many are, sleeps, and unmarks.
  TriggerRule r = rule("", "");
  r.exec = "touch " + alive + "/$$; ls " + alive + " | wc -l >> " + seen + "; sleep 0.2; rm " +
           alive + "/$$";
  TriggerOptions o;
  o.max_children = 2;
  o.max_queued = 3;
  auto t = make({r}, o);
  ASSERT_TRUE(t);
  for (int i = 0; i < 5; i++)
    feed(*t, mce_json("corrected", 0, 7), 1000 + i);
  EXPECT_EQ(t->running(), 2u);
  EXPECT_EQ(t->queued(), 3u);
  size_t most = 0;
  run_out(*t, 10000, [&] { most = std::max(most, t->running()); });
  EXPECT_LE(most, 2u);
  EXPECT_EQ(t->running(), 0u);
  EXPECT_EQ(t->stats()[0].ran, 5u) << "the queued runs ran later";
  EXPECT_EQ(t->stats()[0].dropped, 0u);
  std::vector<std::string> counts = lines_of(read_file(seen));
  ASSERT_EQ(counts.size(), 5u);
  for (const std::string& c : counts)
    EXPECT_LE(std::stoi(c), 2) << "a command saw more than two alive";
}

TEST(TriggerCommand, DestroyingTheSinkKillsAndReapsWhatRuns) {
  pid_t pid = 0;
  {
    TriggerRule r = rule("", "");
    r.exec = "exec sleep 30";
    TriggerOptions o;
    o.spawn = [&pid](const TriggerCommand& req) -> Result<std::unique_ptr<TriggerProcess>> {
      auto p = spawn_trigger_command(req);
      if (p.ok())
        pid = (*p)->pid();
      return p;
    };
    auto t = make({r}, o);
    ASSERT_TRUE(t);
    feed(*t, mce_json("corrected", 0, 7), 1000);
    ASSERT_EQ(t->running(), 1u);
  }
  ASSERT_GT(pid, 0);
  EXPECT_EQ(::kill(pid, 0), -1) << "killed and reaped, not left running or a zombie";
  EXPECT_EQ(errno, ESRCH);
}

TEST(SpawnTriggerCommand, ShellInItsOwnGroupWithStdinEnvAndNoInheritedFds) {
  testing::TempDir dir;
  std::string out = dir.path("out");
  int leak = ::dup(STDERR_FILENO);
  ASSERT_GE(leak, 3);
  TriggerCommand c;
  c.command =
      "{ cat; echo \"$PERF_PERSISTENT_RULE\"; "
      "if [ -e /proc/self/fd/" +
      std::to_string(leak) + " ]; then echo leaked; else echo closed; fi; } > " + out;
  c.env = {{"PERF_PERSISTENT_RULE", "ce"}};
  c.stdin_data = "{\"severity\":\"fatal\"}\n";
  auto p = spawn_trigger_command(c);
  ::close(leak);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(::getpgid((*p)->pid()), (*p)->pid()) << "the command leads its own process group";
  std::optional<sys::ExitStatus> status;
  for (int i = 0; i < 500 && !status; i++) {
    auto polled = (*p)->poll();
    ASSERT_TRUE(polled.ok());
    status = *polled;
    if (!status)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(status && status->success()) << (status ? status->describe() : "running");
  EXPECT_EQ(read_file(out), "{\"severity\":\"fatal\"}\nce\nclosed\n");
}

}  // namespace
}  // namespace pp::watch

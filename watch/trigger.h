// watch's triggers: run a command when records matching a rule cross a
// threshold, N in a time window, per key: mcelog's triggers with its leaky
// buckets. A Sink: the watcher feeds it records and lost-sample notices and
// ticks it every second.
//
//   TriggerRule rule;
//   rule.name = "dimm-ce";
//   rule.match = "severity == corrected && error_class == memory";
//   rule.threshold = "10 in 24h";      // the 10th match within 24 h fires
//   rule.key = {"cpu", "page"};        // one bucket per CPU and 4 KiB page
//   rule.exec = "/usr/local/sbin/offline-page \"$PERF_PERSISTENT_ADDR\"";
//   PP_ASSIGN_OR_RETURN(auto triggers, Triggers::create({rule}, {.log = &std::cerr}));
//   watcher.add_sink(std::move(triggers));
//
// Rules (Documentation/perf-persistent-watch.txt, TRIGGERS, says it all for
// users):
// - match: a match expression (watch/match.h); empty takes every record. An
//   on_lost rule takes the watcher's lost-sample notices instead, as the
//   object {"origin":"live","lost":true,"event":E,"cpu":C,"records":N,
//   "wall_time":T} (records: how many samples that notice lost).
// - threshold "N in DURATION" (DURATION: parse_duration_ms()'s, a number and
//   ms, s, m, h, d or w, more than 0;
//   1 <= N <= kMaxThresholdCount): a match counts with the earlier ones of
//   its bucket less than DURATION older than the newest; when a bucket holds
//   N the rule fires and the bucket empties. A match's time is the record's
//   wall time, or the wall clock's now when it has none. Empty: every match
//   fires.
// - key: the fields a bucket is per; "page" is addr >> 12 and "addr/N" is
//   addr >> N (a 2^N-byte range). A record without the field is in the
//   bucket of "?". At most TriggerOptions::max_buckets buckets and
//   kMaxRememberedMatches match times per rule: beyond that the least
//   recently matched bucket is forgotten (counted as evicted).
// - rate_limit "N per DURATION": at most N runs (fired, not suppressed) in
//   any DURATION; more are suppressed and counted. Empty: kDefaultRateLimit;
//   "none": no limit.
// - exec: run as `/bin/sh -c EXEC` (spawn_trigger_command: its own process group,
//   stdin the record's JSON line from memory, output to the watcher's
//   stderr), with PERF_PERSISTENT_RULE, PERF_PERSISTENT_COUNT (the N
//   reached), PERF_PERSISTENT_KEY ("cpu=1,page=0x12345") and the record's
//   scalars (trigger_environment()). At most max_children run at once, at
//   most max_queued wait (first in, first out); more are dropped and
//   counted. After timeout_ms the group gets SIGTERM, and SIGKILL
//   kill_grace_ms later.
//
// Log lines (to options.log, one per run when it ends):
//   trigger 'dimm-ce' key cpu=1,page=0x12345: pid 4242 exited with status 0 after 0.012 s
//   trigger 'dimm-ce' key cpu=1,page=0x12345: pid 4243 killed by SIGSEGV after 1.5 s
//   trigger 'dimm-ce' key cpu=1,page=0x12345: pid 4244 timed out after 30 s, killed by SIGTERM
//   after 30.001 s trigger 'dimm-ce' key cpu=1,page=0x12345: cannot run '/bin/sh -c ...': ...
// and one when a run is suppressed, dropped or a bucket evicted first in a
// while, and when that streak ends (with its count); at the end, what was
// still queued.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "sys/child.h"
#include "watch/record.h"

namespace pp::watch {

inline constexpr std::string_view kDefaultRateLimit = "60 per 1h";
inline constexpr uint64_t kMaxThresholdCount = 100000;
inline constexpr size_t kMaxRememberedMatches = size_t(1) << 20;  // per rule
inline constexpr size_t kMaxEnvValue = 4096;                      // bytes of one variable's value
inline constexpr size_t kMaxEnvVariables = 512;

struct TriggerRule {
  std::string name;              // for the log; "rule 1", "rule 2"... when empty
  std::string match;             // a match expression; empty matches every record
  bool on_lost = false;          // takes LostNotices instead of records
  std::string threshold;         // "N in DURATION"; empty: every match fires
  std::vector<std::string> key;  // fields, "page", "addr/N"; empty: one bucket
  std::string exec;              // run with /bin/sh -c
  uint64_t timeout_ms = 30000;   // then SIGTERM to the group, SIGKILL after the grace
  std::string rate_limit;        // "N per DURATION" or "none"; empty: kDefaultRateLimit

  bool operator==(const TriggerRule&) const = default;  // a reload keeps an unchanged set
};

// What a run starts: `/bin/sh -c command`, with `env` added to the
// environment and `stdin_data` as its standard input.
struct TriggerCommand {
  std::string command;
  std::vector<std::pair<std::string, std::string>> env;  // NAME, value
  std::string stdin_data;
};

// A started command. The real one (spawn_trigger_command's) kills its group
// with SIGKILL and reaps it when destroyed before it was reaped; tests
// implement it to fake commands.
class TriggerProcess {
 public:
  virtual ~TriggerProcess() = default;
  virtual pid_t pid() const = 0;
  // Reaps the process if it has exited, without blocking: its status, or
  // nullopt while it runs. After a status, every call returns it again.
  virtual Result<std::optional<sys::ExitStatus>> poll() = 0;
  // Sends `signal` to the process group (the shell and whatever it
  // started). Nothing once the process is reaped.
  virtual Status kill_group(int signal) = 0;
};

// Starts `/bin/sh -c command.command` as a sys::Child: in a process group of
// its own; standard input stdin_data from memory (never blocks the caller,
// however long); standard output and standard error the caller's standard
// error (its standard output may carry --ndjson); no other descriptor of the
// caller's; the caller's environment with `env` added (a name already there
// is replaced); an empty signal mask and the default action for SIGINT,
// SIGTERM, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT, SIGUSR1/2; no pidfd (the
// caller polls with try_wait()), so any kernel runs it. Triggers::create()
// refuses an empty command; a failure to start names the command: "cannot
// run '/bin/sh -c ...': ...".
Result<std::unique_ptr<TriggerProcess>> spawn_trigger_command(const TriggerCommand& command);

struct TriggerOptions {
  size_t max_children = 4;  // commands running at once (at least 1)
  size_t max_queued = 64;   // fired runs waiting for a free slot
  std::ostream* log = nullptr;
  size_t max_buckets = 65536;  // per rule
  uint64_t kill_grace_ms = 2000;
  // Seams for tests; empty: the real ones (sys::monotonic_ms, the wall
  // clock, spawn_trigger_command).
  std::function<int64_t()> monotonic_ms;
  std::function<int64_t()> wall_ms;
  std::function<Result<std::unique_ptr<TriggerProcess>>(const TriggerCommand&)> spawn;
};

// What each rule did since create().
struct TriggerStats {
  std::string rule;
  uint64_t matched = 0;     // records (or notices) the expression took
  uint64_t fired = 0;       // times a bucket reached N
  uint64_t ran = 0;         // commands started
  uint64_t suppressed = 0;  // firings the rate limit held back
  uint64_t dropped = 0;     // firings the full queue turned away (and, at the end, never started)
  uint64_t timed_out = 0;   // commands stopped at their timeout
  uint64_t failed = 0;      // non-zero exit, killed by a signal (not a timeout), or not started
  uint64_t evicted = 0;     // buckets forgotten for room
};

// "N in DURATION".
struct Threshold {
  uint64_t count = 1;
  uint64_t window_ms = 0;
  bool operator==(const Threshold&) const = default;
};
Result<Threshold> parse_threshold(std::string_view text);

// "N per DURATION", or "none" (runs 0: no limit).
struct RateLimit {
  uint64_t runs = 0;
  uint64_t window_ms = 0;
  bool operator==(const RateLimit&) const = default;
};
Result<RateLimit> parse_rate_limit(std::string_view text);

// Checks a whole rule as Triggers::create() does (its expression,
// threshold, rate limit, key, command, timeout): the config file's
// mistakes are found where they are read.
Status check_trigger_rule(const TriggerRule& rule);

// A run's environment beyond the rule's three: each scalar of the record
// (and each array of scalars, space-separated) as PERF_PERSISTENT_<NAME>,
// the machine check's first (PERF_PERSISTENT_SEVERITY, _BANK, _STATUS,
// _ADDR...), then the record's own (_CPU, _EVENT, _TRACEPOINT, _ORIGIN,
// _WALL_TIME; its identity "key" as _RECORD_KEY); the tracepoint's fields as
// PERF_PERSISTENT_FIELD_<NAME>. Names upper-cased, every character outside
// [A-Z0-9_] made '_'; values cut at a NUL and at kMaxEnvValue bytes; at most
// kMaxEnvVariables.
std::vector<std::pair<std::string, std::string>> trigger_environment(
    const nlohmann::ordered_json& record);

class Triggers final : public Sink {
 public:
  // Checks every rule: its expression, threshold, key, rate limit, exec and
  // timeout. A usage error names the rule and the text.
  static Result<std::unique_ptr<Triggers>> create(std::vector<TriggerRule> rules,
                                                  TriggerOptions options);
  // Commands still running get SIGKILL (to their group) and are reaped.
  ~Triggers() override;
  Triggers(const Triggers&) = delete;
  Triggers& operator=(const Triggers&) = delete;

  Status record(const WatchRecord& record, const nlohmann::ordered_json& json) override;
  Status lost(const LostNotice& notice) override;
  // Reaps commands that ended (never blocks), enforces timeouts, starts
  // queued runs. With `final`: starts nothing more, waits for the running
  // commands up to their timeouts and the kill grace, and logs what was
  // still queued (counted as dropped).
  Status tick(uint64_t now_ms, bool final) override;

  std::vector<TriggerStats> stats() const;
  size_t running() const;
  size_t queued() const;

  struct Impl;

 private:
  explicit Triggers(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pp::watch

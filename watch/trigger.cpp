// Triggers in one file of about 650 lines, on purpose: the rule checks, the
// buckets, the rate limit and the runs all work on RuleState and Impl, and
// a split would put those in a header for no second user. The seam, when it
// grows: the rule text parsers (parse_threshold and the rest, ~150 lines).
#include "watch/trigger.h"

#include <signal.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <deque>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>

#include "base/json.h"
#include "base/strings.h"
#include "base/terminal.h"
#include "base/wall_time.h"
#include "sys/clock.h"
#include "watch/match.h"

namespace pp::watch {
namespace {

// "30 s", "0.2 s", "0.012 s".
std::string seconds_text(int64_t ms) {
  if (ms < 0)
    ms = 0;
  std::string text = std::to_string(ms / 1000);
  if (int64_t frac = ms % 1000) {
    std::string digits = std::to_string(1000 + frac).substr(1);
    while (!digits.empty() && digits.back() == '0')
      digits.pop_back();
    text += "." + digits;
  }
  return text + " s";
}

// Splits on runs of spaces.
std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    if (i > start)
      out.push_back(text.substr(start, i - start));
  }
  return out;
}

Result<uint64_t> parse_count(std::string_view text, std::string_view what, uint64_t max) {
  auto bad = [&] {
    return usage_error("'" + std::string(text) + "' is no " + std::string(what) + " (1 to " +
                       std::to_string(max) + ")");
  };
  if (text.empty() || text.size() > 19 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return bad();
  auto n = parse_u64(text, what);
  if (!n.ok() || *n < 1 || *n > max)
    return bad();
  return *n;
}

// A threshold's or rate limit's window: a duration of more than 0 ms that
// the monotonic and wall clocks' int64_t can subtract from.
Result<uint64_t> window_ms(const std::string& text) {
  PP_ASSIGN_OR_RETURN(uint64_t ms, parse_duration_ms(text));
  if (ms == 0 || ms > uint64_t(std::numeric_limits<int64_t>::max()))
    return usage_error("'" + text +
                       "' is no window: give a duration of more than 0 (e.g. 90m, 24h)");
  return ms;
}

bool is_scalar(const nlohmann::ordered_json& v) {
  return v.is_string() || v.is_boolean() || v.is_number();
}

// One part of a bucket's key.
struct KeyPart {
  std::string field;  // the field, or "addr" for page and addr/N
  int shift = -1;     // page: 12; addr/N: N; a plain field: -1
  std::string label;  // as the key text names it: "cpu", "page", "addr/20"
};

Result<KeyPart> parse_key_part(std::string_view text) {
  KeyPart part;
  part.label = std::string(text);
  if (text == "page") {
    part.field = "addr";
    part.shift = 12;
    return part;
  }
  if (starts_with(text, "addr/")) {
    std::string_view n = text.substr(5);
    auto shift = parse_count(n, "shift", 63);
    if (!shift.ok())
      return usage_error("key '" + std::string(text) +
                         "': the shift after 'addr/' must be 1 to 63");
    part.field = "addr";
    part.shift = int(*shift);
    return part;
  }
  bool ok = !text.empty() && (std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_');
  for (char c : text)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.');
  if (!ok)
    return usage_error("key '" + std::string(text) +
                       "': expected a field name (cpu, bank, ...), 'page' or 'addr/N'");
  part.field = std::string(text);
  return part;
}

std::string key_value(const KeyPart& part, const nlohmann::ordered_json& record) {
  const nlohmann::ordered_json* v = record_field(record, part.field);
  if (!v || !is_scalar(*v))
    return "?";
  if (part.shift < 0)
    return json_scalar_text(*v);
  std::optional<uint64_t> addr = u64_from_hex_json(*v);
  if (!addr && v->is_string()) {
    auto parsed = parse_u64(v->get_ref<const std::string&>(), "address");
    if (parsed.ok())
      addr = *parsed;
  }
  return addr ? hex_u64(*addr >> part.shift) : "?";
}

std::string env_name(std::string_view prefix, std::string_view name) {
  std::string out(prefix);
  for (char c : name) {
    char u = char(std::toupper(static_cast<unsigned char>(c)));
    out.push_back((u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ? u : '_');
  }
  return out;
}

std::optional<std::string> env_value(const nlohmann::ordered_json& v) {
  std::string text;
  if (is_scalar(v)) {
    text = json_scalar_text(v);
  } else if (v.is_array() && std::all_of(v.begin(), v.end(), is_scalar)) {
    for (const auto& e : v)
      text += (text.empty() ? "" : " ") + json_scalar_text(e);
  } else {
    return std::nullopt;
  }
  text = text.substr(0, text.find('\0'));
  if (text.size() > kMaxEnvValue)
    text.resize(kMaxEnvValue);
  return text;
}

// How messages name a run's command: the shell's line, cut when long.
std::string command_label(const std::string& command) {
  constexpr size_t kMax = 80;
  std::string shown = command.size() > kMax ? command.substr(0, kMax) + "..." : command;
  return "'/bin/sh -c " + shown + "'";
}

// The real TriggerProcess: a sys::Child in its own process group.
class ShellProcess final : public TriggerProcess {
 public:
  explicit ShellProcess(sys::Child child) : child_(std::move(child)) {}
  // The group gets SIGKILL; ~Child reaps the shell.
  ~ShellProcess() override { (void)child_.kill_group(SIGKILL); }
  ShellProcess(const ShellProcess&) = delete;
  ShellProcess& operator=(const ShellProcess&) = delete;

  pid_t pid() const override { return child_.pid(); }
  Result<std::optional<sys::ExitStatus>> poll() override { return child_.try_wait(); }
  Status kill_group(int signal) override { return child_.kill_group(signal); }

 private:
  sys::Child child_;
};

// A process started for a run, with what its log line needs.
struct Run {
  size_t rule = 0;
  std::string key;
  TriggerCommand request;
};

struct Running {
  Run run;
  std::unique_ptr<TriggerProcess> process;
  int64_t started_ms = 0;
  bool timed_out = false;
  int64_t term_ms = 0;
  bool killed = false;
};

struct Bucket {
  std::deque<int64_t> times;  // match times, oldest first
  std::list<std::string>::iterator lru;
};

struct RuleState {
  TriggerRule rule;
  filter::Expression match;
  Threshold threshold;
  RateLimit rate;
  std::string rate_text;
  std::vector<KeyPart> key;
  TriggerStats stats;

  std::unordered_map<std::string, Bucket> buckets;
  std::list<std::string> lru;  // most recently matched first
  size_t remembered = 0;       // match times held in all buckets
  std::deque<int64_t> runs;    // when admitted runs fired (monotonic), for the rate limit
  uint64_t suppressed_streak = 0, dropped_streak = 0;
  bool eviction_logged = false;
};

// A rule read and checked: its expression, threshold, rate limit, key,
// command and timeout; `index` names a rule without a name ("rule 1").
Result<RuleState> compile_rule(TriggerRule rule, size_t index) {
  RuleState r;
  r.rule = std::move(rule);
  if (r.rule.name.empty())
    r.rule.name = "rule " + std::to_string(index + 1);
  std::string who = "trigger rule '" + r.rule.name + "'";
  auto in_rule = [&](const Error& e) { return usage_error(who + ": " + e.message()); };
  PP_ASSIGN_OR_RETURN(r.match, parse_match(r.rule.match, who + " match"));
  if (!trim(r.rule.threshold).empty()) {
    auto t = parse_threshold(r.rule.threshold);
    if (!t.ok())
      return in_rule(t.error());
    r.threshold = *t;
  }
  r.rate_text = trim(r.rule.rate_limit).empty() ? std::string(kDefaultRateLimit)
                                                : std::string(trim(r.rule.rate_limit));
  auto rate = parse_rate_limit(r.rate_text);
  if (!rate.ok())
    return in_rule(rate.error());
  r.rate = *rate;
  for (const std::string& k : r.rule.key) {
    auto part = parse_key_part(k);
    if (!part.ok())
      return in_rule(part.error());
    r.key.push_back(*part);
  }
  if (trim(r.rule.exec).empty())
    return usage_error(who + ": no command to run; give one (run with /bin/sh -c)");
  if (r.rule.timeout_ms == 0)
    return usage_error(who + ": the timeout must be more than 0 ms");
  r.stats.rule = r.rule.name;
  return r;
}

}  // namespace

Status check_trigger_rule(const TriggerRule& rule) {
  auto compiled = compile_rule(rule, 0);
  if (!compiled.ok())
    return compiled.error();
  return ok_status();
}

Result<std::unique_ptr<TriggerProcess>> spawn_trigger_command(const TriggerCommand& command) {
  sys::SpawnOptions options;
  options.stdout_to_stderr = true;
  options.stdin_data = command.stdin_data;
  options.env = command.env;
  options.own_process_group = true;
  options.close_other_fds = true;
  options.default_signals = true;
  options.pidfd = false;  // try_wait() on every tick
  auto child = sys::Child::spawn({"/bin/sh", "-c", command.command}, options);
  if (!child.ok())
    return Error(child.error().kind(), child.error().code(),
                 "cannot run " + command_label(command.command) + ": " +
                     std::strerror(child.error().code()));
  return std::unique_ptr<TriggerProcess>(std::make_unique<ShellProcess>(std::move(*child)));
}

struct Triggers::Impl {
  std::vector<RuleState> rules;
  TriggerOptions options;
  std::deque<Run> queue;
  std::vector<Running> running;

  void log(const std::string& line) const {
    if (options.log)
      *options.log << terminal_safe(line) << '\n' << std::flush;  // keys hold task names
  }
  std::string prefix(const RuleState& r, const std::string& key = {}) const {
    return "trigger '" + r.rule.name + "'" + (key.empty() ? "" : " key " + key);
  }
  // Ends a streak of runs the rate limit suppressed (or the full queue
  // dropped), logging how many there were.
  void end_suppressed_streak(RuleState& r) {
    if (r.suppressed_streak)
      log(prefix(r) + ": " + std::to_string(r.suppressed_streak) +
          " runs were suppressed by the rate limit " + r.rate_text);
    r.suppressed_streak = 0;
  }
  void end_dropped_streak(RuleState& r) {
    if (r.dropped_streak)
      log(prefix(r) + ": " + std::to_string(r.dropped_streak) +
          " runs were dropped while the queue was full");
    r.dropped_streak = 0;
  }

  Status feed(bool lost, const nlohmann::ordered_json& json, uint64_t wall_ns);
  void count(RuleState& r, const std::string& key, int64_t time);
  void forget_oldest(RuleState& r, const std::string& keep);
  void fire(RuleState& r, const std::string& key, const nlohmann::ordered_json& json);
  void start(Run run, int64_t now);
  void reap(int64_t now);
  void enforce_timeouts(int64_t now);
  void start_queued(int64_t now);
};

Result<Threshold> parse_threshold(std::string_view text) {
  std::vector<std::string_view> w = words(text);
  auto bad = [&](const std::string& why) {
    return usage_error("threshold '" + std::string(text) + "': " + why +
                       "; a threshold is 'N in DURATION' (e.g. '10 in 24h', '1 in 1s')");
  };
  if (w.size() < 3 || w[1] != "in")
    return bad("expected 'N in DURATION'");
  std::string duration(w[2]);
  for (size_t i = 3; i < w.size(); i++)
    duration += std::string(w[i]);  // "24 h"
  auto n = parse_count(w[0], "count", kMaxThresholdCount);
  if (!n.ok())
    return bad(n.error().message());
  auto ms = window_ms(duration);
  if (!ms.ok())
    return bad(ms.error().message());
  return Threshold{*n, *ms};
}

Result<RateLimit> parse_rate_limit(std::string_view text) {
  if (trim(text) == "none")
    return RateLimit{};
  std::vector<std::string_view> w = words(text);
  auto bad = [&](const std::string& why) {
    return usage_error("rate limit '" + std::string(text) + "': " + why +
                       "; a rate limit is 'N per DURATION' (e.g. '60 per 1h') or 'none'");
  };
  if (w.size() < 3 || w[1] != "per")
    return bad("expected 'N per DURATION'");
  std::string duration(w[2]);
  for (size_t i = 3; i < w.size(); i++)
    duration += std::string(w[i]);
  auto n = parse_count(w[0], "count of runs", 1'000'000);
  if (!n.ok())
    return bad(n.error().message());
  auto ms = window_ms(duration);
  if (!ms.ok())
    return bad(ms.error().message());
  return RateLimit{*n, *ms};
}

std::vector<std::pair<std::string, std::string>> trigger_environment(
    const nlohmann::ordered_json& record) {
  std::vector<std::pair<std::string, std::string>> env;
  auto add = [&](std::string name, const nlohmann::ordered_json& v) {
    if (env.size() >= kMaxEnvVariables)
      return;
    for (const auto& [n, value] : env)
      if (n == name)
        return;  // the first wins: the machine check's over the record's
    if (auto text = env_value(v))
      env.emplace_back(std::move(name), std::move(*text));
  };
  if (!record.is_object())
    return env;
  auto mce = record.find("mce");
  if (mce != record.end() && mce->is_object())
    for (const auto& [name, v] : mce->items())
      add(env_name("PERF_PERSISTENT_", name), v);
  for (const auto& [name, v] : record.items())
    if (name != "mce" && name != "fields")
      add(env_name("PERF_PERSISTENT_", name == "key" ? "record_key" : name), v);
  auto fields = record.find("fields");
  if (fields != record.end() && fields->is_object())
    for (const auto& [name, v] : fields->items())
      add(env_name("PERF_PERSISTENT_FIELD_", name), v);
  return env;
}

Result<std::unique_ptr<Triggers>> Triggers::create(std::vector<TriggerRule> rules,
                                                   TriggerOptions options) {
  if (options.max_children < 1)
    return usage_error("triggers: at least one command must be allowed to run at once");
  if (!options.monotonic_ms)
    options.monotonic_ms = [] { return sys::monotonic_ms(); };
  if (!options.wall_ms)
    options.wall_ms = [] { return int64_t(sys::realtime_ns() / 1'000'000); };
  if (!options.spawn)
    options.spawn = spawn_trigger_command;
  if (options.max_buckets < 1)
    options.max_buckets = 1;

  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  for (size_t i = 0; i < rules.size(); i++) {
    PP_ASSIGN_OR_RETURN(RuleState r, compile_rule(std::move(rules[i]), i));
    impl->rules.push_back(std::move(r));
  }
  return std::unique_ptr<Triggers>(new Triggers(std::move(impl)));
}

Triggers::Triggers(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Triggers::~Triggers() {
  // Each Process kills its group and reaps it when it goes.
  impl_->running.clear();
}

Status Triggers::record(const WatchRecord& record, const nlohmann::ordered_json& json) {
  return impl_->feed(false, json, record.wall_ns);
}

Status Triggers::lost(const LostNotice& notice) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["origin"] = "live";
  j["lost"] = true;
  j["event"] = notice.event;
  if (notice.cpu >= 0)
    j["cpu"] = notice.cpu;
  j["records"] = notice.records;
  if (notice.wall_ns)
    j["wall_time"] = format_wall_time(notice.wall_ns);
  return impl_->feed(true, j, notice.wall_ns);
}

Status Triggers::Impl::feed(bool lost, const nlohmann::ordered_json& json, uint64_t wall_ns) {
  int64_t time = wall_ns ? int64_t(wall_ns / 1'000'000) : options.wall_ms();
  for (RuleState& r : rules) {
    if (r.rule.on_lost != lost || !record_matches(r.match, json))
      continue;
    r.stats.matched++;
    std::string key;
    for (const KeyPart& part : r.key)
      key += (key.empty() ? "" : ",") + part.label + "=" + key_value(part, json);
    if (r.threshold.count <= 1) {
      fire(r, key, json);
      continue;
    }
    count(r, key, time);
    auto it = r.buckets.find(key);
    if (it != r.buckets.end() && it->second.times.size() >= r.threshold.count) {
      r.remembered -= it->second.times.size();
      r.lru.erase(it->second.lru);
      r.buckets.erase(it);
      fire(r, key, json);
    }
  }
  return ok_status();
}

// Adds a match at `time` to its bucket and lets the ones that aged out of
// the window go.
void Triggers::Impl::count(RuleState& r, const std::string& key, int64_t time) {
  auto [it, inserted] = r.buckets.try_emplace(key);
  Bucket& b = it->second;
  if (inserted) {
    r.lru.push_front(key);
  } else {
    r.lru.splice(r.lru.begin(), r.lru, b.lru);
  }
  b.lru = r.lru.begin();
  // Records come nearly in order; one from the past goes where it belongs.
  auto pos = b.times.end();
  while (pos != b.times.begin() && *std::prev(pos) > time)
    --pos;
  b.times.insert(pos, time);
  r.remembered++;
  int64_t newest = b.times.back();
  while (!b.times.empty() && newest - b.times.front() >= int64_t(r.threshold.window_ms)) {
    b.times.pop_front();
    r.remembered--;
  }
  forget_oldest(r, key);
}

void Triggers::Impl::forget_oldest(RuleState& r, const std::string& keep) {
  while ((r.buckets.size() > options.max_buckets || r.remembered > kMaxRememberedMatches) &&
         r.lru.size() > 1 && r.lru.back() != keep) {
    auto it = r.buckets.find(r.lru.back());
    r.remembered -= it->second.times.size();
    r.buckets.erase(it);
    r.lru.pop_back();
    r.stats.evicted++;
    if (!r.eviction_logged) {
      r.eviction_logged = true;
      log(prefix(r) + ": more than " + std::to_string(options.max_buckets) + " keys (or " +
          std::to_string(kMaxRememberedMatches) +
          " remembered matches); forgetting the least recently matched (counted as evicted)");
    }
  }
}

void Triggers::Impl::fire(RuleState& r, const std::string& key,
                          const nlohmann::ordered_json& json) {
  r.stats.fired++;
  int64_t now = options.monotonic_ms();
  reap(now);  // a slot that freed since the last tick is free now
  if (r.rate.runs) {
    while (!r.runs.empty() && now - r.runs.front() >= int64_t(r.rate.window_ms))
      r.runs.pop_front();
    if (r.runs.size() >= r.rate.runs) {
      r.stats.suppressed++;
      if (r.suppressed_streak++ == 0)
        log(prefix(r, key) + ": not run: rate limit " + r.rate_text +
            " reached; further runs are suppressed until it allows one");
      return;
    }
  }
  end_suppressed_streak(r);
  if (running.size() >= options.max_children && queue.size() >= options.max_queued) {
    r.stats.dropped++;
    if (r.dropped_streak++ == 0)
      log(prefix(r, key) + ": dropped: " + std::to_string(running.size()) + " commands run and " +
          std::to_string(queue.size()) + " wait already (the most allowed)");
    return;
  }
  end_dropped_streak(r);
  if (r.rate.runs)
    r.runs.push_back(now);

  Run run;
  run.rule = size_t(&r - rules.data());
  run.key = key;
  run.request.command = r.rule.exec;
  run.request.env = {{"PERF_PERSISTENT_RULE", r.rule.name},
                     {"PERF_PERSISTENT_COUNT", std::to_string(r.threshold.count)},
                     {"PERF_PERSISTENT_KEY", key}};
  for (auto& var : trigger_environment(json))
    run.request.env.push_back(std::move(var));
  run.request.stdin_data = dump_json(json) + "\n";
  queue.push_back(std::move(run));
  start_queued(now);
}

void Triggers::Impl::start(Run run, int64_t now) {
  RuleState& r = rules[run.rule];
  auto process = options.spawn(run.request);
  if (!process.ok()) {
    r.stats.failed++;
    log(prefix(r, run.key) + ": " + process.error().message());
    return;
  }
  r.stats.ran++;
  Running child;
  child.run = std::move(run);
  child.process = std::move(*process);
  child.started_ms = now;
  running.push_back(std::move(child));
}

void Triggers::Impl::reap(int64_t now) {
  for (auto it = running.begin(); it != running.end();) {
    RuleState& r = rules[it->run.rule];
    auto status = it->process->poll();
    if (status.ok() && !*status) {
      ++it;
      continue;
    }
    std::string line = prefix(r, it->run.key) + ": pid " + std::to_string(it->process->pid());
    if (!status.ok()) {
      r.stats.failed++;
      line += ": " + status.error().message();
    } else {
      if (it->timed_out)
        line += " timed out after " + seconds_text(int64_t(r.rule.timeout_ms)) + ",";
      else if (!(*status)->success())
        r.stats.failed++;
      line += " " + (*status)->describe() + " after " + seconds_text(now - it->started_ms);
    }
    log(line);
    it = running.erase(it);
  }
}

void Triggers::Impl::enforce_timeouts(int64_t now) {
  for (Running& child : running) {
    RuleState& r = rules[child.run.rule];
    if (!child.timed_out && now - child.started_ms >= int64_t(r.rule.timeout_ms)) {
      child.timed_out = true;
      child.term_ms = now;
      r.stats.timed_out++;
      (void)child.process->kill_group(SIGTERM);
    } else if (child.timed_out && !child.killed &&
               now - child.term_ms >= int64_t(options.kill_grace_ms)) {
      child.killed = true;
      (void)child.process->kill_group(SIGKILL);
    }
  }
}

void Triggers::Impl::start_queued(int64_t now) {
  while (running.size() < options.max_children && !queue.empty()) {
    Run run = std::move(queue.front());
    queue.pop_front();
    start(std::move(run), now);
  }
}

Status Triggers::tick(uint64_t now_ms, bool final) {
  Impl& s = *impl_;
  int64_t now = int64_t(now_ms);
  s.reap(now);
  s.enforce_timeouts(now);
  if (!final) {
    s.start_queued(now);
    return ok_status();
  }

  if (!s.queue.empty()) {
    std::map<std::string, size_t> per_rule;
    for (const Run& run : s.queue) {
      per_rule[s.rules[run.rule].rule.name]++;
      s.rules[run.rule].stats.dropped++;
    }
    std::string list;
    for (const auto& [name, n] : per_rule)
      list += (list.empty() ? "" : ", ") + ("'" + name + "' " + std::to_string(n));
    s.log("triggers: exiting with " + std::to_string(s.queue.size()) +
          " runs still queued, not started (" + list + ")");
    s.queue.clear();
  }
  for (RuleState& r : s.rules) {
    s.end_suppressed_streak(r);
    s.end_dropped_streak(r);
  }

  // Wait for the running commands, each at most to its timeout and the
  // kill grace: bounded by the longest of those, whatever the clock does.
  constexpr int64_t kPollMs = 10;
  uint64_t longest = 0;
  for (const Running& child : s.running)
    longest = std::max(longest, s.rules[child.run.rule].rule.timeout_ms);
  int64_t rounds = int64_t(longest + s.options.kill_grace_ms) / kPollMs + 100;
  while (!s.running.empty() && rounds-- > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
    now = s.options.monotonic_ms();
    s.reap(now);
    s.enforce_timeouts(now);
  }
  for (Running& child : s.running) {
    RuleState& r = s.rules[child.run.rule];
    r.stats.failed++;
    s.log(s.prefix(r, child.run.key) + ": pid " + std::to_string(child.process->pid()) +
          " still running at exit; its process group gets SIGKILL");
  }
  s.running.clear();
  return ok_status();
}

std::vector<TriggerStats> Triggers::stats() const {
  std::vector<TriggerStats> out;
  for (const RuleState& r : impl_->rules)
    out.push_back(r.stats);
  return out;
}

size_t Triggers::running() const {
  return impl_->running.size();
}

size_t Triggers::queued() const {
  return impl_->queue.size();
}

}  // namespace pp::watch

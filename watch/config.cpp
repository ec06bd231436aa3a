#include "watch/config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "base/ini.h"
#include "base/strings.h"
#include "persistent/previous_boot.h"
#include "sys/tree.h"
#include "watch/harvest.h"
#include "watch/match.h"
#include "watch/trigger.h"

namespace pp::watch {
namespace {

// The metrics file is rewritten at most this often.
constexpr uint64_t kMinPrometheusIntervalMs = 100;
// The smallest --retention-size (see retention-size below).
constexpr uint64_t kMinRetentionBytes = 1ULL << 20;

Error config_error(std::string_view path, int line, const std::string& what) {
  return ini_error(path, line, what + "; see perf-persistent-watch(1), CONFIG FILE");
}

Result<bool> parse_yes_no(std::string_view value, std::string_view what) {
  if (value == "yes" || value == "true" || value == "1")
    return true;
  if (value == "no" || value == "false" || value == "0")
    return false;
  return usage_error(std::string(what) + " '" + std::string(value) + "': say yes or no");
}

Result<JournalMode> parse_journal(std::string_view value, std::string_view what) {
  if (value.empty() || value == "yes" || value == "mce")
    return JournalMode::kMachineChecks;
  if (value == "no")
    return JournalMode::kOff;
  if (value == "all")
    return JournalMode::kEvery;
  return usage_error(std::string(what) + " '" + std::string(value) +
                     "': say no, yes (machine checks and lost samples) or all (every record)");
}

Result<uint64_t> parse_count(std::string_view text, std::string_view what, uint64_t min,
                             uint64_t max) {
  auto value = parse_u64(text, what);
  if (!value.ok() || *value < min || *value > max)
    return usage_error(std::string(what) + " '" + std::string(text) + "': give a number from " +
                       std::to_string(min) + " to " + std::to_string(max));
  return *value;
}

// Sets the key of a [trigger NAME] section, or the command line's option
// for it: `what` names the one given ("timeout", "--timeout"). Errors are
// usage errors; the config file's reader makes them config errors.
Status set_trigger_key(TriggerRule& rule, std::string_view key, std::string_view value,
                       std::string_view what) {
  if (key == "match") {
    rule.match = value;
  } else if (key == "threshold") {
    rule.threshold = value;
  } else if (key == "key") {
    rule.key.clear();
    for (std::string_view k : split(value, ','))
      if (!trim(k).empty())
        rule.key.emplace_back(trim(k));
  } else if (key == "exec") {
    rule.exec = value;
  } else if (key == "timeout") {
    PP_ASSIGN_OR_RETURN(rule.timeout_ms, parse_seconds_ms(value, what));
  } else if (key == "rate-limit") {
    rule.rate_limit = value;
  } else if (key == "on") {
    if (value != "records" && value != "lost")
      return usage_error(std::string(what) + " '" + std::string(value) + "': say records or lost");
    rule.on_lost = value == "lost";
  } else {
    return usage_error("unknown key '" + std::string(key) +
                       "' (a trigger has match, threshold, key, exec, timeout, rate-limit, on)");
  }
  return ok_status();
}

// Sets a key of [watch], or the command line's option for it: `what` names
// the one given ("retention-days", "--retention-days"). `events_set`: an
// event was given before in the same place (the first one replaces the
// defaults, or the file's). Errors are usage errors.
Status set_watch_key(WatchOptions& options, bool& events_set, std::string_view key,
                     std::string_view value, std::string_view what) {
  if (key == "event") {
    if (!events_set)
      options.events.clear();
    events_set = true;
    options.events.emplace_back(value);
  } else if (key == "cpus") {
    options.cpus = value;
  } else if (key == "db") {
    options.db = value == "none" ? "" : std::string(value);
  } else if (key == "retention-days") {
    PP_ASSIGN_OR_RETURN(uint64_t days, parse_count(value, what, 0, 36500));
    options.history.max_age_s = days * 86400;
  } else if (key == "retention-size") {
    PP_ASSIGN_OR_RETURN(uint64_t bytes, parse_size(value, what));
    // The history's own tables and indexes take a page each (16 KiB in a
    // new file, about 14 of them) whatever the records: a smaller budget
    // would have retention delete every record, the newest machine check
    // included, at every start.
    if (bytes != 0 && bytes < kMinRetentionBytes)
      return usage_error(std::string(what) + " '" + std::string(value) +
                         "': give at least 1M (the history's own tables take about a "
                         "quarter of that), or 0 for no size limit");
    options.history.max_bytes = bytes;
  } else if (key == "prometheus") {
    options.prometheus = value == "none" ? "" : std::string(value);
  } else if (key == "prometheus-interval") {
    PP_ASSIGN_OR_RETURN(uint64_t ms, parse_seconds_ms(value, what));
    if (ms < kMinPrometheusIntervalMs)
      return usage_error(std::string(what) + " '" + std::string(value) +
                         "': give at least 0.1 seconds");
    options.prometheus_interval_ms = ms;
  } else if (key == "journal") {
    PP_ASSIGN_OR_RETURN(options.journal, parse_journal(value, what));
  } else if (key == "harvest") {
    PP_ASSIGN_OR_RETURN(options.harvest, parse_yes_no(value, what));
  } else if (key == "max-children") {
    PP_ASSIGN_OR_RETURN(uint64_t n, parse_count(value, what, 1, 64));
    options.max_children = size_t(n);
  } else if (key == "offline-pages") {
    PP_ASSIGN_OR_RETURN(options.offline.mode, parse_offline_mode(value, what));
  } else if (key == "offline-policy") {
    PP_ASSIGN_OR_RETURN(options.offline.policy, parse_offline_policy(value, what));
  } else if (key == "page-threshold") {
    auto t = parse_threshold(value);
    if (!t.ok())
      return usage_error(std::string(what) + ": " + t.error().message());
    options.offline.page_threshold = *t;
  } else if (key == "row-threshold") {
    if (value == "none") {
      options.offline.row_threshold.reset();
    } else {
      auto t = parse_threshold(value);
      if (!t.ok())
        return usage_error(std::string(what) + ": " + t.error().message() + ", or none");
      options.offline.row_threshold = *t;
    }
  } else if (key == "offline-max") {
    auto r = parse_rate_limit(value);
    if (!r.ok())
      return usage_error(std::string(what) + ": " + r.error().message());
    options.offline.max = *r;
  } else if (key == "offline-dry-run") {
    PP_ASSIGN_OR_RETURN(options.offline.dry_run, parse_yes_no(value, what));
  } else {
    return usage_error("unknown key '" + std::string(key) +
                       "' (watch has event, cpus, db, retention-days, retention-size, "
                       "prometheus, prometheus-interval, journal, harvest, max-children, "
                       "offline-pages, offline-policy, page-threshold, row-threshold, "
                       "offline-max, offline-dry-run)");
  }
  return ok_status();
}

}  // namespace

Result<uint64_t> parse_size(std::string_view text, std::string_view what) {
  std::string_view digits = text;
  uint64_t unit = 1;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K':
      case 'k':
        unit = 1ULL << 10;
        break;
      case 'M':
      case 'm':
        unit = 1ULL << 20;
        break;
      case 'G':
      case 'g':
        unit = 1ULL << 30;
        break;
      case 'T':
      case 't':
        unit = 1ULL << 40;
        break;
      default:
        break;
    }
    if (unit != 1)
      digits.remove_suffix(1);
  }
  auto value = parse_u64(digits, what);
  if (!value.ok() || *value > UINT64_MAX / unit)
    return usage_error(std::string(what) + " '" + std::string(text) +
                       "': give a size in bytes, or with K, M, G or T (e.g. 256M)");
  return *value * unit;
}

Result<uint64_t> parse_seconds_ms(std::string_view text, std::string_view what) {
  std::string s(text);
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(s.c_str(), &end);
  if (s.empty() || errno || end != s.c_str() + s.size() || !std::isfinite(value) || value < 0 ||
      value > 365.0 * 86400)
    return usage_error(std::string(what) + " '" + s +
                       "': give seconds (e.g. 30, or 0.5 for half a second)");
  return uint64_t(std::llround(value * 1000));
}

Status parse_watch_config(std::string_view text, std::string_view path, WatchOptions& options) {
  auto doc = parse_ini(text, path);
  if (!doc.ok())
    return Error(doc.error().kind(), doc.error().code(),
                 doc.error().message() + "; see perf-persistent-watch(1), CONFIG FILE");
  if (!doc->preamble.empty())
    return config_error(path, doc->preamble.front().line,
                        "a key before any section; start with [watch]");
  bool events_set = false;
  for (const IniSection& section : doc->sections) {
    const std::string& name = section.name;
    bool trigger = starts_with(name, "trigger ") && !trim(name.substr(8)).empty();
    if (name == "check") {
      // `perf persistent check`'s own section (check/check.h): watch keeps
      // it so that one file says what is acknowledged on this host.
      for (const IniEntry& entry : section.entries) {
        if (entry.key != "ignore")
          return config_error(path, entry.line,
                              "unknown key '" + entry.key + "' ([check] has ignore)");
        for (std::string_view id : split(entry.value, ','))
          if (!trim(id).empty())
            options.check_ignore.emplace_back(trim(id));
      }
      continue;
    }
    if (name != "watch" && !trigger)
      return config_error(
          path, section.line,
          "unknown section [" + name + "]; the sections are [watch], [trigger NAME] and [check]");
    if (trigger) {
      TriggerRule rule;
      rule.name = std::string(trim(std::string_view(name).substr(8)));
      for (const TriggerRule& r : options.triggers)
        if (r.name == rule.name)
          return config_error(path, section.line, "a second [trigger " + rule.name + "]");
      options.triggers.push_back(std::move(rule));
    }
    for (const IniEntry& entry : section.entries) {
      Status set = trigger
                       ? set_trigger_key(options.triggers.back(), entry.key, entry.value, entry.key)
                       : set_watch_key(options, events_set, entry.key, entry.value, entry.key);
      if (!set.ok())
        return config_error(path, entry.line, set.error().message());
    }
    // A rule is whole when its section ends: checked then, its mistakes
    // named at its header's line.
    if (trigger) {
      Status checked = check_trigger_rule(options.triggers.back());
      if (!checked.ok())
        return config_error(path, section.line, checked.error().message());
    }
  }
  return ok_status();
}

Result<WatchOptions> watch_options(const WatchArgs& args,
                                   const persistent::BackendOptions& backend) {
  WatchOptions options;
  if (!args.config.empty()) {
    std::string path = args.config;
    sys::Tree root(path.front() == '/' ? "/" : ".");
    auto text = root.read(path.front() == '/' ? std::string_view(path).substr(1) : path, 1 << 20);
    if (!text.ok())
      return Error(ErrorKind::kConfig, text.error().code(),
                   "cannot read the config file " + path + ": " + text.error().message() +
                       "; give an existing file with --config, or none");
    PP_RETURN_IF_ERROR(parse_watch_config(*text, path, options));
  }
  // Each value given goes through the file's setters, named as the option
  // it came from: the same limits and messages, as usage errors.
  bool events_set = false;
  auto set = [&](std::string_view key, const std::string& value, const char* option) -> Status {
    if (value.empty())
      return ok_status();
    return set_watch_key(options, events_set, key, value, option);
  };
  for (const std::string& event : args.events)
    PP_RETURN_IF_ERROR(set_watch_key(options, events_set, "event", event, "-e"));
  options.events_named = !args.events.empty();
  PP_RETURN_IF_ERROR(set("cpus", args.cpus, "-C"));
  if (args.no_db && !args.db.empty())
    return usage_error("--db and --no-db: give one of them");
  // --db and --prometheus take the name as given ("none" is the file's
  // spelling of --no-db).
  if (!args.db.empty())
    options.db = args.db;
  if (args.no_db)
    options.db.clear();
  PP_RETURN_IF_ERROR(set("retention-days", args.retention_days, "--retention-days"));
  PP_RETURN_IF_ERROR(set("retention-size", args.retention_size, "--retention-size"));
  if (!args.prometheus.empty())
    options.prometheus = args.prometheus;
  PP_RETURN_IF_ERROR(set("prometheus-interval", args.prometheus_interval, "--prometheus-interval"));
  options.ndjson = args.ndjson;
  if (args.journal_given) {
    PP_ASSIGN_OR_RETURN(options.journal, parse_journal(args.journal, "--journal"));
  }
  bool rule_given = !args.exec.empty() || !args.match.empty() || !args.threshold.empty() ||
                    !args.key.empty() || !args.timeout.empty() || !args.rate_limit.empty() ||
                    args.on_lost;
  if (rule_given) {
    if (args.exec.empty())
      return usage_error(
          "--match, --threshold, --key, --timeout, --rate-limit and --on-lost describe a "
          "trigger: give the command to run with --exec CMD");
    // Named as the user gave it, not as the rule "command line" below.
    PP_RETURN_IF_ERROR(parse_match(args.match, "--match"));
    TriggerRule rule;
    rule.name = "command line";
    rule.on_lost = args.on_lost;
    struct Given {
      const char* key;
      const std::string& value;
      const char* option;
    };
    const Given given[] = {{"exec", args.exec, "--exec"},
                           {"match", args.match, "--match"},
                           {"threshold", args.threshold, "--threshold"},
                           {"key", args.key, "--key"},
                           {"timeout", args.timeout, "--timeout"},
                           {"rate-limit", args.rate_limit, "--rate-limit"}};
    for (const Given& g : given)
      if (!g.value.empty())
        PP_RETURN_IF_ERROR(set_trigger_key(rule, g.key, g.value, g.option));
    PP_RETURN_IF_ERROR(check_trigger_rule(rule));
    options.triggers.push_back(std::move(rule));
  }
  PP_RETURN_IF_ERROR(set("max-children", args.max_children, "--max-children"));
  PP_RETURN_IF_ERROR(set("offline-pages", args.offline_pages, "--offline-pages"));
  PP_RETURN_IF_ERROR(set("offline-policy", args.offline_policy, "--offline-policy"));
  PP_RETURN_IF_ERROR(set("page-threshold", args.page_threshold, "--page-threshold"));
  PP_RETURN_IF_ERROR(set("row-threshold", args.row_threshold, "--row-threshold"));
  PP_RETURN_IF_ERROR(set("offline-max", args.offline_max, "--offline-max"));
  if (args.offline_dry_run)
    options.offline.dry_run = true;
  PP_RETURN_IF_ERROR(check_offline_options(options.offline));
  if (args.no_harvest)
    options.harvest = false;
  if (!args.kmsg.empty())
    options.harvest_options.kmsg = args.kmsg;
  if (!args.pstore.empty())
    options.harvest_options.pstore = args.pstore;
  if (args.no_kmsg)
    options.harvest_options.kmsg.clear();
  if (args.no_pstore)
    options.harvest_options.pstore.clear();
  // systemd-pstore's archive holds what it moved out of the default pstore:
  // read with it, not with another pstore (--pstore DIR) nor without one.
  if (args.pstore.empty() && !args.no_pstore)
    options.harvest_options.systemd_pstore = kSystemdPstore;
  options.harvest_options.kept_dir = args.no_previous_boot ? ""
                                     : args.previous_boot_dir.empty()
                                         ? std::string(persistent::kDefaultKeptDir)
                                         : args.previous_boot_dir;
  options.once = args.once;
  if (!args.duration.empty()) {
    PP_ASSIGN_OR_RETURN(options.duration_ms, parse_seconds_ms(args.duration, "--duration"));
    if (options.duration_ms == 0)
      return usage_error("--duration 0: give a positive number of seconds, or leave it out");
  }
  if (options.once && options.duration_ms)
    return usage_error("--once and --duration: give one of them");
  options.backend = backend;
  options.roots.broker_run_dir = options.backend.run_dir;
  // SIGHUP: the same file and command line, read again.
  if (!args.config.empty())
    options.reload = [args, backend]() { return watch_options(args, backend); };
  return options;
}

}  // namespace pp::watch

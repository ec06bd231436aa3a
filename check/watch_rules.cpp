// Is watch alive: the heartbeat its history holds, and the age of its
// metrics file, from the facts cmd/check read (CheckInputs::watch). A watch
// that died keeps nothing from the events (the broker still holds them),
// but no trigger fires, no alert changes and no journal entry is written:
// WARNING, as every "recorded less well" is.
#include <algorithm>

#include "base/wall_time.h"
#include "check/checker.h"

namespace pp::check {
namespace {

constexpr const char* kWatchAction =
    "see why: 'systemctl status perf-persistent-watch' and 'journalctl -u "
    "perf-persistent-watch'; start it: 'systemctl start perf-persistent-watch'";

// How long, in seconds, before a writer that writes every `interval_s` is
// stale.
uint64_t stale_after(uint64_t interval_s) {
  return std::max(kStaleIntervals * interval_s, kMinStaleSeconds);
}

std::string config_source(const WatchFacts& w) {
  return w.config.empty() ? std::string("watch's config file (none)") : w.config;
}

std::string ago(uint64_t now_ns, uint64_t then_ns) {
  return seconds_text(now_ns > then_ns ? (now_ns - then_ns) / 1000000000ull : 0) + " ago (" +
         format_wall_time(then_ns) + ")";
}

}  // namespace

void Checker::watch_alive() {
  const WatchFacts& w = in_.watch;
  const uint64_t now_ns = uint64_t(std::max<int64_t>(in_.now, 0)) * 1000000000ull;
  const std::string configured =
      w.config.empty() ? std::string("watch's default") : "configured in " + w.config;
  if (w.db.empty()) {
    add("watch-not-alive", CheckStatus::kOk,
        "not applicable: watch keeps no history (db = none in " + w.config +
            "), so it leaves no heartbeat; metrics-stale says whether it writes its metrics",
        config_source(w));
    return;
  }
  if (!w.db_exists) {
    if (w.config.empty()) {
      add("watch-not-alive", CheckStatus::kOk,
          "not applicable: no watch config file and no history at " + w.db +
              ": watch is not set up on this host",
          w.db);
      return;
    }
    add("watch-not-alive", CheckStatus::kWarning,
        "watch has never written its history " + w.db + " (" + configured +
            "): it has not run since it was configured",
        w.db, kWatchAction);
    return;
  }
  if (!w.db_error.empty()) {
    add("watch-not-alive", CheckStatus::kUnknown, "cannot read watch's heartbeat: " + w.db_error,
        w.db, "run check as root (the history is 0600), or mend the file as the message says");
    return;
  }
  if (!w.heartbeat) {
    add("watch-not-alive", CheckStatus::kWarning,
        std::string("the history ") + w.db + " holds no heartbeat: " +
            (w.heartbeat_table ? "the watcher that made it never beat"
                               : "no watch of this version has opened it since it was upgraded") +
            " (" + configured + ")",
        w.db, kWatchAction);
    return;
  }
  const std::string who =
      "watch (pid " + std::to_string(w.pid) + ", started " + format_wall_time(w.started_ns) + ")";
  if (w.stopped_ns) {
    add("watch-not-alive", CheckStatus::kWarning,
        who + " stopped " + ago(now_ns, w.stopped_ns) +
            " and none has run since: no trigger fires, no alert or journal entry is written "
            "(the broker still holds the events)",
        w.db + " (heartbeat)", kWatchAction);
    return;
  }
  uint64_t limit = stale_after(w.interval_s);
  if (now_ns > w.beat_ns && (now_ns - w.beat_ns) / 1000000000ull > limit) {
    add("watch-not-alive", CheckStatus::kWarning,
        who + " beat last " + ago(now_ns, w.beat_ns) + ", and beats every " +
            std::to_string(w.interval_s) +
            " s: it died without stopping, or hangs; no trigger fires, no alert or journal "
            "entry is written (the broker still holds the events)",
        w.db + " (heartbeat)", kWatchAction);
    return;
  }
  add("watch-not-alive", CheckStatus::kOk, who + " beat " + ago(now_ns, w.beat_ns),
      w.db + " (heartbeat)");
}

void Checker::metrics_fresh() {
  const WatchFacts& w = in_.watch;
  const uint64_t now_ns = uint64_t(std::max<int64_t>(in_.now, 0)) * 1000000000ull;
  const std::string where =
      w.config.empty() ? std::string("no watch config file") : "prometheus in " + w.config;
  if (w.prometheus.empty()) {
    add("metrics-stale", CheckStatus::kOk,
        "not applicable: watch writes no metrics file (" + where + ")", config_source(w));
    return;
  }
  const std::string action =
      std::string(kWatchAction) +
      "; if watch runs, see that it can write the file's directory (its log says)";
  if (!w.prometheus_mtime_ns) {
    add("metrics-stale", CheckStatus::kWarning,
        "watch's metrics file is missing: " + w.prometheus_error +
            "; Prometheus has no perf_persistent_* series from this host, and alerts on them "
            "cannot fire",
        w.prometheus, action);
    return;
  }
  if (w.watch_up && !*w.watch_up) {
    add("metrics-stale", CheckStatus::kWarning,
        "the metrics file says watch stopped (perf_persistent_watch_up 0, written " +
            ago(now_ns, *w.prometheus_mtime_ns) + "): its counters no longer move",
        w.prometheus, action);
    return;
  }
  uint64_t interval_s = (w.prometheus_interval_ms + 999) / 1000;
  uint64_t limit = stale_after(interval_s);
  if (now_ns > *w.prometheus_mtime_ns &&
      (now_ns - *w.prometheus_mtime_ns) / 1000000000ull > limit) {
    add("metrics-stale", CheckStatus::kWarning,
        "watch's metrics file was written last " + ago(now_ns, *w.prometheus_mtime_ns) +
            ", and is rewritten every " + std::to_string(interval_s) +
            " s: Prometheus reads stale values (perf_persistent_watch_up stays 1 in them)",
        w.prometheus, action);
    return;
  }
  add("metrics-stale", CheckStatus::kOk,
      "watch's metrics file was written " + ago(now_ns, *w.prometheus_mtime_ns), w.prometheus);
}

}  // namespace pp::check

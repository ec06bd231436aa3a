#include "watch/liveness.h"

#include <cerrno>

#include "base/strings.h"
#include "sys/input.h"
#include "watch/config.h"
#include "watch/history.h"
#include "watch/watcher.h"

namespace pp::watch {
namespace {

std::optional<int64_t> column_opt(sqlite3_stmt* s, int i) {
  if (sqlite3_column_type(s, i) == SQLITE_NULL)
    return std::nullopt;
  return sqlite3_column_int64(s, i);
}

// The heartbeat row and the machine checks of the history at `path`.
void read_history(const std::string& path, WatchLiveness& out) {
  auto opened = open_history_db(path, /*writable=*/false);
  if (!opened.ok()) {
    out.db_error = opened.error().message();
    return;
  }
  sqlite3* db = opened->db.get();
  sqlite3_stmt* raw = nullptr;
  // No table: no watcher that beats has opened the file (an older one did).
  if (sqlite3_prepare_v2(db,
                         "SELECT pid, boot_id, started_ns, beat_ns, interval_s, stopped_ns FROM "
                         "heartbeat WHERE id = 1",
                         -1, &raw, nullptr) == SQLITE_OK) {
    SqliteStmt beat(raw);
    out.heartbeat_table = true;
    int rc = sqlite3_step(raw);
    if (rc == SQLITE_ROW) {
      HeartbeatRow row;
      row.pid = column_opt(raw, 0).value_or(0);
      if (const unsigned char* t = sqlite3_column_text(raw, 1))
        row.boot_id = reinterpret_cast<const char*>(t);
      row.started_ns = uint64_t(column_opt(raw, 2).value_or(0));
      row.beat_ns = uint64_t(column_opt(raw, 3).value_or(0));
      row.interval_s = uint64_t(column_opt(raw, 4).value_or(0));
      row.stopped_ns = uint64_t(column_opt(raw, 5).value_or(0));
      out.heartbeat = row;
    } else if (rc != SQLITE_DONE) {
      out.db_error = sqlite_error(db, "reading the heartbeat of", path).message();
      return;
    }
  }
  // As the watcher's counters count them (History::totals()).
  raw = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT (SELECT count(*) FROM records WHERE severity IS NOT NULL) + "
                         "(SELECT count(*) FROM seen_keys)",
                         -1, &raw, nullptr) == SQLITE_OK) {
    SqliteStmt count(raw);
    if (sqlite3_step(raw) == SQLITE_ROW)
      out.machine_checks = uint64_t(sqlite3_column_int64(raw, 0));
  }
}

// The metrics file's age and what its watch_up line says:
//   perf_persistent_watch_up 1
void read_metrics(const std::string& path, WatchLiveness& out) {
  auto mtime = sys::modified_time_ns(path);
  if (!mtime.ok()) {
    out.prometheus_error = mtime.error().message();
    return;
  }
  out.prometheus_mtime_ns = *mtime;
  auto text = sys::read_input(path, "the metrics file", size_t(16) << 20);
  if (!text.ok())
    return;
  for (std::string_view line : split(*text, '\n')) {
    std::string_view t = trim(line);
    if (starts_with(t, "perf_persistent_watch_up "))
      out.watch_up = trim(t.substr(25)) == "1";
  }
}

}  // namespace

Result<WatchLiveness> read_watch_liveness(const std::string& config, bool required) {
  WatchLiveness out;
  WatchOptions options;
  auto text = sys::read_input(config, "the config file", size_t(1) << 20);
  if (text.ok()) {
    out.config = config;
    PP_RETURN_IF_ERROR(parse_watch_config(*text, config, options));
  } else if (required || text.error().code() != ENOENT) {
    return Error(ErrorKind::kConfig, text.error().code(),
                 text.error().message() + "; give watch's config file with --config");
  }
  out.check_ignore = options.check_ignore;
  out.db = options.db;
  out.prometheus = options.prometheus;
  out.prometheus_interval_ms = options.prometheus_interval_ms;
  if (!out.db.empty()) {
    out.db_exists = sys::modified_time_ns(out.db).ok();
    if (out.db_exists)
      read_history(out.db, out);
  }
  if (!out.prometheus.empty())
    read_metrics(out.prometheus, out);
  return out;
}

}  // namespace pp::watch

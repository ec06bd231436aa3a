#include "watch/history.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <string>

#include "base/json.h"
#include "mce/bits.h"
#include "mce/decode.h"
#include "sys/atomic_file.h"
#include "sys/clock.h"
#include "sys/tree.h"

namespace pp::watch {

namespace {

// Retention runs at most this often from tick().
constexpr uint64_t kPruneIntervalMs = 60000;
// The most records one transaction holds: a backlog read in one pass
// (watch --once of full buffers) commits in steps, so that the write-ahead
// log, which a checkpoint can only copy back between transactions, stays
// tens of MiB however large the backlog (about 500 bytes a record).
constexpr uint64_t kMaxRecordsPerTransaction = 65536;
// A new file's pages: 16 KiB rather than SQLite's 4 KiB, because the
// write-ahead log is written a page (and its frame header) per call, and a
// checkpoint copies it back the same way: on bench/watch.bench's pair load,
// 0.13 pwrite and 0.06 pread per record instead of 0.63 and 0.31 (strace
// -c). A file made with another page size keeps it.
constexpr const char* kNewFilePragmas = "PRAGMA page_size=16384; PRAGMA auto_vacuum=INCREMENTAL;";
// Records deleted per statement when pruning for size, at least.
constexpr int64_t kMinPruneChunk = 64;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS records (
  id INTEGER PRIMARY KEY,
  key TEXT UNIQUE NOT NULL,
  origin TEXT,
  boot_id TEXT,
  event TEXT,
  tracepoint TEXT,
  time INTEGER,
  wall_ns INTEGER,
  cpu INTEGER,
  pid INTEGER,
  tid INTEGER,
  comm TEXT,
  severity TEXT,
  bank INTEGER,
  error_class TEXT,
  status INTEGER,
  addr INTEGER,
  socket INTEGER,
  json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS lost (
  id INTEGER PRIMARY KEY,
  boot_id TEXT,
  event TEXT,
  cpu INTEGER,
  records INTEGER,
  wall_ns INTEGER
);
CREATE INDEX IF NOT EXISTS records_wall_ns ON records(wall_ns);
CREATE INDEX IF NOT EXISTS records_mce_severity ON records(severity) WHERE severity IS NOT NULL;
CREATE INDEX IF NOT EXISTS lost_wall_ns ON lost(wall_ns);
)sql";

// Version 3's batches of ordinary tracepoint records (history.h). Their
// index serves report --db, which opens them in wall-time order.
constexpr const char* kBatchesSchema = R"sql(
CREATE TABLE IF NOT EXISTS batches (
  id INTEGER PRIMARY KEY,
  boot_id TEXT NOT NULL,
  event TEXT NOT NULL,
  tracepoint TEXT NOT NULL,
  cpu INTEGER NOT NULL,
  first_time INTEGER NOT NULL,
  last_time INTEGER NOT NULL,
  min_wall_ns INTEGER,
  max_wall_ns INTEGER,
  walls_unknown INTEGER NOT NULL,
  first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  count INTEGER NOT NULL,
  entries BLOB NOT NULL,
  json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS batches_min_wall_ns ON batches(min_wall_ns);
)sql";

// Version 2 to 3, in the same transaction as version 1 to 2 when that runs
// first: the rows stay rows (a history's past is read as it was written),
// the batches' table is made, and a resume point gets its ordinal: 0, the
// first record of its time, which is what version 2 stored.
constexpr const char* kMigrateFromV2 = R"sql(
ALTER TABLE stream_times ADD COLUMN ordinal INTEGER NOT NULL DEFAULT 0;
)sql";

// The newest sample time stored per (boot, event, CPU): where the watcher
// resumes after a restart (History::last_time). Version 1 answered that
// from an index over every record, records(boot_id, event, cpu, time),
// which cost a B-tree insert per record; this table is written once per
// commit, a row per stream that stored records in it.
constexpr const char* kStreamTimesSchema = R"sql(
CREATE TABLE IF NOT EXISTS stream_times (
  boot_id TEXT NOT NULL,
  event TEXT NOT NULL,
  cpu INTEGER NOT NULL,
  time INTEGER NOT NULL,
  ordinal INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (boot_id, event, cpu)
) WITHOUT ROWID;
)sql";

// Version 1 to 2, in one transaction with the new user_version: the
// records and their columns stay as they are; two indexes that every record
// paid for go. records(boot_id, event, cpu, time) becomes stream_times,
// filled from it here (the same max(time) version 1's last_time read);
// records(severity), which held an entry for every tracepoint record (all
// NULL), becomes a partial index of the machine checks alone: every query
// on severity (report --db, retention, the counters) says "severity IS NOT
// NULL" or compares it with a name, which SQLite takes as implying it.
constexpr const char* kMigrateFromV1 = R"sql(
INSERT OR REPLACE INTO stream_times (boot_id, event, cpu, time)
  SELECT boot_id, event, cpu, max(time) FROM records
   WHERE boot_id IS NOT NULL AND event IS NOT NULL AND cpu IS NOT NULL AND time IS NOT NULL
   GROUP BY boot_id, event, cpu;
DROP INDEX IF EXISTS records_boot_event_cpu_time;
DROP INDEX IF EXISTS records_severity;
CREATE INDEX IF NOT EXISTS records_mce_severity ON records(severity) WHERE severity IS NOT NULL;
)sql";

// Machine checks retention deleted, kept by key: a harvested error older
// than the retention is found again in the kernel log or pstore at every
// start, and must not be new again (nor fire its trigger again); and the
// watcher's counters count these too, so that pruning never lowers them.
// Made at every open, so that a file of an older version gets it; the
// trigger fills it whatever deletes the row (retention, or a person with
// sqlite3: a machine check deleted by hand stays acknowledged).
constexpr const char* kSeenSchema = R"sql(
CREATE TABLE IF NOT EXISTS seen_keys (
  key TEXT PRIMARY KEY,
  wall_ns INTEGER,
  origin TEXT,
  event TEXT,
  record_cpu INTEGER,
  cpu INTEGER,
  severity TEXT,
  bank INTEGER,
  error_class TEXT
);
CREATE INDEX IF NOT EXISTS seen_keys_wall_ns ON seen_keys(wall_ns);
CREATE TRIGGER IF NOT EXISTS records_seen_keys AFTER DELETE ON records
  WHEN old.severity IS NOT NULL
  BEGIN
    INSERT OR IGNORE INTO seen_keys (key, wall_ns, origin, event, record_cpu, cpu, severity,
                                     bank, error_class)
      VALUES (old.key, old.wall_ns, old.origin, old.event, old.cpu,
              coalesce(json_extract(old.json, '$.mce.cpu'), old.cpu), old.severity, old.bank,
              old.error_class);
  END;
)sql";

// The watcher's liveness, one row it rewrites (history.h, heartbeat); made
// at every open, like seen_keys.
constexpr const char* kHeartbeatSchema = R"sql(
CREATE TABLE IF NOT EXISTS heartbeat (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  pid INTEGER,
  boot_id TEXT,
  started_ns INTEGER,
  beat_ns INTEGER,
  interval_s INTEGER,
  stopped_ns INTEGER
);
)sql";

// Creates the file 0600 before SQLite does (SQLite would follow the umask);
// the -wal and -shm files SQLite makes take the database's mode. An
// existing file of a wider mode is tightened; a link is not followed.
Status create_file(const std::string& path) {
  Status made = sys::make_private_file(path, "history file");
  if (!made.ok())
    return made.error().with_kind(ErrorKind::kOutput);
  return ok_status();
}

// Binds `text`, NULL when empty. Not copied: `text` must outlive the
// statement's step (step_done() clears the bindings).
void bind_text(sqlite3_stmt* s, int i, std::string_view text) {
  if (text.empty())
    sqlite3_bind_null(s, i);
  else
    sqlite3_bind_text(s, i, text.data(), int(text.size()), SQLITE_STATIC);
}

void bind_i64(sqlite3_stmt* s, int i, std::optional<int64_t> v) {
  if (v)
    sqlite3_bind_int64(s, i, *v);
  else
    sqlite3_bind_null(s, i);
}

std::optional<int64_t> known(int64_t v, bool ok) {
  return ok ? std::optional<int64_t>(v) : std::nullopt;
}

template <typename T>
std::optional<int64_t> opt_i64(const std::optional<T>& v) {
  return v ? std::optional<int64_t>(int64_t(*v)) : std::nullopt;
}

// Steps a statement that returns no row; resets it for the next use.
Status step_done(sqlite3* db, sqlite3_stmt* s, std::string_view what, std::string_view path) {
  int rc = sqlite3_step(s);
  Status status;
  if (rc != SQLITE_DONE)
    status = sqlite_error(db, what, path);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  return status;
}

Result<int64_t> query_i64(sqlite3* db, const char* sql, std::string_view path) {
  PP_ASSIGN_OR_RETURN(SqliteStmt s, sqlite_prepare(db, sql, path));
  int rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW)
    return sqlite_error(db, std::string("reading (") + sql + ")", path);
  return sqlite3_column_int64(s.get(), 0);
}

}  // namespace

SqliteDb& SqliteDb::operator=(SqliteDb&& other) noexcept {
  if (this != &other) {
    reset();
    db_ = other.db_;
    other.db_ = nullptr;
  }
  return *this;
}

void SqliteDb::reset() {
  if (db_)
    sqlite3_close_v2(db_);
  db_ = nullptr;
}

SqliteStmt& SqliteStmt::operator=(SqliteStmt&& other) noexcept {
  if (this != &other) {
    reset();
    stmt_ = other.stmt_;
    other.stmt_ = nullptr;
  }
  return *this;
}

void SqliteStmt::reset() {
  if (stmt_)
    sqlite3_finalize(stmt_);
  stmt_ = nullptr;
}

Error sqlite_error(sqlite3* db, std::string_view what, std::string_view path) {
  int code = db ? sqlite3_extended_errcode(db) : SQLITE_ERROR;
  std::string message = std::string(what) + " " + std::string(path) + ": " +
                        (db ? sqlite3_errmsg(db) : sqlite3_errstr(code));
  int err = EIO;
  switch (code & 0xff) {
    case SQLITE_FULL:
      err = ENOSPC;
      message += " (the file system is full: free space, or lower the history's size limit)";
      break;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      err = EACCES;
      break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      err = EBUSY;
      message +=
          " (another program holds the file locked: another `perf persistent watch "
          "--db` on the same file?)";
      break;
    case SQLITE_CANTOPEN:
      err = ENOENT;
      break;
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      err = EINVAL;
      break;
    default:
      break;
  }
  return Error(ErrorKind::kOutput, err, std::move(message));
}

Result<SqliteStmt> sqlite_prepare(sqlite3* db, std::string_view sql, std::string_view path) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db, sql.data(), int(sql.size()), SQLITE_PREPARE_PERSISTENT, &s, nullptr) !=
      SQLITE_OK)
    return sqlite_error(db, "preparing a statement on", path);
  return SqliteStmt(s);
}

Status sqlite_exec(sqlite3* db, const char* sql, std::string_view path) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    sqlite3_free(message);
    return sqlite_error(db, std::string("running (") + sql + ") on", path);
  }
  return ok_status();
}

bool batched_record(const WatchRecord& r) {
  const std::string& tp = r.tracepoint;
  return r.origin == Origin::kLive && !r.mce && !r.ras && !r.event.empty() && r.cpu >= 0 &&
         r.time != 0 && !tp.starts_with("mce:") && !tp.starts_with("ras:") &&
         !tp.starts_with("cxl:");
}

bool append_batch_entry(std::string& out, std::string_view line, const BatchColumns& batch,
                        int64_t wall_ns) {
  constexpr std::string_view kTime = R"("time":)";
  if (line.starts_with('{')) {
    out += line;
    return true;
  }
  uint64_t time = 0;
  const char* digits = line.data() + kTime.size();
  const char* end = line.data() + line.size();
  std::from_chars_result parsed{};
  if (line.starts_with(kTime))
    parsed = std::from_chars(digits, end, time);
  // The body is `,"pid":...`: a comma first, never empty.
  // The columns a watcher writes are a boot id, a persistent event's name
  // and a tracepoint's: far shorter than kMaxBatchColumnBytes. Longer ones
  // (a file written by hand) would be copied into each of 64 lines.
  bool columns = batch.cpu >= 0 && batch.boot_id.size() <= kMaxBatchColumnBytes &&
                 batch.event.size() <= kMaxBatchColumnBytes &&
                 batch.tracepoint.size() <= kMaxBatchColumnBytes;
  if (!line.starts_with(kTime) || parsed.ec != std::errc() || parsed.ptr == digits || time == 0 ||
      parsed.ptr == end || *parsed.ptr != ',' || !columns) {
    out += line;
    return false;
  }
  append_record_head(out, Origin::kLive, batch.event, batch.tracepoint, time, uint64_t(wall_ns),
                     batch.cpu);
  out.append(parsed.ptr, size_t(end - parsed.ptr));
  std::string key;
  key.reserve(40 + batch.boot_id.size() + batch.event.size());
  append_stream_key(key, batch.boot_id, batch.event, batch.cpu, time, 0);
  append_record_tail(out, key);
  return true;
}

namespace {

// Checks an opened history file, as open_history_db() promises. Returns the
// schema version (0: a new, empty file).
Result<int> check_history_file(sqlite3* db, const std::string& path, bool quick_check) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &raw, nullptr);
  SqliteStmt version_stmt(raw);
  if (rc == SQLITE_OK)
    rc = sqlite3_step(raw);
  if (rc != SQLITE_ROW) {
    int code = sqlite3_extended_errcode(db) & 0xff;
    if (code == SQLITE_NOTADB || code == SQLITE_CORRUPT)
      return Error(ErrorKind::kOutput, EINVAL,
                   path + " is not a perf-persistent history: " + sqlite3_errmsg(db) +
                       " (not a SQLite database, or damaged); move it aside and `perf "
                       "persistent watch --db " +
                       path + "` creates a new one");
    return sqlite_error(db, "reading the schema version of", path);
  }
  int version = sqlite3_column_int(raw, 0);
  version_stmt.reset();
  if (version > kHistorySchemaVersion)
    return Error(ErrorKind::kOutput, EPROTO,
                 path + " has history schema version " + std::to_string(version) +
                     "; this perf-persistent knows version " +
                     std::to_string(kHistorySchemaVersion) +
                     " at most (a newer perf-persistent wrote it): use that newer "
                     "perf-persistent, or give --db another file");
  if (version < 0)
    return Error(ErrorKind::kOutput, EPROTO,
                 path + " has history schema version " + std::to_string(version) +
                     ", which no perf-persistent writes: give --db another file");
  if (!quick_check)
    return version;
  raw = nullptr;
  rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &raw, nullptr);
  SqliteStmt check(raw);
  std::string result;
  if (rc == SQLITE_OK && sqlite3_step(raw) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(raw, 0);
    result = text ? reinterpret_cast<const char*>(text) : "";
  } else {
    result = sqlite3_errmsg(db);
  }
  if (result != "ok")
    return Error(ErrorKind::kOutput, EINVAL,
                 path + " is damaged (PRAGMA quick_check: " + result +
                     "); move it aside and `perf persistent watch --db " + path +
                     "` creates a new one (`sqlite3 " + path + " .recover` may save its records)");
  return version;
}

// Makes a new file's schema (version 0) or brings a version 1, 2 or 3 file
// to kHistorySchemaVersion (3 to 4: its user_version alone, history.h), in
// one transaction with its user_version: a failure, or a kill, leaves the
// file as it was.
Status create_or_migrate(sqlite3* db, int version, const std::string& path) {
  PP_RETURN_IF_ERROR(sqlite_exec(db, "BEGIN IMMEDIATE", path));
  // A version 2 file has stream_times without its ordinal: the column is
  // added; otherwise the table is made with it.
  std::string sql = version == 2 ? kMigrateFromV2 : kStreamTimesSchema;
  if (version == 0)
    sql += kSchema;
  else if (version == 1)
    sql += kMigrateFromV1;
  sql += kBatchesSchema;
  sql += "PRAGMA user_version=" + std::to_string(kHistorySchemaVersion) + ";";
  Status status = sqlite_exec(db, sql.c_str(), path);
  if (status.ok())
    status = sqlite_exec(db, "COMMIT", path);
  if (!status.ok()) {
    (void)sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    if (version == 0)
      return status;
    return Error(status.error().kind(), status.error().code(),
                 "migrating the history " + path + " from schema version " +
                     std::to_string(version) + " to " + std::to_string(kHistorySchemaVersion) +
                     " (the file is left as it was): " + status.error().message());
  }
  return ok_status();
}

}  // namespace

Result<HistoryDb> open_history_db(const std::string& path, bool writable) {
  if (auto info = sys::path_info(path); info.ok() && info->is_link)
    return Error(ELOOP, "the history " + path +
                            " is a symbolic link, which is not followed (whoever controls the link "
                            "chooses the file read): give the file it points to");
  HistoryDb h;
  sqlite3* raw = nullptr;
  // SQLITE_OPEN_NOFOLLOW: a --db that is a symbolic link is refused, also
  // one swapped in after create_file() looked.
  int flags = (writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY) | SQLITE_OPEN_NOMUTEX |
              SQLITE_OPEN_NOFOLLOW;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  h.db = SqliteDb(raw);
  if (rc != SQLITE_OK)
    return sqlite_error(raw, "opening the history", path);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, kHistoryBusyTimeoutMs);
  PP_ASSIGN_OR_RETURN(h.version, check_history_file(raw, path, /*quick_check=*/writable));
  return h;
}

Result<std::unique_ptr<History>> History::open(const std::string& path,
                                               const HistoryOptions& options) {
  if (size_t slash = path.rfind('/'); slash != std::string::npos && slash > 0) {
    Status dirs = sys::make_directories(path.substr(0, slash), 0700);
    if (!dirs.ok())
      return Error(ErrorKind::kOutput, dirs.error().code(),
                   "creating the history's directory: " + dirs.error().message());
  }
  PP_RETURN_IF_ERROR(create_file(path));
  std::unique_ptr<History> h(new History(path, options));
  PP_ASSIGN_OR_RETURN(HistoryDb opened, open_history_db(path, /*writable=*/true));
  h->db_ = std::move(opened.db);
  int version = opened.version;
  sqlite3* db = h->db_.get();
  if (version == 0) {
    // Must precede the first table: the page size and auto_vacuum are fixed
    // when the file is made.
    PP_RETURN_IF_ERROR(sqlite_exec(db, kNewFilePragmas, path));
  }
  PP_ASSIGN_OR_RETURN(SqliteStmt wal, sqlite_prepare(db, "PRAGMA journal_mode=WAL", path));
  if (sqlite3_step(wal.get()) != SQLITE_ROW)
    return sqlite_error(db, "switching to WAL", path);
  std::string mode = reinterpret_cast<const char*>(sqlite3_column_text(wal.get(), 0));
  wal.reset();
  if (mode != "wal")
    return Error(ErrorKind::kOutput, EINVAL,
                 "the history " + path + " cannot use a write-ahead log (journal mode '" + mode +
                     "'): put it on a local file system");
  PP_RETURN_IF_ERROR(sqlite_exec(db,
                                 "PRAGMA synchronous=FULL;"
                                 "PRAGMA journal_size_limit=67108864;"
                                 "PRAGMA cache_size=-16384;",
                                 path));
  if (version < kHistorySchemaVersion)
    PP_RETURN_IF_ERROR(create_or_migrate(db, version, path));
  PP_RETURN_IF_ERROR(sqlite_exec(db, kSeenSchema, path));
  PP_RETURN_IF_ERROR(sqlite_exec(db, kHeartbeatSchema, path));
  h->started_ns_ = sys::realtime_ns();
  PP_ASSIGN_OR_RETURN(
      h->insert_,
      sqlite_prepare(db,
                     "INSERT OR IGNORE INTO records (key, origin, boot_id, event, tracepoint, "
                     "time, wall_ns, cpu, pid, tid, comm, severity, bank, error_class, status, "
                     "addr, socket, json, id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                     "?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
                     path));
  PP_ASSIGN_OR_RETURN(
      h->insert_batch_,
      sqlite_prepare(db,
                     "INSERT INTO batches (boot_id, event, tracepoint, cpu, first_time, "
                     "last_time, min_wall_ns, max_wall_ns, walls_unknown, first_seq, last_seq, "
                     "count, entries, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                     "?11, ?12, ?13, ?14)",
                     path));
  // Rows and entries share one sequence, which goes on from the file's.
  PP_ASSIGN_OR_RETURN(int64_t last_seq,
                      query_i64(db,
                                "SELECT max(coalesce((SELECT max(id) FROM records), 0), "
                                "coalesce((SELECT max(last_seq) FROM batches), 0))",
                                path));
  h->next_seq_ = uint64_t(std::max<int64_t>(last_seq, 0)) + 1;
  PP_ASSIGN_OR_RETURN(h->insert_lost_,
                      sqlite_prepare(db,
                                     "INSERT INTO lost (boot_id, event, cpu, records, wall_ns) "
                                     "VALUES (?1, ?2, ?3, ?4, ?5)",
                                     path));
  PP_ASSIGN_OR_RETURN(h->contains_, sqlite_prepare(db,
                                                   "SELECT 1 FROM records WHERE key = ?1 UNION ALL "
                                                   "SELECT 1 FROM seen_keys WHERE key = ?1",
                                                   path));
  PP_ASSIGN_OR_RETURN(h->last_time_,
                      sqlite_prepare(db,
                                     "SELECT time, ordinal FROM stream_times WHERE boot_id = ?1 "
                                     "AND event = ?2 AND cpu = ?3",
                                     path));
  PP_ASSIGN_OR_RETURN(h->mark_time_,
                      sqlite_prepare(db,
                                     "INSERT INTO stream_times (boot_id, event, cpu, time, "
                                     "ordinal) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (boot_id, "
                                     "event, cpu) DO UPDATE SET time = excluded.time, ordinal = "
                                     "excluded.ordinal WHERE (excluded.time, excluded.ordinal) > "
                                     "(stream_times.time, stream_times.ordinal)",
                                     path));
  {
    // The resume points of a boot none of whose records is left go, as
    // version 1's max(time) over its rows found none: one scan of the
    // records per such boot, at open only.
    PP_ASSIGN_OR_RETURN(
        SqliteStmt forget,
        sqlite_prepare(db,
                       "WITH boots AS (SELECT DISTINCT boot_id FROM stream_times WHERE boot_id IS "
                       "NOT ?1) DELETE FROM stream_times WHERE boot_id IN (SELECT boot_id FROM "
                       "boots WHERE NOT EXISTS (SELECT 1 FROM records WHERE records.boot_id = "
                       "boots.boot_id) AND NOT EXISTS (SELECT 1 FROM batches WHERE "
                       "batches.boot_id = boots.boot_id))",
                       path));
    bind_text(forget.get(), 1, options.boot_id);
    PP_RETURN_IF_ERROR(
        step_done(db, forget.get(), "forgetting the resume points of past boots in", path));
  }
  PP_RETURN_IF_ERROR(h->prune());
  return h;
}

History::~History() {
  if (in_transaction_)
    (void)commit();
  // Statements before the connection; sqlite3_close_v2 waits for none.
  insert_.reset();
  insert_batch_.reset();
  insert_lost_.reset();
  contains_.reset();
  last_time_.reset();
  mark_time_.reset();
  db_.reset();
}

Status History::begin_if_needed() {
  if (in_transaction_)
    return ok_status();
  PP_RETURN_IF_ERROR(sqlite_exec(db_.get(), "BEGIN IMMEDIATE", path_));
  in_transaction_ = true;
  return ok_status();
}

Status History::commit() {
  if (!in_transaction_)
    return ok_status();
  // The open batches, then the streams' newest points, go in the same
  // transaction as the rest of their records.
  sqlite3_stmt* mark = mark_time_.get();
  for (auto& [event, cpus] : streams_) {
    for (auto& [cpu, stream] : cpus) {
      PP_RETURN_IF_ERROR(write_batch(event, cpu, stream));
      if (!stream.pending)
        continue;
      bind_text(mark, 1, options_.boot_id);
      bind_text(mark, 2, event);
      sqlite3_bind_int(mark, 3, cpu);
      sqlite3_bind_int64(mark, 4, int64_t(stream.pending->time));
      sqlite3_bind_int64(mark, 5, int64_t(stream.pending->ordinal));
      PP_RETURN_IF_ERROR(
          step_done(db_.get(), mark, "storing the streams' resume points in the history", path_));
    }
  }
  if (sqlite3_exec(db_.get(), "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK)
    return sqlite_error(db_.get(), "committing records to the history", path_);
  in_transaction_ = false;
  records_in_transaction_ = 0;
  for (auto& [event, cpus] : streams_)
    for (auto& [cpu, stream] : cpus)
      if (stream.pending) {
        stream.committed = std::max(stream.committed, stream.pending);
        stream.pending.reset();
      }
  counters_.commits++;
  return ok_status();
}

Result<bool> History::contains(const std::string& key) {
  sqlite3_stmt* s = contains_.get();
  sqlite3_bind_text(s, 1, key.data(), int(key.size()), SQLITE_STATIC);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc == SQLITE_ROW)
    return true;
  if (rc == SQLITE_DONE)
    return false;
  return sqlite_error(db_.get(), "looking up a record's key in the history", path_);
}

Result<History::Stream*> History::stream(const std::string& event, int32_t cpu) {
  auto e = streams_.find(event);
  if (e == streams_.end())
    e = streams_.emplace(event, std::map<int32_t, Stream>()).first;
  auto [it, added] = e->second.try_emplace(cpu);
  if (!added)
    return &it->second;
  sqlite3_stmt* s = last_time_.get();
  sqlite3_bind_text(s, 1, options_.boot_id.data(), int(options_.boot_id.size()), SQLITE_STATIC);
  sqlite3_bind_text(s, 2, event.data(), int(event.size()), SQLITE_STATIC);
  sqlite3_bind_int(s, 3, cpu);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW)
    it->second.committed =
        ResumePoint{uint64_t(sqlite3_column_int64(s, 0)), uint32_t(sqlite3_column_int64(s, 1))};
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    e->second.erase(it);
    return sqlite_error(db_.get(), "reading the last sample time from the history", path_);
  }
  return &it->second;
}

Result<std::optional<ResumePoint>> History::resume_point(const std::string& event, int32_t cpu) {
  PP_ASSIGN_OR_RETURN(Stream * s, stream(event, cpu));
  return std::max(s->committed, s->pending);
}

Result<std::optional<uint64_t>> History::last_time(const std::string& event, int32_t cpu) {
  PP_ASSIGN_OR_RETURN(std::optional<ResumePoint> point, resume_point(event, cpu));
  if (!point)
    return std::optional<uint64_t>();
  return std::optional<uint64_t>(point->time);
}

Status History::record(const WatchRecord& r, const nlohmann::ordered_json& json) {
  return store(r, dump_json(json), nullptr);
}

Status History::take(const WatchRecord& r, const RecordJson& json) {
  return store(r, {}, &json);
}

Status History::store(const WatchRecord& r, std::string_view text, const RecordJson* json) {
  if (r.key.empty())
    return internal_error("a " + r.tracepoint +
                          " record without an identity key cannot be stored in the history " +
                          path_);
  PP_RETURN_IF_ERROR(begin_if_needed());
  if (batched_record(r) && !options_.boot_id.empty())
    return store_batched(r, text, json);
  if (json)
    text = json->text();
  sqlite3_stmt* s = insert_.get();
  bind_text(s, 1, r.key);
  bind_text(s, 2, origin_name(r.origin));
  bind_text(s, 3, from_previous_boot(r.origin) ? std::string_view() : options_.boot_id);
  bind_text(s, 4, r.event);
  bind_text(s, 5, r.tracepoint);
  bind_i64(s, 6, known(int64_t(r.time), r.time != 0));
  bind_i64(s, 7, known(int64_t(r.wall_ns), r.wall_ns != 0));
  bind_i64(s, 8, known(r.cpu, r.cpu >= 0));
  bind_i64(s, 9, known(r.pid, r.pid >= 0));
  bind_i64(s, 10, known(r.tid, r.tid >= 0));
  bind_text(s, 11, r.comm);
  if (r.mce) {
    const mce::MceDecoded& d = *r.mce;
    bind_text(s, 12, mce::mce_severity_name(d.severity));
    bind_i64(s, 13, opt_i64(d.regs.bank));
    bind_text(s, 14, mce::mca_error_class_name(d.error_code.error_class));
    bind_i64(s, 15, opt_i64(d.regs.status));
    bool addrv = d.regs.status && (*d.regs.status & mce::bits::kAddrv);
    bind_i64(s, 16, addrv ? opt_i64(d.regs.addr) : std::nullopt);
    bind_i64(s, 17, opt_i64(d.regs.socketid));
  }
  sqlite3_bind_text(s, 18, text.data(), int(text.size()), SQLITE_STATIC);
  sqlite3_bind_int64(s, 19, int64_t(next_seq_));
  PP_RETURN_IF_ERROR(step_done(db_.get(), s, "storing a record in the history", path_));
  if (sqlite3_changes(db_.get()) == 0) {
    counters_.duplicates++;
    return ok_status();
  }
  next_seq_++;
  counters_.stored++;
  // The row's boot_id, event, cpu and time all known: its stream's resume
  // point, as version 1's max(time) over those columns found it.
  if (!from_previous_boot(r.origin) && !options_.boot_id.empty() && !r.event.empty() &&
      r.cpu >= 0 && r.time != 0) {
    PP_ASSIGN_OR_RETURN(Stream * stream, this->stream(r.event, r.cpu));
    stream->pending = std::max(stream->pending, std::optional(ResumePoint{r.time, r.ordinal}));
  }
  if (++records_in_transaction_ >= kMaxRecordsPerTransaction)
    return commit();
  return ok_status();
}

namespace {

void append_le64(std::string& out, int64_t v) {
  char bytes[8];
  for (int i = 0; i < 8; i++)
    bytes[i] = char(uint64_t(v) >> (8 * i));
  out.append(bytes, 8);
}

}  // namespace

bool History::key_is_batch_key(const WatchRecord& r, Stream& s, std::string_view boot_id) {
  if (r.ordinal != 0 || r.time == 0 || boot_id.size() > kMaxBatchColumnBytes ||
      r.event.size() > kMaxBatchColumnBytes || r.tracepoint.size() > kMaxBatchColumnBytes)
    return false;
  if (s.key_prefix.empty())
    append_stream_key_prefix(s.key_prefix, boot_id, r.event, r.cpu);
  std::string_view key = r.key;
  if (!key.starts_with(s.key_prefix))
    return false;
  // The time as append_decimal() writes it: digits, no leading zero.
  key.remove_prefix(s.key_prefix.size());
  uint64_t time = 0;
  auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), time);
  return ec == std::errc() && end == key.data() + key.size() && key[0] != '0' && time == r.time;
}

Status History::store_batched(const WatchRecord& r, std::string_view text, const RecordJson* json) {
  PP_ASSIGN_OR_RETURN(Stream * s, stream(r.event, r.cpu));
  ResumePoint point{r.time, r.ordinal};
  // At or before where its stream was stored to: stored already (history.h,
  // exactly once).
  if (std::optional<ResumePoint> stored = std::max(s->committed, s->pending);
      stored && point <= *stored) {
    counters_.duplicates++;
    return ok_status();
  }
  if (s->count > 0 && s->tracepoint != r.tracepoint)
    PP_RETURN_IF_ERROR(write_batch(r.event, r.cpu, *s));
  uint64_t seq = next_seq_++;
  if (s->count == 0) {
    s->tracepoint = r.tracepoint;
    s->first_time = r.time;
    s->first_seq = seq;
    s->walls_unknown = 0;
    s->min_wall = INT64_MAX;
    s->max_wall = INT64_MIN;
    s->entries.clear();
    s->json.clear();
  } else {
    s->json += '\n';
  }
  // The compact line (batches, history.h): "time", then the body. Its head
  // and tail are the batch's columns and this entry's wall time.
  if (json && json->has_body() && key_is_batch_key(r, *s, options_.boot_id)) {
    s->json += R"("time":)";
    append_decimal(s->json, r.time);
    json->append_body(s->json);
  } else {
    s->json += json ? std::string_view(json->text()) : text;
  }
  auto wall = int64_t(r.wall_ns);
  append_le64(s->entries, wall);
  append_le64(s->entries, int64_t(seq));
  if (r.wall_ns == 0) {
    s->walls_unknown++;
  } else {
    s->min_wall = std::min(s->min_wall, wall);
    s->max_wall = std::max(s->max_wall, wall);
  }
  s->last_time = r.time;
  s->last_seq = seq;
  s->count++;
  s->pending = point;
  counters_.stored++;
  if (s->count >= kBatchRecords)
    PP_RETURN_IF_ERROR(write_batch(r.event, r.cpu, *s));
  if (++records_in_transaction_ >= kMaxRecordsPerTransaction)
    return commit();
  return ok_status();
}

Status History::write_batch(const std::string& event, int32_t cpu, Stream& s) {
  if (s.count == 0)
    return ok_status();
  sqlite3_stmt* b = insert_batch_.get();
  bind_text(b, 1, options_.boot_id);
  bind_text(b, 2, event);
  bind_text(b, 3, s.tracepoint);
  sqlite3_bind_int(b, 4, cpu);
  sqlite3_bind_int64(b, 5, int64_t(s.first_time));
  sqlite3_bind_int64(b, 6, int64_t(s.last_time));
  bool any_wall = s.walls_unknown < s.count;
  bind_i64(b, 7, known(s.min_wall, any_wall));
  bind_i64(b, 8, known(s.max_wall, any_wall));
  sqlite3_bind_int64(b, 9, s.walls_unknown);
  sqlite3_bind_int64(b, 10, int64_t(s.first_seq));
  sqlite3_bind_int64(b, 11, int64_t(s.last_seq));
  sqlite3_bind_int64(b, 12, s.count);
  sqlite3_bind_blob(b, 13, s.entries.data(), int(s.entries.size()), SQLITE_STATIC);
  sqlite3_bind_text(b, 14, s.json.data(), int(s.json.size()), SQLITE_STATIC);
  s.count = 0;  // written or not: a failure stops the watcher
  return step_done(db_.get(), b, "storing a batch of records in the history", path_);
}

Status History::lost(const LostNotice& n) {
  PP_RETURN_IF_ERROR(begin_if_needed());
  sqlite3_stmt* s = insert_lost_.get();
  bind_text(s, 1, options_.boot_id);
  bind_text(s, 2, n.event);
  bind_i64(s, 3, known(n.cpu, n.cpu >= 0));
  sqlite3_bind_int64(s, 4, int64_t(n.records));
  bind_i64(s, 5, known(int64_t(n.wall_ns), n.wall_ns != 0));
  PP_RETURN_IF_ERROR(step_done(db_.get(), s, "storing lost samples in the history", path_));
  counters_.lost_rows++;
  return ok_status();
}

Status History::tick(uint64_t now_ms, bool final) {
  if (options_.heartbeat_interval_s &&
      (final || !last_beat_ms_ ||
       now_ms - *last_beat_ms_ >= options_.heartbeat_interval_s * 1000)) {
    PP_RETURN_IF_ERROR(beat(final));
    last_beat_ms_ = now_ms;
  }
  if (!last_commit_ms_)
    last_commit_ms_ = now_ms;
  if (final || now_ms - *last_commit_ms_ >= options_.commit_interval_ms) {
    PP_RETURN_IF_ERROR(commit());
    last_commit_ms_ = now_ms;
  }
  if (!last_prune_ms_) {
    last_prune_ms_ = now_ms;  // open() just pruned
  } else if (!final && now_ms - *last_prune_ms_ >= kPruneIntervalMs) {
    PP_RETURN_IF_ERROR(prune());
    last_prune_ms_ = now_ms;
  }
  return ok_status();
}

Status History::beat(bool stopped) {
  PP_RETURN_IF_ERROR(begin_if_needed());
  PP_ASSIGN_OR_RETURN(SqliteStmt s, sqlite_prepare(db_.get(),
                                                   "INSERT OR REPLACE INTO heartbeat (id, pid, "
                                                   "boot_id, started_ns, beat_ns, interval_s, "
                                                   "stopped_ns) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)",
                                                   path_));
  uint64_t now = sys::realtime_ns();
  sqlite3_bind_int64(s.get(), 1, options_.pid);
  bind_text(s.get(), 2, options_.boot_id);
  sqlite3_bind_int64(s.get(), 3, int64_t(started_ns_));
  sqlite3_bind_int64(s.get(), 4, int64_t(now));
  sqlite3_bind_int64(s.get(), 5, int64_t(options_.heartbeat_interval_s));
  bind_i64(s.get(), 6, known(int64_t(now), stopped));
  PP_RETURN_IF_ERROR(step_done(db_.get(), s.get(), "writing the heartbeat to", path_));
  return commit();
}

Status History::prune() {
  PP_RETURN_IF_ERROR(commit());
  if (options_.max_age_s == 0 && options_.max_bytes == 0)
    return ok_status();
  PP_RETURN_IF_ERROR(begin_if_needed());
  Status status = prune_by_age();
  if (status.ok())
    status = prune_by_size();
  if (status.ok())
    status = prune_seen_keys();
  if (!status.ok()) {
    (void)sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    in_transaction_ = false;
    return status;
  }
  PP_RETURN_IF_ERROR(commit());
  // Gives the freed pages back: the file shrinks at the next checkpoint.
  return sqlite_exec(db_.get(), "PRAGMA incremental_vacuum", path_);
}

Status History::prune_by_age() {
  if (options_.max_age_s == 0)
    return ok_status();
  uint64_t now = sys::realtime_ns();
  uint64_t age_ns = options_.max_age_s * 1000000000ull;
  if (age_ns / 1000000000ull != options_.max_age_s || age_ns >= now)
    return ok_status();
  int64_t cutoff = int64_t(now - age_ns);
  for (const char* sql :
       {"DELETE FROM lost WHERE wall_ns < ?1", "DELETE FROM records WHERE wall_ns < ?1"}) {
    PP_ASSIGN_OR_RETURN(SqliteStmt s, sqlite_prepare(db_.get(), sql, path_));
    sqlite3_bind_int64(s.get(), 1, cutoff);
    PP_RETURN_IF_ERROR(step_done(db_.get(), s.get(), "pruning old records from", path_));
  }
  counters_.pruned += uint64_t(sqlite3_changes(db_.get()));  // the records' statement
  // A batch goes whole, once its newest entry is older than the cutoff.
  PP_ASSIGN_OR_RETURN(
      SqliteStmt batches,
      sqlite_prepare(db_.get(), "DELETE FROM batches WHERE max_wall_ns < ?1 RETURNING count",
                     path_));
  sqlite3_bind_int64(batches.get(), 1, cutoff);
  return delete_batches(batches.get());
}

Status History::delete_batches(sqlite3_stmt* s) {
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    counters_.pruned += uint64_t(sqlite3_column_int64(s, 0));
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc != SQLITE_DONE)
    return sqlite_error(db_.get(), "pruning batches of records from", path_);
  return ok_status();
}

Result<uint64_t> History::used_bytes() {
  PP_ASSIGN_OR_RETURN(int64_t pages, query_i64(db_.get(), "PRAGMA page_count", path_));
  PP_ASSIGN_OR_RETURN(int64_t free_pages, query_i64(db_.get(), "PRAGMA freelist_count", path_));
  PP_ASSIGN_OR_RETURN(int64_t page_size, query_i64(db_.get(), "PRAGMA page_size", path_));
  return uint64_t(std::max<int64_t>(pages - free_pages, 0) * page_size);
}

Status History::prune_by_size() {
  if (options_.max_bytes == 0)
    return ok_status();
  // Oldest first by wall time (records without one count as oldest: they
  // are the harvest's), insertion order among equals: batches of ordinary
  // tracepoint records, by their newest entry; then the rows that are not
  // machine checks (the RAS records, the kernel log's); then machine checks.
  static constexpr const char* kDeletes[] = {
      ("DELETE FROM batches WHERE id IN (SELECT id FROM batches ORDER BY max_wall_ns, id "
       "LIMIT ?1) RETURNING count"),
      ("DELETE FROM records WHERE id IN (SELECT id FROM records WHERE severity IS NULL "
       "ORDER BY wall_ns, id LIMIT ?1)"),
      "DELETE FROM records WHERE id IN (SELECT id FROM records ORDER BY wall_ns, id LIMIT ?1)",
      "DELETE FROM lost WHERE id IN (SELECT id FROM lost ORDER BY id LIMIT ?1)",
  };
  for (const char* sql : kDeletes) {
    PP_ASSIGN_OR_RETURN(SqliteStmt s, sqlite_prepare(db_.get(), sql, path_));
    for (;;) {
      PP_ASSIGN_OR_RETURN(uint64_t used, used_bytes());
      if (used <= options_.max_bytes)
        return ok_status();
      // A chunk sized from the average row: half the excess, so that
      // indexes and the rows kept (which make the average wrong) cannot
      // make one statement delete far more than needed.
      PP_ASSIGN_OR_RETURN(int64_t rows, query_i64(db_.get(),
                                                  "SELECT (SELECT count(*) FROM records) + (SELECT "
                                                  "coalesce(sum(count), 0) FROM batches)",
                                                  path_));
      int64_t chunk = kMinPruneChunk;
      if (rows > 0)
        chunk =
            std::max(chunk, int64_t((used - options_.max_bytes) / (used / uint64_t(rows) + 1) / 2));
      uint64_t deleted = 0;
      if (sql == kDeletes[0]) {
        // In batches of up to kBatchRecords records.
        sqlite3_bind_int64(s.get(), 1, std::max<int64_t>(1, chunk / kBatchRecords));
        uint64_t before = counters_.pruned;
        PP_RETURN_IF_ERROR(delete_batches(s.get()));
        deleted = counters_.pruned - before;
      } else {
        sqlite3_bind_int64(s.get(), 1, chunk);
        PP_RETURN_IF_ERROR(
            step_done(db_.get(), s.get(), "pruning the history to its size,", path_));
        deleted = uint64_t(sqlite3_changes(db_.get()));
        if (sql != kDeletes[3])
          counters_.pruned += deleted;
      }
      PP_RETURN_IF_ERROR(prune_seen_keys());  // the deleted machine checks' keys came in
      if (deleted == 0)
        break;  // nothing of this kind left: the next kind
    }
  }
  return ok_status();
}

// The oldest keys past kMaxSeenKeys, or past an eighth of the size
// retention (at about kSeenKeyBytes each), go: the table stays small however
// long a corrected-error storm lasts, and never crowds out the records.
Status History::prune_seen_keys() {
  uint64_t most = kMaxSeenKeys;
  if (options_.max_bytes)
    most = std::min(most, options_.max_bytes / 8 / kSeenKeyBytes);
  PP_ASSIGN_OR_RETURN(SqliteStmt s,
                      sqlite_prepare(db_.get(),
                                     "DELETE FROM seen_keys WHERE key IN (SELECT key FROM "
                                     "seen_keys ORDER BY wall_ns LIMIT max(0, (SELECT count(*) "
                                     "FROM seen_keys) - ?1))",
                                     path_));
  sqlite3_bind_int64(s.get(), 1, int64_t(most));
  return step_done(db_.get(), s.get(), "pruning the forgotten keys of", path_);
}

Result<HistoryTotals> History::totals() {
  PP_RETURN_IF_ERROR(commit());
  HistoryTotals out;
  auto column_text = [](sqlite3_stmt* s, int i) {
    const unsigned char* t = sqlite3_column_text(s, i);
    return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
  };
  auto column_opt = [](sqlite3_stmt* s, int i) -> std::optional<int64_t> {
    if (sqlite3_column_type(s, i) == SQLITE_NULL)
      return std::nullopt;
    return sqlite3_column_int64(s, i);
  };
  // Records of the persistent events' buffers, by event and CPU; the
  // machine checks retention deleted are in seen_keys. EDAC's records come
  // out of the same scan in groups of their own (their fields not null),
  // which follow their event and CPU's other records.
  PP_ASSIGN_OR_RETURN(
      SqliteStmt records,
      sqlite_prepare(
          db_.get(),
          "SELECT event, cpu, sum(n), max(wall_ns), mc_fields FROM (SELECT event, cpu, wall_ns, "
          "CASE WHEN tracepoint = 'ras:mc_event' THEN json_extract(json, '$.fields') END AS "
          "mc_fields, 1 AS n FROM records WHERE origin = 'live' AND event IS NOT NULL UNION ALL "
          "SELECT event, record_cpu, wall_ns, NULL, 1 FROM seen_keys WHERE origin = 'live' AND "
          "event IS NOT NULL UNION ALL SELECT event, cpu, max_wall_ns, NULL, count FROM "
          "batches) GROUP BY event, cpu, mc_fields",
          path_));
  int rc = 0;
  while ((rc = sqlite3_step(records.get())) == SQLITE_ROW) {
    HistoryTotals::Records r;
    r.event = column_text(records.get(), 0);
    r.cpu = column_opt(records.get(), 1);
    r.count = uint64_t(sqlite3_column_int64(records.get(), 2));
    r.last_wall_ns = uint64_t(column_opt(records.get(), 3).value_or(0));
    if (sqlite3_column_type(records.get(), 4) != SQLITE_NULL)
      out.mc_events.push_back({column_text(records.get(), 4), r.count});
    if (!out.records.empty() && out.records.back().event == r.event &&
        out.records.back().cpu == r.cpu) {
      out.records.back().count += r.count;
      out.records.back().last_wall_ns = std::max(out.records.back().last_wall_ns, r.last_wall_ns);
    } else {
      out.records.push_back(std::move(r));
    }
  }
  if (rc != SQLITE_DONE)
    return sqlite_error(db_.get(), "counting the records of", path_);
  // The CPU of a machine check is the one that logged it (its decoding's
  // "cpu"), as the watcher's counters label it, not the buffer's.
  PP_ASSIGN_OR_RETURN(
      SqliteStmt checks,
      sqlite_prepare(db_.get(),
                     "SELECT severity, bank, error_class, mce_cpu, origin, count(*), "
                     "max(wall_ns) FROM (SELECT severity, bank, error_class, "
                     "coalesce(json_extract(json, '$.mce.cpu'), cpu) AS mce_cpu, origin, wall_ns "
                     "FROM records WHERE severity IS NOT NULL UNION ALL SELECT severity, bank, "
                     "error_class, cpu, origin, wall_ns FROM seen_keys) GROUP BY 1, 2, 3, 4, 5",
                     path_));
  while ((rc = sqlite3_step(checks.get())) == SQLITE_ROW) {
    HistoryTotals::MachineChecks m;
    m.severity = column_text(checks.get(), 0);
    m.bank = column_opt(checks.get(), 1);
    m.error_class = column_text(checks.get(), 2);
    m.cpu = column_opt(checks.get(), 3);
    m.origin = column_text(checks.get(), 4);
    m.count = uint64_t(sqlite3_column_int64(checks.get(), 5));
    m.last_wall_ns = uint64_t(column_opt(checks.get(), 6).value_or(0));
    out.machine_checks.push_back(std::move(m));
  }
  if (rc != SQLITE_DONE)
    return sqlite_error(db_.get(), "counting the machine checks of", path_);
  PP_ASSIGN_OR_RETURN(SqliteStmt lost, sqlite_prepare(db_.get(),
                                                      "SELECT event, cpu, sum(records) FROM lost "
                                                      "GROUP BY event, cpu",
                                                      path_));
  while ((rc = sqlite3_step(lost.get())) == SQLITE_ROW)
    out.lost.push_back({column_text(lost.get(), 0), column_opt(lost.get(), 1),
                        uint64_t(sqlite3_column_int64(lost.get(), 2))});
  if (rc != SQLITE_DONE)
    return sqlite_error(db_.get(), "counting the lost samples of", path_);
  // The other RAS records (AER, memory failure, ARM, vendor, extlog, CXL),
  // grouped by their decoding as stored: the metrics label them by its keys.
  // Only the records table: retention keeps no key of a deleted one.
  PP_ASSIGN_OR_RETURN(
      SqliteStmt ras,
      sqlite_prepare(db_.get(),
                     "SELECT json_extract(ras, '$.source'), ras, count(*) FROM (SELECT "
                     "json_extract(json, '$.ras') AS ras FROM records WHERE (tracepoint LIKE "
                     "'ras:%' OR tracepoint LIKE 'cxl:%') AND tracepoint <> 'ras:mc_event') "
                     "WHERE ras IS NOT NULL GROUP BY ras",
                     path_));
  while ((rc = sqlite3_step(ras.get())) == SQLITE_ROW)
    out.ras_events.push_back({column_text(ras.get(), 0), column_text(ras.get(), 1),
                              uint64_t(sqlite3_column_int64(ras.get(), 2))});
  if (rc != SQLITE_DONE)
    return sqlite_error(db_.get(), "counting the RAS records of", path_);
  return out;
}

}  // namespace pp::watch

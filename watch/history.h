// `perf persistent watch --db FILE`: every record the watcher decodes, kept
// in a SQLite file that survives reboots, for `perf persistent report --db`
// (watch/db_report.h) to count and show months later.
//
//   HistoryOptions o;
//   o.boot_id = "6c1f...";                 // /proc/sys/kernel/random/boot_id
//   PP_ASSIGN_OR_RETURN(auto history, History::open("/var/lib/perf-persistent/history.db", o));
//   std::optional<uint64_t> after = *history->last_time("mce_record", 3);  // resume point
//   history->record(r, record_json(r));    // INSERT OR IGNORE by r.key, in an open transaction
//   history->tick(sys::monotonic_ms(), false);  // commits once per commit_interval_ms
//   history->tick(sys::monotonic_ms(), true);   // before exit: commits what is left
//
// The file (Documentation/perf-persistent-watch.txt, HISTORY, documents it
// for users):
// - created 0600, its directory 0700 when this creates it;
// - journal_mode=WAL and synchronous=FULL: a commit is durable when it
//   returns; a power cut or a SIGKILL loses at most the records since the
//   last commit (commit_interval_ms) and never leaves a half transaction;
// - auto_vacuum=INCREMENTAL from creation, so that pruning gives pages back;
// - a busy timeout, so that a reader (report --db) never makes the writer fail;
// - PRAGMA user_version = kHistorySchemaVersion. A newer version is refused
//   (a newer perf-persistent wrote it), as is a file that is not a SQLite
//   database or fails PRAGMA quick_check.
//
// Schema, version 2 (one row per record; the columns are what summaries
// group by, `json` keeps everything):
//
//   records(id INTEGER PRIMARY KEY,   -- insertion order
//           key TEXT UNIQUE NOT NULL, -- WatchRecord::key: the record's identity
//           origin TEXT,              -- "live", "kmsg", "pstore"
//           boot_id TEXT,             -- this boot's id for live and kmsg records; NULL for pstore
//           event TEXT,               -- the persistent event's name; NULL when harvested
//           tracepoint TEXT,          -- "mce:mce_record"
//           time INTEGER,             -- the sample's time on the event's clock; NULL when unknown
//           wall_ns INTEGER,          -- ns since the epoch; NULL when unknown
//           cpu INTEGER, pid INTEGER, tid INTEGER,  -- NULL when unknown
//           comm TEXT,
//           severity TEXT,            -- machine checks only (NULL otherwise): "srao", "fatal", ...
//           bank INTEGER,             -- machine checks: the MCA bank
//           error_class TEXT,         -- machine checks: "memory-controller", "cache", ...
//           status INTEGER,           -- machine checks: MCi_STATUS, as a signed 64-bit integer
//           addr INTEGER,             -- machine checks: MCi_ADDR, only when status has ADDRV
//           socket INTEGER,           -- machine checks: the socket id
//           json TEXT NOT NULL)       -- record_json(), the line report --db --json prints
//   lost(id INTEGER PRIMARY KEY, boot_id TEXT, event TEXT, cpu INTEGER,
//        records INTEGER,             -- samples the buffer lost
//        wall_ns INTEGER)             -- when the loss was seen
//   indexes: records(wall_ns), records(severity) WHERE severity IS NOT NULL
//   stream_times(boot_id, event, cpu, time)  -- the newest sample time stored per
//                                     -- boot, event and CPU (last_time()); written
//                                     -- at each commit, with the records
//   seen_keys(key TEXT PRIMARY KEY,   -- a deleted machine check's key: never new again
//             wall_ns, origin, event, record_cpu, cpu, severity, bank, error_class)
//                                     -- filled by a trigger on every delete of a
//                                     -- machine check's row; its newest kMaxSeenKeys kept,
//                                     -- in at most an eighth of max_bytes.
//                                     -- Made at every open (older files get it).
//   heartbeat(id INTEGER PRIMARY KEY CHECK (id = 1),  -- one row: the watcher writing the file
//             pid INTEGER, boot_id TEXT,
//             started_ns INTEGER,     -- when it opened the file (ns since the epoch)
//             beat_ns INTEGER,        -- its last beat: at open, every interval_s, at stop
//             interval_s INTEGER,     -- how often it beats (kHeartbeatIntervalS)
//             stopped_ns INTEGER)     -- when it stopped cleanly; NULL while it runs
//                                     -- Made at every open (older files get it), so a
//                                     -- history without the table was never opened by
//                                     -- a watcher that beats. `perf persistent check`
//                                     -- reads it (watch/liveness.h).
//
// Version 1 differed in its indexes alone: records(boot_id, event, cpu,
// time) where stream_times is, and records(severity) over every row. open()
// migrates a version 1 file in place, in one transaction (a failure leaves
// it as it was); report --db reads both versions.
//
// Writing: one prepared INSERT per record into the open transaction; a
// commit at each tick past commit_interval_ms, every
// 65536 records, and at the final tick (stop, SIGTERM).
//
// Retention (at open, then at most once a minute from tick()): records and
// lost rows older than max_age_s by wall_ns are deleted (records without a
// wall time are kept); then, while the file's used pages exceed max_bytes,
// the oldest records by wall time are deleted in chunks, records that are
// not machine checks first, and PRAGMA incremental_vacuum gives the pages
// back to the file system.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sqlite3.h>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "watch/record.h"

namespace pp::watch {

// The version of the schema above this program writes and reads.
inline constexpr int kHistorySchemaVersion = 2;

// SQLite's handles, move-only; shared with db_report.cpp.
class SqliteDb {
 public:
  SqliteDb() = default;
  explicit SqliteDb(sqlite3* db) : db_(db) {}
  ~SqliteDb() { reset(); }
  SqliteDb(SqliteDb&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  SqliteDb& operator=(SqliteDb&& other) noexcept;
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  sqlite3* get() const { return db_; }
  void reset();

 private:
  sqlite3* db_ = nullptr;
};

class SqliteStmt {
 public:
  SqliteStmt() = default;
  explicit SqliteStmt(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~SqliteStmt() { reset(); }
  SqliteStmt(SqliteStmt&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  SqliteStmt& operator=(SqliteStmt&& other) noexcept;
  SqliteStmt(const SqliteStmt&) = delete;
  SqliteStmt& operator=(const SqliteStmt&) = delete;

  sqlite3_stmt* get() const { return stmt_; }
  void reset();

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

// An Error for a failed SQLite call on `path`: "<what> <path>: <sqlite's
// message>", kind kOutput (the history cannot be written or read).
Error sqlite_error(sqlite3* db, std::string_view what, std::string_view path);
// Compiles `sql` on `db`.
Result<SqliteStmt> sqlite_prepare(sqlite3* db, std::string_view sql, std::string_view path);
// Runs statements that return no rows.
Status sqlite_exec(sqlite3* db, const char* sql, std::string_view path);

// How long a statement waits for a lock another connection (report --db,
// sqlite3 on the command line) holds before giving up.
inline constexpr int kHistoryBusyTimeoutMs = 10000;

// An opened history file and the schema version it holds (0: a new, empty
// file).
struct HistoryDb {
  SqliteDb db;
  int version = 0;
};

// Opens the history file at `path` the one way the watcher (`writable`: read
// and write; the file must exist) and report --db (read-only) both do:
// SQLite's extended result codes, a busy timeout of kHistoryBusyTimeoutMs,
// and checks that it is a SQLite database (else kOutput, EINVAL, "<path> is
// not a perf-persistent history: ..."), of a schema version this program
// knows (else EPROTO), and, when `writable`, that PRAGMA quick_check says
// "ok" (else EINVAL, "<path> is damaged ..."; it reads the whole file, so a
// report skips it).
Result<HistoryDb> open_history_db(const std::string& path, bool writable);

// How often the watcher rewrites its heartbeat row (above); check calls
// a heartbeat older than three intervals stale.
inline constexpr uint64_t kHeartbeatIntervalS = 60;

struct HistoryOptions {
  uint64_t max_age_s = uint64_t{180} * 86400;  // retention by age (0: keep forever)
  uint64_t max_bytes = 256ull << 20;           // retention by size of the file (0: no limit)
  uint64_t commit_interval_ms = 1000;          // a power cut loses at most this much
  std::string boot_id;  // this boot's (/proc/sys/kernel/random/boot_id), stored with live records
  // The heartbeat row's interval (0: no heartbeat is written) and pid.
  uint64_t heartbeat_interval_s = kHeartbeatIntervalS;
  int64_t pid = 0;
};

// What the history did, for the watcher's log and metrics.
struct HistoryCounters {
  uint64_t stored = 0;      // records inserted
  uint64_t duplicates = 0;  // records whose key was already stored (ignored)
  uint64_t lost_rows = 0;   // lost notices stored
  uint64_t commits = 0;     // transactions committed
  uint64_t pruned = 0;      // records deleted by retention
};

// The most keys of deleted machine checks seen_keys keeps (the newest by
// wall time), and what one costs in the file with its indexes, about: the
// table keeps at most an eighth of max_bytes.
inline constexpr uint64_t kMaxSeenKeys = 100000;
inline constexpr uint64_t kSeenKeyBytes = 200;

// What the history holds, counted as watch's metrics count: its records
// and the machine checks retention deleted (seen_keys), its lost samples,
// EDAC's records and the other RAS records, so that a restart leaves every
// counter where it was (and a prune the machine checks').
struct HistoryTotals {
  struct Records {  // a persistent event's records ("live"), per CPU
    std::string event;
    std::optional<int64_t> cpu;  // nullopt: unknown
    uint64_t count = 0;
    uint64_t last_wall_ns = 0;  // 0: none known
  };
  struct MachineChecks {  // machine checks, per what the metrics label
    std::string severity, error_class, origin;
    std::optional<int64_t> bank, cpu;  // cpu: the CPU that logged it
    uint64_t count = 0;
    uint64_t last_wall_ns = 0;
  };
  struct Lost {  // the lost table's samples, per event and CPU
    std::string event;
    std::optional<int64_t> cpu;  // nullopt: unknown
    uint64_t records = 0;
  };
  struct McEvents {      // EDAC's ras:mc_event records with the same fields
    std::string fields;  // their "fields" object, as stored
    uint64_t count = 0;  // how many records have them
  };
  struct RasEvents {     // the other RAS records (mce/ras_events.h) with the same decoding
    std::string source;  // its "source": aer, memory_failure, arm, ...
    std::string ras;     // their "ras" object, as stored
    uint64_t count = 0;  // how many records have it
  };
  std::vector<Records> records;
  std::vector<MachineChecks> machine_checks;
  std::vector<Lost> lost;
  std::vector<McEvents> mc_events;
  std::vector<RasEvents> ras_events;
};

class History final : public Sink {
 public:
  // Opens (or creates) the file at `path`; runs retention once. Errors name
  // the path and say what to do (a newer schema, not a database, corrupt).
  static Result<std::unique_ptr<History>> open(const std::string& path,
                                               const HistoryOptions& options);
  ~History() override;

  // A record with this key is stored (committed or not).
  Result<bool> contains(const std::string& key);
  // The newest sample time stored for (event, cpu) of this boot (options'
  // boot_id): the watcher resumes after it on restart. nullopt when none.
  Result<std::optional<uint64_t>> last_time(const std::string& event, int32_t cpu);

  // INSERT OR IGNORE by key into the open transaction (begun if none).
  Status record(const WatchRecord& r, const nlohmann::ordered_json& json) override;
  // The same with the object's text alone: no tree is made.
  Status take(const WatchRecord& r, const RecordJson& json) override;
  Status lost(const LostNotice& n) override;
  // Commits when commit_interval_ms passed since the last commit, or when
  // `final`; retention at most once a minute; the heartbeat row at the
  // first tick, every heartbeat_interval_s and at `final` (stopped_ns set),
  // each beat committed at once.
  Status tick(uint64_t now_ms, bool final) override;

  // Runs retention now, in its own transaction (after committing what is open).
  Status prune();
  // Commits what is open, then counts what the file holds.
  Result<HistoryTotals> totals();
  const HistoryCounters& counters() const { return counters_; }
  const std::string& path() const { return path_; }
  const std::string& boot_id() const { return options_.boot_id; }

  // The file's connection and its open transaction, for the tables other
  // parts of watch keep in the same file (watch/offline_store.h): what they
  // write after begin() is committed with the records, at the same ticks.
  sqlite3* db() const { return db_.get(); }
  Status begin() { return begin_if_needed(); }

 private:
  History(std::string path, const HistoryOptions& options)
      : path_(std::move(path)), options_(options) {}
  Status begin_if_needed();
  // record()'s insert, `json_text` being the object's dump_json().
  Status store(const WatchRecord& r, std::string_view json_text);
  Status commit();
  Status prune_by_age();
  Status prune_by_size();
  Status prune_seen_keys();
  // Writes the heartbeat row (stopped: with stopped_ns) and commits.
  Status beat(bool stopped);
  // Pages in use (page_count - freelist_count) times the page size.
  Result<uint64_t> used_bytes();

  std::string path_;
  HistoryOptions options_;
  SqliteDb db_;
  SqliteStmt insert_, insert_lost_, contains_, last_time_, mark_time_;
  bool in_transaction_ = false;
  uint64_t records_in_transaction_ = 0;
  // The newest time of each (event, CPU) stored in the open transaction,
  // written to stream_times when it commits.
  std::map<std::string, std::map<int32_t, uint64_t>, std::less<>> pending_times_;
  std::optional<uint64_t> last_commit_ms_, last_prune_ms_, last_beat_ms_;
  uint64_t started_ns_ = 0;
  HistoryCounters counters_;
};

}  // namespace pp::watch

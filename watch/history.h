// `perf persistent watch --db FILE`: every record the watcher decodes, kept
// in a SQLite file that survives reboots, for `perf persistent report --db`
// (watch/db_report.h) to count and show months later.
//
//   HistoryOptions o;
//   o.boot_id = "6c1f...";                 // /proc/sys/kernel/random/boot_id
//   PP_ASSIGN_OR_RETURN(auto history, History::open("/var/lib/perf-persistent/history.db", o));
//   std::optional<ResumePoint> after = *history->resume_point("mce_record", 3);
//   history->record(r, record_json(r));    // a row or a batch's entry, in an open transaction
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
// Schema, version 4. A live record of an ordinary tracepoint (not a
// machine check, EDAC or another RAS record: batched_record() below) is an
// entry of a batch, a row per up to kBatchRecords records of one stream;
// every other record (machine checks, the RAS records, the kernel log,
// pstore) keeps a row of its own with its columns, which is what summaries
// group by and what keys deduplicate:
//
//   records(id INTEGER PRIMARY KEY,   -- the record's sequence number (below)
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
//   batches(id INTEGER PRIMARY KEY,
//           boot_id TEXT NOT NULL, event TEXT NOT NULL, tracepoint TEXT NOT NULL,
//           cpu INTEGER NOT NULL,     -- the stream: one event's buffer of one CPU, one boot
//           first_time INTEGER NOT NULL, last_time INTEGER NOT NULL,  -- event clock
//           min_wall_ns INTEGER,      -- the entries' wall times known, lowest and
//           max_wall_ns INTEGER,      -- highest; NULL when none is known
//           walls_unknown INTEGER NOT NULL,  -- entries without a wall time
//           first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
//           count INTEGER NOT NULL,   -- entries, 1 to kBatchRecords
//           entries BLOB NOT NULL,    -- per entry, in order: wall_ns (0: unknown) and
//                                     -- its sequence number, little-endian int64s
//           json TEXT NOT NULL)       -- the entries' lines, '\n' between (below)
//   The sequence number orders records as they were stored, rows and entries
//   alike (a row's is its id): report --db lists by wall time, then by it.
//   An entry's line is its record_json() text, or, as the writer stores
//   every entry whose key is its stream's with ordinal 0 (the records of a
//   clock fine enough for one record a time), a compact line: the text
//   without its head and tail (watch/record.h, append_record_head()), which
//   the batch's columns and the entry's wall time give back, with "time"
//   before it: `"time":18970883561123,"pid":7,"tid":7,"fields":{...}`. A
//   whole line begins with '{', a compact one never does. It is a quarter
//   to a half of the whole text's bytes, which each commit writes twice
//   (the write-ahead log, then the file).
//   lost(id INTEGER PRIMARY KEY, boot_id TEXT, event TEXT, cpu INTEGER,
//        records INTEGER,             -- samples the buffer lost
//        wall_ns INTEGER)             -- when the loss was seen
//   indexes: records(wall_ns), records(severity) WHERE severity IS NOT NULL,
//            batches(min_wall_ns)
//   stream_times(boot_id, event, cpu, time, ordinal)  -- the newest sample stored per
//                                     -- boot, event and CPU (resume_point()), its time
//                                     -- and ordinal (WatchRecord::ordinal); written at
//                                     -- each commit, with the records
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
// Version 3 stored every entry's whole line (and version 4 reads them as
// they are); version 2 had no batches (every record a row) and no ordinal
// in stream_times; version 1 differed from 2 in its indexes alone:
// records(boot_id, event, cpu, time) where stream_times is, and
// records(severity) over every row. open() migrates a version 1, 2 or 3
// file in place, in one transaction (a failure leaves it as it was): its
// rows stay rows, its batches' lines as they are; report --db reads
// versions 1 to 4.
//
// Exactly once: a batched record is stored only when it comes after its
// stream's resume point (time, then ordinal), which is committed in the
// transaction that holds its records: one at or before it was stored
// already (a restart reading the buffer again) and is counted as a
// duplicate, as a row's key is.
//
// Writing: one prepared INSERT per row into the open transaction, a batch
// written when it holds kBatchRecords entries and at every commit (a batch
// never spans two transactions); a commit at each tick past
// commit_interval_ms, every 65536 records, and at the final tick (stop,
// SIGTERM).
//
// Retention (at open, then at most once a minute from tick()): records and
// lost rows older than max_age_s by wall_ns are deleted (records without a
// wall time are kept), a batch whole once its newest entry is; then, while
// the file's used pages exceed max_bytes, the oldest go in chunks: batches
// (by their newest entry) first, then the rows that are not machine checks,
// then machine checks; and PRAGMA incremental_vacuum gives the pages back
// to the file system.
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
inline constexpr int kHistorySchemaVersion = 4;

// The most records a batch holds.
inline constexpr uint32_t kBatchRecords = 64;

// Whether a record is stored as a batch's entry rather than a row of its
// own: a live record of its event's buffer (event, CPU and time known) that
// is not a machine check, EDAC's or another RAS record (mce:*, ras:*,
// cxl:*).
bool batched_record(const WatchRecord& r);

// A batch's columns that its compact entries leave out (batches, above).
struct BatchColumns {
  std::string_view boot_id, event, tracepoint;
  int32_t cpu = -1;
};

// The longest boot id, event or tracepoint column a compact entry is put
// back with (append_batch_entry()).
inline constexpr size_t kMaxBatchColumnBytes = 256;

// A batch's entry line as record_json() wrote it, appended to `out`: the
// line itself when it is the object's whole text ('{' first); else, a
// compact line, the object put back together from it, the batch's columns
// and the entry's wall time (0: unknown). false, with `line` appended as it
// is, when a compact line is not "time" then a body, or the columns are not
// a CPU and names of at most kMaxBatchColumnBytes (damaged or written by
// hand): report --db says the record cannot be read back, as it does of a
// whole line that is not JSON.
bool append_batch_entry(std::string& out, std::string_view line, const BatchColumns& batch,
                        int64_t wall_ns);

// Where a stream (one event's buffer on one CPU) was stored to: its newest
// sample's time and ordinal (WatchRecord::ordinal).
struct ResumePoint {
  uint64_t time = 0;
  uint32_t ordinal = 0;
  // By time, then ordinal. (Not a defaulted <=>: clang-tidy's
  // modernize-use-nullptr misreads its literal 0.)
  friend bool operator==(const ResumePoint&, const ResumePoint&) = default;
  friend bool operator<(const ResumePoint& a, const ResumePoint& b) {
    return a.time != b.time ? a.time < b.time : a.ordinal < b.ordinal;
  }
  friend bool operator<=(const ResumePoint& a, const ResumePoint& b) { return !(b < a); }
};

// A buffer read from its oldest record, resumed after `fed`: gives each
// sample its ordinal (0 for the first of its time, then 1, 2...: a clock
// coarser than a record gives several one time) and says whether it comes
// after `fed`, moving `fed` when it does. The watcher keeps one per buffer
// for as long as it is attached.
//
//   StreamPosition at{*history.resume_point("ev", 0)};   // {time 5, ordinal 0}
//   at.next(5);   // nullopt: (5, 0) was stored
//   at.next(5);   // (5, 1): new
class StreamPosition {
 public:
  StreamPosition() = default;
  explicit StreamPosition(ResumePoint fed) : fed_(fed) {}

  // The sample of `time`'s point when it is new; nullopt when it was fed
  // before. A sample without a time (0) is always new and leaves `fed`
  // where it was (it has no place to resume after).
  std::optional<ResumePoint> next(uint64_t time) {
    ResumePoint point{time, 0};
    if (any_read_ && read_.time == time)
      point.ordinal = read_.ordinal + 1;
    read_ = point;
    any_read_ = true;
    if (time == 0)
      return point;
    if (point <= fed_)
      return std::nullopt;
    fed_ = point;
    return point;
  }
  ResumePoint fed() const { return fed_; }

 private:
  ResumePoint fed_, read_;
  bool any_read_ = false;
};

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

  // A row with this key is stored (committed or not), or a machine check
  // with it was (seen_keys). Batched records are not looked up by key
  // (their stream's resume point says what is stored): the watcher asks
  // this of machine checks alone.
  Result<bool> contains(const std::string& key);
  // The newest sample stored for (event, cpu) of this boot (options'
  // boot_id), committed or not: the watcher resumes after it on restart.
  // nullopt when none.
  Result<std::optional<ResumePoint>> resume_point(const std::string& event, int32_t cpu);
  // resume_point()'s time.
  Result<std::optional<uint64_t>> last_time(const std::string& event, int32_t cpu);

  // Into the open transaction (begun if none): a batched_record() into
  // its stream's batch unless at or before its resume point, another
  // record INSERT OR IGNORE by key; a duplicate either way is counted.
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
  // record()'s and take()'s insert: the object's text is `json`'s when
  // given, else `json_text` (its dump_json()).
  Status store(const WatchRecord& r, std::string_view json_text, const RecordJson* json);
  // A batched_record() into its stream's open batch: its entry's line is
  // compact (batches, above) when `json` can give its body and its key is
  // its stream's, else the object's whole text.
  Status store_batched(const WatchRecord& r, std::string_view json_text, const RecordJson* json);
  // Whether `r`'s key is the one its batch's columns give back (watch/record.h,
  // append_stream_key(), ordinal 0), and the columns are short enough for
  // append_batch_entry(); `s` is its stream.
  struct Stream;
  static bool key_is_batch_key(const WatchRecord& r, Stream& s, std::string_view boot_id);
  // The open batch of one stream, written as a row of batches.
  Status write_batch(const std::string& event, int32_t cpu, Stream& stream);
  // The stream's state, its stored resume point read once.
  Result<Stream*> stream(const std::string& event, int32_t cpu);
  Status commit();
  Status prune_by_age();
  Status prune_by_size();
  Status prune_seen_keys();
  // Steps a DELETE of batches RETURNING their count, adding it to pruned.
  Status delete_batches(sqlite3_stmt* s);
  // Writes the heartbeat row (stopped: with stopped_ns) and commits.
  Status beat(bool stopped);
  // Pages in use (page_count - freelist_count) times the page size.
  Result<uint64_t> used_bytes();

  std::string path_;
  HistoryOptions options_;
  SqliteDb db_;
  SqliteStmt insert_, insert_batch_, insert_lost_, contains_, last_time_, mark_time_;
  bool in_transaction_ = false;
  uint64_t records_in_transaction_ = 0;
  // Per (event, CPU) of this boot: where it was stored to, committed and
  // in the open transaction, and its open batch.
  struct Stream {
    std::optional<ResumePoint> committed, pending;
    std::string tracepoint;  // the open batch's, and the rest of it:
    uint32_t count = 0, walls_unknown = 0;
    uint64_t first_time = 0, last_time = 0;
    int64_t min_wall = 0, max_wall = 0;  // of the known walls
    uint64_t first_seq = 0, last_seq = 0;
    std::string entries, json;
    std::string key_prefix;  // its records' keys before the time, once made
  };
  std::map<std::string, std::map<int32_t, Stream>, std::less<>> streams_;
  // The next record's sequence number (a row's id, an entry's seq).
  uint64_t next_seq_ = 1;
  std::optional<uint64_t> last_commit_ms_, last_prune_ms_, last_beat_ms_;
  uint64_t started_ns_ = 0;
  HistoryCounters counters_;
};

}  // namespace pp::watch

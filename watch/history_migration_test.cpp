// The history's schema versions: a version 1 file, made here by version 1's
// own schema text (as the perf-persistent that wrote it ran it), migrated in
// place by History::open to kHistorySchemaVersion; its rows, what report
// --db prints of them and where the watcher resumes stay what they were. And
// the indexes of version 2 are the ones report --db's and retention's
// queries use.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.h"
#include "watch/db_report.h"
#include "watch/history.h"

namespace pp::watch {
namespace {

using pp::testing::TempDir;

// Version 1's schema as it created a file, verbatim: the records and lost
// tables with their indexes, then seen_keys, which every open made.
constexpr const char* kSchemaV1 = R"sql(
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
CREATE INDEX IF NOT EXISTS records_boot_event_cpu_time ON records(boot_id, event, cpu, time);
CREATE INDEX IF NOT EXISTS records_severity ON records(severity);
CREATE INDEX IF NOT EXISTS lost_wall_ns ON lost(wall_ns);
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

// Rows as version 1's insert wrote them (a machine check keeps its columns,
// and its JSON is what record_json() wrote; the text here is shorter but of
// the same shape).
constexpr const char* kRowsV1 = R"sql(
INSERT INTO records (key, origin, boot_id, event, tracepoint, time, wall_ns, cpu, pid, tid, comm,
                     severity, bank, error_class, status, addr, socket, json) VALUES
 ('live:boot-a:ctxsw:0:100', 'live', 'boot-a', 'ctxsw', 'sched:sched_switch', 100,
  1796356800000000100, 0, 42, 42, 'sleep', NULL, NULL, NULL, NULL, NULL, NULL,
  '{"origin":"live","event":"ctxsw","tracepoint":"sched:sched_switch","time":100,"cpu":0,"pid":42,"tid":42,"comm":"sleep","fields":{"prev_pid":42},"key":"live:boot-a:ctxsw:0:100"}'),
 ('live:boot-a:ctxsw:0:300', 'live', 'boot-a', 'ctxsw', 'sched:sched_switch', 300,
  1796356800000000300, 0, 42, 42, 'sleep', NULL, NULL, NULL, NULL, NULL, NULL,
  '{"origin":"live","event":"ctxsw","tracepoint":"sched:sched_switch","time":300,"cpu":0,"pid":42,"tid":42,"comm":"sleep","fields":{"prev_pid":42},"key":"live:boot-a:ctxsw:0:300"}'),
 ('live:boot-a:ctxsw:1:200', 'live', 'boot-a', 'ctxsw', 'sched:sched_switch', 200,
  1796356800000000200, 1, 43, 43, 'sleep', NULL, NULL, NULL, NULL, NULL, NULL,
  '{"origin":"live","event":"ctxsw","tracepoint":"sched:sched_switch","time":200,"cpu":1,"pid":43,"tid":43,"comm":"sleep","fields":{"prev_pid":43},"key":"live:boot-a:ctxsw:1:200"}'),
 ('live:boot-z:ctxsw:0:900', 'live', 'boot-z', 'ctxsw', 'sched:sched_switch', 900,
  1796356700000000900, 0, 44, 44, 'sleep', NULL, NULL, NULL, NULL, NULL, NULL,
  '{"origin":"live","event":"ctxsw","tracepoint":"sched:sched_switch","time":900,"cpu":0,"pid":44,"tid":44,"comm":"sleep","fields":{"prev_pid":44},"key":"live:boot-z:ctxsw:0:900"}'),
 ('mce:0xbd000000000000c2:0x3f000000:1796356801', 'live', 'boot-a', 'mce_record',
  'mce:mce_record', 5000, 1796356801000000000, 3, 0, 0, NULL, 'srao', 7, 'memory-controller',
  -4827858800541171518, 1056964608, 1,
  '{"origin":"live","event":"mce_record","tracepoint":"mce:mce_record","time":5000,"cpu":3,"pid":0,"tid":0,"fields":{"status":"0xbd000000000000c2","bank":7},"mce":{"addr":"0x3f000000","bank":7,"cpu":3,"error_class":"memory-controller","severity":"srao","status":"0xbd000000000000c2"},"key":"mce:0xbd000000000000c2:0x3f000000:1796356801"}'),
 ('mce:0xb200000000000402:0x0:1796356700', 'pstore', NULL, NULL, 'mce:mce_record', NULL,
  1796356700000000000, NULL, NULL, NULL, NULL, 'fatal', 7, 'internal', -5620492334958377982,
  NULL, 1,
  '{"origin":"pstore","tracepoint":"mce:mce_record","fields":{"status":"0xb200000000000402","bank":7},"mce":{"bank":7,"cpu":3,"error_class":"internal","severity":"fatal","status":"0xb200000000000402"},"key":"mce:0xb200000000000402:0x0:1796356700"}');
INSERT INTO lost (boot_id, event, cpu, records, wall_ns) VALUES
 ('boot-a', 'ctxsw', 1, 12, 1796356800000000150);
)sql";

void exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &message), SQLITE_OK)
      << (message ? message : "") << " in " << sql;
}

// A version 1 file as version 1 made it: auto_vacuum before the first
// table, WAL, the schema, user_version 1; then `extra` (rows, damage).
void make_v1(const std::string& path, const char* extra) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  exec(db, "PRAGMA auto_vacuum=INCREMENTAL");
  exec(db, "PRAGMA journal_mode=WAL");
  exec(db, kSchemaV1);
  exec(db, "PRAGMA user_version=1");
  exec(db, extra);
  sqlite3_close_v2(db);
}

// Every column of every row of both tables, typed, and the schema objects.
std::string dump(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) {
    out = std::string("error: ") + sqlite3_errmsg(db);
  } else {
    while (sqlite3_step(s) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const unsigned char* text = sqlite3_column_text(s, c);
        out += std::string(c ? "|" : "") + (text ? reinterpret_cast<const char*>(text) : "?");
      }
      out += '\n';
    }
  }
  sqlite3_finalize(s);
  sqlite3_close_v2(db);
  return out;
}

std::string all_rows(const std::string& path) {
  return dump(path,
              "SELECT quote(id), quote(key), quote(origin), quote(boot_id), quote(event), "
              "quote(tracepoint), quote(time), quote(wall_ns), quote(cpu), quote(pid), "
              "quote(tid), quote(comm), quote(severity), quote(bank), quote(error_class), "
              "quote(status), quote(addr), quote(socket), quote(json) FROM records ORDER BY id") +
         dump(path,
              "SELECT quote(id), quote(boot_id), quote(event), quote(cpu), "
              "quote(records), quote(wall_ns) FROM lost ORDER BY id");
}

std::string indexes(const std::string& path) {
  return dump(path,
              "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name IN "
              "('records', 'lost') AND sql IS NOT NULL ORDER BY name");
}

// report --db as the command prints it, in every form the rows touch.
std::string report(const std::string& path) {
  std::string out;
  for (int form = 0; form < 5; ++form) {
    DbReportOptions o;
    o.json = form % 2 == 1;
    o.summary = form >= 2 && form < 4;
    o.mce_only = form == 4;
    std::ostringstream text, err;
    auto stats = report_db(path, o, text, err);
    EXPECT_TRUE(stats.ok()) << stats.error().message();
    out += text.str() + err.str();
  }
  return out;
}

HistoryOptions options(std::string boot) {
  HistoryOptions o;
  o.boot_id = std::move(boot);
  o.max_age_s = 0;  // the rows' wall times are fixed: no retention
  o.max_bytes = 0;
  return o;
}

// A live sched_switch record of boot-a's ctxsw buffer on CPU 0 at `time`,
// keyed as the watcher keys it; `wall_ns` 0: unknown.
WatchRecord ctxsw_record(uint64_t time, uint64_t wall_ns = 0) {
  WatchRecord r;
  r.origin = Origin::kLive;
  r.event = "ctxsw";
  r.tracepoint = "sched:sched_switch";
  r.cpu = 0;
  r.time = time;
  r.wall_ns = wall_ns;
  r.key = "live:boot-a:ctxsw:0:" + std::to_string(time);
  return r;
}

TEST(HistoryMigrationTest, Version1FileIsMigratedInPlaceKeepingEveryRow) {
  TempDir dir;
  std::string path = dir.path("h.db");
  make_v1(path, kRowsV1);
  std::string rows_v1 = all_rows(path);
  std::string report_v1 = report(path);  // report --db reads version 1 as it is
  ASSERT_NE(rows_v1.find("'srao'"), std::string::npos) << rows_v1;
  ASSERT_NE(report_v1.find("srao"), std::string::npos) << report_v1;
  {
    auto h = History::open(path, options("boot-a"));
    ASSERT_TRUE(h.ok()) << h.error().message();
    // The resume points came over from version 1's rows: this boot's
    // newest time per event and CPU, a machine check's included.
    EXPECT_EQ(*(*h)->last_time("ctxsw", 0), 300u);
    EXPECT_EQ(*(*h)->last_time("ctxsw", 1), 200u);
    EXPECT_EQ(*(*h)->last_time("mce_record", 3), 5000u);
    EXPECT_EQ(*(*h)->last_time("ctxsw", 2), std::nullopt);
  }
  EXPECT_EQ(dump(path, "PRAGMA user_version"), std::to_string(kHistorySchemaVersion) + "\n");
  EXPECT_EQ(all_rows(path), rows_v1);
  EXPECT_EQ(report(path), report_v1);
  EXPECT_EQ(indexes(path), "lost_wall_ns\nrecords_mce_severity\nrecords_wall_ns\n");
  EXPECT_EQ(dump(path, "PRAGMA quick_check"), "ok\n");
  EXPECT_EQ(dump(path, "PRAGMA page_size"), "4096\n");  // fixed when version 1 made it
  // Another boot's resume points stay while its records do.
  EXPECT_EQ(dump(path, "SELECT boot_id, event, cpu, time FROM stream_times ORDER BY 1, 2, 3"),
            "boot-a|ctxsw|0|300\nboot-a|ctxsw|1|200\nboot-a|mce_record|3|5000\n"
            "boot-z|ctxsw|0|900\n");

  // The migrated file takes records as a new one does: a key already
  // stored is still a duplicate, and the resume point moves on.
  auto h = History::open(path, options("boot-a"));
  ASSERT_TRUE(h.ok()) << h.error().message();
  WatchRecord again = ctxsw_record(300);
  ASSERT_TRUE((*h)->record(again, record_json(again)).ok());
  EXPECT_EQ((*h)->counters().duplicates, 1u);
  again = ctxsw_record(400);
  ASSERT_TRUE((*h)->record(again, record_json(again)).ok());
  EXPECT_EQ((*h)->counters().stored, 1u);
  ASSERT_TRUE((*h)->tick(0, true).ok());
  EXPECT_EQ(*(*h)->last_time("ctxsw", 0), 400u);
  EXPECT_TRUE((*h)->contains("mce:0xb200000000000402:0x0:1796356700").value());
}

// A version 2 file as version 2 left it: version 1's, then its own
// migration's changes (stream_times without an ordinal, the severity index
// partial, the resume index gone), user_version 2.
void make_v2(const std::string& path) {
  make_v1(path, kRowsV1);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  exec(db, R"sql(
CREATE TABLE stream_times (boot_id TEXT NOT NULL, event TEXT NOT NULL, cpu INTEGER NOT NULL,
                           time INTEGER NOT NULL, PRIMARY KEY (boot_id, event, cpu)) WITHOUT ROWID;
INSERT INTO stream_times SELECT boot_id, event, cpu, max(time) FROM records
 WHERE boot_id IS NOT NULL AND event IS NOT NULL AND cpu IS NOT NULL AND time IS NOT NULL
 GROUP BY boot_id, event, cpu;
DROP INDEX records_boot_event_cpu_time;
DROP INDEX records_severity;
CREATE INDEX records_mce_severity ON records(severity) WHERE severity IS NOT NULL;
PRAGMA user_version=2;
)sql");
  sqlite3_close_v2(db);
}

TEST(HistoryMigrationTest, Version2FileIsMigratedInPlaceItsRowsStayingRows) {
  TempDir dir;
  std::string path = dir.path("h.db");
  make_v2(path);
  std::string rows_v2 = all_rows(path);
  std::string report_v2 = report(path);  // report --db reads version 2 as it is
  ASSERT_NE(report_v2.find("srao"), std::string::npos) << report_v2;
  {
    auto h = History::open(path, options("boot-a"));
    ASSERT_TRUE(h.ok()) << h.error().message();
    EXPECT_EQ(*(*h)->resume_point("ctxsw", 0), (ResumePoint{300, 0}));
  }
  EXPECT_EQ(dump(path, "PRAGMA user_version"), std::to_string(kHistorySchemaVersion) + "\n");
  EXPECT_EQ(all_rows(path), rows_v2);
  EXPECT_EQ(report(path), report_v2);
  EXPECT_EQ(dump(path, "SELECT count(*) FROM batches"), "0\n");
  EXPECT_EQ(
      dump(path, "SELECT boot_id, event, cpu, time, ordinal FROM stream_times ORDER BY 1, 2, 3"),
      "boot-a|ctxsw|0|300|0\nboot-a|ctxsw|1|200|0\nboot-a|mce_record|3|5000|0\n"
      "boot-z|ctxsw|0|900|0\n");
  EXPECT_EQ(dump(path, "PRAGMA quick_check"), "ok\n");

  // New records of an ordinary tracepoint go to a batch; the listing merges
  // them with the old rows by wall time, after the ones before them.
  auto h = History::open(path, options("boot-a"));
  ASSERT_TRUE(h.ok()) << h.error().message();
  for (uint64_t time : {300, 400}) {
    WatchRecord r = ctxsw_record(time, 1796356800000000000ull + time);
    ASSERT_TRUE((*h)->record(r, record_json(r)).ok());
  }
  ASSERT_TRUE((*h)->tick(0, true).ok());
  EXPECT_EQ((*h)->counters().duplicates, 1u);  // time 300 was stored by version 2
  EXPECT_EQ((*h)->counters().stored, 1u);
  EXPECT_EQ(dump(path, "SELECT count, first_seq > (SELECT max(id) FROM records) FROM batches"),
            "1|1\n");
  DbReportOptions o;
  o.json = true;
  std::ostringstream out, err;
  ASSERT_TRUE(report_db(path, o, out, err).ok());
  std::string listing = out.str();
  size_t added = listing.find("\"key\":\"live:boot-a:ctxsw:0:400\"");
  ASSERT_NE(added, std::string::npos) << listing;
  EXPECT_NE(listing.find("\"time\":300"), std::string::npos);
  EXPECT_LT(listing.find("\"time\":300"), added);
}

TEST(HistoryMigrationTest, FailedMigrationLeavesTheVersion1FileAsItWas) {
  TempDir dir;
  std::string path = dir.path("h.db");
  // A table of the new name, not of its shape (made by hand): the
  // migration's copy into it fails half way.
  make_v1(path, kRowsV1);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    exec(db, "CREATE TABLE stream_times (x); INSERT INTO stream_times VALUES (1);");
    sqlite3_close_v2(db);
  }
  std::string rows_v1 = all_rows(path);
  std::string indexes_v1 = indexes(path);
  auto h = History::open(path, options("boot-a"));
  ASSERT_FALSE(h.ok());
  const std::string& m = h.error().message();
  EXPECT_NE(m.find("migrating the history " + path + " from schema version 1 to " +
                   std::to_string(kHistorySchemaVersion)),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("left as it was"), std::string::npos) << m;
  EXPECT_EQ(dump(path, "PRAGMA user_version"), "1\n");
  EXPECT_EQ(all_rows(path), rows_v1);
  EXPECT_EQ(indexes(path), indexes_v1);
  EXPECT_NE(indexes_v1.find("records_boot_event_cpu_time"), std::string::npos) << indexes_v1;
}

TEST(HistoryMigrationTest, ResumePointsOfABootWithNoRecordLeftAreForgotten) {
  TempDir dir;
  std::string path = dir.path("h.db");
  make_v1(path, kRowsV1);
  { ASSERT_TRUE(History::open(path, options("boot-a")).ok()); }
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    exec(db, "DELETE FROM records WHERE boot_id = 'boot-z'");
    sqlite3_close_v2(db);
  }
  { ASSERT_TRUE(History::open(path, options("boot-b")).ok()); }
  EXPECT_EQ(dump(path, "SELECT DISTINCT boot_id FROM stream_times ORDER BY 1"), "boot-a\n");
}

// The indexes version 2 keeps are the ones the history's readers use:
// report --db's filters and retention's deletes on severity take the
// partial index of the machine checks, retention by age and report's
// order the wall time's, a duplicate check the key's.
TEST(HistoryMigrationTest, QueriesUseTheIndexesKept) {
  TempDir dir;
  std::string path = dir.path("h.db");
  { ASSERT_TRUE(History::open(path, options("boot-a")).ok()); }
  auto plan = [&](const std::string& sql) {
    return dump(path, ("EXPLAIN QUERY PLAN " + sql).c_str());
  };
  EXPECT_NE(plan("SELECT count(*) FROM records WHERE 1 AND (severity IS NOT NULL)")
                .find("records_mce_severity"),
            std::string::npos);
  EXPECT_NE(plan("SELECT json FROM records WHERE 1 AND (severity IN ('srao','fatal'))")
                .find("records_mce_severity"),
            std::string::npos);
  EXPECT_NE(plan("SELECT id FROM records WHERE wall_ns < 5").find("records_wall_ns"),
            std::string::npos);
  EXPECT_NE(plan("SELECT 1 FROM records WHERE key = 'k'").find("sqlite_autoindex_records_1"),
            std::string::npos);
  EXPECT_NE(plan("SELECT time FROM stream_times WHERE boot_id = 'b' AND event = 'e' AND cpu = 1")
                .find("PRIMARY KEY"),
            std::string::npos);
}

}  // namespace
}  // namespace pp::watch

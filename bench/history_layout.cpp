// SQLite's CPU per record for two layouts of watch's history, on the
// records of a real history file: what a row per record costs (schema 2's
// layout for every record, schema 3's for machine checks and RAS records)
// against one row per batch of N records of one stream (the layout schema
// 3 writes ordinary tracepoint records in, with N = 64). For
// bench/history_layout.bench. SOURCE's batches are read back into the
// records they hold, in the order watch stored them.
//
//   history_layout SOURCE OUT N
//
// SOURCE: a history watch --db wrote (read only). OUT: made anew, with
// SOURCE's page size and the pragmas the watcher sets (WAL, synchronous
// FULL, 16 MiB of cache). N = 1: SOURCE's own records table and indexes
// (their CREATE statements read from SOURCE, its triggers left out, so
// that the layout measured is the one the current code makes), one INSERT
// OR IGNORE per record with the columns SOURCE holds. N > 1: a table of
// batches, one row per N records of an (event, cpu) stream in arrival
// order, a stream's open batch written when full and at each commit:
//
//   batches(id INTEGER PRIMARY KEY, boot_id TEXT, event TEXT,
//           tracepoint TEXT, cpu INTEGER, first_time INTEGER,
//           last_time INTEGER, min_wall_ns INTEGER, max_wall_ns INTEGER,
//           count INTEGER, data BLOB)   -- index on min_wall_ns
//   data: per record, little-endian: wall_ns, time, pid, tid (8 bytes
//         each), the JSON line's length (4), the line as stored
//
// Both commit every 65536 records and at the end, as the watcher does on a
// backlog. Printed: "records CPU_SECONDS" (the process's CPU time over the
// inserts and commits alone, not the reading of SOURCE).
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sqlite3.h>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr uint64_t kRecordsPerTransaction = 65536;

struct Record {
  std::string key, origin, boot_id, event, tracepoint, comm, json;
  int64_t time = 0, wall_ns = 0, cpu = 0, pid = 0, tid = 0;
  int64_t seq = 0;  // the order watch stored it in
};

struct Batch {
  std::string event, tracepoint, data;
  int64_t cpu = 0, first_time = 0, last_time = 0, min_wall_ns = 0, max_wall_ns = 0;
  int64_t count = 0;
};

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

[[noreturn]] void fail(sqlite3* db, const std::string& what) {
  std::fprintf(stderr, "history_layout: %s: %s\n", what.c_str(),
               db ? sqlite3_errmsg(db) : "out of memory");
  std::exit(1);
}

void exec(sqlite3* db, const std::string& sql) {
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
    fail(db, sql);
}

sqlite3_stmt* prepare(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), int(sql.size()), &s, nullptr) != SQLITE_OK)
    fail(db, sql);
  return s;
}

std::string column_text(sqlite3_stmt* s, int i) {
  const unsigned char* text = sqlite3_column_text(s, i);
  return text ? std::string(reinterpret_cast<const char*>(text)) : std::string();
}

void bind_text(sqlite3_stmt* s, int i, const std::string& text) {
  sqlite3_bind_text(s, i, text.data(), int(text.size()), SQLITE_STATIC);
}

template <typename T>
void put(std::string& out, T value) {
  for (size_t i = 0; i < sizeof(T); i++)
    out += char(uint64_t(value) >> (8 * i) & 0xff);
}

void step(sqlite3* db, sqlite3_stmt* s, const char* what) {
  if (sqlite3_step(s) != SQLITE_DONE)
    fail(db, what);
  sqlite3_reset(s);
}

int run(const char* source_path, const char* out_path, int64_t n) {
  sqlite3* source = nullptr;
  if (sqlite3_open_v2(source_path, &source, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
    fail(source, std::string("opening ") + source_path);
  std::vector<Record> records;
  sqlite3_stmt* q = prepare(source,
                            "SELECT key, origin, boot_id, event, tracepoint, time, wall_ns, cpu, "
                            "pid, tid, comm, json, id FROM records ORDER BY id");
  while (sqlite3_step(q) == SQLITE_ROW) {
    Record r;
    r.key = column_text(q, 0);
    r.origin = column_text(q, 1);
    r.boot_id = column_text(q, 2);
    r.event = column_text(q, 3);
    r.tracepoint = column_text(q, 4);
    r.time = sqlite3_column_int64(q, 5);
    r.wall_ns = sqlite3_column_int64(q, 6);
    r.cpu = sqlite3_column_int64(q, 7);
    r.pid = sqlite3_column_int64(q, 8);
    r.tid = sqlite3_column_int64(q, 9);
    r.comm = column_text(q, 10);
    r.json = column_text(q, 11);
    r.seq = sqlite3_column_int64(q, 12);
    records.push_back(std::move(r));
  }
  sqlite3_finalize(q);
  // A schema 3 source keeps its ordinary records in batches: each entry
  // becomes the record it was, its own columns read back from its line.
  q = prepare(source, "SELECT count(*) FROM sqlite_master WHERE name = 'batches'");
  bool batched = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int64(q, 0) > 0;
  sqlite3_finalize(q);
  q = prepare(source, batched ? "SELECT boot_id, event, tracepoint, cpu, entries, json FROM "
                                "batches ORDER BY id"
                              : "SELECT 1 WHERE 0");
  sqlite3_stmt* fields = prepare(source,
                                 "SELECT json_extract(?1, '$.key'), json_extract(?1, '$.time'), "
                                 "json_extract(?1, '$.pid'), json_extract(?1, '$.tid'), "
                                 "json_extract(?1, '$.comm')");
  while (sqlite3_step(q) == SQLITE_ROW) {
    const auto* entries = static_cast<const unsigned char*>(sqlite3_column_blob(q, 4));
    int entry_bytes = sqlite3_column_bytes(q, 4);
    std::string lines = column_text(q, 5);
    size_t at = 0;
    for (int i = 0; i + 16 <= entry_bytes; i += 16) {
      size_t nl = lines.find('\n', at);
      Record r;
      r.origin = "live";
      r.boot_id = column_text(q, 0);
      r.event = column_text(q, 1);
      r.tracepoint = column_text(q, 2);
      r.cpu = sqlite3_column_int64(q, 3);
      r.json = lines.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
      at = nl == std::string::npos ? lines.size() : nl + 1;
      uint64_t wall = 0, seq = 0;
      for (int b = 7; b >= 0; b--) {
        wall = (wall << 8) | entries[i + b];
        seq = (seq << 8) | entries[i + 8 + b];
      }
      r.wall_ns = int64_t(wall);
      r.seq = int64_t(seq);
      sqlite3_bind_text(fields, 1, r.json.data(), int(r.json.size()), SQLITE_STATIC);
      if (sqlite3_step(fields) == SQLITE_ROW) {
        r.key = column_text(fields, 0);
        r.time = sqlite3_column_int64(fields, 1);
        r.pid = sqlite3_column_int64(fields, 2);
        r.tid = sqlite3_column_int64(fields, 3);
        r.comm = column_text(fields, 4);
      }
      sqlite3_reset(fields);
      records.push_back(std::move(r));
    }
  }
  sqlite3_finalize(fields);
  sqlite3_finalize(q);
  std::stable_sort(records.begin(), records.end(),
                   [](const Record& a, const Record& b) { return a.seq < b.seq; });
  std::string records_ddl;
  q = prepare(source,
              "SELECT sql FROM sqlite_master WHERE tbl_name = 'records' AND type IN ('table', "
              "'index') AND sql IS NOT NULL ORDER BY type = 'table' DESC");  // table first
  while (sqlite3_step(q) == SQLITE_ROW)
    records_ddl += column_text(q, 0) + ";\n";
  sqlite3_finalize(q);
  q = prepare(source, "PRAGMA page_size");
  int64_t page_size = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 4096;
  sqlite3_finalize(q);
  sqlite3_close(source);
  if (records_ddl.empty())
    fail(nullptr, std::string(source_path) + " has no records table");

  std::remove(out_path);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(out_path, &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK)
    fail(db, std::string("creating ") + out_path);
  exec(db, "PRAGMA page_size=" + std::to_string(page_size) +
               "; PRAGMA auto_vacuum=INCREMENTAL; PRAGMA journal_mode=WAL; PRAGMA "
               "synchronous=FULL; PRAGMA journal_size_limit=67108864; PRAGMA cache_size=-16384;");
  exec(db, records_ddl);
  exec(db,
       "CREATE TABLE batches (id INTEGER PRIMARY KEY, boot_id TEXT, event TEXT, tracepoint "
       "TEXT, cpu INTEGER, first_time INTEGER, last_time INTEGER, min_wall_ns INTEGER, "
       "max_wall_ns INTEGER, count INTEGER, data BLOB);"
       "CREATE INDEX batches_min_wall_ns ON batches(min_wall_ns);");
  sqlite3_stmt* insert_row = prepare(
      db,
      "INSERT OR IGNORE INTO records (key, origin, boot_id, event, tracepoint, time, wall_ns, "
      "cpu, pid, tid, comm, json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  sqlite3_stmt* insert_batch =
      prepare(db,
              "INSERT INTO batches (boot_id, event, tracepoint, cpu, first_time, last_time, "
              "min_wall_ns, max_wall_ns, count, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
              "?9, ?10)");
  std::string boot_id = records.empty() ? std::string() : records.front().boot_id;
  std::map<std::pair<std::string, int64_t>, Batch> open;
  auto flush = [&](Batch& b) {
    if (b.count == 0)
      return;
    bind_text(insert_batch, 1, boot_id);
    bind_text(insert_batch, 2, b.event);
    bind_text(insert_batch, 3, b.tracepoint);
    sqlite3_bind_int64(insert_batch, 4, b.cpu);
    sqlite3_bind_int64(insert_batch, 5, b.first_time);
    sqlite3_bind_int64(insert_batch, 6, b.last_time);
    sqlite3_bind_int64(insert_batch, 7, b.min_wall_ns);
    sqlite3_bind_int64(insert_batch, 8, b.max_wall_ns);
    sqlite3_bind_int64(insert_batch, 9, b.count);
    sqlite3_bind_blob(insert_batch, 10, b.data.data(), int(b.data.size()), SQLITE_STATIC);
    step(db, insert_batch, "inserting a batch");
    b.data.clear();
    b.count = 0;
  };

  double start = cpu_seconds();
  uint64_t in_transaction = 0;
  exec(db, "BEGIN IMMEDIATE");
  for (const Record& r : records) {
    if (n <= 1) {
      bind_text(insert_row, 1, r.key);
      bind_text(insert_row, 2, r.origin);
      bind_text(insert_row, 3, r.boot_id);
      bind_text(insert_row, 4, r.event);
      bind_text(insert_row, 5, r.tracepoint);
      sqlite3_bind_int64(insert_row, 6, r.time);
      sqlite3_bind_int64(insert_row, 7, r.wall_ns);
      sqlite3_bind_int64(insert_row, 8, r.cpu);
      sqlite3_bind_int64(insert_row, 9, r.pid);
      sqlite3_bind_int64(insert_row, 10, r.tid);
      bind_text(insert_row, 11, r.comm);
      bind_text(insert_row, 12, r.json);
      step(db, insert_row, "inserting a record");
    } else {
      Batch& b = open[{r.event, r.cpu}];
      if (b.count == 0) {
        b.event = r.event;
        b.tracepoint = r.tracepoint;
        b.cpu = r.cpu;
        b.first_time = r.time;
        b.min_wall_ns = b.max_wall_ns = r.wall_ns;
      }
      b.last_time = r.time;
      b.min_wall_ns = std::min(b.min_wall_ns, r.wall_ns);
      b.max_wall_ns = std::max(b.max_wall_ns, r.wall_ns);
      put(b.data, r.wall_ns);
      put(b.data, r.time);
      put(b.data, r.pid);
      put(b.data, r.tid);
      put(b.data, uint32_t(r.json.size()));
      b.data += r.json;
      if (++b.count >= n)
        flush(b);
    }
    if (++in_transaction >= kRecordsPerTransaction) {
      for (auto& [stream, b] : open)
        flush(b);
      exec(db, "COMMIT; BEGIN IMMEDIATE");
      in_transaction = 0;
    }
  }
  for (auto& [stream, b] : open)
    flush(b);
  exec(db, "COMMIT");
  double used = cpu_seconds() - start;
  sqlite3_finalize(insert_row);
  sqlite3_finalize(insert_batch);
  sqlite3_close(db);
  std::printf("%zu %.3f\n", records.size(), used);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || std::atoll(argv[3]) < 1) {
    std::fprintf(stderr, "usage: history_layout SOURCE OUT N   (N >= 1 records per row)\n");
    return 2;
  }
  return run(argv[1], argv[2], std::atoll(argv[3]));
}

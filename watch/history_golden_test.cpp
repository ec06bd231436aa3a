// What the history stores, held to a golden file: a fixed set of records
// (tracepoints of every shape, machine checks with and without an address,
// harvested ones, a duplicate, odd bytes, unknown pid and CPU) and lost
// notices, stored through the Sink interface as the watcher feeds it; every
// column of every row, with its SQLite type (quote()), compared with
// tests/fixtures/watch-golden/history.rows. A change to how records are
// written (the JSON text, the statements, the transactions) must leave it
// unchanged.
//
//   PP_UPDATE_GOLDEN=1 build/unit_tests --gtest_filter='HistoryGolden*'
// rewrites the file under PP_SOURCE_DIR.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"
#include "watch/db_report.h"
#include "watch/history.h"

namespace pp::watch {
namespace {

constexpr uint64_t kWall = 1796356800123456789ull;  // 2026-12-04T04:00:00.123456789Z

WatchRecord live(const std::string& tracepoint, uint64_t time, int32_t cpu,
                 nlohmann::ordered_json fields) {
  WatchRecord r;
  r.origin = Origin::kLive;
  r.event = tracepoint == "sched:sched_switch" ? "wswitch" : "wsys";
  r.tracepoint = tracepoint;
  r.time = time;
  r.wall_ns = kWall + time;
  r.cpu = cpu;
  r.pid = r.tid = int32_t(1000 + time % 7);
  r.comm = "perf";
  r.fields = std::move(fields);
  r.key = "live:boot-golden:" + r.event + ":" + std::to_string(cpu) + ":" + std::to_string(time);
  return r;
}

WatchRecord machine_check(Origin origin, uint64_t status, uint64_t addr, uint64_t walltime_s) {
  WatchRecord r;
  r.origin = origin;
  r.event = origin == Origin::kLive ? "mce_record" : "";
  r.tracepoint = "mce:mce_record";
  r.time = origin == Origin::kLive ? 5000 : 0;
  r.wall_ns = walltime_s * 1000000000ull;
  r.cpu = origin == Origin::kPstore ? -1 : 3;
  r.pid = r.tid = origin == Origin::kLive ? 0 : -1;
  mce::MceRegisters regs;
  regs.status = status;
  regs.mcgstatus = 0x5;
  regs.mcgcap = 0x1000c14;
  regs.addr = addr;
  regs.misc = 0x86;
  regs.bank = 7;
  regs.cpu = 3;
  regs.socketid = 1;
  regs.walltime = walltime_s;
  r.mce = mce::decode_mce(regs);
  r.fields = {{"mcgcap", "0x1000c14"}, {"status", hex_u64(status)}, {"bank", 7}};
  r.key = "mce:" + hex_u64(status) + ":" + hex_u64(addr) + ":" + std::to_string(walltime_s);
  return r;
}

std::vector<WatchRecord> golden_records() {
  std::vector<WatchRecord> out;
  for (uint64_t i = 0; i < 12; ++i)
    out.push_back(
        live("syscalls:sys_enter_getppid", 100 + i, int32_t(i % 2), {{"__syscall_nr", 110}}));
  for (uint64_t i = 0; i < 6; ++i)
    out.push_back(live("sched:sched_switch", 200 + i, 1,
                       {{"prev_comm", i == 3 ? std::string("a\"b\\c\x01\xff") : "perf"},
                        {"prev_pid", 1000 + i},
                        {"prev_prio", 120},
                        {"prev_state", "S"},
                        {"next_comm", "swapper/1"},
                        {"next_pid", 0},
                        {"next_prio", i == 4 ? -1 : 120},
                        {"flags", nlohmann::ordered_json::array({1, "x", nullptr})}}));
  WatchRecord unknown = live("sched:sched_switch", 300, -1, nlohmann::ordered_json::object());
  unknown.pid = unknown.tid = -1;
  unknown.comm = "";
  unknown.wall_ns = 0;
  out.push_back(unknown);
  out.push_back(out[2]);  // a duplicate key: stored once
  out.push_back(machine_check(Origin::kLive, 0xbd000000000000c2ull, 0x3f000000, 1796356801));
  out.push_back(machine_check(Origin::kKmsg, 0x9c00000000000150ull, 0x1234, 1796356802));
  out.push_back(machine_check(Origin::kPstore, 0xb200000000000402ull, 0, 1796356700));
  return out;
}

std::string rows(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
    return std::string("error: ") + sqlite3_errmsg(db) + "\n";
  std::string out;
  while (sqlite3_step(s) == SQLITE_ROW) {
    for (int c = 0; c < sqlite3_column_count(s); ++c) {
      const unsigned char* text = sqlite3_column_text(s, c);
      out += std::string(c ? " " : "") + sqlite3_column_name(s, c) + "=" +
             (text ? reinterpret_cast<const char*>(text) : "?");
    }
    out += '\n';
  }
  sqlite3_finalize(s);
  return out;
}

// Every column of every row, typed: quote() writes NULL, 'text' and integers
// as SQL literals.
std::string dump_history(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::string out = rows(db, "PRAGMA user_version");
  out += rows(db,
              "SELECT quote(id) AS id, quote(key) AS key, quote(origin) AS origin, "
              "quote(boot_id) AS boot_id, quote(event) AS event, quote(tracepoint) AS tracepoint, "
              "quote(time) AS time, quote(wall_ns) AS wall_ns, quote(cpu) AS cpu, "
              "quote(pid) AS pid, quote(tid) AS tid, quote(comm) AS comm, "
              "quote(severity) AS severity, quote(bank) AS bank, "
              "quote(error_class) AS error_class, quote(status) AS status, quote(addr) AS addr, "
              "quote(socket) AS socket, quote(json) AS json FROM records ORDER BY records.id");
  out += rows(db,
              "SELECT quote(id) AS id, quote(boot_id) AS boot_id, quote(event) AS event, "
              "quote(tracepoint) AS tracepoint, quote(cpu) AS cpu, quote(first_time) AS "
              "first_time, quote(last_time) AS last_time, quote(min_wall_ns) AS min_wall_ns, "
              "quote(max_wall_ns) AS max_wall_ns, quote(walls_unknown) AS walls_unknown, "
              "quote(first_seq) AS first_seq, quote(last_seq) AS last_seq, quote(count) AS count, "
              "quote(entries) AS entries, quote(json) AS json FROM batches ORDER BY batches.id");
  out += rows(db,
              "SELECT quote(id) AS id, quote(boot_id) AS boot_id, quote(event) AS event, "
              "quote(cpu) AS cpu, quote(records) AS records, quote(wall_ns) AS wall_ns "
              "FROM lost ORDER BY lost.id");
  sqlite3_close_v2(db);
  return out;
}

TEST(HistoryGolden, StoredRowsAreUnchanged) {
  pp::testing::TempDir dir;
  std::string path = dir.path("history.db");
  HistoryOptions o;
  o.boot_id = "boot-golden";
  o.max_age_s = 0;  // the wall times are fixed: no retention
  o.max_bytes = 0;
  {
    auto h = History::open(path, o);
    ASSERT_TRUE(h.ok()) << h.error().message();
    std::vector<WatchRecord> records = golden_records();
    for (size_t i = 0; i < records.size(); ++i) {
      Status s = (*h)->record(records[i], record_json(records[i]));
      ASSERT_TRUE(s.ok()) << s.error().message();
      if (i == 9) {
        ASSERT_TRUE((*h)->lost({"wswitch", 1, 12, kWall + 1}).ok());
        ASSERT_TRUE((*h)->tick(1000, true).ok());  // a commit between batches
      }
    }
    ASSERT_TRUE((*h)->lost({"wsys", -1, 3, 0}).ok());
    ASSERT_TRUE((*h)->tick(2000, true).ok());
    EXPECT_EQ((*h)->counters().stored, records.size() - 1);
    EXPECT_EQ((*h)->counters().duplicates, 1u);
  }
  std::string got = dump_history(path);
  std::string file = pp::testing::source_dir() + "/tests/fixtures/watch-golden/history.rows";
  if (std::getenv("PP_UPDATE_GOLDEN")) {
    std::ofstream golden(file, std::ios::binary);
    golden << got;
    ASSERT_TRUE(golden.good()) << "cannot write " << file;
    return;
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream expected;
  expected << in.rdbuf();
  ASSERT_FALSE(expected.str().empty()) << "no golden " << file;
  EXPECT_EQ(got, expected.str());
}

// A mixed set: two events on three CPUs interleaved, more than a batch of
// each, commits between, wall times tied across streams and stepping back
// within one, a stream without wall times, machine checks, harvested
// records and lost notices.
std::vector<WatchRecord> mixed_records() {
  std::vector<WatchRecord> out = golden_records();
  for (uint64_t i = 0; i < 300; ++i) {
    WatchRecord r = live(i % 3 ? "syscalls:sys_enter_getppid" : "sched:sched_switch", 1000 + i,
                         int32_t(i % 3), {{"n", i}});
    r.wall_ns = kWall + (i / 4) * 1000;  // ties across streams
    if (i % 50 == 49)
      r.wall_ns -= 5000;  // a corrected clock steps back
    if (i % 3 == 2 && i > 200)
      r.wall_ns = 0;  // and a stream loses its wall clock
    out.push_back(r);
  }
  out.push_back(machine_check(Origin::kLive, 0x9c00000000010135ull, 0x5000, 1796356800));
  return out;
}

// Stores `records` through the Sink interface, committing every 97.
void store(const std::string& path, const std::string& boot_id,
           const std::vector<WatchRecord>& records) {
  HistoryOptions o;
  o.boot_id = boot_id;
  o.max_age_s = 0;
  o.max_bytes = 0;
  auto h = History::open(path, o);
  ASSERT_TRUE(h.ok()) << h.error().message();
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_TRUE((*h)->record(records[i], record_json(records[i])).ok());
    if (i % 97 == 96) {
      ASSERT_TRUE((*h)->lost({"wsys", int32_t(i % 2), i, kWall + i * 100}).ok());
      ASSERT_TRUE((*h)->tick(i, true).ok());
    }
  }
  ASSERT_TRUE((*h)->tick(records.size() + 1000, true).ok());
}

// report --db in every form and filter, of a history whose ordinary records
// are batches and of one where each is a row (a history without a boot id
// batches nothing): byte for byte the same.
TEST(HistoryGolden, BatchedRecordsReportAsRowsDo) {
  pp::testing::TempDir dir;
  std::string batched = dir.path("batched.db"), rows_only = dir.path("rows.db");
  std::vector<WatchRecord> records = mixed_records();
  store(batched, "boot-golden", records);
  store(rows_only, "", records);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(batched.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    EXPECT_EQ(rows(db, "SELECT count(*) > 5 AS b, sum(count) AS n FROM batches"), "b=1 n=318\n");
    sqlite3_close_v2(db);
    ASSERT_EQ(sqlite3_open_v2(rows_only.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    EXPECT_EQ(rows(db, "SELECT count(*) AS b FROM batches"), "b=0\n");
    sqlite3_close_v2(db);
  }
  std::vector<DbReportOptions> forms;
  for (int form = 0; form < 4; ++form) {
    DbReportOptions o;
    o.json = form % 2 == 1;
    o.summary = form >= 2;
    forms.push_back(o);
    o.since = "2026-12-04T04:00:00.123466789Z";  // inside batches, both ends
    o.until = "2026-12-04T04:00:00.123506789Z";
    forms.push_back(o);
    o.until.clear();
    forms.push_back(o);
    o.since.clear();
    o.events = {"wswitch", "sys_enter_getppid"};
    forms.push_back(o);
    o.events.clear();
    o.cpus = std::vector<int>{1, 2};
    forms.push_back(o);
    o.cpus.reset();
    o.mce_only = true;
    forms.push_back(o);
  }
  for (size_t i = 0; i < forms.size(); ++i) {
    SCOPED_TRACE("form " + std::to_string(i));
    std::ostringstream a, a_err, b, b_err;
    auto got = report_db(batched, forms[i], a, a_err);
    auto want = report_db(rows_only, forms[i], b, b_err);
    ASSERT_TRUE(got.ok()) << got.error().message();
    ASSERT_TRUE(want.ok()) << want.error().message();
    // The summary's text names the file.
    std::string x = a.str();
    for (size_t at; (at = x.find(batched)) != std::string::npos;)
      x.replace(at, batched.size(), rows_only);
    EXPECT_EQ(x, b.str());
    EXPECT_EQ(a_err.str(), b_err.str());
    EXPECT_EQ(got->records, want->records);
    EXPECT_EQ(got->printed, want->printed);
    EXPECT_FALSE(a.str().empty());
  }
}

// A batch whose count, entries and lines disagree (a file damaged, or
// written by hand) is skipped and said, never read past its blob; the rest
// of the listing is printed.
TEST(HistoryGolden, ADamagedBatchIsSkippedAndSaid) {
  pp::testing::TempDir dir;
  std::string path = dir.path("h.db");
  std::vector<WatchRecord> records = mixed_records();
  store(path, "boot-golden", records);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string counts = rows(db,
                            "SELECT (SELECT count FROM batches WHERE id = 1) AS a, (SELECT count "
                            "FROM batches WHERE id = 2) AS b, (SELECT count(*) FROM records) + "
                            "(SELECT sum(count) FROM batches) AS n");
  uint64_t first = 0, second = 0, total = 0;
  ASSERT_EQ(std::sscanf(counts.c_str(), "a=%lu b=%lu n=%lu", &first, &second, &total), 3) << counts;
  // 2^60 + 1 entries: times 16 wraps to 16 bytes, one entry's worth.
  EXPECT_EQ(sqlite3_exec(db,
                         "UPDATE batches SET count = 1152921504606846977, entries = "
                         "substr(entries, 1, 16) WHERE id = 1; UPDATE batches SET json = json || "
                         "char(10) || '{}' WHERE id = 2",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close_v2(db);
  DbReportOptions o;
  o.json = true;
  std::ostringstream out, err;
  auto stats = report_db(path, o, out, err);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  EXPECT_NE(err.str().find("batch 1 of " + path + " cannot be read back"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("batch 2 of " + path + " cannot be read back"), std::string::npos)
      << err.str();
  EXPECT_NE(err.str().find("`sqlite3 " + path + " 'PRAGMA integrity_check'`"), std::string::npos)
      << err.str();
  EXPECT_EQ(stats->bad, 1 + second);  // a count past a batch's size counts as one
  EXPECT_EQ(stats->printed, total - first - second);
  std::string listing = out.str();
  EXPECT_EQ(stats->printed, uint64_t(std::count(listing.begin(), listing.end(), '\n')));

  // The summary skips and says the batch whose count disagrees with its
  // entries, rather than counting the count; it reads a batch's lines only
  // when it reads its entries (a --since inside it), so batch 2 is counted.
  o.summary = true;
  std::ostringstream summary, summary_err;
  stats = report_db(path, o, summary, summary_err);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  EXPECT_NE(summary_err.str().find("batch 1 of " + path + " cannot be read back"),
            std::string::npos)
      << summary_err.str();
  EXPECT_EQ(stats->bad, 1u);
  EXPECT_EQ(stats->records, total - first);
  auto counted = nlohmann::json::parse(summary.str(), nullptr, false);
  ASSERT_TRUE(counted.is_object()) << summary.str();
  EXPECT_EQ(counted["summary"]["records"], total - first);
}

}  // namespace
}  // namespace pp::watch

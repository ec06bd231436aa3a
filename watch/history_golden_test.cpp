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

}  // namespace
}  // namespace pp::watch

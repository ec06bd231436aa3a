#include "watch/db_report.h"

#include <chrono>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "tests/support/temp_dir.h"
#include "watch/history.h"

namespace pp::watch {
namespace {

using mce::MceSeverity;
using pp::testing::TempDir;

// 2026-12-03T10:00:00Z and on.
constexpr uint64_t kDec3At10 = 1796292000ull * 1000000000ull;
constexpr uint64_t kHour = 3600ull * 1000000000ull;

WatchRecord mce(const std::string& key, uint64_t wall_ns, int32_t cpu, uint32_t bank,
                uint64_t status, uint64_t addr, uint32_t socket) {
  WatchRecord r;
  r.event = "mce_record";
  r.tracepoint = "mce:mce_record";
  r.time = 6935674850 + wall_ns % 1000000;
  r.wall_ns = wall_ns;
  r.cpu = cpu;
  r.pid = r.tid = 54;
  r.comm = "kworker/1:2";
  mce::MceRegisters regs;
  regs.status = status;
  regs.mcgstatus = 0x5;
  regs.mcgcap = 0x100010a;
  regs.addr = addr;
  regs.misc = 0x8c;
  regs.bank = bank;
  regs.cpu = uint32_t(cpu);
  regs.socketid = socket;
  regs.cpuvendor = 0;
  r.mce = mce::decode_mce(regs);
  r.fields = {{"mcgcap", hex_u64(0x100010a)},
              {"status", hex_u64(status)},
              {"addr", hex_u64(addr)},
              {"bank", bank},
              {"cpu", cpu},
              {"socketid", socket}};
  r.key = key;
  return r;
}

// A known set, in wall-time order: A B D C.
struct Fixture {
  TempDir dir;
  std::string path = dir.path("history.db");
  std::vector<WatchRecord> records;

  Fixture() {
    // A: action optional (scrub), bank 9 CPU 1, a page at 0x3f000000.
    records.push_back(mce("A", kDec3At10, 1, 9, 0xbd000000000000c2, 0x3f000000, 0));
    // B: corrected, bank 5 CPU 2, the same 4 KiB page.
    records.push_back(mce("B", kDec3At10 + kHour, 2, 5, 0x8c00004000010090, 0x3f000040, 0));
    // C: fatal, from a previous boot's panic in pstore, at 2 GiB + 4 KiB.
    WatchRecord c = mce("C", kDec3At10 + 15 * kHour, 0, 1, 0xbe00000000000150, 0x80001000, 1);
    c.origin = Origin::kPstore;
    c.event.clear();
    c.time = 0;
    c.pid = c.tid = -1;
    c.comm.clear();
    records.push_back(c);
    // D: a scheduler switch.
    WatchRecord d;
    d.event = "ctxsw";
    d.tracepoint = "sched:sched_switch";
    d.time = 18970883561123;
    d.wall_ns = kDec3At10 + 2 * kHour;
    d.cpu = 1;
    d.pid = d.tid = 1234;
    d.comm = "sleep";
    d.fields = {{"prev_comm", "sleep"}, {"prev_pid", 1234}, {"next_comm", "swapper/1"}};
    d.key = "D";
    records.push_back(d);

    HistoryOptions o;
    o.boot_id = "boot";
    o.max_age_s = 0;  // the records are from 2026: keep them whatever today is
    auto h = History::open(path, o);
    EXPECT_TRUE(h.ok()) << h.error().message();
    for (const WatchRecord& r : records)
      EXPECT_TRUE((*h)->record(r, record_json(r)).ok());
    EXPECT_TRUE((*h)->lost(LostNotice{"mce_record", 1, 5, kDec3At10 + kHour}).ok());
    EXPECT_TRUE((*h)->lost(LostNotice{"mce_record", 1, 2, kDec3At10 + 2 * kHour}).ok());
    EXPECT_TRUE((*h)->lost(LostNotice{"ctxsw", 0, 9, kDec3At10 + 3 * kHour}).ok());
    EXPECT_TRUE((*h)->tick(0, true).ok());
  }

  const WatchRecord& by_key(const std::string& key) const {
    for (const WatchRecord& r : records)
      if (r.key == key)
        return r;
    return records[0];
  }

  // The keys report --db --json prints, in order.
  std::string keys(const DbReportOptions& o) const {
    std::ostringstream out, err;
    auto stats = report_db(path, o, out, err);
    if (!stats.ok())
      return "error: " + stats.error().message();
    std::string keys;
    std::istringstream lines(out.str());
    for (std::string line; std::getline(lines, line);) {
      auto j = parse_json(line, "a line");
      if (!j.ok())
        return "bad line: " + line;
      keys += (*j)["key"].get<std::string>();
    }
    return keys;
  }
};

DbReportOptions json_options() {
  DbReportOptions o;
  o.json = true;
  return o;
}

TEST(DbReportTest, JsonIsTheStoredObjectsInWallTimeOrder) {
  Fixture f;
  std::ostringstream out, err;
  auto stats = report_db(f.path, json_options(), out, err);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  std::string expected;
  for (const char* key : {"A", "B", "D", "C"})
    expected += dump_json(record_json(f.by_key(key))) + "\n";
  EXPECT_EQ(out.str(), expected);
  EXPECT_EQ(err.str(), "");
  EXPECT_EQ(stats->records, 4u);
  EXPECT_EQ(stats->printed, 4u);
}

TEST(DbReportTest, TextHasTheLineAndTheMachineCheckDecoding) {
  Fixture f;
  std::ostringstream out, err;
  auto stats = report_db(f.path, DbReportOptions{}, out, err);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  std::string text = out.str();
  EXPECT_NE(text.find("     kworker/1:2    54 [001] 2026-12-03T10:00:00.000000000Z: "
                      "mce:mce_record: mcgcap=0x100010a status=0xbd000000000000c2 "
                      "addr=0x3f000000 bank=9 cpu=1 socketid=0\n"
                      "  CPU 1 bank 9: srao, kernel: ao\n"
                      "    status 0xbd000000000000c2: VAL UC EN MISCV ADDRV S\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("           sleep  1234 [001] 2026-12-03T12:00:00.000000000Z: "
                      "sched:sched_switch: prev_comm=sleep prev_pid=1234 next_comm=swapper/1\n"),
            std::string::npos)
      << text;
  // The harvested one: no task, where it came from.
  EXPECT_NE(text.find("               -     - [000] 2026-12-04T01:00:00.000000000Z: "
                      "mce:mce_record: "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" (from pstore)\n  CPU 0 bank 1: fatal"), std::string::npos) << text;
  // Every decoding printed (report's print_mce_text, indented).
  for (const char* key : {"A", "B", "C"}) {
    std::string decoding;
    mce::print_mce_text(*f.by_key(key).mce, decoding);
    std::string first = "  " + decoding.substr(0, decoding.find('\n') + 1);
    EXPECT_NE(text.find(first), std::string::npos) << first;
  }
}

// A fatal code (PCC=1) that reached the tracepoint was survived: the kernel
// panics before it traces a fatal error. report --db decodes the stored
// record again as the watcher did, so it never says "panic"; the same code
// harvested from pstore with the kernel's verdict line is a panic, and the
// verdict is compared.
TEST(DbReportTest, ATracedRecordIsNeverAPanicAndAHarvestedOneKeepsTheVerdict) {
  TempDir dir;
  std::string path = dir.path("history.db");
  WatchRecord live = mce("L", kDec3At10, 0, 1, 0xbe00000000000150, 0x1234000, 0);
  WatchRecord logged = mce("P", kDec3At10 + kHour, 0, 1, 0xbe00000000000150, 0x1234000, 0);
  logged.origin = Origin::kPstore;
  logged.fields["kernel_message"] = "Processor context corrupt";
  HistoryOptions o;
  o.boot_id = "boot";
  o.max_age_s = 0;
  auto h = History::open(path, o);
  ASSERT_TRUE(h.ok()) << h.error().message();
  for (const WatchRecord& r : {live, logged})
    ASSERT_TRUE((*h)->record(r, record_json(r)).ok());
  ASSERT_TRUE((*h)->tick(0, true).ok());
  (*h).reset();  // closed, as report reads it after the watcher

  std::ostringstream out, err;
  auto stats = report_db(path, DbReportOptions{}, out, err);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  std::string text = out.str();
  size_t harvested = text.find(" (from pstore)\n");
  ASSERT_NE(harvested, std::string::npos) << text;
  std::string traced = text.substr(0, harvested);
  EXPECT_NE(traced.find("  CPU 0 bank 1: fatal, kernel: "), std::string::npos) << text;
  EXPECT_EQ(traced.find("kernel: panic"), std::string::npos) << text;
  std::string from_log = text.substr(harvested);
  EXPECT_NE(from_log.find("  CPU 0 bank 1: fatal, kernel: panic\n"), std::string::npos) << text;
  EXPECT_NE(from_log.find("kernel said \"Processor context corrupt\" (panic), agrees"),
            std::string::npos)
      << text;
}

TEST(DbReportTest, EachFilterChangesTheOutputAsItShould) {
  Fixture f;
  EXPECT_EQ(f.keys(json_options()), "ABDC");
  struct Case {
    const char* name;
    void (*set)(DbReportOptions&);
    const char* keys;
  };
  const Case cases[] = {
      {"since", [](DbReportOptions& o) { o.since = "2026-12-03T10:30:00Z"; }, "BDC"},
      {"until, inclusive", [](DbReportOptions& o) { o.until = "2026-12-03T11:00:00Z"; }, "AB"},
      {"a date", [](DbReportOptions& o) { o.since = "2026-12-04"; }, "C"},
      {"since and until",
       [](DbReportOptions& o) {
         o.since = "2026-12-03T10:30:00Z";
         o.until = "2026-12-03T12:00:00Z";
       },
       "BD"},
      {"relative, all after", [](DbReportOptions& o) { o.since = "100000d"; }, "ABDC"},
      {"relative, none after", [](DbReportOptions& o) { o.until = "100000d"; }, ""},
      {"severity", [](DbReportOptions& o) { o.severities = {MceSeverity::kFatal}; }, "C"},
      {"severities",
       [](DbReportOptions& o) {
         o.severities = {MceSeverity::kCorrected, MceSeverity::kSrao};
       },
       "AB"},
      {"mce", [](DbReportOptions& o) { o.mce_only = true; }, "ABC"},
      {"cpu", [](DbReportOptions& o) { o.cpus = std::vector<int>{1}; }, "AD"},
      {"cpus",
       [](DbReportOptions& o) {
         o.cpus = std::vector<int>{0, 2};
       },
       "BC"},
      {"event name", [](DbReportOptions& o) { o.events = {"ctxsw"}; }, "D"},
      // The machine checks of the kernel's logs (C, no event) with the event.
      {"persistent/NAME/", [](DbReportOptions& o) { o.events = {"persistent/mce_record/"}; },
       "ABC"},
      {"the default event's name", [](DbReportOptions& o) { o.events = {"mce_record"}; }, "ABC"},
      {"another event's name", [](DbReportOptions& o) { o.events = {"mce"}; }, ""},
      {"tracepoint", [](DbReportOptions& o) { o.events = {"mce:mce_record"}; }, "ABC"},
      {"events and cpu",
       [](DbReportOptions& o) {
         o.events = {"ctxsw", "mce_record"};
         o.cpus = std::vector<int>{2};
       },
       "B"},
  };
  for (const Case& c : cases) {
    DbReportOptions o = json_options();
    c.set(o);
    EXPECT_EQ(f.keys(o), c.keys) << c.name;
  }
}

// The whole object, byte for byte: its "mce" part is the machine-check
// tally every summary shares (mce/tally.h), then the history's own groupings.
TEST(DbReportTest, SummaryJsonCountsExactly) {
  Fixture f;
  DbReportOptions o = json_options();
  o.summary = true;
  std::ostringstream out, err;
  auto stats = report_db(f.path, o, out, err);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  ordered_json expected = ordered_json::parse(
      R"({"summary": {
    "records": 4,
    "first_time": "2026-12-03T10:00:00.000000000Z",
    "last_time": "2026-12-04T01:00:00.000000000Z",
    "events": [{"event": null, "tracepoint": "mce:mce_record", "count": 1},
               {"event": "ctxsw", "tracepoint": "sched:sched_switch", "count": 1},
               {"event": "mce_record", "tracepoint": "mce:mce_record", "count": 2}],
    "origins": [{"origin": "live", "count": 3}, {"origin": "pstore", "count": 1}],
    "mce": {
      "records": 3,
      "severities": [{"severity": "corrected", "count": 1}, {"severity": "srao", "count": 1},
                     {"severity": "fatal", "count": 1}],
      "banks": [{"bank": 1, "count": 1}, {"bank": 5, "count": 1}, {"bank": 9, "count": 1}],
      "cpus": [{"cpu": 0, "count": 1}, {"cpu": 1, "count": 1}, {"cpu": 2, "count": 1}],
      "sockets": [{"socket": 0, "count": 2}, {"socket": 1, "count": 1}],
      "error_classes": [{"error_class": "cache", "count": 1},
                        {"error_class": "memory-controller", "count": 2}],
      "days": [{"day": "2026-12-03", "count": 2}, {"day": "2026-12-04", "count": 1}],
      "address_ranges": [
        {"start": "0x0", "end": "0x3fffffff", "count": 2},
        {"start": "0x80000000", "end": "0xbfffffff", "count": 1}],
      "pages": [{"page": "0x3f000000", "count": 2}, {"page": "0x80001000", "count": 1}],
      "distinct_pages": 2},
    "dimms": [{"dimm": null, "errors": 2, "uncorrected": 1}],
    "lost": [{"event": "ctxsw", "cpu": 0, "records": 9},
             {"event": "mce_record", "cpu": 1, "records": 7}]}})");
  EXPECT_EQ(out.str(), dump_json(expected) + "\n");
  EXPECT_EQ(stats->records, 4u);
}

// A machine check counts under its own CPU (mce_record's cpu, kept in the
// stored decoding), not the CPU whose buffer held it; one the history
// cannot read back counts under the record's.
TEST(DbReportTest, SummaryCountsAMachineCheckUnderItsOwnCpu) {
  TempDir dir;
  std::string path = dir.path("history.db");
  WatchRecord moved = mce("M", kDec3At10, 1, 3, 0x9c00000000010135, 0x1000, 0);
  moved.cpu = 0;  // read from CPU 0's buffer, a machine check of CPU 1
  HistoryOptions ho;
  ho.boot_id = "boot";
  ho.max_age_s = 0;
  {
    auto h = History::open(path, ho);
    ASSERT_TRUE(h.ok()) << h.error().message();
    ASSERT_TRUE((*h)->record(moved, record_json(moved)).ok());
    WatchRecord garbled = mce("G", kDec3At10 + kHour, 2, 3, 0x9c00000000010135, 0x1000, 0);
    ASSERT_TRUE((*h)->record(garbled, record_json(garbled)).ok());
    ASSERT_TRUE((*h)->tick(0, true).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE records SET json = '{not json' WHERE key = 'G'", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  DbReportOptions o = json_options();
  o.summary = true;
  std::ostringstream out, err;
  auto stats = report_db(path, o, out, err);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  auto doc = parse_json(out.str(), "the summary");
  ASSERT_TRUE(doc.ok()) << out.str();
  EXPECT_EQ((*doc)["summary"]["mce"]["cpus"],
            json::parse(R"([{"cpu": 1, "count": 1}, {"cpu": 2, "count": 1}])"))
      << out.str();
}

TEST(DbReportTest, SummaryFollowsTheFilters) {
  Fixture f;
  DbReportOptions o = json_options();
  o.summary = true;
  o.cpus = std::vector<int>{1};
  std::ostringstream out, err;
  auto stats = report_db(f.path, o, out, err);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  auto doc = parse_json(out.str(), "the summary");
  ASSERT_TRUE(doc.ok()) << out.str();
  const json& s = (*doc)["summary"];
  EXPECT_EQ(s["records"], 2);  // A and D
  EXPECT_EQ(s["mce"]["records"], 1);
  EXPECT_EQ(s["lost"], json::parse(R"([{"event": "mce_record", "cpu": 1, "records": 7}])"));
}

TEST(DbReportTest, SummaryTextIsReadable) {
  Fixture f;
  DbReportOptions o;
  o.summary = true;
  std::ostringstream out, err;
  auto stats = report_db(f.path, o, out, err);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  EXPECT_EQ(out.str(),
            "# " + f.path +
                ": 4 records, 2026-12-03T10:00:00.000000000Z to 2026-12-04T01:00:00.000000000Z\n"
                "#\n# records per event\n#\n#    count  event\n"
                "         1  mce:mce_record\n"
                "         1  ctxsw (sched:sched_switch)\n"
                "         2  mce_record (mce:mce_record)\n"
                "#\n# records per origin\n#\n#    count  origin\n"
                "         3  live\n         1  pstore\n"
                "#\n# 3 machine checks\n"
                "#\n# machine checks per severity\n#\n#    count  severity\n"
                "         1  corrected\n         1  srao\n         1  fatal\n"
                "#\n# machine checks per bank\n#\n#    count  bank\n"
                "         1  1\n         1  5\n         1  9\n"
                "#\n# machine checks per CPU\n#\n#    count  cpu\n"
                "         1  0\n         1  1\n         1  2\n"
                "#\n# machine checks per socket\n#\n#    count  socket\n"
                "         2  0\n         1  1\n"
                "#\n# machine checks per error class\n#\n#    count  class\n"
                "         1  cache\n         2  memory-controller\n"
                "#\n# machine checks per day (UTC)\n#\n#    count  day\n"
                "         2  2026-12-03\n         1  2026-12-04\n"
                "#\n# machine checks per 1 GiB of physical address (MCi_ADDR valid)\n#\n"
                "#    count  range\n"
                "         2  0x0000000000000000-0x000000003fffffff\n"
                "         1  0x0000000080000000-0x00000000bfffffff\n"
                "#\n# the most repeated 4 KiB pages, of 2 with errors\n#\n#    count  page\n"
                "         2  0x000000003f000000\n         1  0x0000000080001000\n"
                "#\n# memory errors per DIMM (label, else socket/controller/channel/slot)\n#\n"
                "#   errors  uncorrected  dimm\n"
                "         2            1  unknown\n"
                "#\n# samples lost (overwritten before watch read them)\n#\n"
                "#  samples  cpu  event\n"
                "         9    0  ctxsw\n         7    1  mce_record\n");
}

TEST(DbReportTest, MissingFileSaysWhatMakesIt) {
  TempDir dir;
  std::string path = dir.path("none.db");
  std::ostringstream out, err;
  auto stats = report_db(path, DbReportOptions{}, out, err);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.error().kind(), ErrorKind::kRefused);  // a missing input file: status 2
  EXPECT_NE(stats.error().message().find("perf persistent watch --db " + path), std::string::npos)
      << stats.error().message();
  EXPECT_FALSE(std::filesystem::exists(path));  // never created
}

TEST(DbReportTest, NewerSchemaAndGarbageAreRefused) {
  TempDir dir;
  std::string newer = dir.path("newer.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
  std::string future = std::to_string(kHistorySchemaVersion + 1);
  ASSERT_EQ(sqlite3_exec(db, ("CREATE TABLE t (x); PRAGMA user_version = " + future).c_str(),
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  std::ostringstream out, err;
  auto stats = report_db(newer, DbReportOptions{}, out, err);
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.error().message().find("schema version " + future), std::string::npos)
      << stats.error().message();
  dir.write("garbage.db", std::string(4096, 'g'));
  stats = report_db(dir.path("garbage.db"), DbReportOptions{}, out, err);
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.error().message().find(dir.path("garbage.db") + " is not a perf-persistent"),
            std::string::npos)
      << stats.error().message();
}

TEST(DbReportTest, ReadsWhileTheWriterHoldsAnOpenTransaction) {
  Fixture f;
  HistoryOptions o;
  o.max_age_s = 0;
  auto h = History::open(f.path, o);
  ASSERT_TRUE(h.ok()) << h.error().message();
  WatchRecord extra = f.by_key("D");
  extra.key = "E";
  ASSERT_TRUE((*h)->record(extra, record_json(extra)).ok());  // uncommitted
  EXPECT_EQ(f.keys(json_options()), "ABDC");
  ASSERT_TRUE((*h)->tick(0, true).ok());
  EXPECT_EQ(f.keys(json_options()), "ABDEC");
}

TEST(DbTimeTest, ParsesTheThreeForms) {
  constexpr uint64_t kNow = 1796311931ull * 1000000000ull;  // 2026-12-03T15:32:11Z
  struct Case {
    const char* text;
    uint64_t ns;
  };
  const Case cases[] = {
      {"2026-12-03T10:00:00Z", kDec3At10},
      {"2026-12-03T11:00:00+01:00", kDec3At10},
      {"2026-12-03T10:00:00.5Z", kDec3At10 + 500000000ull},
      {"2026-12-03", kDec3At10 - 10 * kHour},
      {"90m", kNow - 90 * 60 * 1000000000ull},
      {"24h", kNow - 24 * kHour},
      {"7d", kNow - 7 * 24 * kHour},
      {"2w", kNow - 14 * 24 * kHour},
      {"30s", kNow - 30 * 1000000000ull},
      {"0h", kNow},
      {"999999999999999999d", 0},  // before the epoch: from the start
  };
  for (const Case& c : cases) {
    auto t = parse_db_time(c.text, kNow);
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.error().message();
    EXPECT_EQ(*t, c.ns) << c.text;
  }
  for (const char* bad : {"", "yesterday", "7", "d", "7x", "-7d", "1.5h", "2026-13-45"}) {
    auto t = parse_db_time(bad, kNow);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.error().kind(), ErrorKind::kUsage) << bad;
  }
  auto t = parse_db_time("yesterday", kNow);
  EXPECT_NE(t.error().message().find("24h"), std::string::npos) << t.error().message();
  // The history keeps wall-clock times: perf's seconds are refused, saying
  // that a duration takes its unit.
  auto seconds = parse_db_time("7", kNow);
  ASSERT_FALSE(seconds.ok());
  EXPECT_NE(seconds.error().message().find("7s, 7h, 7d"), std::string::npos)
      << seconds.error().message();
}

}  // namespace
}  // namespace pp::watch

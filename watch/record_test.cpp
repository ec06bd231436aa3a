// RecordJson: the text written straight from a live record's payload is
// dump_json(record_json()) of the same record with its fields decoded into
// a tree, byte for byte, for every shape of the record's own keys and of the
// fields (signed and unsigned numbers, pointers, char arrays with odd
// bytes, dynamic strings); the tree is made only when asked for. The
// history keeps such a record in a batch as a compact line (its body, the
// rest being the batch's columns: watch/history.h), and report --db gives
// the text back, byte for byte.
#include "watch/record.h"

#include <algorithm>
#include <cstring>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sstream>
#include <string>
#include <vector>

#include "base/json.h"
#include "report/trace_decoder.h"
#include "report/trace_report.h"
#include "report/tracing_data.h"
#include "sys/tree.h"
#include "tests/support/temp_dir.h"
#include "watch/db_report.h"
#include "watch/history.h"

namespace pp::watch {
namespace {

template <typename T>
void put(std::vector<uint8_t>& b, size_t offset, T v) {
  std::memcpy(b.data() + offset, &v, sizeof(T));
}

class RecordJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("events/header_page", "");
    dir_.write("events/header_event", "");
    dir_.write("events/x/y/format",
               "name: y\nID: 900\nformat:\n"
               "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
               "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
               "\tfield:int value;\toffset:8;\tsize:4;\tsigned:1;\n"
               "\tfield:char name[8];\toffset:12;\tsize:8;\tsigned:0;\n"
               "\tfield:void * where;\toffset:24;\tsize:8;\tsigned:0;\n"
               "\tfield:u64 big;\toffset:32;\tsize:8;\tsigned:0;\n"
               "\tfield:__data_loc char[] msg;\toffset:40;\tsize:4;\tsigned:0;\n\n"
               "print fmt: \"%d\", REC->value\n");
    dir_.write("events/x/y/id", "900\n");
    sys::Tree tree(dir_.path());
    std::vector<report::Tracepoint> tps = {{"x", "y", 900}};
    auto built = report::build_tracing_data(tree, tps, 4096);
    ASSERT_TRUE(built.ok()) << built.error().message();
    auto parsed = report::parse_tracing_data(*built);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message();
    auto d = report::TraceDecoder::create(*parsed, /*plugins=*/false);
    ASSERT_TRUE(d.ok()) << d.error().message();
    decoder_ = std::move(*d);
    event_ = decoder_->event(900);
    ASSERT_NE(event_, nullptr);
  }

  std::vector<uint8_t> payload(int32_t value, std::string_view name, std::string_view msg) {
    std::vector<uint8_t> raw(44 + msg.size() + 1, 0);
    put<uint16_t>(raw, 0, 900);
    put<int32_t>(raw, 4, 77);
    put<int32_t>(raw, 8, value);
    std::memcpy(raw.data() + 12, name.data(), std::min<size_t>(name.size(), 8));
    put<uint64_t>(raw, 24, 0xffff8880deadbeefULL);
    put<uint64_t>(raw, 32, ~0ULL);
    put<uint32_t>(raw, 40, uint32_t((msg.size() + 1) << 16 | 44));
    std::memcpy(raw.data() + 44, msg.data(), msg.size());
    return raw;
  }

  pp::testing::TempDir dir_;
  std::unique_ptr<report::TraceDecoder> decoder_;
  const report::TraceEvent* event_ = nullptr;
};

TEST_F(RecordJsonTest, TextFromThePayloadIsTheTreesDump) {
  std::vector<WatchRecord> records;
  WatchRecord r;
  r.event = "ev";
  r.tracepoint = "x:y";
  r.time = 123456789;
  r.wall_ns = 1796356800123456789ull;
  r.cpu = 1;
  r.pid = r.tid = 77;
  r.comm = "perf";
  r.key = "live:boot:ev:1:123456789";
  records.push_back(r);
  r.time = 0;  // no time, no wall time, unknown CPU and pid, no comm, no event
  r.wall_ns = 0;
  r.cpu = -1;
  r.pid = r.tid = -1;
  r.comm = "";
  r.event = "";
  records.push_back(r);
  r.comm = "bad\xff\"q\\\x01";  // odd bytes in the record's own strings
  r.key = "k\xfe";
  records.push_back(r);
  std::vector<std::vector<uint8_t>> payloads = {
      payload(-7, "abc", "hello"), payload(0, "12345678", ""),
      payload(2147483647, "x\xff\x01\"", "tab\there \xc3\xa9 \xfe")};
  for (const WatchRecord& base : records) {
    for (const auto& raw : payloads) {
      ASSERT_TRUE(decoder_->check(*event_, raw).ok());
      WatchRecord tree_made = base;
      tree_made.fields = report::fields_json(*event_, raw);
      std::string expected = dump_json(record_json(tree_made));
      RecordJson streamed(base, *event_, raw);
      EXPECT_EQ(streamed.text(), expected);
      EXPECT_EQ(dump_json(streamed.tree()), expected);
      EXPECT_EQ(RecordJson(tree_made).text(), expected);
    }
  }
}

TEST_F(RecordJsonTest, MachineCheckTextIsTheTreesDump) {
  WatchRecord r;
  r.event = "mce_record";
  r.tracepoint = "mce:mce_record";
  r.time = 5;
  r.cpu = 0;
  r.pid = r.tid = 0;
  r.key = "mce:1";
  mce::MceRegisters regs;
  regs.status = 0xbd000000000000c2;
  regs.bank = 9;
  r.mce = mce::decode_mce(regs);
  auto raw = payload(1, "a", "b");
  WatchRecord tree_made = r;
  tree_made.fields = report::fields_json(*event_, raw);
  RecordJson json(r, *event_, raw);
  EXPECT_EQ(json.text(), dump_json(record_json(tree_made)));
  EXPECT_NE(json.text().find("\"mce\":{"), std::string::npos);
}

// The lines of `text`, sorted.
std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  std::sort(out.begin(), out.end());
  return out;
}

std::string query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  std::string out;
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    out = std::string("error: ") + sqlite3_errmsg(db);
  } else {
    while (sqlite3_step(s) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(s, 0);
      out += (t ? reinterpret_cast<const char*>(t) : "NULL") + std::string("\n");
    }
  }
  sqlite3_finalize(s);
  sqlite3_close_v2(db);
  return out;
}

// report --db of `path` (listing, --json with `json`); `path` itself in
// the output is written as FILE.
std::string report_of(const std::string& path, bool json) {
  DbReportOptions o;
  o.json = json;
  std::ostringstream out, err;
  auto stats = report_db(path, o, out, err);
  EXPECT_TRUE(stats.ok()) << stats.error().message();
  EXPECT_EQ(err.str(), "");
  std::string text = out.str();
  for (size_t at; (at = text.find(path)) != std::string::npos;)
    text.replace(at, path.size(), "FILE");
  return text;
}

class CompactEntryTest : public RecordJsonTest {
 protected:
  // Live records of every shape the compact line must give back: wall time
  // known or not, comm or none, odd bytes in comm and payload, pid unknown,
  // an event name JSON escapes, two CPUs; and five that stay whole lines:
  // a second sample of one time (its key ends ":1"), a key that is not its
  // stream's, one whose boot id is not the history's, one whose time has a
  // leading zero, one whose event name is too long to be put back.
  void SetUp() override {
    RecordJsonTest::SetUp();
    payloads_ = {payload(-7, "abc", "hello"), payload(0, "12345678", ""),
                 payload(2147483647, "x\xff\x01\"", "tab\there \xc3\xa9 \xfe")};
    for (int i = 0; i < 150; i++) {
      WatchRecord r;
      r.event = i % 5 == 4 ? "e\"v" : "ev";
      r.tracepoint = "x:y";
      r.cpu = i % 2;
      r.time = 1000 + uint64_t(i);
      r.wall_ns = i % 7 == 3 ? 0 : 1796356800123456789ull + uint64_t(i) * 1000;
      r.pid = r.tid = i % 11 == 5 ? -1 : 77 + i;
      r.comm = i % 3 == 0 ? "" : i % 3 == 1 ? "perf" : "bad\xff\"q\\\x01";
      r.key.clear();
      append_stream_key(r.key, "boot", r.event, r.cpu, r.time, 0);
      if (i == 20) {  // a second sample of record 18's time, on its CPU (0)
        r.time = records_[18].time;
        r.ordinal = 1;
        r.key = records_[18].key + ":1";
      }
      if (i == 31)
        r.key = "another:key";
      if (i == 42)
        r.key = "live:other-boot:ev:0:1042";
      if (i == 53)
        r.key = "live:boot:ev:1:0" + std::to_string(r.time);  // not as the time is written
      if (i == 64) {  // a name past what a compact line is put back with
        r.event.assign(kMaxBatchColumnBytes + 1, 'l');
        r.key.clear();
        append_stream_key(r.key, "boot", r.event, r.cpu, r.time, 0);
      }
      records_.push_back(r);
    }
  }

  // Stores records_ through take(), as the watcher feeds the history (the
  // text asked for first for every third: its body then comes from it); or,
  // `as_tree`, through record() with each record's tree, whose text the
  // history stores whole, as version 3 did.
  void store(const std::string& path, const std::string& boot_id, bool as_tree = false) {
    HistoryOptions o;
    o.boot_id = boot_id;
    o.max_age_s = 0;
    o.max_bytes = 0;
    auto h = History::open(path, o);
    ASSERT_TRUE(h.ok()) << h.error().message();
    for (size_t i = 0; i < records_.size(); i++) {
      const auto& raw = payloads_[i % payloads_.size()];
      Status s = ok_status();
      if (as_tree) {
        WatchRecord tree_made = records_[i];
        tree_made.fields = report::fields_json(*event_, raw);
        s = (*h)->record(tree_made, record_json(tree_made));
      } else {
        RecordJson json(records_[i], *event_, raw);
        if (i % 3 == 0)
          (void)json.text();
        s = (*h)->take(records_[i], json);
      }
      ASSERT_TRUE(s.ok()) << s.error().message();
      if (i == 70) {
        ASSERT_TRUE((*h)->tick(1, true).ok());
      }
    }
    ASSERT_TRUE((*h)->tick(2, true).ok());
  }

  // Every record's text, as --ndjson prints it.
  std::string texts() {
    std::string out;
    for (size_t i = 0; i < records_.size(); i++)
      out += RecordJson(records_[i], *event_, payloads_[i % payloads_.size()]).text() + "\n";
    return out;
  }

  std::vector<std::vector<uint8_t>> payloads_;
  std::vector<WatchRecord> records_;
};

TEST_F(CompactEntryTest, ReportGivesEveryRecordsTextBackByteForByte) {
  pp::testing::TempDir dir;
  std::string batched = dir.path("batched.db"), rows = dir.path("rows.db");
  store(batched, "boot");
  store(rows, "");  // no boot id: every record a row, its whole text
  // Compact lines but for the five that cannot be: 145 of 150.
  EXPECT_EQ(query(batched, "SELECT sum(count) FROM batches"), "150\n");
  std::string lines = query(batched, "SELECT group_concat(json, char(10)) FROM batches");
  size_t whole = 0, compact = 0;
  std::istringstream in(lines);
  for (std::string line; std::getline(in, line);) {
    whole += line.starts_with('{');
    compact += line.starts_with(R"("time":)");
  }
  EXPECT_EQ(whole, 5u);
  EXPECT_EQ(compact, 145u);
  EXPECT_EQ(query(rows, "SELECT count(*) FROM batches"), "0\n");

  std::string json = report_of(batched, true);
  EXPECT_EQ(sorted_lines(json), sorted_lines(texts()));
  EXPECT_EQ(json, report_of(rows, true));
  EXPECT_EQ(report_of(batched, false), report_of(rows, false));
}

// A version 3 file's batches hold whole lines: a watcher of this version
// opens it (version 4: its user_version alone changes), adds compact ones
// beside them, and report --db reads both.
TEST_F(CompactEntryTest, AVersion3FilesWholeLinesReadBesideCompactOnes) {
  pp::testing::TempDir dir;
  std::string path = dir.path("h.db");
  std::vector<WatchRecord> all = records_;
  records_.resize(75);                    // a multiple of 3: the rest keep their payloads
  store(path, "boot", /*as_tree=*/true);  // every line whole, as version 3 wrote them
  EXPECT_EQ(query(path, "PRAGMA user_version=3"), "");
  EXPECT_EQ(query(path, "SELECT count(*) FROM batches WHERE json NOT LIKE '{%'"), "0\n");
  std::string v3 = report_of(path, true);
  EXPECT_EQ(sorted_lines(v3), sorted_lines(texts()));

  records_.assign(all.begin() + 75, all.end());
  std::string later = texts();
  store(path, "boot");
  EXPECT_EQ(query(path, "PRAGMA user_version"), std::to_string(kHistorySchemaVersion) + "\n");
  EXPECT_NE(query(path, "SELECT count(*) FROM batches WHERE json LIKE '\"time\":%'"), "0\n");
  EXPECT_EQ(sorted_lines(report_of(path, true)), sorted_lines(v3 + later));
}

// A compact line that is not "time" then a body (a file damaged or written
// by hand) is a record that cannot be read back: said and skipped by the
// listing, printed as it is by --json, as a whole line that is not JSON is.
TEST_F(CompactEntryTest, ADamagedCompactLineIsSaid) {
  pp::testing::TempDir dir;
  std::string path = dir.path("h.db");
  records_.resize(10);
  store(path, "boot");
  EXPECT_EQ(query(path, "UPDATE batches SET json = '\"time\":x' || substr(json, 8) WHERE id = 1"),
            "");
  DbReportOptions o;
  std::ostringstream out, err;
  auto stats = report_db(path, o, out, err);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  EXPECT_EQ(stats->bad, 1u);
  EXPECT_EQ(stats->printed, 9u);
  EXPECT_NE(err.str().find("cannot be read back (its stored JSON is not an object)"),
            std::string::npos)
      << err.str();
}

TEST(BatchEntry, ACompactLineIsGivenBackOrRefusedAsItIs) {
  BatchColumns batch{"boot", "ev", "x:y", 3};
  std::string out;
  EXPECT_TRUE(append_batch_entry(out, R"("time":42,"pid":1,"tid":1,"fields":{})", batch,
                                 1796356800123456789ll));
  EXPECT_EQ(out, R"({"origin":"live","event":"ev","tracepoint":"x:y","time":42,)"
                 R"("wall_time":"2026-12-04T04:00:00.123456789Z","cpu":3,"pid":1,"tid":1,)"
                 R"("fields":{},"key":"live:boot:ev:3:42"})");
  out.clear();
  EXPECT_TRUE(append_batch_entry(out, R"({"whole":1})", batch, 0));
  EXPECT_EQ(out, R"({"whole":1})");
  for (std::string_view bad :
       {"", R"("time":)", R"("time":,"pid":1)", R"("time":0,"pid":1)", R"("time":42)",
        R"("time":42x,"pid":1)", R"("time":-4,"pid":1)", R"("time":99999999999999999999,"pid":1)",
        R"("tim":42,"pid":1)", "\n"}) {
    out.clear();
    EXPECT_FALSE(append_batch_entry(out, bad, batch, 0)) << bad;
    EXPECT_EQ(out, bad);
  }
  std::string long_name(kMaxBatchColumnBytes + 1, 'e');
  for (BatchColumns damaged :
       {BatchColumns{"b", "e", "t", -1}, BatchColumns{long_name, "e", "t", 0},
        BatchColumns{"b", long_name, "t", 0}, BatchColumns{"b", "e", long_name, 0}}) {
    out.clear();
    EXPECT_FALSE(append_batch_entry(out, R"("time":42,"pid":1)", damaged, 0));
    EXPECT_EQ(out, R"("time":42,"pid":1)");
  }
}

}  // namespace
}  // namespace pp::watch

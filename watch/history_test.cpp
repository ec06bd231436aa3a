#include "watch/history.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <random>
#include <sqlite3.h>
#include <string>

#include "tests/support/temp_dir.h"

namespace pp::watch {
namespace {

using pp::testing::TempDir;

constexpr uint64_t kDay = 86400ull * 1000000000ull;

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count());
}

uint64_t monotonic_ms() {
  return uint64_t(std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

// A live record of an ordinary tracepoint: a batch's entry (history.h).
// Without a time, each gets the next of one clock, as a buffer's records
// do: one at or before its stream's newest is taken as stored already.
WatchRecord tracepoint_record(const std::string& key, uint64_t wall_ns, int32_t cpu = 0,
                              uint64_t time = 0, const std::string& event = "ctxsw") {
  static uint64_t clock = 1000;
  WatchRecord r;
  r.event = event;
  r.tracepoint = "sched:sched_switch";
  r.time = time ? time : ++clock;
  r.wall_ns = wall_ns;
  r.cpu = cpu;
  r.pid = r.tid = 42;
  r.comm = "sleep";
  r.fields = {{"prev_comm", "sleep"}, {"prev_pid", 42}, {"next_comm", "swapper/0"}};
  r.key = key;
  return r;
}

WatchRecord mce_record(const std::string& key, uint64_t wall_ns) {
  WatchRecord r;
  r.event = "mce_record";
  r.tracepoint = "mce:mce_record";
  r.time = 2000;
  r.wall_ns = wall_ns;
  r.cpu = 1;
  r.pid = r.tid = 0;
  mce::MceRegisters regs;
  regs.status = 0xbd000000000000c2;
  regs.mcgstatus = 0x5;
  regs.mcgcap = 0x100010a;
  regs.addr = 0x3f000000;
  regs.bank = 9;
  regs.cpu = 1;
  regs.socketid = 0;
  r.mce = mce::decode_mce(regs);
  r.fields = {{"status", "0xbd000000000000c2"}, {"bank", 9}};
  r.key = key;
  return r;
}

Status add(History& h, const WatchRecord& r) {
  return h.record(r, record_json(r));
}

HistoryOptions options(std::string boot = "boot-a") {
  HistoryOptions o;
  o.boot_id = std::move(boot);
  return o;
}

// Direct SQLite access to check what the file holds, independent of History.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(
        sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
        SQLITE_OK);
  }
  ~RawDb() { sqlite3_close_v2(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  std::string text(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
      return std::string("error: ") + sqlite3_errmsg(db_);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_text(s, 0))
      out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      out = std::string("error: ") + sqlite3_errmsg(db_);
    sqlite3_finalize(s);
    return out;
  }
  int64_t number(const std::string& sql) { return std::stoll(text(sql)); }
  // The records stored: rows and batches' entries.
  int64_t stored() {
    return number(
        "SELECT (SELECT count(*) FROM records) + (SELECT coalesce(sum(count), 0) FROM batches)");
  }
  // Whether a record with `key` (plain text) is stored, as a row or a
  // batch's entry.
  bool has_key(const std::string& key) {
    return number("SELECT (SELECT count(*) FROM records WHERE key = '" + key +
                  "') + (SELECT count(*) FROM batches WHERE instr(json, '\"key\":\"" + key +
                  "\"'))") > 0;
  }
  void exec(const std::string& sql) {
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db_);
  }

 private:
  sqlite3* db_ = nullptr;
};

// An existing history of a wider mode is tightened to 0600; a --db that
// is a symbolic link is refused, not followed (the file it names stays as
// it was), and so is another user's file.
TEST(HistoryTest, ExistingWiderFileIsTightenedAndALinkIsNotFollowed) {
  TempDir dir;
  std::string path = dir.path("history.db");
  {
    auto h = History::open(path, options());
    ASSERT_TRUE(h.ok()) << h.error().message();
  }
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  {
    auto h = History::open(path, options());
    ASSERT_TRUE(h.ok()) << h.error().message();
  }
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  std::string target = dir.path("elsewhere");
  { std::ofstream(target) << "not a history\n"; }
  std::string link = dir.path("link.db");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  auto linked = History::open(link, options());
  ASSERT_FALSE(linked.ok());
  EXPECT_EQ(linked.error().code(), ELOOP);
  EXPECT_NE(linked.error().message().find("is a symbolic link, which is not followed"),
            std::string::npos)
      << linked.error().message();
  std::ifstream in(target);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "not a history\n");
  EXPECT_FALSE(open_history_db(link, /*writable=*/false).ok()) << "a reader follows no link";

  if (::geteuid() == 0) {  // as root, a file of nobody's
    ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
    auto theirs = History::open(path, options());
    ASSERT_FALSE(theirs.ok());
    EXPECT_NE(theirs.error().message().find("belongs to uid 65534"), std::string::npos)
        << theirs.error().message();
  }
}

TEST(HistoryTest, CreatesFilePrivateWithDirectoryAndSchema) {
  TempDir dir;
  std::string path = dir.path("var/lib/pp/history.db");
  {
    auto h = History::open(path, options());
    ASSERT_TRUE(h.ok()) << h.error().message();
  }
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(dir.path("var/lib/pp").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  RawDb db(path);
  EXPECT_EQ(db.text("PRAGMA user_version"), std::to_string(kHistorySchemaVersion));
  EXPECT_EQ(db.text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(db.text("PRAGMA auto_vacuum"), "2");  // incremental
  EXPECT_EQ(db.text("PRAGMA page_size"), "16384");
  EXPECT_EQ(db.text("SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE "
                    "type = 'index' AND tbl_name = 'records' ORDER BY name)"),
            "records_mce_severity,records_wall_ns,sqlite_autoindex_records_1");
  EXPECT_EQ(db.text("SELECT sql FROM sqlite_master WHERE name = 'records_mce_severity'"),
            "CREATE INDEX records_mce_severity ON records(severity) WHERE severity IS NOT NULL");
}

TEST(HistoryTest, StoresColumnsAndTheRecordObject) {
  TempDir dir;
  std::string path = dir.path("h.db");
  WatchRecord m = mce_record("k-mce", 1796311931000000000ull);
  WatchRecord t = tracepoint_record("k-tp", 1796311932000000000ull);
  t.origin = Origin::kPstore;
  WatchRecord e = mce_record("k-erst", 1796311933000000000ull);
  e.origin = Origin::kErst;
  {
    auto h = History::open(path, options());
    ASSERT_TRUE(h.ok()) << h.error().message();
    ASSERT_TRUE(add(**h, m).ok());
    ASSERT_TRUE(add(**h, t).ok());
    ASSERT_TRUE(add(**h, e).ok());
    ASSERT_TRUE((*h)->tick(0, true).ok());
    EXPECT_EQ((*h)->counters().stored, 3u);
  }
  RawDb db(path);
  EXPECT_EQ(db.text("SELECT severity || ',' || bank || ',' || error_class || ',' || printf('%x', "
                    "addr) || ',' || socket || ',' || boot_id FROM records WHERE key = 'k-mce'"),
            "srao,9,memory-controller,3f000000,0,boot-a");
  EXPECT_EQ(db.number("SELECT status FROM records WHERE key = 'k-mce'"),
            int64_t(0xbd000000000000c2));
  EXPECT_EQ(db.text("SELECT json FROM records WHERE key = 'k-mce'"), record_json(m).dump());
  // pstore: a previous boot's, so no boot id; not a machine check: no severity.
  EXPECT_EQ(db.text("SELECT coalesce(boot_id, 'null') || ',' || coalesce(severity, 'null') || "
                    "',' || origin FROM records WHERE key = 'k-tp'"),
            "null,null,pstore");
  // ERST: a previous boot's machine check, so no boot id either.
  EXPECT_EQ(db.text("SELECT coalesce(boot_id, 'null') || ',' || severity || ',' || origin FROM "
                    "records WHERE key = 'k-erst'"),
            "null,srao,erst");
}

// A row's key (a record that is not batched: here the kernel log's).
TEST(HistoryTest, SameKeyIsStoredOnceCommittedOrNotAndAcrossReopen) {
  TempDir dir;
  std::string path = dir.path("h.db");
  auto kmsg = [](const std::string& key) {
    WatchRecord r = tracepoint_record(key, now_ns());
    r.origin = Origin::kKmsg;
    return r;
  };
  {
    auto h = History::open(path, options());
    ASSERT_TRUE(h.ok()) << h.error().message();
    EXPECT_FALSE(*(*h)->contains("a"));
    ASSERT_TRUE(add(**h, kmsg("a")).ok());
    EXPECT_TRUE(*(*h)->contains("a"));  // uncommitted, still seen
    ASSERT_TRUE(add(**h, kmsg("a")).ok());
    ASSERT_TRUE((*h)->tick(0, true).ok());
    ASSERT_TRUE(add(**h, kmsg("a")).ok());  // committed, then again
    ASSERT_TRUE((*h)->tick(10, true).ok());
    EXPECT_EQ((*h)->counters().stored, 1u);
    EXPECT_EQ((*h)->counters().duplicates, 2u);
  }
  {
    auto h = History::open(path, options());
    ASSERT_TRUE(h.ok()) << h.error().message();
    EXPECT_TRUE(*(*h)->contains("a"));
    EXPECT_FALSE(*(*h)->contains("b"));
    ASSERT_TRUE(add(**h, kmsg("a")).ok());
    ASSERT_TRUE((*h)->tick(0, true).ok());
    EXPECT_EQ((*h)->counters().duplicates, 1u);
  }
  RawDb db(path);
  EXPECT_EQ(db.number("SELECT count(*) FROM records"), 1);
}

TEST(HistoryTest, RecordWithoutKeyIsRefused) {
  TempDir dir;
  auto h = History::open(dir.path("h.db"), options());
  ASSERT_TRUE(h.ok()) << h.error().message();
  Status s = add(**h, tracepoint_record("", now_ns()));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("without an identity key"), std::string::npos);
}

TEST(HistoryTest, CommitsOnlyAfterTheIntervalOrFinal) {
  TempDir dir;
  std::string path = dir.path("h.db");
  HistoryOptions o = options();
  o.commit_interval_ms = 1000;
  auto h = History::open(path, o);
  ASSERT_TRUE(h.ok()) << h.error().message();
  RawDb db(path);
  ASSERT_TRUE((*h)->tick(5000, false).ok());  // the first tick starts the interval
  ASSERT_TRUE(add(**h, tracepoint_record("a", now_ns())).ok());
  ASSERT_TRUE((*h)->tick(5500, false).ok());
  EXPECT_EQ(db.stored(), 0);  // another connection: not yet
  ASSERT_TRUE((*h)->tick(6000, false).ok());
  EXPECT_EQ(db.stored(), 1);
  ASSERT_TRUE(add(**h, tracepoint_record("b", now_ns())).ok());
  ASSERT_TRUE((*h)->tick(6001, true).ok());
  EXPECT_EQ(db.stored(), 2);
}

// The watcher's liveness for check: one row, written at the first tick,
// again after its interval, and with stopped_ns at the final tick; each
// beat committed at once (another connection sees it).
TEST(HistoryTest, HeartbeatIsOneRowBeatingEveryIntervalAndStoppedAtTheEnd) {
  TempDir dir;
  std::string path = dir.path("h.db");
  HistoryOptions o = options();
  o.pid = 4321;
  o.heartbeat_interval_s = 60;
  o.commit_interval_ms = 3600000;  // only the beats commit
  auto h = History::open(path, o);
  ASSERT_TRUE(h.ok()) << h.error().message();
  RawDb db(path);
  EXPECT_EQ(db.number("SELECT count(*) FROM heartbeat"), 0) << "no beat before the first tick";
  uint64_t before = now_ns();
  ASSERT_TRUE((*h)->tick(5000, false).ok());
  EXPECT_EQ(db.number("SELECT count(*) FROM heartbeat"), 1);
  EXPECT_EQ(db.number("SELECT pid FROM heartbeat"), 4321);
  EXPECT_EQ(db.number("SELECT interval_s FROM heartbeat"), 60);
  EXPECT_EQ(db.number("SELECT stopped_ns IS NULL FROM heartbeat"), 1);
  int64_t first = db.number("SELECT beat_ns FROM heartbeat");
  EXPECT_GE(first, int64_t(before));
  EXPECT_GE(first, db.number("SELECT started_ns FROM heartbeat"));
  ASSERT_TRUE((*h)->tick(64999, false).ok());
  EXPECT_EQ(db.number("SELECT beat_ns FROM heartbeat"), first) << "not before its interval";
  ASSERT_TRUE((*h)->tick(65000, false).ok());
  EXPECT_GT(db.number("SELECT beat_ns FROM heartbeat"), first);
  ASSERT_TRUE((*h)->tick(65001, true).ok());
  EXPECT_EQ(db.number("SELECT count(*) FROM heartbeat"), 1);
  EXPECT_EQ(db.number("SELECT stopped_ns = beat_ns FROM heartbeat"), 1);
}

TEST(HistoryTest, LastTimeIsPerEventCpuAndBoot) {
  TempDir dir;
  std::string path = dir.path("h.db");
  {
    auto h = History::open(path, options("boot-a"));
    ASSERT_TRUE(h.ok()) << h.error().message();
    EXPECT_EQ(*(*h)->last_time("ctxsw", 0), std::nullopt);
    ASSERT_TRUE(add(**h, tracepoint_record("1", now_ns(), 0, 100)).ok());
    ASSERT_TRUE(add(**h, tracepoint_record("2", now_ns(), 0, 300)).ok());
    ASSERT_TRUE(add(**h, tracepoint_record("3", now_ns(), 0, 200)).ok());
    ASSERT_TRUE(add(**h, tracepoint_record("4", now_ns(), 1, 900)).ok());
    ASSERT_TRUE(add(**h, tracepoint_record("5", now_ns(), 0, 5000, "other")).ok());
    EXPECT_EQ(*(*h)->last_time("ctxsw", 0), 300u);  // uncommitted counts
    ASSERT_TRUE((*h)->tick(0, true).ok());
    EXPECT_EQ(*(*h)->last_time("ctxsw", 1), 900u);
    EXPECT_EQ(*(*h)->last_time("other", 0), 5000u);
    EXPECT_EQ(*(*h)->last_time("ctxsw", 2), std::nullopt);
  }
  {
    auto h = History::open(path, options("boot-b"));
    ASSERT_TRUE(h.ok()) << h.error().message();
    EXPECT_EQ(*(*h)->last_time("ctxsw", 0), std::nullopt);  // another boot's times do not count
    ASSERT_TRUE(add(**h, tracepoint_record("6", now_ns(), 0, 7)).ok());
    EXPECT_EQ(*(*h)->last_time("ctxsw", 0), 7u);
  }
  auto h = History::open(path, options("boot-a"));
  ASSERT_TRUE(h.ok()) << h.error().message();
  EXPECT_EQ(*(*h)->last_time("ctxsw", 0), 300u);
}

// Records of one time on one buffer (a clock coarser than a record) are
// each stored, once, across a restart that reads the buffer again from its
// oldest record: the ordinal tells them apart in the key, the resume point
// and the watcher's StreamPosition. Version 2 kept only the first.
TEST(HistoryTest, RecordsOfOneTimeAreToldApartByTheirOrdinalAcrossARestart) {
  TempDir dir;
  std::string path = dir.path("h.db");
  const std::vector<uint64_t> buffer = {10, 20, 20, 20, 30};
  uint64_t wall = now_ns();
  // What the watcher does with a sample it reads: its point, then the
  // record with the ordinal in its key.
  auto feed = [&](History& h, StreamPosition& at, uint64_t time) -> bool {
    std::optional<ResumePoint> point = at.next(time);
    if (!point)
      return false;
    WatchRecord r = tracepoint_record("", wall + time, 0, time, "ev");
    r.ordinal = point->ordinal;
    r.key = "live:boot-a:ev:0:" + std::to_string(time) +
            (r.ordinal ? ":" + std::to_string(r.ordinal) : "");
    EXPECT_TRUE(add(h, r).ok());
    return true;
  };
  {
    auto h = History::open(path, options());
    ASSERT_TRUE(h.ok()) << h.error().message();
    EXPECT_EQ(*(*h)->resume_point("ev", 0), std::nullopt);
    StreamPosition at;
    for (size_t i = 0; i < 3; i++)  // killed after the second record of time 20
      EXPECT_TRUE(feed(**h, at, buffer[i]));
    EXPECT_EQ(*(*h)->resume_point("ev", 0), (ResumePoint{20, 1}));  // uncommitted counts
    ASSERT_TRUE((*h)->tick(0, true).ok());
  }
  auto h = History::open(path, options());
  ASSERT_TRUE(h.ok()) << h.error().message();
  std::optional<ResumePoint> resume = *(*h)->resume_point("ev", 0);
  ASSERT_EQ(resume, (ResumePoint{20, 1}));
  StreamPosition at(*resume);
  std::vector<bool> fed;
  fed.reserve(buffer.size());
  for (uint64_t time : buffer)
    fed.push_back(feed(**h, at, time));
  EXPECT_EQ(fed, (std::vector<bool>{false, false, false, true, true}));
  EXPECT_EQ(at.fed(), (ResumePoint{30, 0}));
  // A record at or before its stream's point reaching the history anyway
  // is a duplicate, as a row's key is.
  WatchRecord again = tracepoint_record("live:boot-a:ev:0:20:2", wall + 20, 0, 20, "ev");
  again.ordinal = 2;
  ASSERT_TRUE(add(**h, again).ok());
  EXPECT_EQ((*h)->counters().stored, 2u);
  EXPECT_EQ((*h)->counters().duplicates, 1u);
  ASSERT_TRUE((*h)->tick(0, true).ok());
  RawDb db(path);
  EXPECT_EQ(db.stored(), 5);
  for (const char* key : {"live:boot-a:ev:0:20", "live:boot-a:ev:0:20:1", "live:boot-a:ev:0:20:2"})
    EXPECT_TRUE(db.has_key(key)) << key;
  EXPECT_EQ(db.text("SELECT time || ':' || ordinal FROM stream_times WHERE event = 'ev'"), "30:0");
}

// A sample without a time is new, and moves no resume point: the samples
// after it that were fed before stay fed (a point of time 0 would have
// fed them again, to every sink, triggers included).
TEST(HistoryTest, ASampleWithoutATimeLeavesTheStreamPositionWhereItWas) {
  StreamPosition at(ResumePoint{20, 1});
  EXPECT_EQ(at.next(20), std::nullopt);
  EXPECT_EQ(at.next(0), (ResumePoint{0, 0}));
  EXPECT_EQ(at.next(0), (ResumePoint{0, 1}));
  EXPECT_EQ(at.fed(), (ResumePoint{20, 1}));
  EXPECT_EQ(at.next(10), std::nullopt);
  EXPECT_EQ(at.next(30), (ResumePoint{30, 0}));
  EXPECT_EQ(at.fed(), (ResumePoint{30, 0}));
}

TEST(HistoryTest, RetentionByAgeDeletesOldRecordsAndLostRows) {
  TempDir dir;
  std::string path = dir.path("h.db");
  uint64_t now = now_ns();
  {
    HistoryOptions o = options();
    o.max_age_s = 0;  // keep everything while filling
    auto h = History::open(path, o);
    ASSERT_TRUE(h.ok()) << h.error().message();
    // Each in a batch of its own (a CPU each): a batch goes whole, once
    // its newest entry is past the age.
    ASSERT_TRUE(add(**h, tracepoint_record("old", now - 200 * kDay, 0)).ok());
    ASSERT_TRUE(add(**h, mce_record("old-mce", now - 181 * kDay)).ok());
    ASSERT_TRUE(add(**h, tracepoint_record("recent", now - 179 * kDay, 1)).ok());
    ASSERT_TRUE(add(**h, tracepoint_record("no-wall-time", 0, 2)).ok());
    // One batch whose oldest entry is past the age and newest is not: kept.
    ASSERT_TRUE(add(**h, tracepoint_record("old-in-new", now - 190 * kDay, 3)).ok());
    ASSERT_TRUE(add(**h, tracepoint_record("new-in-new", now - kDay, 3)).ok());
    ASSERT_TRUE((*h)->lost(LostNotice{"ctxsw", 0, 5, now - 200 * kDay}).ok());
    ASSERT_TRUE((*h)->lost(LostNotice{"ctxsw", 0, 7, now - kDay}).ok());
    ASSERT_TRUE((*h)->tick(0, true).ok());
  }
  {
    auto h = History::open(path, options());  // 180 days, at open
    ASSERT_TRUE(h.ok()) << h.error().message();
    EXPECT_EQ((*h)->counters().pruned, 2u);
    EXPECT_FALSE(RawDb(path).has_key("old"));
    // A machine check's key outlives its row: the kernel log or pstore
    // that still holds it must not make it new again.
    EXPECT_TRUE(*(*h)->contains("old-mce"));
    EXPECT_TRUE(RawDb(path).has_key("recent"));
    EXPECT_TRUE(RawDb(path).has_key("no-wall-time"));
  }
  RawDb db(path);
  EXPECT_EQ(db.text("SELECT group_concat(records) FROM lost"), "7");
  EXPECT_EQ(db.number("SELECT count(*) FROM records WHERE key = 'old-mce'"), 0);
  EXPECT_EQ(db.text("SELECT group_concat(key) FROM seen_keys"), "old-mce");
  EXPECT_TRUE(db.has_key("old-in-new"));
  EXPECT_EQ(db.stored(), 4);
}

TEST(HistoryTest, RetentionRunsFromTickAtMostOnceAMinute) {
  TempDir dir;
  std::string path = dir.path("h.db");
  HistoryOptions o = options();
  o.max_age_s = 86400;
  auto h = History::open(path, o);
  ASSERT_TRUE(h.ok()) << h.error().message();
  ASSERT_TRUE((*h)->tick(1000, false).ok());
  ASSERT_TRUE(add(**h, tracepoint_record("old", now_ns() - 2 * kDay)).ok());
  ASSERT_TRUE((*h)->tick(30000, false).ok());
  EXPECT_TRUE(RawDb(path).has_key("old"));  // under a minute since open
  ASSERT_TRUE((*h)->tick(61000, false).ok());
  EXPECT_FALSE(RawDb(path).has_key("old"));
}

TEST(HistoryTest, RetentionBySizeKeepsMachineChecksAndShrinksTheFile) {
  TempDir dir;
  std::string path = dir.path("h.db");
  std::string filler(400, 'x');
  uint64_t base = now_ns() - kDay;
  {
    HistoryOptions o = options();
    o.max_bytes = 0;
    auto h = History::open(path, o);
    ASSERT_TRUE(h.ok()) << h.error().message();
    for (int i = 0; i < 6000; i++) {
      WatchRecord r = tracepoint_record("tp-" + std::to_string(i), base + uint64_t(i) * 1000);
      r.fields["filler"] = filler;
      ASSERT_TRUE(add(**h, r).ok());
      if (i % 100 == 0) {  // machine checks, the oldest among them
        WatchRecord m = mce_record("mce-" + std::to_string(i), base + uint64_t(i) * 1000 - 1);
        ASSERT_TRUE(add(**h, m).ok());
      }
    }
    ASSERT_TRUE((*h)->tick(0, true).ok());
  }
  uint64_t before = std::filesystem::file_size(path);
  ASSERT_GT(before, 2u << 20);
  constexpr uint64_t kLimit = 512 << 10;
  {
    HistoryOptions o = options();
    o.max_bytes = kLimit;
    auto h = History::open(path, o);
    ASSERT_TRUE(h.ok()) << h.error().message();
    EXPECT_GT((*h)->counters().pruned, 0u);
    // The newest of the others stay; the oldest went.
    EXPECT_TRUE(RawDb(path).has_key("tp-5999"));
    EXPECT_FALSE(RawDb(path).has_key("tp-0"));
    // Filling on: the file stays bounded.
    for (int i = 6000; i < 7000; i++) {
      WatchRecord r = tracepoint_record("tp-" + std::to_string(i), base + uint64_t(i) * 1000);
      r.fields["filler"] = filler;
      ASSERT_TRUE(add(**h, r).ok());
    }
    ASSERT_TRUE((*h)->prune().ok());
  }
  RawDb db(path);
  EXPECT_EQ(db.number("SELECT count(*) FROM records WHERE severity IS NOT NULL"), 60);
  EXPECT_EQ(db.number("SELECT count(*) FROM records WHERE severity IS NULL"), 0);
  EXPECT_GT(db.number("SELECT sum(count) FROM batches"), 100);
  // Whole batches went, the oldest first: what is left is the newest.
  EXPECT_EQ(db.number("SELECT sum(count) FROM batches"),
            db.number("SELECT max(last_seq) - min(first_seq) + 1 - (SELECT count(*) FROM records "
                      "WHERE id > (SELECT min(first_seq) FROM batches)) FROM batches"));
  EXPECT_EQ(db.text("PRAGMA integrity_check"), "ok");
  uint64_t after = std::filesystem::file_size(path);
  EXPECT_LT(after, before);
  EXPECT_LE(after, kLimit + (64 << 10)) << "the file was not given back its free pages";
}

TEST(HistoryTest, SizeRetentionDeletesMachineChecksWhenNothingElseIsLeft) {
  TempDir dir;
  std::string path = dir.path("h.db");
  {
    HistoryOptions o = options();
    o.max_bytes = 0;
    auto h = History::open(path, o);
    ASSERT_TRUE(h.ok()) << h.error().message();
    for (int i = 0; i < 3000; i++) {
      WatchRecord r = mce_record("mce-" + std::to_string(i), now_ns() - kDay + uint64_t(i));
      r.fields["filler"] = std::string(600, 'y');
      ASSERT_TRUE(add(**h, r).ok());
    }
    ASSERT_TRUE((*h)->tick(0, true).ok());
  }
  HistoryOptions o = options();
  o.max_bytes = 1 << 20;  // watch's smallest --retention-size
  auto h = History::open(path, o);
  ASSERT_TRUE(h.ok()) << h.error().message();
  EXPECT_TRUE(*(*h)->contains("mce-2999"));
  RawDb db(path);
  EXPECT_EQ(db.number("SELECT count(*) FROM records WHERE key = 'mce-0'"), 0);
  EXPECT_EQ(db.number("SELECT count(*) FROM records WHERE key = 'mce-2999'"), 1);
  // The deleted machine checks' keys, the newest that fit in an eighth of
  // the budget: a small budget forgets the oldest keys too.
  int64_t kept = int64_t((1 << 20) / 8 / kSeenKeyBytes);
  EXPECT_EQ(db.number("SELECT count(*) FROM seen_keys"), kept);
  int64_t newest_deleted = 3000 - db.number("SELECT count(*) FROM records") - 1;
  EXPECT_TRUE(*(*h)->contains("mce-" + std::to_string(newest_deleted)));
  EXPECT_FALSE(*(*h)->contains("mce-0"));
}

TEST(HistoryTest, TotalsCountWhatRetentionDeletedToo) {
  TempDir dir;
  std::string path = dir.path("h.db");
  uint64_t now = now_ns();
  {
    HistoryOptions o = options();
    o.max_age_s = 0;
    auto h = History::open(path, o);
    ASSERT_TRUE(h.ok()) << h.error().message();
    ASSERT_TRUE(add(**h, mce_record("old-mce", now - 200 * kDay)).ok());
    ASSERT_TRUE(add(**h, mce_record("new-mce", now - kDay)).ok());
    ASSERT_TRUE((*h)->tick(0, true).ok());
  }
  for (int start = 0; start < 2; start++) {
    auto h = History::open(path, options());  // prunes old-mce
    ASSERT_TRUE(h.ok()) << h.error().message();
    auto totals = (*h)->totals();
    ASSERT_TRUE(totals.ok()) << totals.error().message();
    uint64_t checks = 0, records = 0;
    for (const HistoryTotals::MachineChecks& m : totals->machine_checks)
      checks += m.count;
    for (const HistoryTotals::Records& r : totals->records)
      records += r.count;
    EXPECT_EQ(checks, 2u);
    EXPECT_EQ(records, 2u);
  }
}

// The lost table's samples by event and CPU, and EDAC's records by their
// fields, beside the records' counts, which still count every record once
// per event and CPU.
TEST(HistoryTest, TotalsCountLostSamplesAndMemoryErrors) {
  TempDir dir;
  auto h = History::open(dir.path("h.db"), options());
  ASSERT_TRUE(h.ok()) << h.error().message();
  uint64_t now = now_ns();
  ASSERT_TRUE((*h)->lost(LostNotice{"ctxsw", 0, 5, now}).ok());
  ASSERT_TRUE((*h)->lost(LostNotice{"ctxsw", 0, 7, now}).ok());
  ASSERT_TRUE((*h)->lost(LostNotice{"ctxsw", 1, 2, now}).ok());
  WatchRecord mc = tracepoint_record("mc-1", now, 0, 1000, "mc_event");
  mc.tracepoint = "ras:mc_event";
  mc.fields = {{"error_type", 0}, {"label", "DIMM_A1"}, {"error_count", 3}};
  ASSERT_TRUE(add(**h, mc).ok());
  mc.key = "mc-2";
  ASSERT_TRUE(add(**h, mc).ok());
  ASSERT_TRUE(add(**h, tracepoint_record("sw-1", now, 0, 1001, "mc_event")).ok());
  auto totals = (*h)->totals();
  ASSERT_TRUE(totals.ok()) << totals.error().message();
  ASSERT_EQ(totals->lost.size(), 2u);
  EXPECT_EQ(totals->lost[0].event, "ctxsw");
  EXPECT_EQ(totals->lost[0].cpu, 0);
  EXPECT_EQ(totals->lost[0].records, 12u);
  EXPECT_EQ(totals->lost[1].cpu, 1);
  EXPECT_EQ(totals->lost[1].records, 2u);
  ASSERT_EQ(totals->mc_events.size(), 1u);
  EXPECT_EQ(totals->mc_events[0].fields, R"({"error_type":0,"label":"DIMM_A1","error_count":3})");
  EXPECT_EQ(totals->mc_events[0].count, 2u);
  ASSERT_EQ(totals->records.size(), 1u);
  EXPECT_EQ(totals->records[0].event, "mc_event");
  EXPECT_EQ(totals->records[0].count, 3u);
}

TEST(HistoryTest, NewerSchemaIsRefusedWithWhatToDo) {
  TempDir dir;
  std::string path = dir.path("h.db");
  {
    RawDb db(path);
    db.exec("CREATE TABLE future (x); PRAGMA user_version = 7");
  }
  auto h = History::open(path, options());
  ASSERT_FALSE(h.ok());
  const std::string& m = h.error().message();
  EXPECT_NE(m.find(path), std::string::npos) << m;
  EXPECT_NE(m.find("version 7"), std::string::npos) << m;
  EXPECT_NE(m.find("knows version " + std::to_string(kHistorySchemaVersion)), std::string::npos)
      << m;
  EXPECT_NE(m.find("another file"), std::string::npos) << m;
}

TEST(HistoryTest, GarbageFileIsRefusedNamingThePath) {
  TempDir dir;
  std::string path = dir.path("h.db");
  dir.write("h.db", std::string(8192, 'z'));
  auto h = History::open(path, options());
  ASSERT_FALSE(h.ok());
  const std::string& m = h.error().message();
  EXPECT_NE(m.find(path + " is not a perf-persistent history"), std::string::npos) << m;
  EXPECT_NE(m.find("move it aside"), std::string::npos) << m;
  EXPECT_EQ(h.error().kind(), ErrorKind::kOutput);
  // Left as it was: nothing was written over it.
  EXPECT_EQ(std::filesystem::file_size(path), 8192u);
}

TEST(HistoryTest, DamagedDatabaseIsRefusedByQuickCheck) {
  TempDir dir;
  std::string path = dir.path("h.db");
  {
    HistoryOptions o = options();
    auto h = History::open(path, o);
    ASSERT_TRUE(h.ok()) << h.error().message();
    for (int i = 0; i < 2000; i++)
      ASSERT_TRUE(add(**h, tracepoint_record(std::to_string(i), now_ns())).ok());
    ASSERT_TRUE((*h)->tick(0, true).ok());
  }
  // Overwrites pages in the middle, keeping the header: a file system
  // that lost blocks.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3 * 4096);
    std::string junk(2 * 4096, '\x5a');
    f.write(junk.data(), std::streamsize(junk.size()));
  }
  auto h = History::open(path, options());
  ASSERT_FALSE(h.ok());
  const std::string& m = h.error().message();
  EXPECT_NE(m.find(path), std::string::npos) << m;
  // Refused as damaged, not some other failure to open.
  EXPECT_EQ(h.error().kind(), ErrorKind::kOutput) << m;
  EXPECT_EQ(h.error().code(), EINVAL) << m;
  EXPECT_NE(m.find(path + " is damaged (PRAGMA quick_check: "), std::string::npos) << m;
  EXPECT_NE(m.find("move it aside"), std::string::npos) << m;
}

// A writer killed at any moment leaves a file that is whole, holds whole
// transactions only, and takes more records.
[[noreturn]] void write_forever(const std::string& path, int batch, int iteration) {
  HistoryOptions o = options();
  o.commit_interval_ms = 5;
  o.max_age_s = 0;
  o.max_bytes = 0;
  auto h = History::open(path, o);
  if (!h.ok())
    _exit(2);
  for (uint64_t n = 0;; n++) {
    for (int i = 0; i < batch; i++) {
      // A stream per run: each run's times go on after nothing stored.
      WatchRecord r = tracepoint_record(
          "child-" + std::to_string(iteration) + "-" + std::to_string(n) + "-" + std::to_string(i),
          now_ns(), i % 4, n * uint64_t(batch) + uint64_t(i) + 1,
          "child-" + std::to_string(iteration));
      if (!add(**h, r).ok())
        _exit(3);
    }
    if (!(*h)->tick(monotonic_ms(), false).ok())
      _exit(4);
  }
}

TEST(HistoryKillTest, SigkillAtAnyMomentLeavesWholeBatches) {
  TempDir dir;
  std::string path = dir.path("h.db");
  constexpr int kBatch = 1000, kIterations = 20;
  unsigned seed = std::random_device()();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  int64_t previous = 0;
  for (int iteration = 0; iteration < kIterations; iteration++) {
    SCOPED_TRACE("iteration " + std::to_string(iteration));
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0)
      write_forever(path, kBatch, iteration);
    // From before the file is open to well into the stream of commits;
    // the last iterations wait for the writer's own commits first, so that
    // the kill lands among them however slow the machine is.
    if (iteration >= kIterations - 5) {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      for (;;) {
        RawDb db(path);
        std::string n = db.text(
            "SELECT (SELECT count(*) FROM records) + (SELECT coalesce(sum(count), 0) FROM "
            "batches)");
        if (!n.starts_with("error") && std::stoll(n) > previous + kBatch)
          break;
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the writer committed nothing";
        usleep(1000);
      }
    }
    int delay_us = iteration < 3 ? iteration * 300 : int(rng() % 80000) + 2000;
    usleep(useconds_t(delay_us));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself, status " << status;
    int64_t count;
    {
      RawDb db(path);
      EXPECT_EQ(db.text("PRAGMA integrity_check"), "ok");
      std::string n = db.text(
          "SELECT (SELECT count(*) FROM records) + (SELECT coalesce(sum(count), 0) FROM "
          "batches)");
      if (n.empty() || n.starts_with("error"))  // killed before the schema was committed
        n = "0";
      count = std::stoll(n);
    }
    EXPECT_EQ(count % kBatch, 0) << count << " rows: a transaction was cut in half";
    EXPECT_GE(count, previous);
    {
      HistoryOptions o = options();
      o.max_age_s = 0;
      o.max_bytes = 0;
      auto h = History::open(path, o);
      ASSERT_TRUE(h.ok()) << h.error().message();
      for (int i = 0; i < kBatch; i++)
        ASSERT_TRUE(
            add(**h, tracepoint_record(
                         "parent-" + std::to_string(iteration) + "-" + std::to_string(i), now_ns(),
                         0, uint64_t(i) + 1, "parent-" + std::to_string(iteration)))
                .ok());
      ASSERT_TRUE((*h)->tick(0, true).ok());
    }
    RawDb db(path);
    previous = db.stored();
    EXPECT_EQ(previous, count + kBatch);
  }
  // The writer did get records in between kills, not only the appends here.
  EXPECT_GT(previous, int64_t(kIterations + 5) * kBatch);
}

}  // namespace
}  // namespace pp::watch

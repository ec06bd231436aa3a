#include "watch/offline_store.h"

#include <gtest/gtest.h>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.h"
#include "watch/config.h"

namespace pp::watch {
namespace {

using pp::testing::TempDir;

OfflineAction action(uint64_t pfn, const std::string& result, int error = 0) {
  OfflineAction a;
  a.wall_ns = uint64_t{1796000000} * 1000000000 + pfn;
  a.pfn = pfn;
  a.action = "soft";
  a.policy = "window";
  a.reason = "2 corrected errors within 24h (policy window, 2 in 24h)";
  a.result = result;
  a.error = error;
  a.attempt = 1;
  a.record_key = "k" + std::to_string(pfn);
  return a;
}

std::unique_ptr<History> open_history(const std::string& path, const std::string& boot) {
  HistoryOptions o;
  o.boot_id = boot;
  auto h = History::open(path, o);
  EXPECT_TRUE(h.ok()) << h.error().message();
  return std::move(*h);
}

TEST(OfflineStore, KeepsActionsAndTellsWhatThisBootDid) {
  TempDir dir;
  const std::string path = dir.path("history.db");
  {
    auto history = open_history(path, "boot-1");
    auto store = OfflineStore::open(*history);
    ASSERT_TRUE(store.ok()) << store.error().message();
    ASSERT_TRUE(store->add(action(0x10, "offlined")).ok());
    ASSERT_TRUE(store->add(action(0x11, "retrying", EBUSY)).ok());
    ASSERT_TRUE(store->add(action(0x12, "failed", EINVAL)).ok());
    ASSERT_TRUE(store->add(action(0x13, "capped")).ok());
    ASSERT_TRUE(store->add(action(0x14, "already-poisoned")).ok());
    EXPECT_EQ(*store->pages_done_this_boot(), (std::set<uint64_t>{0x10, 0x14}));
    ASSERT_TRUE(history->tick(0, true).ok());
  }
  {
    // Another boot: its pages are online again.
    auto history = open_history(path, "boot-2");
    auto store = OfflineStore::open(*history);
    ASSERT_TRUE(store.ok());
    EXPECT_TRUE(store->pages_done_this_boot()->empty());
    auto totals = store->totals();
    ASSERT_TRUE(totals.ok());
    EXPECT_EQ(totals->at({"soft", "offlined"}), 1u);
    EXPECT_EQ(totals->at({"soft", "failed"}), 1u);
    EXPECT_EQ(totals->size(), 5u);
    ASSERT_TRUE(history->tick(0, true).ok());
  }
  auto db = open_history_db(path, false);
  ASSERT_TRUE(db.ok());
  std::ostringstream json, text;
  auto n = report_offline_actions(db->db.get(), path, 0, 0, true, json);
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(*n, 5u);
  std::string first = json.str().substr(0, json.str().find('\n'));
  EXPECT_EQ(first,
            R"j({"time":"2026-11-30T00:53:20.000000016Z","page":"0x10","address":"0x10000",)j"
            R"j("action":"soft","policy":"window","result":"offlined","errno":null,"attempt":1,)j"
            R"j("reason":"2 corrected errors within 24h (policy window, 2 in 24h)",)j"
            R"j("message":null,"record_key":"k16","row":false,"boot_id":"boot-1"})j");
  EXPECT_NE(json.str().find(R"("result":"retrying","errno":"EBUSY")"), std::string::npos);
  ASSERT_TRUE(report_offline_actions(db->db.get(), path, 0, 0, false, text).ok());
  EXPECT_NE(text.str().find("2026-11-30T00:53:20Z page 0x12 soft failed (EINVAL, attempt 1): 2 "
                            "corrected errors within 24h (policy window, 2 in 24h)\n"),
            std::string::npos)
      << text.str();
  // --since after all of them.
  std::ostringstream later;
  EXPECT_EQ(*report_offline_actions(db->db.get(), path, uint64_t{1800000000} * 1000000000, 0, false,
                                    later),
            0u);
  EXPECT_EQ(later.str(), "no page offlining actions in " + path + "\n");
}

// A restart counts again this boot's corrected memory errors: its live and
// kmsg machine checks of severity corrected and its EDAC reports, the
// newest `limit`, oldest first; and finds them through their index, not by
// reading every record: a history of a busy tracepoint holds millions.
TEST(OfflineStore, ThisBootsMemoryErrorsAreReadThroughTheirIndex) {
  TempDir dir;
  auto history = open_history(dir.path("history.db"), "boot-1");
  auto store = OfflineStore::open(*history);
  ASSERT_TRUE(store.ok()) << store.error().message();
  sqlite3* db = history->db();
  auto insert = [&](int id, const char* origin, const char* boot, const char* tracepoint,
                    const char* severity, int64_t wall_ns) {
    std::string sql =
        "INSERT INTO records (key, origin, boot_id, tracepoint, wall_ns, severity, "
        "json) VALUES ('k" +
        std::to_string(id) + "', '" + origin + "', " + boot + ", '" + tracepoint + "', " +
        std::to_string(wall_ns) + ", " + severity + ", '{\"n\":" + std::to_string(id) + "}')";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
  };
  const char* mce = "mce:mce_record";
  insert(1, "live", "'boot-1'", mce, "'corrected'", 300);
  insert(2, "kmsg", "'boot-1'", mce, "'corrected'", 100);
  insert(3, "live", "'boot-1'", "ras:mc_event", "NULL", 200);
  insert(4, "live", "'boot-1'", mce, "'srao'", 150);       // not corrected
  insert(5, "live", "'boot-0'", mce, "'corrected'", 160);  // another boot
  insert(6, "pstore", "NULL", mce, "'corrected'", 170);    // a previous boot's
  for (int i = 0; i < 20000; i++)
    insert(100 + i, "live", "'boot-1'", "sched:sched_switch", "NULL", 1000 + i);
  auto numbers = [](const std::vector<nlohmann::ordered_json>& errors) {
    std::vector<int> n;
    for (const auto& e : errors)
      n.push_back(e.at("n").get<int>());
    return n;
  };
  uint64_t steps = 0;  // thousands of SQLite VM instructions
  sqlite3_progress_handler(
      db, 1000,
      [](void* p) {
        ++*static_cast<uint64_t*>(p);
        return 0;
      },
      &steps);
  auto all = store->memory_errors_this_boot(100);
  sqlite3_progress_handler(db, 0, nullptr, nullptr);
  ASSERT_TRUE(all.ok()) << all.error().message();
  EXPECT_EQ(numbers(*all), (std::vector<int>{2, 3, 1}));
  // A scan of the 20006 records takes hundreds of thousands of
  // instructions; the index, a few hundred.
  EXPECT_LT(steps, 20u);
  auto newest = store->memory_errors_this_boot(2);
  ASSERT_TRUE(newest.ok()) << newest.error().message();
  EXPECT_EQ(numbers(*newest), (std::vector<int>{3, 1}));
}

TEST(OfflineStore, AHistoryWithoutTheTableHasNoActions) {
  TempDir dir;
  const std::string path = dir.path("history.db");
  {
    auto history = open_history(path, "boot-1");
    ASSERT_TRUE(history->tick(0, true).ok());
  }
  auto db = open_history_db(path, false);
  ASSERT_TRUE(db.ok());
  std::ostringstream out;
  EXPECT_EQ(*report_offline_actions(db->db.get(), path, 0, 0, true, out), 0u);
  EXPECT_EQ(out.str(), "");
}

TEST(OfflineConfig, TheFileAndTheCommandLineSetTheSameOptions) {
  WatchOptions o;
  Status s = parse_watch_config(
      "[watch]\n"
      "offline-pages = soft\n"
      "offline-policy = rasdaemon\n"
      "page-threshold = 10 in 1h\n"
      "row-threshold = 4 in 24h\n"
      "offline-max = none\n"
      "offline-dry-run = yes\n",
      "w.conf", o);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(o.offline.mode, OfflineMode::kSoft);
  EXPECT_EQ(o.offline.policy, OfflinePolicyKind::kRasdaemon);
  EXPECT_EQ(o.offline.page_threshold, (Threshold{10, 3600000}));
  EXPECT_EQ(o.offline.row_threshold, (Threshold{4, uint64_t{24} * 3600000}));
  EXPECT_EQ(o.offline.max.runs, 0u);
  EXPECT_TRUE(o.offline.dry_run);
  WatchOptions d;
  EXPECT_EQ(d.offline.mode, OfflineMode::kAccount);  // the default
  EXPECT_EQ(d.offline.max, (RateLimit{32, uint64_t{24} * 3600000}));
  WatchOptions bad;
  s = parse_watch_config("[watch]\noffline-pages = on\n", "w.conf", bad);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kConfig);
  EXPECT_NE(s.error().message().find("w.conf:2"), std::string::npos) << s.error().message();

  TempDir dir;
  dir.write("w.conf", "[watch]\noffline-pages = soft\npage-threshold = 3 in 1h\n");
  WatchArgs args;
  args.config = dir.path("w.conf");
  args.offline_pages = "hard";
  auto merged = watch_options(args, {});
  ASSERT_TRUE(merged.ok()) << merged.error().message();
  EXPECT_EQ(merged->offline.mode, OfflineMode::kHard);  // the command line wins
  EXPECT_EQ(merged->offline.page_threshold, (Threshold{3, 3600000}));
}

}  // namespace
}  // namespace pp::watch

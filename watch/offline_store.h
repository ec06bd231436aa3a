// Page offlining's actions in watch's history file (watch/history.h), in a
// table of their own beside the records, and read back by `report --db
// --actions`:
//
//   offline_actions(id INTEGER PRIMARY KEY,  -- the order they were taken in
//                   boot_id TEXT,            -- the boot they were taken in
//                   wall_ns INTEGER NOT NULL,
//                   page INTEGER NOT NULL,   -- the page frame number (address >> 12)
//                   action TEXT NOT NULL,    -- "account", "soft", "hard"
//                   policy TEXT NOT NULL,    -- "window", "mcelog", "rasdaemon", "kernel-cec"
//                   result TEXT NOT NULL,    -- watch/offline.h's results
//                   errno INTEGER,           -- the kernel's refusal; NULL when none
//                   attempt INTEGER NOT NULL,
//                   reason TEXT NOT NULL, message TEXT, record_key TEXT,
//                   row INTEGER NOT NULL)    -- 1: asked for by row isolation
//   index offline_actions(boot_id, page)
//   index records(boot_id, wall_ns) of the corrected memory errors alone
//     (records_memory_errors: the restart's memory_errors_this_boot())
//
// Made with CREATE ... IF NOT EXISTS when the watcher opens the history
// with offlining on: a history without it is read as having no actions, and
// the schema version (PRAGMA user_version) is unchanged. Rows are written
// in the history's open transaction and committed with its records. At most
// kMaxOfflineActions are kept (the oldest deleted at open): actions are few,
// the cap bounds them.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <sqlite3.h>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "watch/history.h"
#include "watch/offline.h"

namespace pp::watch {

inline constexpr uint64_t kMaxOfflineActions = 100000;

class OfflineStore {
 public:
  // Makes the table (if none) in `history`'s file, prunes it, and prepares
  // the insert. `history` outlives the store.
  static Result<OfflineStore> open(History& history);

  // One action, into the history's open transaction (begun if none).
  Status add(const OfflineAction& action);
  // Pages this boot acted on already (any result but retrying, capped and
  // failed): the offliner never asks for them again after a restart.
  Result<std::set<uint64_t>> pages_done_this_boot();
  // This boot's corrected memory errors the history holds (the stored
  // objects of its live and kmsg records whose severity is corrected, and
  // of its ras:mc_event records), oldest first, the newest `limit` of them:
  // a restarted watcher counts them again (Offliner::replay()), so an error
  // before a restart and one after it still make two.
  Result<std::vector<nlohmann::ordered_json>> memory_errors_this_boot(size_t limit);
  // Actions by (action, result), for the metrics' counters at start.
  Result<std::map<std::pair<std::string, std::string>, uint64_t>> totals();

 private:
  OfflineStore(History& history, SqliteStmt insert)
      : history_(&history), insert_(std::move(insert)) {}
  History* history_;
  SqliteStmt insert_;
};

// report --db --actions: the actions between `since_ns` and `until_ns`
// (0: no bound), oldest first: one offline_action_text() line each, or
// with `json` one offline_action_json() object per line (with "boot_id"
// added). A history without the table has none. Returns how many.
Result<uint64_t> report_offline_actions(sqlite3* db, const std::string& path, uint64_t since_ns,
                                        uint64_t until_ns, bool json, std::ostream& out);

}  // namespace pp::watch

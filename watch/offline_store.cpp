#include "watch/offline_store.h"

#include <cerrno>

#include "base/json.h"

namespace pp::watch {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS offline_actions (
  id INTEGER PRIMARY KEY,
  boot_id TEXT,
  wall_ns INTEGER NOT NULL,
  page INTEGER NOT NULL,
  action TEXT NOT NULL,
  policy TEXT NOT NULL,
  result TEXT NOT NULL,
  errno INTEGER,
  attempt INTEGER NOT NULL,
  reason TEXT NOT NULL,
  message TEXT,
  record_key TEXT,
  row INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS offline_actions_boot_page ON offline_actions(boot_id, page);
)sql";

// The records a restart counts again (memory_errors_this_boot): corrected
// machine checks and EDAC's reports. Written once, for the index and the
// query: SQLite takes a partial index only for a query that repeats its
// WHERE term. The index holds those records alone, so the restart reads
// this boot's few of them instead of scanning every record in wall_ns
// order, and a tracepoint record's insert pays only the term's test.
constexpr std::string_view kMemoryErrorTerm =
    "(severity = 'corrected' OR tracepoint = 'ras:mc_event')";

void bind_text(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), int(v.size()), SQLITE_TRANSIENT);
}

std::string column_text(sqlite3_stmt* s, int i) {
  const unsigned char* t = sqlite3_column_text(s, i);
  return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
}

Result<bool> has_table(sqlite3* db, const std::string& path) {
  PP_ASSIGN_OR_RETURN(
      SqliteStmt s,
      sqlite_prepare(
          db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name='offline_actions'", path));
  int rc = sqlite3_step(s.get());
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return sqlite_error(db, "reading the tables of", path);
  return rc == SQLITE_ROW;
}

}  // namespace

Result<OfflineStore> OfflineStore::open(History& history) {
  sqlite3* db = history.db();
  const std::string& path = history.path();
  PP_RETURN_IF_ERROR(history.begin());
  PP_RETURN_IF_ERROR(sqlite_exec(db, kSchema, path));
  std::string index =
      "CREATE INDEX IF NOT EXISTS records_memory_errors ON records(boot_id, "
      "wall_ns) WHERE " +
      std::string(kMemoryErrorTerm);
  PP_RETURN_IF_ERROR(sqlite_exec(db, index.c_str(), path));
  std::string prune =
      "DELETE FROM offline_actions WHERE id <= (SELECT MAX(id) FROM "
      "offline_actions) - " +
      std::to_string(kMaxOfflineActions);
  PP_RETURN_IF_ERROR(sqlite_exec(db, prune.c_str(), path));
  PP_ASSIGN_OR_RETURN(
      SqliteStmt insert,
      sqlite_prepare(db,
                     "INSERT INTO offline_actions (boot_id, wall_ns, page, action, policy, "
                     "result, errno, attempt, reason, message, record_key, row) VALUES "
                     "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     path));
  return OfflineStore(history, std::move(insert));
}

Status OfflineStore::add(const OfflineAction& a) {
  PP_RETURN_IF_ERROR(history_->begin());
  sqlite3_stmt* s = insert_.get();
  bind_text(s, 1, history_->boot_id());
  sqlite3_bind_int64(s, 2, int64_t(a.wall_ns));
  sqlite3_bind_int64(s, 3, int64_t(a.pfn));
  bind_text(s, 4, a.action);
  bind_text(s, 5, a.policy);
  bind_text(s, 6, a.result);
  if (a.error)
    sqlite3_bind_int(s, 7, a.error);
  else
    sqlite3_bind_null(s, 7);
  sqlite3_bind_int(s, 8, int(a.attempt));
  bind_text(s, 9, a.reason);
  if (a.message.empty())
    sqlite3_bind_null(s, 10);
  else
    bind_text(s, 10, a.message);
  bind_text(s, 11, a.record_key);
  sqlite3_bind_int(s, 12, a.row ? 1 : 0);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc != SQLITE_DONE)
    return sqlite_error(history_->db(), "storing a page offlining action in", history_->path());
  return ok_status();
}

Result<std::set<uint64_t>> OfflineStore::pages_done_this_boot() {
  PP_ASSIGN_OR_RETURN(SqliteStmt s,
                      sqlite_prepare(history_->db(),
                                     "SELECT DISTINCT page FROM offline_actions WHERE boot_id = ? "
                                     "AND result NOT IN ('retrying', 'capped', 'failed')",
                                     history_->path()));
  bind_text(s.get(), 1, history_->boot_id());
  std::set<uint64_t> pages;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW)
    pages.insert(uint64_t(sqlite3_column_int64(s.get(), 0)));
  if (rc != SQLITE_DONE)
    return sqlite_error(history_->db(), "reading the page offlining actions of", history_->path());
  return pages;
}

Result<std::vector<nlohmann::ordered_json>> OfflineStore::memory_errors_this_boot(size_t limit) {
  std::string sql =
      "SELECT json FROM (SELECT id, wall_ns, json FROM records WHERE boot_id = ? "
      "AND origin IN ('live', 'kmsg') AND " +
      std::string(kMemoryErrorTerm) +
      " ORDER BY wall_ns DESC, id DESC LIMIT ?) ORDER BY wall_ns, id";
  PP_ASSIGN_OR_RETURN(SqliteStmt s, sqlite_prepare(history_->db(), sql, history_->path()));
  bind_text(s.get(), 1, history_->boot_id());
  sqlite3_bind_int64(s.get(), 2, int64_t(limit));
  std::vector<nlohmann::ordered_json> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    auto parsed = nlohmann::ordered_json::parse(column_text(s.get(), 0), nullptr, false);
    if (!parsed.is_discarded())
      out.push_back(std::move(parsed));
  }
  if (rc != SQLITE_DONE)
    return sqlite_error(history_->db(), "reading this boot's memory errors from", history_->path());
  return out;
}

Result<std::map<std::pair<std::string, std::string>, uint64_t>> OfflineStore::totals() {
  PP_ASSIGN_OR_RETURN(
      SqliteStmt s,
      sqlite_prepare(history_->db(),
                     "SELECT action, result, COUNT(*) FROM offline_actions GROUP BY action, result",
                     history_->path()));
  std::map<std::pair<std::string, std::string>, uint64_t> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW)
    out[{column_text(s.get(), 0), column_text(s.get(), 1)}] =
        uint64_t(sqlite3_column_int64(s.get(), 2));
  if (rc != SQLITE_DONE)
    return sqlite_error(history_->db(), "counting the page offlining actions of", history_->path());
  return out;
}

Result<uint64_t> report_offline_actions(sqlite3* db, const std::string& path, uint64_t since_ns,
                                        uint64_t until_ns, bool json, std::ostream& out) {
  PP_ASSIGN_OR_RETURN(bool table, has_table(db, path));
  if (!table)
    return uint64_t{0};
  PP_ASSIGN_OR_RETURN(
      SqliteStmt s,
      sqlite_prepare(db,
                     "SELECT boot_id, wall_ns, page, action, policy, result, errno, attempt, "
                     "reason, message, record_key, row FROM offline_actions WHERE wall_ns >= ? "
                     "AND (? = 0 OR wall_ns <= ?) ORDER BY wall_ns, id",
                     path));
  sqlite3_bind_int64(s.get(), 1, int64_t(since_ns));
  sqlite3_bind_int64(s.get(), 2, int64_t(until_ns));
  sqlite3_bind_int64(s.get(), 3, int64_t(until_ns));
  uint64_t n = 0;
  std::string buffer;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    OfflineAction a;
    std::string boot = column_text(s.get(), 0);
    a.wall_ns = uint64_t(sqlite3_column_int64(s.get(), 1));
    a.pfn = uint64_t(sqlite3_column_int64(s.get(), 2));
    a.action = column_text(s.get(), 3);
    a.policy = column_text(s.get(), 4);
    a.result = column_text(s.get(), 5);
    a.error = sqlite3_column_int(s.get(), 6);
    a.attempt = uint32_t(sqlite3_column_int(s.get(), 7));
    a.reason = column_text(s.get(), 8);
    a.message = column_text(s.get(), 9);
    a.record_key = column_text(s.get(), 10);
    a.row = sqlite3_column_int(s.get(), 11) != 0;
    if (json) {
      nlohmann::ordered_json j = offline_action_json(a);
      j["boot_id"] = boot;
      buffer += dump_json(j);
    } else {
      buffer += offline_action_text(a);
    }
    buffer += '\n';
    n++;
  }
  if (rc != SQLITE_DONE)
    return sqlite_error(db, "reading the page offlining actions of", path);
  if (!json && n == 0)
    buffer = "no page offlining actions in " + path + "\n";
  out << buffer;
  out.flush();
  if (!out)
    return Error(ErrorKind::kOutput, EPIPE, "writing the page offlining actions failed");
  return n;
}

}  // namespace pp::watch

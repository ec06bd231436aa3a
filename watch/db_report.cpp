#include "watch/db_report.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <variant>

#include "base/json.h"
#include "base/strings.h"
#include "base/terminal.h"
#include "base/time_arg.h"
#include "base/wall_time.h"
#include "mce/ras_events.h"
#include "mce/tally.h"
#include "sys/clock.h"
#include "watch/faults.h"
#include "watch/history.h"
#include "watch/offline_store.h"

namespace pp::watch {

namespace {

constexpr size_t kFlushSize = 1 << 16;
// How many of the most repeated 4 KiB pages --summary lists.
constexpr int kTopPages = 20;
constexpr int kGiBShift = 30, kPageShift = 12;

using SqlValue = std::variant<std::monostate, int64_t, std::string>;
using SqlRow = std::vector<SqlValue>;

// A WHERE clause and what its ?s bind to, in order.
struct Where {
  std::string sql = "1";
  std::vector<SqlValue> params;

  void add(std::string_view condition) {
    sql += " AND (";
    sql += condition;
    sql += ')';
  }
  template <typename T>
  void add_in(std::string_view column, const std::vector<T>& values) {
    std::string c = std::string(column) + " IN (";
    for (size_t i = 0; i < values.size(); i++) {
      c += i ? ",?" : "?";
      if constexpr (std::is_same_v<T, std::string>)
        params.emplace_back(values[i]);
      else
        params.emplace_back(int64_t(values[i]));
    }
    add(c + ")");
  }
};

void bind_all(sqlite3_stmt* s, const std::vector<SqlValue>& params) {
  for (size_t i = 0; i < params.size(); i++) {
    int index = int(i) + 1;
    if (const int64_t* n = std::get_if<int64_t>(&params[i]))
      sqlite3_bind_int64(s, index, *n);
    else if (const std::string* t = std::get_if<std::string>(&params[i]))
      sqlite3_bind_text(s, index, t->data(), int(t->size()), SQLITE_TRANSIENT);
    else
      sqlite3_bind_null(s, index);
  }
}

Result<std::vector<SqlRow>> query_rows(sqlite3* db, const std::string& sql,
                                       const std::vector<SqlValue>& params,
                                       const std::string& path) {
  PP_ASSIGN_OR_RETURN(SqliteStmt s, sqlite_prepare(db, sql, path));
  bind_all(s.get(), params);
  std::vector<SqlRow> rows;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    SqlRow row;
    for (int c = 0; c < sqlite3_column_count(s.get()); c++) {
      switch (sqlite3_column_type(s.get(), c)) {
        case SQLITE_NULL:
          row.emplace_back(std::monostate());
          break;
        case SQLITE_INTEGER:
          row.emplace_back(int64_t(sqlite3_column_int64(s.get(), c)));
          break;
        default: {
          const unsigned char* text = sqlite3_column_text(s.get(), c);
          row.emplace_back(std::string(text ? reinterpret_cast<const char*>(text) : ""));
          break;
        }
      }
    }
    rows.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE)
    return sqlite_error(db, "reading the history", path);
  return rows;
}

bool is_null(const SqlValue& v) {
  return std::holds_alternative<std::monostate>(v);
}
int64_t as_i64(const SqlValue& v) {
  const int64_t* n = std::get_if<int64_t>(&v);
  return n ? *n : 0;
}
std::string as_text(const SqlValue& v) {
  const std::string* t = std::get_if<std::string>(&v);
  return t ? *t : std::string();
}

// "mce_record" from "persistent/mce_record/" (what -e takes elsewhere).
std::string event_name(std::string_view name) {
  constexpr std::string_view kPrefix = "persistent/";
  if (name.starts_with(kPrefix)) {
    name.remove_prefix(kPrefix.size());
    if (name.ends_with('/'))
      name.remove_suffix(1);
  }
  return std::string(name);
}

// `records` selects rows, `batches` the batches that may hold an entry
// selected (their wall range meets --since/--until); `since` and `until`
// (ns since the epoch) select among a batch's entries.
struct Filters {
  Where records, lost, batches;
  std::optional<int64_t> since, until;
  // Whether the file has batches (version 3 and later): a version 1 or 2 file is read
  // as its rows.
  bool has_batches = false;

  bool takes_wall(int64_t wall_ns) const {
    if (!since && !until)
      return true;
    return wall_ns != 0 && (!since || wall_ns >= *since) && (!until || wall_ns <= *until);
  }
};

Result<Filters> make_filters(const DbReportOptions& o) {
  Filters f;
  uint64_t now = sys::realtime_ns();
  for (auto [text, op] : {std::pair{&o.since, ">="}, std::pair{&o.until, "<="}}) {
    if (text->empty())
      continue;
    PP_ASSIGN_OR_RETURN(uint64_t ns, parse_db_time(*text, now));
    auto bound = int64_t(std::min<uint64_t>(ns, INT64_MAX));
    for (Where* w : {&f.records, &f.lost}) {
      w->add(std::string("wall_ns ") + op + " ?");
      w->params.emplace_back(bound);
    }
    // A batch's newest entry at or after --since, its oldest at or before
    // --until; its entries are taken one by one (takes_wall()).
    f.batches.add(std::string(op[0] == '>' ? "max_wall_ns " : "min_wall_ns ") + op + " ?");
    f.batches.params.emplace_back(bound);
    (op[0] == '>' ? f.since : f.until) = bound;
  }
  if (o.mce_only || !o.severities.empty()) {
    f.batches.add("0");  // no machine check or EDAC record is batched
    f.records.add("severity IS NOT NULL");
    f.lost.add("event IN (SELECT DISTINCT event FROM records WHERE severity IS NOT NULL)");
  }
  if (!o.severities.empty()) {
    std::vector<std::string> names;
    for (mce::MceSeverity s : o.severities)
      names.emplace_back(mce::mce_severity_name(s));
    f.records.add_in("severity", names);
  }
  if (o.cpus) {
    f.records.add_in("cpu", *o.cpus);
    f.lost.add_in("cpu", *o.cpus);
    f.batches.add_in("cpu", *o.cpus);
  }
  if (!o.events.empty()) {
    std::vector<std::string> names;
    for (const std::string& e : o.events)
      names.push_back(event_name(e));
    std::string in = "IN (";
    for (size_t i = 0; i < names.size(); i++)
      in += i ? ",?" : "?";
    in += ')';
    // A harvested record has no event; it is the named event's when the
    // name is its tracepoint's ("mce_record" for the machine checks of the
    // kernel's logs, as the default event is named after it).
    f.records.add("event " + in + " OR tracepoint " + in +
                  " OR (event IS NULL AND substr(tracepoint, instr(tracepoint, ':') + 1) " + in +
                  ")");
    for (int thrice = 0; thrice < 3; thrice++)
      for (const std::string& n : names)
        f.records.params.emplace_back(n);
    f.lost.add_in("event", names);
    // A batch's event is always known.
    f.batches.add("event " + in + " OR tracepoint " + in);
    for (int twice = 0; twice < 2; twice++)
      for (const std::string& n : names)
        f.batches.params.emplace_back(n);
  }
  return f;
}

void append_padded(std::string& out, std::string_view text, size_t width) {
  if (text.size() < width)
    out.append(width - text.size(), ' ');
  out += text;
}

void append_count(std::string& out, int64_t count, std::string_view key) {
  append_padded(out, std::to_string(count), 10);
  out += "  ";
  out += key;
  out += '\n';
}

std::string field_text(const nlohmann::ordered_json& v) {
  if (v.is_string())
    return v.get<std::string>();
  return dump_json(v);
}

void append_indented(std::string& out, std::string_view text) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty()) {
      out += "  ";
      out += line;
      out += '\n';
    }
    if (nl == std::string_view::npos)
      break;
    text.remove_prefix(nl + 1);
  }
}

// One record's text: report's line with the wall time, then the decoding;
// `verbose`: then the kernel-log line a harvested record came from.
void append_text(std::string& out, const nlohmann::ordered_json& j, bool verbose) {
  auto get_i = [&](const char* key) -> std::optional<int64_t> {
    auto f = j.find(key);
    if (f != j.end() && f->is_number_integer())
      return f->get<int64_t>();
    return std::nullopt;
  };
  auto get_s = [&](const char* key) -> std::string {
    auto f = j.find(key);
    return f != j.end() && f->is_string() ? f->get<std::string>() : std::string();
  };
  std::optional<int64_t> tid = get_i("tid"), cpu = get_i("cpu");
  std::string tid_text = tid && *tid >= 0 ? std::to_string(*tid) : "-";
  std::string comm = get_s("comm");
  if (comm.empty())
    comm = tid && *tid >= 0 ? ":" + tid_text : "-";
  append_padded(out, terminal_safe(comm), 16);  // any process's choice
  out += ' ';
  append_padded(out, tid_text, 5);
  out += " [";
  if (cpu && *cpu >= 0) {
    std::string c = std::to_string(*cpu);
    if (c.size() < 3)
      out.append(3 - c.size(), '0');
    out += c;
  } else {
    out += "???";
  }
  out += "] ";
  std::string wall = get_s("wall_time");
  out += wall.empty() ? "unknown-time" : wall;
  out += ": ";
  out += get_s("tracepoint");
  out += ':';
  auto fields = j.find("fields");
  if (fields != j.end() && fields->is_object()) {
    for (auto it = fields->begin(); it != fields->end(); ++it) {
      if (it.key() == "raw_line")
        continue;  // its own line, under -v
      out += ' ';
      out += it.key();
      out += '=';
      append_terminal_safe(out, field_text(it.value()));
    }
  }
  std::string origin = get_s("origin");
  if (!origin.empty() && origin != "live") {
    out += " (from ";
    out += origin;
    out += ')';
  }
  out += '\n';
  if (std::optional<mce::MceDecoded> d = stored_mce(j)) {
    std::string text;
    mce::print_mce_text(*d, text);
    append_indented(out, text);
  } else if (j.contains("ras") && fields != j.end()) {
    // Decoded again from the stored fields (mce/ras_events.h); --json has
    // the decoding the watcher made from the payload, raw sections whole.
    std::string tracepoint = get_s("tracepoint");
    if (auto ras = mce::decode_ras_event(tracepoint, mce::ras_fields_from_json(*fields))) {
      std::string text;  // terminal-safe: print_ras_text() escapes
      mce::print_ras_text(*ras, text);
      append_indented(out, text);
    }
  }
  if (verbose && fields != j.end() && fields->is_object()) {
    auto raw = fields->find("raw_line");
    if (raw != fields->end() && raw->is_string()) {
      out += "  kernel log: ";
      append_terminal_safe(out, raw->get<std::string>());
      out += '\n';
    }
  }
}

std::string hex_addr(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string wall_or_unknown(const SqlValue& v) {
  return is_null(v) ? std::string("unknown") : format_wall_time(uint64_t(as_i64(v)));
}

// One entry of a batch (watch/history.h, batches): its wall time (0:
// unknown), sequence number and JSON line.
struct BatchEntry {
  int64_t wall_ns = 0;
  int64_t seq = 0;
  std::string_view json;
};

int64_t read_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return int64_t(v);
}

// The `count` entries of a batch from its entries blob and its JSON lines,
// those `f` takes appended to `out`; false (nothing appended) when the two
// do not hold `count` entries each (a file damaged or written by hand).
bool split_batch(const void* blob, int blob_bytes, std::string_view json, int64_t count,
                 const Filters& f, std::vector<BatchEntry>& out) {
  // Compared by division: a count written by hand cannot overflow into a
  // match with a short blob.
  if (count <= 0 || blob_bytes <= 0 || blob_bytes % 16 != 0 || count != blob_bytes / 16 || !blob)
    return false;
  size_t start = out.size();
  const auto* p = static_cast<const unsigned char*>(blob);
  for (int64_t i = 0; i < count; i++) {
    size_t nl = json.find('\n');
    if ((nl == std::string_view::npos) != (i == count - 1)) {
      out.resize(start);
      return false;
    }
    BatchEntry e{read_le64(p + 16 * i), read_le64(p + 16 * i + 8), json.substr(0, nl)};
    if (f.takes_wall(e.wall_ns))
      out.push_back(e);
    if (nl != std::string_view::npos)
      json.remove_prefix(nl + 1);
  }
  return true;
}

// Where a row or an entry sorts in a listing: by wall time, unknown first
// (SQLite's NULL), then by sequence number, as "ORDER BY wall_ns, id" did
// when every record was a row.
struct ListKey {
  int64_t wall = INT64_MIN;
  int64_t seq = 0;
  friend bool operator<(const ListKey& a, const ListKey& b) {
    return a.wall != b.wall ? a.wall < b.wall : a.seq < b.seq;
  }
};
ListKey list_key(int64_t wall_ns, int64_t seq) {
  return {wall_ns == 0 ? INT64_MIN : wall_ns, seq};
}

// What read_batch() steps, bound to a batch's id.
constexpr const char* kReadBatch =
    "SELECT count, entries, json, boot_id, event, tracepoint, cpu FROM batches WHERE id = ?1";

std::string_view column_view(sqlite3_stmt* s, int column) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, column));
  return text ? std::string_view(text, size_t(sqlite3_column_bytes(s, column)))
              : std::string_view();
}

// The entries' lines as record_json() wrote them (a version 4 batch's
// compact lines put back together, history.h) into `json`, which the
// entries view from then on.
void whole_lines(sqlite3_stmt* fetch, std::string& json, std::vector<BatchEntry>& entries,
                 size_t first) {
  bool compact = false;
  for (size_t i = first; i < entries.size() && !compact; i++)
    compact = !entries[i].json.starts_with('{');
  if (!compact)
    return;
  int64_t cpu = sqlite3_column_int64(fetch, 6);
  BatchColumns batch{column_view(fetch, 3), column_view(fetch, 4), column_view(fetch, 5),
                     cpu >= 0 && cpu <= INT32_MAX ? int32_t(cpu) : -1};
  std::string whole;
  // A line's head and tail: under 200 bytes and its columns, escaped.
  whole.reserve(json.size() + (entries.size() - first) * (200 + 2 * kMaxBatchColumnBytes));
  std::vector<std::pair<size_t, size_t>> spans;
  spans.reserve(entries.size() - first);
  for (size_t i = first; i < entries.size(); i++) {
    size_t begin = whole.size();
    (void)append_batch_entry(whole, entries[i].json, batch, entries[i].wall_ns);
    spans.emplace_back(begin, whole.size() - begin);
  }
  json = std::move(whole);
  for (size_t i = first; i < entries.size(); i++)
    entries[i].json =
        std::string_view(json).substr(spans[i - first].first, spans[i - first].second);
}

// Says that batch `id` cannot be read back; returns its records, as far as
// a count that may be damaged says (a count past kBatchRecords: one).
uint64_t say_damaged_batch(std::ostream& err, const std::string& path, int64_t id, int64_t count) {
  err << "batch " << id << " of " << path
      << " cannot be read back (its count, entries and lines disagree: the file was damaged or "
         "written by hand); its records skipped. `sqlite3 "
      << path << " 'PRAGMA integrity_check'` says whether the file is damaged\n";
  return count > 0 && count <= int64_t(kBatchRecords) ? uint64_t(count) : 1;
}

// Reads batch `id` with `fetch` (kReadBatch): its JSON lines into `json`,
// the entries `f` takes appended to `entries` (they view `json`), each line
// the record's whole object when `lines` (else as stored: the entries' wall
// times are what is wanted). A batch whose count, entries and lines
// disagree is said (say_damaged_batch()), its records added to `bad`, and
// nothing appended.
Status read_batch(sqlite3* db, sqlite3_stmt* fetch, int64_t id, const Filters& f,
                  const std::string& path, std::ostream& err, uint64_t& bad, std::string& json,
                  std::vector<BatchEntry>& entries, bool lines) {
  sqlite3_bind_int64(fetch, 1, id);
  if (sqlite3_step(fetch) != SQLITE_ROW) {
    Error e = sqlite_error(db, "reading a batch of records of", path);
    sqlite3_reset(fetch);
    return e;
  }
  int64_t count = sqlite3_column_int64(fetch, 0);
  const void* blob = sqlite3_column_blob(fetch, 1);
  int blob_bytes = sqlite3_column_bytes(fetch, 1);
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(fetch, 2));
  json.assign(text ? text : "", size_t(sqlite3_column_bytes(fetch, 2)));
  size_t first = entries.size();
  bool ok = split_batch(blob, blob_bytes, json, count, f, entries);
  if (ok && lines)
    whole_lines(fetch, json, entries, first);
  sqlite3_reset(fetch);
  if (!ok)
    bad += say_damaged_batch(err, path, id, count);
  return ok_status();
}

// The summary's data, gathered with one GROUP BY each; the machine checks'
// counts per severity, bank, CPU, socket and error class in the tally every
// summary of them shares.
struct Summary {
  int64_t records = 0, distinct_pages = 0;
  uint64_t bad = 0;  // records of batches that cannot be read back (said, skipped)
  SqlValue first, last;
  std::vector<SqlRow> events, origins, days, ranges, pages, lost;
  mce::MceTally machine_checks;
  // Memory errors (EDAC records, memory-controller machine checks, one
  // error each when both) per DIMM: name -> {errors, uncorrected}; "" is
  // a DIMM not known.
  std::map<std::string, std::pair<uint64_t, uint64_t>> dimms;
};

// A bank, CPU or socket: nullopt when unknown (or not a number at all).
std::optional<uint32_t> as_u32(const SqlValue& v) {
  const int64_t* n = std::get_if<int64_t>(&v);
  if (!n || *n < 0 || *n > int64_t(UINT32_MAX))
    return std::nullopt;
  return uint32_t(*n);
}

std::optional<std::string> text_or_null(const SqlValue& v) {
  if (is_null(v))
    return std::nullopt;
  if (const int64_t* n = std::get_if<int64_t>(&v))
    return std::to_string(*n);
  return as_text(v);
}

SqlValue null_or_text(const std::optional<std::string>& v) {
  return v ? SqlValue(*v) : SqlValue();
}

// The batches' entries `f` selects, counted into the summary: a batch whole
// when its wall range lies inside --since/--until, else entry by entry.
// They are live records of ordinary tracepoints: counted per event, under
// "live", never machine checks. The rows keep SQLite's order (NULL first,
// then bytes), which std::optional<std::string>'s is. A batch whose count
// disagrees with its entries (length(), read without the blob), or whose
// entries are read and disagree with its lines, is said on `err` and
// skipped, as the listing skips it.
Status add_batches(sqlite3* db, const Filters& f, const std::string& path, std::ostream& err,
                   Summary& s) {
  PP_ASSIGN_OR_RETURN(SqliteStmt q,
                      sqlite_prepare(db,
                                     "SELECT event, tracepoint, count, min_wall_ns, max_wall_ns, "
                                     "walls_unknown, id, length(entries) FROM batches WHERE " +
                                         f.batches.sql,
                                     path));
  bind_all(q.get(), f.batches.params);
  PP_ASSIGN_OR_RETURN(SqliteStmt fetch, sqlite_prepare(db, kReadBatch, path));
  using Name = std::optional<std::string>;
  std::map<std::pair<Name, Name>, int64_t> events;
  for (const SqlRow& r : s.events)
    events[{text_or_null(r[0]), text_or_null(r[1])}] += as_i64(r[2]);
  int64_t total = 0;
  std::optional<int64_t> first, last;
  auto seen = [&](int64_t wall) {
    first = first ? std::min(*first, wall) : wall;
    last = last ? std::max(*last, wall) : wall;
  };
  std::string json;
  std::vector<BatchEntry> taken;
  int rc;
  while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
    sqlite3_stmt* r = q.get();
    int64_t count = sqlite3_column_int64(r, 2), id = sqlite3_column_int64(r, 6);
    if (count <= 0 || count > int64_t(kBatchRecords) || sqlite3_column_int64(r, 7) != 16 * count) {
      s.bad += say_damaged_batch(err, path, id, count);
      continue;
    }
    bool walls = sqlite3_column_type(r, 3) != SQLITE_NULL;
    int64_t min_wall = sqlite3_column_int64(r, 3), max_wall = sqlite3_column_int64(r, 4);
    bool whole = (!f.since && !f.until) ||
                 (walls && sqlite3_column_int64(r, 5) == 0 && (!f.since || min_wall >= *f.since) &&
                  (!f.until || max_wall <= *f.until));
    int64_t n = 0;
    if (whole) {
      n = count;
      if (walls) {
        seen(min_wall);
        seen(max_wall);
      }
    } else {
      taken.clear();
      PP_RETURN_IF_ERROR(
          read_batch(db, fetch.get(), id, f, path, err, s.bad, json, taken, /*lines=*/false));
      n = int64_t(taken.size());
      for (const BatchEntry& e : taken)
        seen(e.wall_ns);
    }
    if (n == 0)
      continue;
    total += n;
    auto text = [&](int c) -> Name {
      const unsigned char* t = sqlite3_column_text(r, c);
      return t ? Name(reinterpret_cast<const char*>(t)) : Name();
    };
    events[{text(0), text(1)}] += n;
  }
  if (rc != SQLITE_DONE)
    return sqlite_error(db, "reading the batches of", path);
  if (total == 0)
    return ok_status();
  s.records += total;
  if (first)
    s.first = is_null(s.first) ? *first : std::min(as_i64(s.first), *first);
  if (last)
    s.last = is_null(s.last) ? *last : std::max(as_i64(s.last), *last);
  s.events.clear();
  for (const auto& [names, count] : events)
    s.events.push_back({null_or_text(names.first), null_or_text(names.second), count});
  std::map<Name, int64_t> origins;
  for (const SqlRow& r : s.origins)
    origins[text_or_null(r[0])] += as_i64(r[1]);
  origins[Name("live")] += total;
  s.origins.clear();
  for (const auto& [origin, count] : origins)
    s.origins.push_back({null_or_text(origin), count});
  return ok_status();
}

Result<Summary> gather(sqlite3* db, const Filters& f, const std::string& path, std::ostream& err) {
  Summary s;
  const std::string from = " FROM records WHERE " + f.records.sql;
  const std::string mce = from + " AND severity IS NOT NULL";
  auto rows = [&](const std::string& sql, const Where& w) {
    return query_rows(db, sql, w.params, path);
  };
  PP_ASSIGN_OR_RETURN(std::vector<SqlRow> total,
                      rows("SELECT count(*), min(wall_ns), max(wall_ns)" + from, f.records));
  s.records = as_i64(total[0][0]);
  s.first = total[0][1];
  s.last = total[0][2];
  PP_ASSIGN_OR_RETURN(s.events, rows("SELECT event, tracepoint, count(*)" + from +
                                         " GROUP BY event, tracepoint ORDER BY event, tracepoint",
                                     f.records));
  PP_ASSIGN_OR_RETURN(
      s.origins,
      rows("SELECT origin, count(*)" + from + " GROUP BY origin ORDER BY origin", f.records));
  // A machine check's CPU is its own (mce_record's cpu, in the stored
  // decoding), else the record's (the buffer it was read from). A stored
  // object that is not JSON (reported by the listing) gives the record's.
  PP_ASSIGN_OR_RETURN(
      std::vector<SqlRow> alike,
      rows("SELECT severity, bank, coalesce(CASE WHEN json_valid(json) THEN "
           "json_extract(json, '$.mce.cpu') END, cpu), socket, error_class, count(*)" +
               mce + " GROUP BY 1, 2, 3, 4, 5",
           f.records));
  for (const SqlRow& r : alike)
    s.machine_checks.add(
        mce::MceTallyKey{as_text(r[0]), as_u32(r[1]), as_u32(r[2]), as_u32(r[3]), as_text(r[4])},
        uint64_t(as_i64(r[5])));
  PP_ASSIGN_OR_RETURN(s.days, rows("SELECT date(wall_ns / 1000000000, 'unixepoch') AS day, "
                                   "count(*)" +
                                       mce + " GROUP BY day ORDER BY day",
                                   f.records));
  const std::string addr = mce + " AND addr IS NOT NULL";
  PP_ASSIGN_OR_RETURN(s.ranges, rows("SELECT addr >> " + std::to_string(kGiBShift) +
                                         " AS r, count(*)" + addr + " GROUP BY r ORDER BY r",
                                     f.records));
  PP_ASSIGN_OR_RETURN(
      s.pages, rows("SELECT addr >> " + std::to_string(kPageShift) + " AS p, count(*)" + addr +
                        " GROUP BY p ORDER BY count(*) DESC, p LIMIT " + std::to_string(kTopPages),
                    f.records));
  PP_ASSIGN_OR_RETURN(
      std::vector<SqlRow> distinct,
      rows("SELECT count(DISTINCT addr >> " + std::to_string(kPageShift) + ")" + addr, f.records));
  s.distinct_pages = as_i64(distinct[0][0]);
  PP_ASSIGN_OR_RETURN(std::vector<SqlRow> memory,
                      rows("SELECT json" + from +
                               " AND (tracepoint = 'ras:mc_event' OR error_class = "
                               "'memory-controller')",
                           f.records));
  std::vector<mce::FaultError> errors;
  for (const SqlRow& r : memory) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(as_text(r[0]), nullptr, false);
    if (auto e = fault_error_of(j))
      errors.push_back(std::move(*e));
  }
  for (const mce::FaultError& e : mce::join_machine_checks(std::move(errors), kEdacJoinWindowNs)) {
    auto& [count, uncorrected] = s.dimms[mce::dimm_name(e.location)];
    count += e.count;
    uncorrected += e.uncorrected ? e.count : 0;
  }
  PP_ASSIGN_OR_RETURN(s.lost, rows("SELECT event, cpu, sum(records) FROM lost WHERE " + f.lost.sql +
                                       " GROUP BY event, cpu ORDER BY event, cpu",
                                   f.lost));
  if (f.has_batches)
    PP_RETURN_IF_ERROR(add_batches(db, f, path, err, s));
  return s;
}

nlohmann::ordered_json value_json(const SqlValue& v) {
  if (is_null(v))
    return nullptr;
  if (const int64_t* n = std::get_if<int64_t>(&v))
    return *n;
  return as_text(v);
}

nlohmann::ordered_json counts_json(const std::vector<SqlRow>& rows, const char* key) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const SqlRow& r : rows)
    a.push_back({{key, value_json(r[0])}, {"count", as_i64(r[1])}});
  return a;
}

std::string summary_json(const Summary& s) {
  using oj = nlohmann::ordered_json;
  oj sum = oj::object();
  sum["records"] = s.records;
  sum["first_time"] = is_null(s.first) ? oj(nullptr) : oj(wall_or_unknown(s.first));
  sum["last_time"] = is_null(s.last) ? oj(nullptr) : oj(wall_or_unknown(s.last));
  oj events = oj::array();
  for (const SqlRow& r : s.events)
    events.push_back(
        {{"event", value_json(r[0])}, {"tracepoint", value_json(r[1])}, {"count", as_i64(r[2])}});
  sum["events"] = events;
  sum["origins"] = counts_json(s.origins, "origin");
  oj mce = mce::mce_tally_json(s.machine_checks);
  mce["days"] = counts_json(s.days, "day");
  oj ranges = oj::array();
  for (const SqlRow& r : s.ranges) {
    uint64_t start = uint64_t(as_i64(r[0])) << kGiBShift;
    ranges.push_back({{"start", hex_u64(start)},
                      {"end", hex_u64(start + (1ull << kGiBShift) - 1)},
                      {"count", as_i64(r[1])}});
  }
  mce["address_ranges"] = ranges;
  oj pages = oj::array();
  for (const SqlRow& r : s.pages)
    pages.push_back(
        {{"page", hex_u64(uint64_t(as_i64(r[0])) << kPageShift)}, {"count", as_i64(r[1])}});
  mce["pages"] = pages;
  mce["distinct_pages"] = s.distinct_pages;
  sum["mce"] = mce;
  oj dimms = oj::array();
  for (const auto& [name, counts] : s.dimms)
    dimms.push_back({{"dimm", name.empty() ? oj(nullptr) : oj(name)},
                     {"errors", counts.first},
                     {"uncorrected", counts.second}});
  sum["dimms"] = dimms;
  oj lost = oj::array();
  for (const SqlRow& r : s.lost)
    lost.push_back(
        {{"event", value_json(r[0])}, {"cpu", value_json(r[1])}, {"records", as_i64(r[2])}});
  sum["lost"] = lost;
  return dump_json(oj{{"summary", sum}}) + "\n";
}

std::string key_or(const SqlValue& v, std::string_view unknown) {
  if (is_null(v))
    return std::string(unknown);
  if (const int64_t* n = std::get_if<int64_t>(&v))
    return std::to_string(*n);
  return as_text(v);
}

void append_block(std::string& out, std::string_view title, std::string_view column,
                  const std::vector<SqlRow>& rows, std::string_view unknown) {
  if (rows.empty())
    return;
  out += "#\n# ";
  out += title;
  out += "\n#\n#    count  ";
  out += column;
  out += '\n';
  for (const SqlRow& r : rows)
    append_count(out, as_i64(r[1]), key_or(r[0], unknown));
}

std::string summary_text(const Summary& s, const std::string& path) {
  std::string out = "# " + path + ": " + std::to_string(s.records) + " records";
  if (s.records > 0)
    out += ", " + wall_or_unknown(s.first) + " to " + wall_or_unknown(s.last);
  out += '\n';
  if (!s.events.empty()) {
    out += "#\n# records per event\n#\n#    count  event\n";
    for (const SqlRow& r : s.events) {
      std::string name = key_or(r[0], "");
      std::string tp = key_or(r[1], "?");
      std::string label = tp;
      if (!name.empty()) {
        label = name;
        label += " (";
        label += tp;
        label += ')';
      }
      append_count(out, as_i64(r[2]), label);
    }
  }
  append_block(out, "records per origin", "origin", s.origins, "?");
  if (!s.machine_checks.empty()) {
    mce::print_mce_tally_text(s.machine_checks, mce::MceTallyLayout::kBlocks, out);
    append_block(out, "machine checks per day (UTC)", "day", s.days, "unknown");
    if (!s.ranges.empty()) {
      out += "#\n# machine checks per 1 GiB of physical address (MCi_ADDR valid)\n#\n";
      out += "#    count  range\n";
      for (const SqlRow& r : s.ranges) {
        uint64_t start = uint64_t(as_i64(r[0])) << kGiBShift;
        append_count(out, as_i64(r[1]),
                     hex_addr(start) + "-" + hex_addr(start + (1ull << kGiBShift) - 1));
      }
      out += "#\n# the most repeated 4 KiB pages, of " + std::to_string(s.distinct_pages) +
             " with errors\n#\n#    count  page\n";
      for (const SqlRow& r : s.pages)
        append_count(out, as_i64(r[1]), hex_addr(uint64_t(as_i64(r[0])) << kPageShift));
    }
  }
  if (!s.dimms.empty()) {
    out += "#\n# memory errors per DIMM (label, else socket/controller/channel/slot)\n#\n";
    out += "#   errors  uncorrected  dimm\n";
    for (const auto& [name, counts] : s.dimms) {
      append_padded(out, std::to_string(counts.first), 10);
      out += "  ";
      append_padded(out, std::to_string(counts.second), 11);
      out += "  ";
      out += name.empty() ? std::string("unknown") : name;
      out += '\n';
    }
  }
  if (!s.lost.empty()) {
    out += "#\n# samples lost (overwritten before watch read them)\n#\n";
    out += "#  samples  cpu  event\n";
    for (const SqlRow& r : s.lost) {
      append_padded(out, std::to_string(as_i64(r[2])), 10);
      out += "  ";
      append_padded(out, key_or(r[1], "?"), 3);
      out += "  ";
      out += key_or(r[0], "?");
      out += '\n';
    }
  }
  return out;
}

Status write_out(std::ostream& out, std::string& buffer) {
  out.write(buffer.data(), std::streamsize(buffer.size()));
  buffer.clear();
  if (out)
    return ok_status();
  if (errno == EPIPE)
    return errorf(ErrorKind::kOutput, EPIPE,
                  "the reader of the report went away (broken pipe); stopped printing");
  return errorf(ErrorKind::kOutput, EIO, "cannot write the report to its output");
}

}  // namespace

Result<uint64_t> parse_db_time(std::string_view text, uint64_t now_ns) {
  // The history keeps wall-clock times only: perf's seconds are no time here.
  PP_ASSIGN_OR_RETURN(TimeArg time, parse_time_arg(text, now_ns, TraceSeconds::kRefused));
  return time.ns;
}

namespace {

// --faults: every selected record read back, the memory errors among them
// grouped into faults (watch/faults.h).
Result<report::ReportStats> report_faults(sqlite3* raw, sqlite3_stmt* s,
                                          const DbReportOptions& options, const std::string& path,
                                          std::ostream& out, std::ostream& err) {
  report::ReportStats stats;
  std::vector<mce::FaultError> errors;  // not the records: 100 bytes a record, not 3 KiB
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    stats.records++;
    const char* text = reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
    nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(
        text ? std::string_view(text) : std::string_view(), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object()) {
      stats.bad++;
      err << "record " << sqlite3_column_int64(s, 0) << " of " << path
          << " cannot be read back (its stored JSON is not an object); skipped\n";
      continue;
    }
    if (auto e = fault_error_of(parsed))
      errors.push_back(std::move(*e));
  }
  if (rc != SQLITE_DONE)
    return sqlite_error(raw, "reading the records of the history", path);
  std::vector<mce::Fault> faults = faults_of(std::move(errors));
  std::string buffer;
  if (options.json) {
    for (const mce::Fault& f : faults)
      buffer += dump_json(mce::fault_json(f)) + "\n";
  } else {
    mce::print_faults_text(faults, buffer);
  }
  stats.printed = faults.size();
  PP_RETURN_IF_ERROR(write_out(out, buffer));
  out.flush();
  return stats;
}

}  // namespace

namespace {

// The listing: the rows (a statement in wall-time order) and the batches'
// entries merged in the order of ListKey, each printed as --json's line or
// as text. A batch is read when the merge reaches its oldest wall time, its
// entries sorted (a stream's wall times may step back when the watcher
// corrects its clock pair), so that only the batches that overlap in time
// are held at once.
class Listing {
 public:
  Listing(sqlite3* db, const Filters& f, const DbReportOptions& o, const std::string& path,
          std::ostream& out, std::ostream& err)
      : db_(db), f_(f), o_(o), path_(path), out_(out), err_(err) {}

  Status run(sqlite3_stmt* rows) {
    if (f_.has_batches)
      PP_RETURN_IF_ERROR(plan_batches());
    int rc = sqlite3_step(rows);
    for (;;) {
      if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sqlite_error(db_, "reading the records of the history", path_);
      std::optional<ListKey> row;
      if (rc == SQLITE_ROW)
        row = list_key(sqlite3_column_int64(rows, 2), sqlite3_column_int64(rows, 0));
      // Every batch that may hold an entry before the next one known is
      // read (all of them until one is known).
      while (next_ < plan_.size()) {
        std::optional<ListKey> next = row;
        if (!heap_.empty() && (!next || top() < *next))
          next = top();
        if (next && plan_[next_].first > next->wall)
          break;
        PP_RETURN_IF_ERROR(open_batch(plan_[next_++].second));
      }
      if (!row && heap_.empty())
        break;
      if (row && (heap_.empty() || *row < top())) {
        const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(rows, 1));
        PP_RETURN_IF_ERROR(print(text ? std::string_view(text) : std::string_view(),
                                 sqlite3_column_int64(rows, 0)));
        rc = sqlite3_step(rows);
        continue;
      }
      std::pop_heap(heap_.begin(), heap_.end(), later);
      Open& b = *heap_.back();
      const BatchEntry& e = b.entries[b.next++];
      PP_RETURN_IF_ERROR(print(e.json, e.seq));
      if (b.next < b.entries.size())
        std::push_heap(heap_.begin(), heap_.end(), later);
      else
        heap_.pop_back();
    }
    PP_RETURN_IF_ERROR(write_out(out_, buffer_));
    out_.flush();
    return ok_status();
  }

  const report::ReportStats& stats() const { return stats_; }

 private:
  struct Open {
    std::string json;
    std::vector<BatchEntry> entries;
    size_t next = 0;
  };

  // The batches the filters select, by the oldest wall time they may hold.
  Status plan_batches() {
    PP_ASSIGN_OR_RETURN(
        SqliteStmt q,
        sqlite_prepare(db_,
                       "SELECT CASE WHEN walls_unknown > 0 THEN NULL ELSE min_wall_ns END AS "
                       "start, id FROM batches WHERE " +
                           f_.batches.sql + " ORDER BY start, id",
                       path_));
    bind_all(q.get(), f_.batches.params);
    int rc;
    while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
      int64_t start = sqlite3_column_type(q.get(), 0) == SQLITE_NULL
                          ? INT64_MIN
                          : sqlite3_column_int64(q.get(), 0);
      plan_.emplace_back(start, sqlite3_column_int64(q.get(), 1));
    }
    if (rc != SQLITE_DONE)
      return sqlite_error(db_, "reading the batches of", path_);
    PP_ASSIGN_OR_RETURN(fetch_, sqlite_prepare(db_, kReadBatch, path_));
    return ok_status();
  }

  Status open_batch(int64_t id) {
    auto b = std::make_unique<Open>();
    uint64_t bad = 0;
    PP_RETURN_IF_ERROR(read_batch(db_, fetch_.get(), id, f_, path_, err_, bad, b->json, b->entries,
                                  /*lines=*/true));
    stats_.records += bad;
    stats_.bad += bad;
    if (b->entries.empty())
      return ok_status();
    std::stable_sort(b->entries.begin(), b->entries.end(), [](const auto& x, const auto& y) {
      return list_key(x.wall_ns, x.seq) < list_key(y.wall_ns, y.seq);
    });
    heap_.push_back(std::move(b));
    std::push_heap(heap_.begin(), heap_.end(), later);
    return ok_status();
  }

  static ListKey head(const Open& b) {
    const BatchEntry& e = b.entries[b.next];
    return list_key(e.wall_ns, e.seq);
  }
  // The heap's order: the batch whose next entry sorts first on top.
  static bool later(const std::unique_ptr<Open>& a, const std::unique_ptr<Open>& b) {
    return head(*b) < head(*a);
  }
  ListKey top() const { return head(*heap_.front()); }

  Status print(std::string_view json_text, int64_t seq) {
    stats_.records++;
    if (o_.json) {
      buffer_ += json_text;
      buffer_ += '\n';
    } else {
      // Keys in stored order: the fields print in the tracepoint's order.
      nlohmann::ordered_json parsed =
          nlohmann::ordered_json::parse(json_text, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded() || !parsed.is_object()) {
        stats_.bad++;
        err_ << "record " << seq << " of " << path_
             << " cannot be read back (its stored JSON is not an object); skipped\n";
        return ok_status();
      }
      append_text(buffer_, parsed, o_.verbose);
    }
    stats_.printed++;
    if (buffer_.size() >= kFlushSize)
      return write_out(out_, buffer_);
    return ok_status();
  }

  sqlite3* db_;
  const Filters& f_;
  const DbReportOptions& o_;
  const std::string& path_;
  std::ostream& out_;
  std::ostream& err_;
  std::vector<std::pair<int64_t, int64_t>> plan_;  // (oldest wall or INT64_MIN, id)
  size_t next_ = 0;
  SqliteStmt fetch_;
  std::vector<std::unique_ptr<Open>> heap_;
  std::string buffer_;
  report::ReportStats stats_;
};

}  // namespace

Result<report::ReportStats> report_db(const std::string& path, const DbReportOptions& options,
                                      std::ostream& out, std::ostream& err) {
  PP_ASSIGN_OR_RETURN(Filters filters, make_filters(options));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    int e = errno;
    if (e == ENOENT)
      // A missing input file, as a missing perf.data (report -i) or log
      // (decode --log): status 2, not 4 (4 is a missing persistent event).
      return Error(ErrorKind::kRefused, ENOENT,
                   "no history at " + path + ": `perf persistent watch --db " + path +
                       "` makes it (and keeps it)");
    return error_from_errno(e, "reading the history " + path);
  }
  PP_ASSIGN_OR_RETURN(HistoryDb db, open_history_db(path, /*writable=*/false));
  sqlite3* raw = db.db.get();
  filters.has_batches = db.version >= 3;
  if (db.version == 0)
    return Error(ErrorKind::kRefused, ENOENT,
                 path +
                     " holds no history (an empty SQLite database): `perf "
                     "persistent watch --db " +
                     path + "` fills it");
  // One read transaction: the summary's counts agree with each other while
  // the watcher goes on writing.
  PP_RETURN_IF_ERROR(sqlite_exec(raw, "BEGIN", path));
  report::ReportStats stats;
  if (options.actions) {
    uint64_t now = sys::realtime_ns();
    uint64_t since = 0, until = 0;
    if (!options.since.empty()) {
      PP_ASSIGN_OR_RETURN(since, parse_db_time(options.since, now));
    }
    if (!options.until.empty()) {
      PP_ASSIGN_OR_RETURN(until, parse_db_time(options.until, now));
    }
    PP_ASSIGN_OR_RETURN(uint64_t n,
                        report_offline_actions(raw, path, since, until, options.json, out));
    stats.records = stats.printed = n;
    return stats;
  }
  std::string buffer;
  if (options.summary) {
    PP_ASSIGN_OR_RETURN(Summary s, gather(raw, filters, path, err));
    stats.records = uint64_t(s.records);
    stats.bad = s.bad;
    buffer = options.json ? summary_json(s) : summary_text(s, path);
    PP_RETURN_IF_ERROR(write_out(out, buffer));
    out.flush();
    return stats;
  }
  // --faults reads back only what fault_error_of() can take: EDAC's
  // records and machine checks (severity set), never the JSON of the
  // others, which a history of any other tracepoint is made of.
  PP_ASSIGN_OR_RETURN(
      SqliteStmt s,
      sqlite_prepare(raw,
                     "SELECT id, json, wall_ns FROM records WHERE " + filters.records.sql +
                         (options.faults ? " AND (tracepoint = 'ras:mc_event' OR severity IS "
                                           "NOT NULL)"
                                         : "") +
                         " ORDER BY wall_ns, id",
                     path));
  bind_all(s.get(), filters.records.params);
  if (options.faults)  // no batch holds a machine check or EDAC's record
    return report_faults(raw, s.get(), options, path, out, err);
  Listing listing(raw, filters, options, path, out, err);
  PP_RETURN_IF_ERROR(listing.run(s.get()));
  return listing.stats();
}

}  // namespace pp::watch

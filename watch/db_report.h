// `perf persistent report --db FILE`: what `perf persistent watch --db`
// stored (watch/history.h), read-only, while the watcher keeps writing:
// the records in wall-time order, or --summary's counts, the "what did this
// machine's memory do this quarter" that `ras-mc-ctl --summary` answers.
//
//   DbReportOptions o;
//   o.since = "7d";                         // the last seven days
//   o.severities = {MceSeverity::kFatal};   // implies mce_only
//   PP_ASSIGN_OR_RETURN(report::ReportStats s, report_db(path, o, std::cout, std::cerr));
//
// A text line per record, report's layout with the wall-clock time in place
// of the event clock's seconds, the fields as name=value, and where the
// record came from when it is not a live event's:
//
//          kworker/1:2    54 [001] 2026-12-04T03:00:00.000000000Z: mce:mce_record: mcgcap=0x100010a
//          ...
//     <unknown>    - [???] 2026-12-03T23:59:58.000000000Z: mce:mce_record: ... (from pstore)
//
// then, for a machine check, mce::print_mce_text()'s lines indented by
// two spaces. --json prints each record's stored object (record_json), one
// per line, byte for byte as stored. --summary: counts per event; machine
// checks per severity, bank, CPU, socket, error class, UTC day, 1 GiB
// physical address range and 4 KiB page (the most repeated pages); first and
// last time; samples lost per event and CPU (Documentation/
// perf-persistent-report.txt, --db).
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "mce/decode.h"
#include "report/trace_report.h"

namespace pp::watch {

struct DbReportOptions {
  bool json = false, summary = false, mce_only = false;
  // --faults: the memory errors grouped into faults (watch/faults.h), one
  // block (or JSON line) per fault, instead of the records.
  bool faults = false;
  // --actions: page offlining's actions (watch/offline_store.h) instead of
  // the records; --since and --until choose them by time.
  bool actions = false;
  // Text: each harvested record's kernel-log line as read ("raw_line"),
  // on a line of its own; JSON always has it among the fields.
  bool verbose = false;
  // "2026-12-03T14:05:00Z", "2026-12-03" (00:00:00 UTC), or a duration
  // before now: "90m", "24h", "7d" (parse_db_time).
  std::string since, until;
  std::vector<mce::MceSeverity> severities;  // --severity (implies mce_only)
  std::optional<std::vector<int>> cpus;      // -C
  // -e: persistent event names ("mce_record", "persistent/mce_record/") or
  // tracepoints ("mce:mce_record"); empty: all.
  std::vector<std::string> events;
};

// A --since/--until TIME for the history, in ns since the epoch: the one
// grammar of base/time_arg.h less perf's seconds (the history keeps no
// trace clock): an ISO 8601 time, a date alone (that day's 00:00:00 UTC),
// or a duration before `now_ns` ("90m", "24h", "7d"; one further back than
// the epoch means from the start). A usage error shows the forms.
Result<uint64_t> parse_db_time(std::string_view text, uint64_t now_ns);

// Prints the history at `path` (never created: a missing file is a
// not-found error saying that `perf persistent watch --db FILE` makes it).
// ReportStats: records = rows that matched the filters, printed = lines
// printed, bad = stored objects that could not be read back (reported on
// `err`, skipped).
Result<report::ReportStats> report_db(const std::string& path, const DbReportOptions& options,
                                      std::ostream& out, std::ostream& err);

}  // namespace pp::watch

// `perf persistent report`'s engine: tracepoint samples, from a perf.data
// file or straight from persistent events' buffers, decoded by a
// TraceDecoder, filtered, ordered and printed one line per record (text or
// JSON) or counted (--summary). It does not know where records come from:
// report_file() feeds it a perf.data file; record/'s live report feeds it
// what the buffers hold.
//
// A text line, as perf script lays it out, then the event's print format:
//
//   sleep  1234 [001] 18970.883561: sched:sched_switch: prev_comm=sleep prev_pid=1234 ...
//
// and with --json one object per line (Documentation/perf-persistent-report.txt):
//
//   {"time":18970883561123,"cpu":1,"pid":1234,"tid":1234,"comm":"sleep",
//    "event":"sched:sched_switch","fields":{"prev_comm":"sleep","prev_pid":1234,...}}
//
// A record that cannot be decoded (cut short, a __data_loc outside it, an
// unknown common_type) is reported on the error stream with where it lies
// and skipped; the rest are still printed.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "mce/decode.h"
#include "mce/edac.h"
#include "mce/ras_events.h"
#include "mce/tally.h"
#include "report/bytes.h"
#include "report/trace_decoder.h"
#include "sys/clock.h"
#include "sys/perf_abi_sample.h"

namespace pp::report {

// What --sort orders by (sort_keys() names them, in this order).
enum class SortKey { kTime, kCpu, kPid, kTid, kComm, kEvent, kBank, kSeverity };

// What to print.
struct ReportOptions {
  bool json = false;
  bool summary = false;
  bool mce_only = false;                     // --mce: mce:mce_record only (implied by severities)
  std::vector<SortKey> sort;                 // empty: by time
  std::optional<std::vector<int>> cpus;      // -C
  std::string since, until;                  // --since/--until as given (parse_report_time)
  std::vector<mce::MceSeverity> severities;  // --severity (MCE records only)
  // The DIMM labels of the host the records come from (sys/edac.h), for
  // ras:mc_event records that name none; only for a live read.
  std::optional<mce::EdacLabels> edac_labels;
};

// The names of the sort keys --sort takes, in SortKey's order.
std::span<const std::string_view> sort_keys();
// Reads a --sort list ("cpu,time"): a usage error naming a key it does not know.
Result<std::vector<SortKey>> parse_sort_keys(std::string_view text);

// Checks a --severity list ("fatal,srar"): a usage error naming a severity
// the MCE decoder does not have.
Result<std::vector<mce::MceSeverity>> parse_severity_list(std::string_view text);

// mce_record's fields by name into the decoder's registers; a field the
// format does not have stays absent.
mce::MceRegisters mce_registers(const TraceEvent& event, std::span<const uint8_t> raw);

// ras:mc_event's fields by name (mce/edac.h); a field the format does not
// have keeps McEventFields' default.
mce::McEventFields mc_event_fields(const TraceEvent& event, std::span<const uint8_t> raw);

// The fields of a RAS record (mce/ras_events.h) by name: integers as
// numbers, strings as text, arrays as their elements; a char array as its
// bytes whole (a GUID's NULs included), which a text field would cut.
mce::RasFields ras_fields(const TraceEvent& event, std::span<const uint8_t> raw);

// The fields of a record TraceDecoder::check() accepted, as report --json's
// "fields" object (the same rules: integers as numbers, u64 and pointers as
// "0x..." strings, strings as strings, arrays as arrays): watch's records.
nlohmann::ordered_json fields_json(const TraceEvent& event, std::span<const uint8_t> raw);
// The same object's JSON text appended to `out`, written as it is read
// (the streaming writer's layout: what dump_json(fields_json(...)) gives).
void append_fields_json(const TraceEvent& event, std::span<const uint8_t> raw, std::string& out);

// A --since/--until TIME (base/time_arg.h: an ISO 8601 time, a date, a
// duration before `now_wall_ns`, or perf's seconds.fraction) on the
// records' clock. `wall` is how that clock becomes wall-clock time (perf's
// HEADER_CLOCK_DATA, or what a live reader read from the clocks), valid
// only when the events used a clockid; without it only seconds are a time.
Result<uint64_t> parse_report_time(std::string_view text, uint64_t now_wall_ns,
                                   const std::optional<sys::ClockPair>& wall);

// What a report saw.
struct ReportStats {
  uint64_t records = 0;  // tracepoint samples decoded
  uint64_t printed = 0;  // after the filters
  uint64_t bad = 0;      // records that could not be decoded (reported, skipped)
  uint64_t other = 0;    // samples without tracepoint data, side-band records
};

// The error a report that ran ends with: records could not be decoded
// (they were reported one by one and skipped); none when all were.
std::optional<Error> final_error(const ReportStats& stats);

class TraceReport {
 public:
  // `decoder` and the streams must outlive the report. Lines go to `out`,
  // the bad-record messages to `err`.
  TraceReport(const ReportOptions& options, const TraceDecoder& decoder, std::ostream& out,
              std::ostream& err);

  // The wall clock, when the source has one; then resolves --since and
  // --until against it and now (a usage error when one cannot be read).
  Status start(std::optional<sys::ClockPair> wall);

  // A PERF_RECORD_COMM: tid's name from `time` on (records are ordered
  // by time when printed; the name a record shows is the one its thread had
  // then, as perf script shows it).
  void comm(uint32_t tid, uint64_t time, std::string_view name);
  // A PERF_RECORD_FORK: `tid` starts with the name `parent_tid` has at `time`.
  void fork(uint32_t tid, uint32_t parent_tid, uint64_t time);

  // Room for `samples` more samples (what the file says it holds).
  void reserve(size_t samples);

  // A sample that sys::decode_sample() decoded from a record at `offset` of
  // `where` ("perf.data", "persistent/mce/ CPU 2"). Its bytes must stay
  // valid until finish(). A sample with no PERF_SAMPLE_RAW is counted and
  // skipped; one that cannot be decoded is reported and skipped.
  void sample(const sys::Sample& sample, std::string_view where, uint64_t offset);

  // A record at `offset` that could not be read at all: reported, counted.
  void bad_record(std::string_view where, uint64_t offset, const Error& error);
  void other_record() { stats_.other++; }

  // Orders and prints everything added (or the summary), then flushes.
  Status finish();

  const ReportStats& stats() const { return stats_; }

 private:
  struct Entry {
    uint64_t time;
    const TraceEvent* event;
    const uint8_t* raw;  // the tracepoint's record, raw_size bytes
    uint32_t raw_size;
    uint32_t cpu;
    int32_t pid;  // -1 for the idle task's context, as perf shows it
    int32_t tid;
    int32_t mce = -1;   // index into mces_ for a machine check
    int32_t edac = -1;  // index into edacs_ for a ras:mc_event record
    int32_t ras = -1;   // index into rases_ for another RAS record (mce/ras_events.h)
    uint32_t comm = 0;  // index into comms_ of the thread's name then (finish() sets it)

    std::span<const uint8_t> payload() const { return {raw, raw_size}; }
  };
  // --summary's count of one event on one CPU.
  struct Count {
    const TraceEvent* event;
    uint32_t cpu;
    uint64_t count;
  };
  struct Fork {
    uint64_t time;
    uint32_t tid, parent_tid;
  };
  // A thread's names, by the time each took effect.
  using CommHistory = std::vector<std::pair<uint64_t, uint32_t>>;

  bool wanted(const Entry& e) const;
  // order_: entries_'s indices in printing order.
  void sort_entries();
  void sort_by_time();
  void count(const Entry& e);
  void print_text(const Entry& e);
  void print_json(const Entry& e);
  // A machine check's decoding, indented under its line.
  void print_mce_text_of(const Entry& e);
  void print_summary();
  uint32_t intern_comm(std::string_view name);
  // The index in comms_ of tid's name at `time`, 0 when unknown.
  uint32_t comm_at(int32_t tid, uint64_t time);
  void apply_fork(uint32_t tid, uint32_t parent_tid, uint64_t time);
  void flush_if_full();
  void flush();

  const ReportOptions& options_;
  const TraceDecoder& decoder_;
  std::ostream& out_;
  std::ostream& err_;
  std::optional<sys::ClockPair> wall_;
  uint64_t since_ = 0, until_ = UINT64_MAX;
  std::vector<Entry> entries_;
  std::vector<uint32_t> order_;
  std::vector<mce::MceDecoded> mces_;
  // --summary: counts kept as records come (no entries are kept then).
  std::vector<Count> counts_;
  size_t last_count_ = 0;  // the count the previous record went to
  uint64_t shown_ = 0;
  mce::MceTally machine_checks_;
  std::vector<mce::EdacError> edacs_;
  std::vector<mce::RasDecoded> rases_;
  std::vector<Fork> forks_;
  std::vector<std::string> comms_{""};
  std::unordered_map<std::string, uint32_t> comm_index_;
  std::unordered_map<uint32_t, CommHistory> comm_of_tid_;
  // The last thread comm_at() found, and its names.
  uint32_t last_tid_ = UINT32_MAX;
  const CommHistory* last_history_ = nullptr;
  std::string buffer_;
  ReportStats stats_;
};

// Reads perf.data (ours or the real perf record's) at `path` and prints it
// with `options`. The formats come from the file's HEADER_TRACING_DATA.
// Fails before printing anything when the file cannot be read or has no
// tracing data; records it cannot decode are reported on `err` and skipped,
// and the result says how many (ReportStats::bad).
Result<ReportStats> report_file(const std::string& path, const ReportOptions& options,
                                std::ostream& out, std::ostream& err);

}  // namespace pp::report

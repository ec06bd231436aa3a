// watch's metrics for Prometheus, as a file for node_exporter's textfile
// collector (--collector.textfile.directory): the exposition text format,
// rewritten every interval and once more when the watcher stops.
//
//   PrometheusOptions o;
//   o.path = "/var/lib/prometheus/node-exporter/perf-persistent.prom";
//   PP_ASSIGN_OR_RETURN(auto prom, PrometheusFile::open(o));  // the directory is writable
//   prom->add_event("mce_record", {0, 1, 2, 3});   // its series exist at 0 from the start
//   prom->set_broker_up(true);
//   ... prom->record(r, j); prom->lost(n); prom->tick(now_ms, false); ...
//   prom->tick(now_ms, true);                       // watch_up 0, written at once
//
// The file holds (Documentation/perf-persistent-watch.txt, PROMETHEUS, says
// what each means):
//
//   # HELP perf_persistent_records_total ...
//   # TYPE perf_persistent_records_total counter
//   perf_persistent_records_total{event="mce_record",cpu="0"} 0
//   perf_persistent_samples_lost_total{event,cpu}
//   perf_persistent_machine_checks_total{mce_severity,bank,error_class,cpu,origin}
//   perf_persistent_machine_checks_by_severity_total{mce_severity}   every severity, from 0
//   perf_persistent_memory_errors_total{dimm,type}   EDAC's ras:mc_event records
//   perf_persistent_aer_errors_total{device,aer_severity}   ras:aer_event
//   perf_persistent_memory_failures_total{page_type,result}  ras:memory_failure_event
//   perf_persistent_arm_errors_total{severity}       ras:arm_event
//   perf_persistent_vendor_errors_total{section_type,severity}  ras:non_standard_event
//   perf_persistent_extlog_memory_errors_total{error_type,severity}  ras:extlog_mem_event
//   perf_persistent_cxl_events_total{memdev,event,severity}  cxl:*
//   perf_persistent_page_offline_total{action,result}  page offlining's actions
//   perf_persistent_last_record_timestamp_seconds{event}
//   perf_persistent_last_machine_check_timestamp_seconds{mce_severity}
//   perf_persistent_broker_up, perf_persistent_watch_up,
//   perf_persistent_watch_start_time_seconds, perf_persistent_build_info{version,commit}
//
// With a history, the counters start from what it holds (seed()): its
// records, machine checks, lost samples, EDAC's records and the other RAS
// records (the six families above, by the labels their decoding gives;
// those retention deleted are not counted again). A restart
// changes none, and the records it holds are never counted twice.
//
// Families in that order, series sorted by their labels' values (numbers as
// numbers), so the same counts always give the same text. The file is
// replaced atomically by sys::write_file_atomically(): written as a hidden
// temporary in the same directory (the collector reads only *.prom),
// renamed over <name>; mode 0644. Not fsynced: the file is rewritten every
// interval and from the start, so a crash can only cost one interval.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "watch/history.h"
#include "watch/record.h"

namespace pp::watch {

struct PrometheusOptions {
  std::string path;  // the .prom file
  uint64_t interval_ms = 10000;
  // perf_persistent_watch_start_time_seconds, ns since the epoch; 0: now.
  uint64_t start_wall_ns = 0;
  // perf_persistent_build_info's labels; "": this program's (build_info.h).
  std::string version, commit;
};

class PrometheusFile final : public Sink {
 public:
  // Checks that `path` ends in .prom and that its directory takes a new file
  // now (may write there, by the effective ids): a usage error or a
  // refusal naming the directory otherwise. Writes nothing yet.
  static Result<std::unique_ptr<PrometheusFile>> open(const PrometheusOptions& options);

  // A page offlining action (watch/offline.h): the counter
  // perf_persistent_page_offline_total{action,result}.
  void count_offline_action(const std::string& action, const std::string& result, uint64_t n = 1) {
    offlining_[{action, result}] += n;
  }
  // Whether the broker answers (perf_persistent_broker_up); the watcher says.
  void set_broker_up(bool up) { broker_up_ = up; }
  // A reload's new interval, from the next write on.
  void set_interval_ms(uint64_t ms) { options_.interval_ms = ms ? ms : 1; }
  // An event being watched on `cpus`: its records and lost samples get a
  // series at 0 on each, so an alert on them never meets an absent series.
  void add_event(const std::string& event, const std::vector<int>& cpus);

  // Starts the counters and the last-time gauges from what the history
  // holds (History::totals()), before any record: a watch that restarts
  // over its history writes the counts it wrote before, and a record the
  // history has is never fed (nor counted) again.
  void seed(const HistoryTotals& totals);

  Status record(const WatchRecord& record, const nlohmann::ordered_json& json) override;
  // Counts from the record alone: the object is never made.
  Status take(const WatchRecord& record, const RecordJson& json) override;
  Status lost(const LostNotice& notice) override;
  // Writes the file at the first tick, then every interval_ms, and at
  // `final` (with perf_persistent_watch_up 0). A failure to write is an
  // ErrorKind::kOutput error naming the file; the next tick tries again.
  Status tick(uint64_t now_ms, bool final) override;

  // The file's text as it would be written now (for tests).
  std::string text() const;

 private:
  explicit PrometheusFile(const PrometheusOptions& options);
  Status write_file() const;
  // One record into the counters; `fields` is its object's "fields" (null:
  // none looked at, which only EDAC's records need).
  void count(const WatchRecord& record, const nlohmann::ordered_json* fields);
  // Another RAS record's decoding (mce/ras_events.h: its "ras" object),
  // `times` times, in its source's family.
  void count_ras(std::string_view source, const nlohmann::ordered_json& ras, uint64_t times);
  // An ras:mc_event record's fields, `times` times.
  void count_memory_errors(const nlohmann::ordered_json& fields, uint64_t times);

  // A series' label values in the family's label order; sorted with digits
  // compared as numbers.
  struct LabelsLess {
    bool operator()(const std::vector<std::string>& a, const std::vector<std::string>& b) const;
  };
  using Series = std::map<std::vector<std::string>, uint64_t, LabelsLess>;

  PrometheusOptions options_;
  Series records_;                     // event, cpu
  Series lost_;                        // event, cpu
  Series machine_checks_;              // severity, bank, error_class, cpu, origin
  Series by_severity_;                 // severity
  Series memory_errors_;               // dimm, type
  std::map<std::string, Series> ras_;  // the other RAS records, by source (prometheus.cpp)
  Series offlining_;                   // action, result
  Series last_record_ns_;              // event
  Series last_mce_ns_;                 // severity
  bool broker_up_ = false;
  bool watch_up_ = true;
  bool written_ = false;
  uint64_t last_write_ms_ = 0;
};

// `value` as a label value in the exposition format: \ " and newline escaped.
std::string escape_label_value(std::string_view value);

}  // namespace pp::watch

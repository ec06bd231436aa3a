// What `perf persistent top` shows, kept and rendered: fed the records of
// persistent events' buffers (by top's session), it counts per event and
// CPU, closes an interval at each refresh (rates), and for the events shown
// in detail keeps the tables of their kind:
//
//   tracepoints       the most frequent values of the sort keys (-s)
//   mce:mce_record    machine checks counted (mce/tally.h: per severity,
//                     bank, CPU, socket and error class), and the last ten
//                     records decoded, newest first
//   the other RAS tracepoints (mce/ras_events.h: ras:aer_event...)
//                     a tracepoint's table, and the last ten records
//                     decoded, newest first
//   IP samples        the hottest symbols (through a SymbolSource)
//
// The same content renders as text lines (the screen and --stdio) and as
// one JSON object (--json, Documentation/perf-persistent-top.txt). Nothing
// here reads the kernel or a file: the session does, and hands records in.
//
//   TopModel model(events, decoder, &symbols);
//   model.records(0, cpu, span);   // as drained
//   model.refresh(now_ns);         // every -d seconds
//   for (const TopLine& l : model.render(view)) ...
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "filter/expression.h"
#include "mce/decode.h"
#include "mce/ras_events.h"
#include "mce/tally.h"
#include "report/trace_decoder.h"
#include "sys/perf_abi_sample.h"
#include "sys/perf_attr.h"
#include "top/symbols.h"

namespace pp::top {

enum class TopKind {
  kCount,       // counted only (no raw data, no instruction pointer)
  kTracepoint,  // top values of fields
  kMce,         // mce:mce_record
  kSymbols,     // samples with an instruction pointer
};

// "count", "tracepoint", "mce", "symbols".
std::string_view top_kind_name(TopKind kind);

// One event top reads.
struct TopEvent {
  std::string text;  // "persistent/ctxsw/"
  std::string name;  // "sched:sched_switch"
  uint64_t id = 0;
  sys::EventAttr attr;
  TopKind kind = TopKind::kCount;
  std::vector<int> cpus;
  uint64_t buffer_bytes = 0;  // per CPU
};

// The kind of view an event's attr calls for: kMce for mce:mce_record,
// kTracepoint for other tracepoints (when `tracepoints` decode), kSymbols
// for samples with PERF_SAMPLE_IP, kCount otherwise.
TopKind top_kind_for(const sys::EventAttr& attr, std::string_view name);

// What to show.
struct TopView {
  bool overview = false;        // one row per event
  std::optional<size_t> event;  // the one event shown in detail; nullopt: every event
  size_t rows = 10;             // rows of each table
  bool per_cpu = false;         // the overview's rows per CPU
  size_t width = 0;             // 0: no limit (text lines are cut to it)
};

struct TopLine {
  std::string text;
  bool heading = false;
  bool highlight = false;  // an uncorrected or fatal machine check
};

inline constexpr size_t kTopLastMce = 10;

class TopModel {
 public:
  // `decoder` (may be null when no event is a tracepoint) and `symbols`
  // (may be null: symbols are "[unknown]") must outlive the model.
  TopModel(std::vector<TopEvent> events, const report::TraceDecoder* decoder,
           SymbolSource* symbols);

  const std::vector<TopEvent>& events() const { return events_; }

  // Which events keep their tables (the rest are only counted): all of them
  // by default. The overview keeps one event's at a time (`event`), or none
  // (nullopt).
  void set_detailed(std::optional<size_t> event);

  // -s: fields (or top's own keys: pid, tid, cpu, comm) that group the
  // tracepoint tables. An
  // event that has none of them keeps its own default. A usage error names
  // a key no tracepoint event shown has, with the keys they have. The
  // tables start again: counts are from the time the keys were set.
  Status set_sort(std::string_view keys);
  std::string sort_text(size_t event) const;

  // --filter and `f`: which samples the tables count (totals and rates
  // count everything), an expression of filter/expression.h over the fields
  // of the events shown (their formats' fields) and top's own: pid, tid,
  // cpu, comm for every sample; sym, dso, ip for sampled addresses; for
  // machine checks, as watch's records have them and before the format's
  // fields: the registers (hex), severity and kernel_severity (ranked),
  // bank, error_class (and its alias class), status_bits. An empty text
  // clears it. A field that no event shown has is a usage error naming
  // those they have; `what` names the text's origin in an error. The
  // tables start again.
  Status set_filter(std::string_view text, std::string_view what = "--filter");
  const filter::Expression& filter() const { return filter_; }

  // Where "comm" comes from (the session reads /proc); default: nothing.
  void set_comm_source(std::function<std::string(int32_t pid)> comm) { comm_ = std::move(comm); }

  // Whole records of one CPU's buffer of `event`, back to back as drained.
  void records(size_t event, int cpu, std::span<const uint8_t> records);
  // `count` records of `event` on `cpu` were overwritten before top read them.
  void lost(size_t event, int cpu, uint64_t count);
  // How full a CPU's buffer is (0..1), and how many readers an event has,
  // as the session last saw them.
  void set_fill(size_t event, int cpu, double fill);
  void set_readers(size_t event, std::optional<int> readers);
  // The event was killed: its buffers get nothing more.
  void set_gone(size_t event);
  // The counts (totals, losses, rates, fill, readers) of the events of
  // `old` with the same ids: top opens its events again when they change.
  void adopt_counts(const TopModel& old);

  // Ends an interval: rates are what came since the last refresh.
  void refresh(uint64_t now_ns);
  // `z`: every count, table and rate from zero.
  void zero();

  std::vector<TopLine> render(const TopView& view) const;
  // `time` (the wall clock, as the session shows it) goes first when given.
  nlohmann::ordered_json json(const TopView& view, const std::string& time = {}) const;

  // For tests and the status line.
  uint64_t total(size_t event) const;
  uint64_t lost_total(size_t event) const;
  uint64_t undecodable(size_t event) const;

 private:
  struct Cpu {
    int cpu = 0;
    uint64_t total = 0, interval = 0, lost = 0;
    double rate = 0, fill = 0;
  };
  struct Symbol {
    SymbolHit hit;
    uint64_t count = 0;
  };
  struct Mce {
    uint64_t time = 0;
    int cpu = 0;
    mce::MceDecoded decoded;
  };
  struct Ras {  // another RAS record (mce/ras_events.h), decoded
    uint64_t time = 0;
    int cpu = 0;
    mce::RasDecoded decoded;
  };
  struct State {
    std::vector<Cpu> cpus;
    std::optional<int> readers;
    bool gone = false;
    bool detailed = true;
    std::vector<std::string> keys;  // tracepoints: the table's keys
    std::unordered_map<std::string, uint64_t> values;
    std::unordered_map<std::string, Symbol> symbols;
    mce::MceTally machine_checks;  // mce:mce_record: the counts
    std::deque<Mce> last;
    std::deque<Ras> last_ras;  // a RAS tracepoint's last records, newest first
    uint64_t counted = 0;      // samples the tables counted (after the filter)
    uint64_t filtered = 0;     // samples the filter left out
    uint64_t bad = 0;          // samples that could not be decoded
  };

  Cpu& cpu_state(State& state, int cpu);
  void sample(size_t event, State& state, int cpu, std::span<const uint8_t> record);
  std::optional<filter::Value> value_of(const TopEvent& event, const sys::Sample& sample,
                                        const report::TraceEvent* trace, const SymbolHit* symbol,
                                        const mce::MceDecoded* mce, std::string_view key) const;
  std::vector<std::string> default_keys(const TopEvent& event) const;
  const report::TraceEvent* trace_event(const TopEvent& event) const;
  void clear_tables(State& state);
  void render_event(size_t event, const TopView& view, std::vector<TopLine>& out) const;
  nlohmann::ordered_json event_json(size_t event, const TopView& view, bool detail) const;

  std::vector<TopEvent> events_;
  std::vector<State> states_;
  const report::TraceDecoder* decoder_;
  SymbolSource* symbols_;
  filter::Expression filter_;
  std::vector<std::string> sort_;
  std::function<std::string(int32_t)> comm_;
  uint64_t last_refresh_ns_ = 0;
  uint64_t since_ns_ = 0;  // attach or the last zero()
  double interval_s_ = 0;
};

}  // namespace pp::top

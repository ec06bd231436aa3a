// `perf persistent watch`'s unit of work: one decoded record, wherever it
// came from (a persistent event's buffer, this boot's kernel log, a previous
// boot's panic text in pstore), as every sink sees it: the history, the
// triggers, the Prometheus file, the journal and --ndjson.
//
//   WatchRecord r;                 // filled by the watcher or the harvest
//   nlohmann::ordered_json j = record_json(r);
//   // {"origin":"live","event":"mce_record","tracepoint":"mce:mce_record",
//   //  "time":18970883561123,"wall_time":"2026-12-04T03:00:00.000000000Z",
//   //  "cpu":1,"pid":0,"tid":0,"fields":{...},"mce":{...decode's object...},
//   //  "key":"..."}
//   // A RAS record other than a machine check has "ras" where "mce" is
//   // (mce/ras_events.h: {"source":"aer","severity":"uncorrected",...}).
//   const nlohmann::ordered_json* v = record_field(j, "severity");  // mce's first
//
// The object is report --json's line (Documentation/perf-persistent-report.txt)
// with "origin", the persistent event's name and the identity key added;
// Documentation/perf-persistent-watch.txt documents it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "mce/decode.h"
#include "mce/ras_events.h"

namespace pp::report {
struct TraceEvent;
}

namespace pp::watch {

// Where a record came from.
enum class Origin {
  kLive,    // a persistent event's buffer
  kKmsg,    // this boot's kernel log (/dev/kmsg), logged before the watcher read
  kPstore,  // a previous boot's kernel log kept in pstore (a panic's last words)
  kErst,    // a previous boot's machine check the kernel wrote to ERST (pstore mce-erst-*)
  // A previous boot's trace buffer, kept by the broker from a boot-mapped
  // ftrace instance (persistent/previous_boot.h): mce_record and ras:* records.
  kPreviousBoot,
};
// "live", "kmsg", "pstore", "erst", "previous-boot".
std::string_view origin_name(Origin origin);
// A record a previous boot left (pstore's text, ERST, its trace buffer): it
// has no boot id of this boot's, and no stream to resume.
inline bool from_previous_boot(Origin origin) {
  return origin == Origin::kPstore || origin == Origin::kErst || origin == Origin::kPreviousBoot;
}

struct WatchRecord {
  Origin origin = Origin::kLive;
  std::string event;       // the persistent event's name ("mce_record"); "" when harvested
  std::string tracepoint;  // "mce:mce_record"
  uint64_t time = 0;       // the sample's time on the event's clock; 0 when harvested
  uint64_t wall_ns = 0;    // when it happened, ns since the epoch; 0 when unknown
  int32_t cpu = -1;        // -1 when unknown
  int32_t pid = -1, tid = -1;
  std::string comm;
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();  // the tracepoint's
  std::optional<mce::MceDecoded> mce;                                // a machine check's decoding
  // Another RAS record's decoding (mce/ras_events.h: AER, memory failure,
  // ARM, vendor CPER, eMCA, CXL), made from the payload when it was read:
  // the stored fields cannot give a GUID or a raw section back whole.
  std::optional<mce::RasDecoded> ras;
  // Its place among the samples of its buffer (event and CPU) with the same
  // time: 0 for the first, 1 for the next... A clock coarser than a record
  // gives two records one time; the key and the resume point tell them
  // apart by this. 0 for harvested records.
  uint32_t ordinal = 0;
  // The record's identity: two records with the same key are the same
  // record (seen again after a restart, or in both kmsg and pstore) and are
  // stored once. Never empty once made by the watcher or the harvest.
  std::string key;
};

// The documented object (above).
nlohmann::ordered_json record_json(const WatchRecord& record);

// `value` in decimal, as the record's text writes a number, at the end of
// `out`.
void append_decimal(std::string& out, uint64_t value);

// The key of a live record that is not a machine check: its stream (boot,
// event, CPU) and time, then ":<ordinal>" for a sample after the first of
// its time ("live:6c1f...:sched_switch:1:18970883561123"). Appended to `out`.
void append_stream_key(std::string& out, std::string_view boot_id, std::string_view event,
                       int32_t cpu, uint64_t time, uint32_t ordinal);
// Its part before the time: "live:<boot id>:<event>:<cpu>:".
void append_stream_key_prefix(std::string& out, std::string_view boot_id, std::string_view event,
                              int32_t cpu);

// What RecordJson::text() writes of a record before "pid" and after
// "fields" (or "ras"): its head, `{"origin":...,"cpu":N` (the members
// record_json() writes first, each when it does), and its tail, `,"key":K}`.
// The history leaves both out of a batch's entries and report --db puts them
// back from the batch's columns (watch/history.h, batches), with these.
void append_record_head(std::string& out, Origin origin, std::string_view event,
                        std::string_view tracepoint, uint64_t time, uint64_t wall_ns, int32_t cpu);
void append_record_tail(std::string& out, std::string_view key);

// A record's object, made once and only when a sink asks: its text (what
// the history stores and --ndjson prints) and its tree (what triggers and
// the journal look into). For a live record that is not a machine check,
// the text is written by the streaming writer straight from the
// tracepoint's payload, with no tree built at all; otherwise it is
// dump_json(tree()). Either way text() == dump_json(record_json(record))
// byte for byte. Holds references: it lives while the sinks are fed, on
// one thread.
//
//   RecordJson json(r, *te, sample.raw);  // r.fields left empty
//   history.take(r, json);                // json.text(): no tree
//   triggers.take(r, json);               // json.tree(): made now, once
class RecordJson {
 public:
  // The object of `record`, its "fields" being record.fields.
  explicit RecordJson(const WatchRecord& record) : record_(record) {}
  // The object of a live record whose "fields" `event` decodes from `raw`
  // (a payload TraceDecoder::check() accepted); record.fields is not read.
  RecordJson(const WatchRecord& record, const report::TraceEvent& event,
             std::span<const uint8_t> raw)
      : record_(record), event_(&event), raw_(raw) {}
  RecordJson(const RecordJson&) = delete;
  RecordJson& operator=(const RecordJson&) = delete;

  const std::string& text() const;
  const nlohmann::ordered_json& tree() const;
  // Whether the streaming writer makes the text (a live record's payload
  // given; not a machine check, another RAS record or a harvested one):
  // then it has a body (below).
  bool has_body() const { return event_ && !record_.mce && !record_.ras; }
  // The part of text() between its head and its tail (above:
  // `,"pid":P,"tid":T,"comm":C,"fields":{...}`), appended to `out`: taken
  // from text() when that was made, else written straight from the
  // payload. Only when has_body().
  void append_body(std::string& out) const;

 private:
  // Writes the body (above) to `out`, from the payload.
  void write_body(std::string& out) const;

  const WatchRecord& record_;
  const report::TraceEvent* event_ = nullptr;
  std::span<const uint8_t> raw_;
  mutable std::optional<std::string> text_;
  // Where text_'s body starts and ends, once text_ is made by the streaming
  // writer (both 0 otherwise).
  mutable size_t body_begin_ = 0, body_end_ = 0;
  mutable std::optional<nlohmann::ordered_json> tree_;
};

// A field of a record's object by name, as triggers and --match name them:
// the machine check's decoding first ("severity", "bank", "error_class",
// "status", "addr"), then a RAS record's ("severity", "aer_severity",
// "device", "status_bits", "page_type", "result"), then the tracepoint's
// fields ("prev_comm"), then the
// record's own ("cpu", "pid", "event", "tracepoint", "origin"). nullptr when
// none has it.
const nlohmann::ordered_json* record_field(const nlohmann::ordered_json& record,
                                           std::string_view name);

// A scalar of a record's object as text, as keys, --match and the
// environment of a trigger's command show it: a string as is, a number in
// decimal (a fraction as JSON writes it), a bool as true/false; "" for
// null, arrays and objects.
std::string json_scalar_text(const nlohmann::ordered_json& value);

// Samples a buffer lost (overwritten before the watcher read them).
struct LostNotice {
  std::string event;  // the persistent event's name
  int32_t cpu = -1;
  uint64_t records = 0;
  uint64_t wall_ns = 0;  // when the loss was seen
};

// What the watcher feeds. Each sink keeps its own state; the watcher calls
// them in order, from one thread, and never concurrently.
class Sink {
 public:
  virtual ~Sink() = default;
  // A record, decoded. An error here stops the watcher only when the sink
  // says it is fatal (history that cannot be written); others are logged.
  virtual Status record(const WatchRecord& record, const nlohmann::ordered_json& json) = 0;
  // What the watcher calls: the record with its object made on demand. The
  // default asks for the tree and calls record(); a sink that needs only
  // the text, or nothing of the object, overrides it and spares the tree.
  virtual Status take(const WatchRecord& record, const RecordJson& json) {
    return this->record(record, json.tree());
  }
  virtual Status lost(const LostNotice& notice) = 0;
  // Called at least every second, and once more before the watcher exits
  // (`final`): commit, write the file, reap children. `now_ms` is
  // sys::monotonic_ms().
  virtual Status tick(uint64_t now_ms, bool final) = 0;
};

}  // namespace pp::watch

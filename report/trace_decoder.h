// Tracepoint records decoded with libtraceevent: the formats come from
// HEADER_TRACING_DATA (a perf.data file's, or one built from the live
// tracefs by build_tracing_data()), libtraceevent's plugins are loaded, and
// each event's fields are looked up by name, so that a field a newer kernel
// added (mce_record's ppin, microcode) is there when its format has it and
// simply absent otherwise.
//
// A PERF_SAMPLE_RAW payload is the tracepoint's record as its format file
// lays it out:
//
//   field:unsigned short common_type;  offset:0;  size:2;  signed:0;
//   field:unsigned char common_flags;  offset:2;  size:1;  signed:0;
//   ...
//   field:__u64 status;                offset:16; size:8;  signed:0;
//   field:__data_loc char[] name;      offset:24; size:4;  signed:0;  (u16 offset, u16 length)
//
// Two renderings: the event's own print format as perf script shows it
// (print_fmt(): print functions libtraceevent does not know give the raw
// fields instead, never an error), and the fields one by one (for_each_field,
// JSON and the raw text), without any allocation per record.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "report/print_format.h"
#include "report/tracing_data.h"

struct tep_handle;
struct tep_event;
struct tep_format_field;
struct trace_seq;

namespace pp::report {

// How a field's bytes read.
enum class FieldKind {
  kUnsigned,   // an integer of 1, 2, 4 or 8 bytes
  kSigned,     // the same, signed
  kPointer,    // a kernel address (shown in hex)
  kString,     // char[N]: up to the first NUL
  kDynString,  // __data_loc char[]: u16 offset, u16 length; the text up to its NUL
  kArray,      // any other fixed array: elements of elementsize bytes
  kDynArray,   // __data_loc of anything else
};

struct TraceField {
  std::string name;
  FieldKind kind = FieldKind::kUnsigned;
  uint32_t offset = 0;
  uint32_t size = 0;          // bytes in the record (4 for __data_loc)
  uint32_t element_size = 0;  // arrays
  bool relative = false;      // __rel_loc: offsets from the end of the field
  std::string json_key;       // the name as a JSON key, written once: "\"prev_pid\":"
  tep_format_field* tep = nullptr;
};

// A field's value in one record.
struct FieldValue {
  FieldKind kind = FieldKind::kUnsigned;
  uint64_t number = 0;           // integers and pointers (signed: sign-extended)
  std::string_view text;         // strings, without the NUL
  std::span<const uint8_t> raw;  // arrays
  uint32_t element_size = 0;
};

// One event of the tracing data, resolved once.
struct TraceEvent {
  int id = 0;
  std::string name;                // "sched:sched_switch"
  std::string json_name;           // the name as a JSON string: "\"sched:sched_switch\""
  std::vector<TraceField> fields;  // the event's own, in format order (common_* left out)
  uint32_t min_size = 0;           // bytes the fixed part of the record needs
  bool print_ok = true;            // libtraceevent parsed the print format
  // No plugin handler prints it (a handler may look at the CPU or at other
  // records, and is libtraceevent's to run).
  bool pure_print = true;
  // The print format compiled (report/print_format.h), when it compiles;
  // else `print_note` says why and libtraceevent prints it.
  std::optional<PrintFormat> print_format;
  std::string print_note;
  // The counts of its __print_hex() and __print_array() arrays, checked on
  // each record before libtraceevent prints it (a record that fails prints
  // its fields raw).
  ArrayBounds array_bounds;
  bool is_mce = false;                   // mce:mce_record
  bool is_ras = false;                   // another RAS tracepoint (mce::is_ras_event())
  std::vector<uint16_t> dynamic_fields;  // indices of the __data_loc fields
  tep_event* tep = nullptr;

  const TraceField* field(std::string_view name) const;
};

class TraceDecoder {
 public:
  // Parses every format in `data`, loads libtraceevent's plugins (unless
  // `plugins` is false: tests pin the output of the formats alone) and the
  // saved command lines. A format libtraceevent cannot parse is left out,
  // with a line in warnings(); so are the data's printk formats. A print
  // format the decoder does not trust libtraceevent with (report/
  // format_bounds.h, check_print_subscripts(), ArrayBounds) is not used:
  // the event's records print their fields raw, with its reason as the
  // print note and a line in warnings(). Before this decoder's handle
  // parses any format, a throwaway child parses them all
  // (report/format_probe.h), and the handle parses only what parsed there
  // with no error: a print format libtraceevent crashed on (or did not
  // finish within its time) is refused the same way, the reason saying how
  // it died; one it failed on is parsed without its print format, as one
  // libtraceevent cannot parse. The formats of the running kernel (top,
  // watch, report -e) are probed as a file's are: libtraceevent's bugs on
  // a newer kernel's formats are no less fatal than a crafted file. When no
  // child can be forked, the formats are parsed here, unprobed, with a
  // line in warnings().
  static Result<std::unique_ptr<TraceDecoder>> create(const TracingData& data, bool plugins = true);
  ~TraceDecoder();
  TraceDecoder(const TraceDecoder&) = delete;
  TraceDecoder& operator=(const TraceDecoder&) = delete;

  // The event with tracepoint id `id`, or nullptr.
  const TraceEvent* event(uint64_t id) const;
  // The event `raw` is a record of (its common_type), or nullptr.
  const TraceEvent* event_of(std::span<const uint8_t> raw) const;
  const std::vector<std::unique_ptr<TraceEvent>>& events() const { return events_; }

  // EINVAL, saying what is short, when `raw` cannot hold `event`'s fixed
  // fields or a __data_loc points outside it.
  Status check(const TraceEvent& event, std::span<const uint8_t> raw) const;

  // A field's value in a record check() accepted.
  static FieldValue value(const TraceField& field, std::span<const uint8_t> raw);
  // A numeric field by name, when the event has it and it is an integer.
  static std::optional<uint64_t> number(const TraceEvent& event, std::span<const uint8_t> raw,
                                        std::string_view name);
  // common_pid of the record (every tracepoint has it), or -1.
  int32_t common_pid(std::span<const uint8_t> raw) const;

  // Appends the print-format rendering of a record check() accepted to
  // `out`, as perf script shows it; "name=value" for each field when the
  // print format is one libtraceevent could not parse, or when
  // libtraceevent would read past the record (an array printed by a count
  // past its end, a __data_loc string with no NUL before the record's
  // end, whichever branch of the print format prints it). The compiled
  // format when there is one, else libtraceevent's printer: both make the
  // same decision on every record.
  void print_fmt(const TraceEvent& event, std::span<const uint8_t> raw, int cpu,
                 std::string& out) const;
  // The same, always through libtraceevent: what the compiled formats are
  // compared with.
  void print_fmt_libtraceevent(const TraceEvent& event, std::span<const uint8_t> raw, int cpu,
                               std::string& out) const;

  // The command name the tracing data's saved_cmdlines give `pid`, or "".
  std::string_view saved_comm(int32_t pid) const;

  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  TraceDecoder();

  tep_handle* tep_ = nullptr;
  void* plugins_ = nullptr;  // tep_plugin_list*
  trace_seq* seq_ = nullptr;
  std::vector<std::unique_ptr<TraceEvent>> events_;
  std::vector<TraceEvent*> by_id_;  // indexed by id (ids are small)
  std::vector<std::pair<int32_t, std::string>> cmdlines_;
  std::vector<std::string> warnings_;
  uint32_t common_type_offset_ = 0, common_type_size_ = 2;
  int common_pid_offset_ = -1;
};

// Appends "name=value" for every field of `event` in `raw`, separated by
// spaces: the raw rendering.
void append_raw_fields(const TraceEvent& event, std::span<const uint8_t> raw, std::string& out);

}  // namespace pp::report

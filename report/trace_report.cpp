// Why one file of ~850 lines: TraceReport's steps (intake of samples and
// comm/fork records, filters, order, the text and JSON lines, the summary)
// all work on its Entry list, its comm table and one output buffer flushed
// in pieces, which a split would move into the header for no second user.
// Read it in that order. The seams when it grows: the option parsers at the
// top (--time, --sort, --severity, wall time: ~190 lines) and the summary
// (print_summary(), ~130 lines), which is a counts model of its own.
#include "report/trace_report.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <iterator>
#include <tuple>

#include "base/json.h"
#include "base/strings.h"
#include "base/terminal.h"
#include "base/time_arg.h"
#include "base/wall_time.h"
#include "mce/tally.h"
#include "report/perf_data_reader.h"
#include "report/time_order.h"

namespace pp::report {
namespace {

using namespace std::string_view_literals;

constexpr std::string_view kSortKeys[] = {"time", "cpu",   "pid",  "tid",
                                          "comm", "event", "bank", "severity"};
static_assert(std::size(kSortKeys) == size_t(SortKey::kSeverity) + 1);
constexpr std::string_view kEdacEvent = "ras:mc_event";
// Output is handed to the stream in pieces of about this size.
constexpr size_t kFlushSize = 1 << 20;
// The longest line that is not a machine check's, about: the buffer is
// reserved with this much room past kFlushSize, so it never grows.
constexpr size_t kLineRoom = 1 << 16;

void append_u64(std::string& out, uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;
  out.append(buf, size_t(end - buf));
}

// `v` right-aligned in `width` columns, zero-padded when `zero`.
void append_padded(std::string& out, uint64_t v, size_t width, char pad) {
  // Digits written from the right into a buffer filled with `pad`: one
  // append for the whole padded number.
  char buf[32];
  char* end = buf + sizeof(buf);
  char* at = end;
  do {
    *--at = char('0' + v % 10);
    v /= 10;
  } while (v);
  size_t n = size_t(end - at);
  if (n < width && width <= sizeof(buf)) {
    std::memset(end - width, pad, width - n);
    at = end - width;
  }
  out.append(at, size_t(end - at));
}

// perf script's seconds.microseconds.
void append_perf_time(std::string& out, uint64_t ns) {
  append_padded(out, ns / 1000000000, 5, ' ');
  out += '.';
  append_padded(out, ns % 1000000000 / 1000, 6, '0');
}

// A field's value in JSON: integers as numbers, except u64 and pointers,
// which are registers, masks and addresses more often than counts: those are
// "0x..." strings (jq keeps 53 bits of a number). Strings as strings, arrays
// as arrays of the same; an array of elements wider than a u64 (a guid_t,
// a struct) as its bytes. One rendering for both writers: the streaming
// JsonWriter (the report's hot path, no allocation) and JsonValueOut below.
template <typename Out>
void render_field(Out& w, const TraceField& f, std::span<const uint8_t> raw) {
  FieldValue v = TraceDecoder::value(f, raw);
  switch (v.kind) {
    case FieldKind::kUnsigned:
      if (f.size == 8)
        w.hex(v.number);
      else
        w.number(v.number);
      break;
    case FieldKind::kSigned:
      w.signed_number(int64_t(v.number));
      break;
    case FieldKind::kPointer:
      w.hex(v.number);
      break;
    case FieldKind::kString:
    case FieldKind::kDynString:
      w.string(v.text);
      break;
    case FieldKind::kArray:
    case FieldKind::kDynArray: {
      w.begin_array();
      uint32_t es = v.element_size && v.element_size <= 8 ? v.element_size : 1;
      for (size_t i = 0; i + es <= v.raw.size(); i += es) {
        uint64_t x = 0;
        std::memcpy(&x, v.raw.data() + i, es);  // little-endian hosts only, as perf.data
        if (es == 8)
          w.hex(x);
        else
          w.number(x);
      }
      w.end_array();
      break;
    }
  }
}

// render_field()'s JsonWriter calls straight into a string: the value's
// JSON text, as the writer would lay it out, with no writer state.
class JsonTextOut {
 public:
  explicit JsonTextOut(std::string& out) : out_(out) {}
  void hex(uint64_t v) {
    comma();
    char buf[24] = {'"', '0', 'x'};
    char* end = std::to_chars(buf + 3, buf + sizeof(buf) - 1, v, 16).ptr;
    *end++ = '"';
    out_.append(buf, size_t(end - buf));
  }
  void number(uint64_t v) {
    comma();
    append_u64(out_, v);
  }
  void signed_number(int64_t v) {
    comma();
    char buf[24];
    char* end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
    out_.append(buf, size_t(end - buf));
  }
  void string(std::string_view v) {
    comma();
    append_json_string(out_, v);
  }
  void begin_array() {
    out_ += '[';
    first_ = true;
    in_array_ = true;
  }
  void end_array() {
    out_ += ']';
    in_array_ = false;
  }

 private:
  void comma() {
    if (in_array_ && !first_)
      out_ += ',';
    first_ = false;
  }
  std::string& out_;
  bool in_array_ = false, first_ = true;
};

// The JsonWriter calls render_field() makes, building one nlohmann value.
class JsonValueOut {
 public:
  explicit JsonValueOut(nlohmann::ordered_json& value) : value_(value) {}

  void put(nlohmann::ordered_json v) {
    if (in_array_)
      value_.push_back(std::move(v));
    else
      value_ = std::move(v);
  }
  void hex(uint64_t v) { put(hex_u64(v)); }
  void number(uint64_t v) { put(v); }
  void signed_number(int64_t v) { put(v); }
  void string(std::string_view v) { put(std::string(v)); }
  void begin_array() {
    value_ = nlohmann::ordered_json::array();
    in_array_ = true;
  }
  void end_array() { in_array_ = false; }

 private:
  nlohmann::ordered_json& value_;
  bool in_array_ = false;
};

nlohmann::ordered_json field_json(const TraceField& f, std::span<const uint8_t> raw) {
  nlohmann::ordered_json value;
  JsonValueOut out(value);
  render_field(out, f, raw);
  return value;
}

// "a,b,c": a list of names for a message.
std::string name_list(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view n : names)
    out += (out.empty() ? "" : ",") + std::string(n);
  return out;
}

// Each line of `text` with `indent` before it, escaped for the terminal:
// a decode quotes strings the record carries (EDAC's message, label and
// driver detail), which any driver or injector chose.
void append_indented(std::string& out, std::string_view text, std::string_view indent) {
  for (std::string_view line : split(text, '\n')) {
    if (line.empty())
      continue;
    out += indent;
    append_terminal_safe(out, line);
    out += '\n';
  }
}

}  // namespace

Result<std::vector<mce::MceSeverity>> parse_severity_list(std::string_view text) {
  std::vector<mce::MceSeverity> out;
  for (std::string_view name : split(text, ',')) {
    std::optional<mce::MceSeverity> severity = mce::mce_severity_from_name(trim(name));
    if (!severity)
      return usage_error("unknown severity '" + std::string(trim(name)) + "'; the severities are " +
                         name_list(mce::mce_severity_names()));
    out.push_back(*severity);
  }
  return out;
}

mce::MceRegisters mce_registers(const TraceEvent& event, std::span<const uint8_t> raw) {
  mce::MceRegisters r;
  for (const auto& [name, reg] : mce::kMceHexRegisters)
    r.*reg = TraceDecoder::number(event, raw, name);
  for (const auto& [name, reg] : mce::kMceNumRegisters)
    if (auto v = TraceDecoder::number(event, raw, name))
      r.*reg = uint32_t(*v);
  // The u8 ones.
  if (auto v = TraceDecoder::number(event, raw, "cs"))
    r.cs = uint8_t(*v);
  if (auto v = TraceDecoder::number(event, raw, "cpuvendor"))
    r.cpuvendor = uint8_t(*v);
  return r;
}

mce::McEventFields mc_event_fields(const TraceEvent& event, std::span<const uint8_t> raw) {
  auto num = [&](const char* name) { return TraceDecoder::number(event, raw, name); };
  auto str = [&](const char* name) {
    const TraceField* field = event.field(name);
    return field ? std::string(TraceDecoder::value(*field, raw).text) : std::string();
  };
  return mce::mc_event_fields_by_name(num, str);
}

mce::RasFields ras_fields(const TraceEvent& event, std::span<const uint8_t> raw) {
  mce::RasFields out;
  for (const TraceField& f : event.fields) {
    if (raw.size() < size_t(f.offset) + f.size)
      continue;
    FieldValue v = TraceDecoder::value(f, raw);
    mce::RasValue value;
    switch (v.kind) {
      case FieldKind::kUnsigned:
      case FieldKind::kSigned:
      case FieldKind::kPointer:
        value.number = v.number;
        break;
      case FieldKind::kString: {
        // A char array whole: a GUID kept in one has NULs inside.
        value.text = std::string(v.text);
        auto bytes = raw.subspan(f.offset, f.size);
        value.elements = std::vector<uint64_t>(bytes.begin(), bytes.end());
        break;
      }
      case FieldKind::kDynString: {
        // libtraceevent takes a __data_loc u8[] for a string too: its bytes
        // whole, as the __data_loc word says (length << 16 | offset).
        value.text = std::string(v.text);
        uint32_t loc = 0;
        std::memcpy(&loc, raw.data() + f.offset, 4);
        size_t at = (loc & 0xffff) + (f.relative ? f.offset + f.size : 0), length = loc >> 16;
        if (at <= raw.size()) {
          auto bytes = raw.subspan(at, std::min(length, raw.size() - at));
          value.elements = std::vector<uint64_t>(bytes.begin(), bytes.end());
        }
        break;
      }
      case FieldKind::kArray:
      case FieldKind::kDynArray: {
        std::vector<uint64_t> e;
        // An odd-sized blob (a struct, a guid_t) as its bytes.
        uint32_t es = v.element_size && v.element_size <= 8 ? v.element_size : 1;
        for (size_t i = 0; i + es <= v.raw.size(); i += es) {
          uint64_t x = 0;
          std::memcpy(&x, v.raw.data() + i, es);  // little-endian hosts only, as perf.data
          e.push_back(x);
        }
        value.elements = std::move(e);
        break;
      }
    }
    out.emplace(f.name, std::move(value));
  }
  return out;
}

std::optional<Error> final_error(const ReportStats& stats) {
  if (stats.bad == 0)
    return std::nullopt;
  return errorf(
      EINVAL,
      "%llu of %llu records could not be decoded (each is named above, with its "
      "offset); the others were reported",
      static_cast<unsigned long long>(stats.bad),
      static_cast<unsigned long long>(stats.bad) + static_cast<unsigned long long>(stats.records));
}

std::span<const std::string_view> sort_keys() {
  return kSortKeys;
}

Result<std::vector<SortKey>> parse_sort_keys(std::string_view text) {
  std::vector<SortKey> keys;
  for (std::string_view key : split(text, ',')) {
    key = trim(key);
    auto at = std::find(std::begin(kSortKeys), std::end(kSortKeys), key);
    if (at == std::end(kSortKeys))
      return usage_error("unknown sort key '" + std::string(key) + "'; the keys are " +
                         name_list(kSortKeys));
    keys.push_back(SortKey(at - std::begin(kSortKeys)));
  }
  return keys;
}

Result<uint64_t> parse_report_time(std::string_view text, uint64_t now_wall_ns,
                                   const std::optional<sys::ClockPair>& wall) {
  PP_ASSIGN_OR_RETURN(TimeArg time, parse_time_arg(text, now_wall_ns, TraceSeconds::kAccepted));
  if (time.base == TimeBase::kTraceClock)
    return time.ns;
  if (!wall)
    return usage_error("'" + std::string(text) +
                       "' is a wall-clock time, but the records' clock cannot be converted to "
                       "one (the file has no HEADER_CLOCK_DATA: record with a clockid); give "
                       "seconds as the lines show them");
  return wall->to_clock(time.ns);
}

TraceReport::TraceReport(const ReportOptions& options, const TraceDecoder& decoder,
                         std::ostream& out, std::ostream& err)
    : options_(options), decoder_(decoder), out_(out), err_(err) {}

Status TraceReport::start(std::optional<sys::ClockPair> wall) {
  wall_ = wall;
  uint64_t now = sys::realtime_ns();
  if (!options_.since.empty()) {
    PP_ASSIGN_OR_RETURN(since_, parse_report_time(options_.since, now, wall_));
  }
  if (!options_.until.empty()) {
    PP_ASSIGN_OR_RETURN(until_, parse_report_time(options_.until, now, wall_));
  }
  if (since_ > until_)
    return usage_error("--since " + options_.since + " is after --until " + options_.until);
  return ok_status();
}

uint32_t TraceReport::intern_comm(std::string_view name) {
  auto [it, added] = comm_index_.try_emplace(std::string(name), uint32_t(comms_.size()));
  if (added)
    comms_.emplace_back(name);
  return it->second;
}

void TraceReport::comm(uint32_t tid, uint64_t time, std::string_view name) {
  last_tid_ = UINT32_MAX;  // comm_at()'s thread may change
  CommHistory& history = comm_of_tid_[tid];
  auto at = std::upper_bound(history.begin(), history.end(), time,
                             [](uint64_t t, const auto& entry) { return t < entry.first; });
  history.insert(at, {time, intern_comm(name)});
}

void TraceReport::fork(uint32_t tid, uint32_t parent_tid, uint64_t time) {
  if (tid != parent_tid)
    forks_.push_back({time, tid, parent_tid});
}

void TraceReport::apply_fork(uint32_t tid, uint32_t parent_tid, uint64_t time) {
  uint32_t parent = comm_at(int32_t(parent_tid), time);
  if (parent == 0)
    return;
  last_tid_ = UINT32_MAX;  // comm_at()'s thread may change
  CommHistory& history = comm_of_tid_[tid];
  // The inherited name holds until the child's own COMM.
  if (history.empty() || history.front().first > time)
    history.insert(history.begin(), {time, parent});
}

uint32_t TraceReport::comm_at(int32_t signed_tid, uint64_t time) {
  auto tid = uint32_t(signed_tid);
  const CommHistory* known = nullptr;
  if (tid == last_tid_) {
    known = last_history_;
  } else {
    auto it = comm_of_tid_.find(tid);
    if (it != comm_of_tid_.end() && !it->second.empty()) {
      known = &it->second;
      last_tid_ = tid;
      last_history_ = known;
    }
  }
  if (known) {
    const CommHistory& history = *known;
    auto at = std::upper_bound(history.begin(), history.end(), time,
                               [](uint64_t t, const auto& entry) { return t < entry.first; });
    // Before its first COMM a thread is known by that first name, as perf
    // names it when its COMM came late.
    return at == history.begin() ? history.front().second : std::prev(at)->second;
  }
  if (std::string_view saved = decoder_.saved_comm(int32_t(tid)); !saved.empty()) {
    uint32_t index = intern_comm(saved);
    comm_of_tid_[tid].push_back({0, index});
    return index;
  }
  if (tid == 0) {
    // The idle task: no COMM record ever names it; perf knows it as "swapper".
    uint32_t index = intern_comm("swapper");
    comm_of_tid_[tid].push_back({0, index});
    return index;
  }
  return 0;
}

void TraceReport::bad_record(std::string_view where, uint64_t offset, const Error& error) {
  stats_.bad++;
  err_ << "perf persistent report: " << where << ": record at offset " << offset << ": "
       << error.message() << "; skipped\n";
}

void TraceReport::sample(const sys::Sample& s, std::string_view where, uint64_t offset) {
  if (s.raw.empty()) {
    stats_.other++;
    return;
  }
  // PERF_SAMPLE_RAW is a u32 size then the payload, padded: the tracepoint's
  // record is at the start of the payload.
  const TraceEvent* event = decoder_.event_of(s.raw);
  if (!event) {
    uint64_t type = 0;
    if (s.raw.size() >= 2)
      std::memcpy(&type, s.raw.data(), 2);
    bad_record(where, offset,
               errorf(EINVAL,
                      s.raw.size() < 2 ? "its tracepoint payload is empty"
                                       : "its common_type %llu is no event of the tracing data",
                      static_cast<unsigned long long>(type)));
    return;
  }
  if (Status ok = decoder_.check(*event, s.raw); !ok.ok()) {
    bad_record(where, offset, ok.error());
    return;
  }
  stats_.records++;
  Entry e{s.time, event,          s.raw.data(),  uint32_t(s.raw.size()),
          s.cpu,  int32_t(s.pid), int32_t(s.tid)};
  if (!wanted(e))
    return;
  if (event->is_mce) {
    mce::MceDecoded d = mce::decode_mce(mce_registers(*event, s.raw));
    mce::set_mce_origin(d, mce::MceOrigin::kTracepoint);  // the kernel survived what it traced
    if (!options_.severities.empty() &&
        std::find(options_.severities.begin(), options_.severities.end(), d.severity) ==
            options_.severities.end())
      return;
    if (options_.summary) {
      machine_checks_.add(d, e.cpu);
    } else {
      e.mce = int32_t(mces_.size());
      mces_.push_back(std::move(d));
    }
  } else if (!options_.summary && event->name == kEdacEvent) {
    e.edac = int32_t(edacs_.size());
    edacs_.push_back(mce::decode_mc_event(mc_event_fields(*event, s.raw),
                                          options_.edac_labels ? &*options_.edac_labels : nullptr));
  } else if (!options_.summary && event->is_ras) {
    if (auto d = mce::decode_ras_event(event->name, ras_fields(*event, s.raw))) {
      e.ras = int32_t(rases_.size());
      rases_.push_back(std::move(*d));
    }
  }
  if (options_.summary)
    count(e);
  else
    entries_.push_back(e);
}

void TraceReport::reserve(size_t samples) {
  if (!options_.summary)
    entries_.reserve(entries_.size() + samples);
}

void TraceReport::count(const Entry& e) {
  shown_++;
  if (last_count_ < counts_.size() && counts_[last_count_].event == e.event &&
      counts_[last_count_].cpu == e.cpu) {
    counts_[last_count_].count++;
    return;
  }
  for (size_t i = 0; i < counts_.size(); i++) {
    if (counts_[i].event == e.event && counts_[i].cpu == e.cpu) {
      counts_[i].count++;
      last_count_ = i;
      return;
    }
  }
  last_count_ = counts_.size();
  counts_.push_back({e.event, e.cpu, 1});
}

bool TraceReport::wanted(const Entry& e) const {
  if (e.time < since_ || e.time > until_)
    return false;
  if (options_.cpus &&
      std::find(options_.cpus->begin(), options_.cpus->end(), int(e.cpu)) == options_.cpus->end())
    return false;
  if ((options_.mce_only || !options_.severities.empty()) && !e.event->is_mce)
    return false;
  return true;
}

void TraceReport::sort_entries() {
  order_.resize(entries_.size());
  for (size_t i = 0; i < order_.size(); i++)
    order_[i] = uint32_t(i);
  std::vector<SortKey> keys = options_.sort;
  if (keys.empty() || keys.back() != SortKey::kTime)
    keys.push_back(SortKey::kTime);  // ties in file order of time
  if (keys.size() == 1) {
    sort_by_time();
    return;
  }
  // Machine checks first, by bank (or severity, lowest first), then the rest.
  auto mce_rank = [&](const Entry& x, SortKey k) -> uint64_t {
    if (x.mce < 0)
      return UINT64_MAX;
    const mce::MceDecoded& d = mces_[size_t(x.mce)];
    return k == SortKey::kBank ? d.regs.bank.value_or(UINT32_MAX) : uint64_t(d.severity);
  };
  // -1, 0 or 1 as a orders before, with or after b by `k`.
  auto compare = [&](const Entry& a, const Entry& b, SortKey k) -> int {
    auto three_way = [](auto x, auto y) { return x < y ? -1 : y < x ? 1 : 0; };
    switch (k) {
      case SortKey::kTime:
        return three_way(a.time, b.time);
      case SortKey::kCpu:
        return three_way(a.cpu, b.cpu);
      case SortKey::kPid:
        return three_way(a.pid, b.pid);
      case SortKey::kTid:
        return three_way(a.tid, b.tid);
      case SortKey::kComm:
        return a.comm == b.comm ? 0 : comms_[a.comm].compare(comms_[b.comm]);
      case SortKey::kEvent:
        return a.event == b.event ? 0 : a.event->name.compare(b.event->name);
      case SortKey::kBank:
      case SortKey::kSeverity:
        return three_way(mce_rank(a, k), mce_rank(b, k));
    }
    return 0;
  };
  std::stable_sort(order_.begin(), order_.end(), [&](uint32_t x, uint32_t y) {
    const Entry& a = entries_[x];
    const Entry& b = entries_[y];
    for (SortKey k : keys) {
      if (int c = compare(a, b, k); c != 0)
        return c < 0;
    }
    return false;
  });
}

void TraceReport::sort_by_time() {
  std::vector<uint64_t> times(entries_.size());
  for (size_t i = 0; i < entries_.size(); i++)
    times[i] = entries_[i].time;
  order_by_time(times, order_);
}

void TraceReport::print_text(const Entry& e) {
  std::string_view shown = comms_[e.comm];
  char tid[16];
  char* tid_end = std::to_chars(tid + 1, tid + sizeof(tid), e.tid).ptr;
  std::string_view tid_text(tid + 1, size_t(tid_end - tid - 1));
  if (e.comm == 0) {
    tid[0] = ':';
    shown = std::string_view(tid, size_t(tid_end - tid));
  }
  // Task names and string fields are what any process chose: escaped, so
  // that none can move the cursor or retitle the reader's terminal.
  std::string safe_comm;
  if (!is_terminal_safe(shown)) {
    safe_comm = terminal_safe(shown);
    shown = safe_comm;
  }
  if (shown.size() < 16)
    buffer_.append(16 - shown.size(), ' ');
  buffer_ += shown;
  buffer_ += ' ';
  if (tid_text.size() < 5)
    buffer_.append(5 - tid_text.size(), ' ');
  buffer_ += tid_text;
  buffer_ += " ["sv;
  append_padded(buffer_, e.cpu, 3, '0');
  buffer_ += "] "sv;
  append_perf_time(buffer_, e.time);
  buffer_ += ": "sv;
  if (wall_) {
    buffer_ += format_wall_time(wall_->to_wall(e.time));
    buffer_ += ' ';
  }
  buffer_ += e.event->name;
  buffer_ += ": "sv;
  // The print format's output holds string fields any process chose:
  // escaped, but for the newlines a format ends with (perf prints them).
  size_t printed_from = buffer_.size();
  decoder_.print_fmt(*e.event, e.payload(), int(e.cpu), buffer_);
  size_t printed_end = buffer_.size();
  while (printed_end > printed_from && buffer_[printed_end - 1] == '\n')
    printed_end--;
  std::string_view printed(buffer_.data() + printed_from, printed_end - printed_from);
  if (!is_terminal_safe(printed)) {
    std::string text(printed);
    std::string tail = buffer_.substr(printed_end);
    buffer_.resize(printed_from);
    append_terminal_safe(buffer_, text);
    buffer_ += tail;
  }
  buffer_ += '\n';
  print_mce_text_of(e);
}

void TraceReport::print_mce_text_of(const Entry& e) {
  if (e.mce < 0 && e.edac < 0 && e.ras < 0)
    return;
  std::string text;
  if (e.mce >= 0)
    mce::print_mce_text(mces_[size_t(e.mce)], text);
  else if (e.edac >= 0)
    mce::print_edac_text(edacs_[size_t(e.edac)], text);
  else
    mce::print_ras_text(rases_[size_t(e.ras)], text);
  append_indented(buffer_, text, "  ");
}

void TraceReport::print_json(const Entry& e) {
  // The object JsonWriter would write, with the keys each event's fields
  // have written once (TraceField::json_key).
  buffer_ += "{\"time\":"sv;
  append_u64(buffer_, e.time);
  if (wall_) {
    buffer_ += ",\"wall_time\":"sv;
    append_json_string(buffer_, format_wall_time(wall_->to_wall(e.time)));
  }
  buffer_ += ",\"cpu\":"sv;
  append_u64(buffer_, e.cpu);
  char buf[16];
  buffer_ += ",\"pid\":"sv;
  buffer_.append(buf, size_t(std::to_chars(buf, buf + sizeof(buf), e.pid).ptr - buf));
  buffer_ += ",\"tid\":"sv;
  buffer_.append(buf, size_t(std::to_chars(buf, buf + sizeof(buf), e.tid).ptr - buf));
  if (e.comm != 0) {
    buffer_ += ",\"comm\":"sv;
    append_json_string(buffer_, comms_[e.comm]);
  }
  buffer_ += ",\"event\":"sv;
  buffer_ += e.event->json_name;
  buffer_ += ",\"fields\":"sv;
  append_fields_json(*e.event, e.payload(), buffer_);
  if (e.mce >= 0) {
    buffer_ += ",\"mce\":"sv;
    buffer_ += dump_json(mce::mce_json(mces_[size_t(e.mce)]));
  }
  if (e.edac >= 0) {
    buffer_ += ",\"edac\":"sv;
    buffer_ += dump_json(mce::edac_json(edacs_[size_t(e.edac)]));
  }
  if (e.ras >= 0) {
    buffer_ += ",\"ras\":"sv;
    buffer_ += dump_json(mce::ras_json(rases_[size_t(e.ras)]));
  }
  buffer_ += "}\n"sv;
}

void TraceReport::print_summary() {
  std::map<std::pair<std::string, uint32_t>, uint64_t> counts;
  for (const Count& c : counts_)
    counts[{c.event->name, c.cpu}] += c.count;
  const mce::MceTally& machine_checks = machine_checks_;
  if (options_.json) {
    JsonWriter w(buffer_);
    w.begin_object();
    w.key("summary");
    w.begin_object();
    w.key("records");
    w.number(stats_.records);
    w.key("shown");
    w.number(shown_);
    w.key("bad_records");
    w.number(stats_.bad);
    w.key("events");
    w.begin_array();
    for (const auto& [key, count] : counts) {
      w.begin_object();
      w.key("event");
      w.string(key.first);
      w.key("cpu");
      w.number(key.second);
      w.key("count");
      w.number(count);
      w.end_object();
    }
    w.end_array();
    if (!machine_checks.empty()) {
      w.key("mce");
      w.raw(dump_json(mce::mce_tally_json(machine_checks)));
    }
    w.end_object();
    w.end_object();
    buffer_ += '\n';
    return;
  }
  buffer_ += "# records per event and CPU\n#\n#    count  cpu  event\n";
  for (const auto& [key, count] : counts) {
    append_padded(buffer_, count, 10, ' ');
    buffer_ += "  ";
    append_padded(buffer_, key.second, 3, ' ');
    buffer_ += "  ";
    buffer_ += key.first;
    buffer_ += '\n';
  }
  mce::print_mce_tally_text(machine_checks, mce::MceTallyLayout::kBlocks, buffer_);
  buffer_ += "#\n# ";
  append_u64(buffer_, shown_);
  buffer_ += " records shown of ";
  append_u64(buffer_, stats_.records);
  buffer_ += " decoded; ";
  append_u64(buffer_, stats_.bad);
  buffer_ += " could not be decoded\n";
}

void TraceReport::flush_if_full() {
  if (buffer_.size() >= kFlushSize)
    flush();
}

void TraceReport::flush() {
  out_.write(buffer_.data(), std::streamsize(buffer_.size()));
  buffer_.clear();
}

Status TraceReport::finish() {
  // Forks in time order: a parent's name may itself come from its own fork.
  std::stable_sort(forks_.begin(), forks_.end(),
                   [](const Fork& a, const Fork& b) { return a.time < b.time; });
  for (const Fork& f : forks_)
    apply_fork(f.tid, f.parent_tid, f.time);
  if (options_.summary) {
    print_summary();
  } else {
    // Each record's thread name, once: sorting and printing read it.
    for (Entry& e : entries_)
      e.comm = comm_at(e.tid, e.time);
    sort_entries();
    buffer_.reserve(kFlushSize + kLineRoom);
    for (uint32_t index : order_) {
      const Entry& e = entries_[index];
      if (options_.json)
        print_json(e);
      else
        print_text(e);
      flush_if_full();
      if (!out_)
        break;  // nobody reads on (`report | head`): print no more
    }
  }
  stats_.printed = options_.summary ? 0 : entries_.size();
  flush();
  out_.flush();
  if (!out_) {
    // The stream keeps no errno; the write that failed just set it.
    if (errno == EPIPE)
      return errorf(ErrorKind::kOutput, EPIPE,
                    "the reader of the report went away (broken pipe); stopped printing");
    return errorf(ErrorKind::kOutput, EIO, "cannot write the report to its output");
  }
  return ok_status();
}

Result<ReportStats> report_file(const std::string& path, const ReportOptions& options,
                                std::ostream& out, std::ostream& err) {
  PP_ASSIGN_OR_RETURN(PerfDataReader data, PerfDataReader::read_file(path));
  auto tracing = data.tracing_data();
  if (!tracing.ok()) {
    if (tracing.error().code() == ENOENT)
      return errorf(EINVAL,
                    "%s holds no tracepoint formats (HEADER_TRACING_DATA): was it recorded from "
                    "tracepoint events?",
                    path.c_str());
    return std::move(tracing).error().with_context(path);
  }
  PP_ASSIGN_OR_RETURN(auto decoder, TraceDecoder::create(*tracing));
  for (const std::string& warning : decoder->warnings())
    err << "perf persistent report: " << path << ": " << warning << "\n";

  std::optional<sys::ClockPair> wall;
  if (auto section = data.feature(kFeatureClockData)) {
    auto clock = decode_clock_data(*section);
    bool all_use_it = !data.events().empty();
    for (const EventDesc& e : data.events())
      if (!e.attr.attr.use_clockid || (clock.ok() && e.attr.attr.clockid != clock->clockid))
        all_use_it = false;
    if (clock.ok() && all_use_it)
      wall = *clock;
  }

  // Side-band records carry the time in their sample_id trailer, laid out
  // alike for every event of a file.
  const perf_event_attr& first_attr = data.events().front().attr.attr;
  auto record_time = [&](std::span<const uint8_t> bytes) -> uint64_t {
    if (!first_attr.sample_id_all || !(first_attr.sample_type & PERF_SAMPLE_TIME))
      return 0;
    auto id = sys::decode_sample_id(first_attr.sample_type, bytes);
    return id.ok() ? id->time : 0;
  };

  TraceReport report(options, *decoder, out, err);
  PP_RETURN_IF_ERROR(report.start(wall));
  report.reserve(data.record_count());
  sys::Sample sample;
  PP_RETURN_IF_ERROR(data.for_each_record([&](const PerfDataRecord& r) -> Status {
    if (r.type == PERF_RECORD_SAMPLE) {
      Status decoded = data.decode_sample(r, sample);
      if (!decoded.ok())
        report.bad_record(path, r.offset, decoded.error());
      else
        report.sample(sample, path, r.offset);
    } else if (r.type == PERF_RECORD_COMM && r.bytes.size() > 16) {
      // header, u32 pid, u32 tid, char comm[] (NUL-padded), sample_id
      uint32_t tid;
      std::memcpy(&tid, r.bytes.data() + 12, 4);
      size_t trailer = sys::sample_id_size(first_attr);
      size_t end = r.bytes.size() > 16 + trailer ? r.bytes.size() - trailer : 16;
      const char* name = reinterpret_cast<const char*>(r.bytes.data() + 16);
      report.comm(tid, record_time(r.bytes), std::string_view(name, strnlen(name, end - 16)));
      report.other_record();
    } else if (r.type == PERF_RECORD_FORK && r.bytes.size() >= 32) {
      // header, u32 pid, ppid, tid, ptid, u64 time
      uint32_t tid, ptid;
      uint64_t time;
      std::memcpy(&tid, r.bytes.data() + 16, 4);
      std::memcpy(&ptid, r.bytes.data() + 20, 4);
      std::memcpy(&time, r.bytes.data() + 24, 8);
      report.fork(tid, ptid, time);
      report.other_record();
    } else {
      report.other_record();
    }
    return ok_status();
  }));
  PP_RETURN_IF_ERROR(report.finish());
  return report.stats();
}

void append_fields_json(const TraceEvent& event, std::span<const uint8_t> raw, std::string& out) {
  out += '{';
  bool first = true;
  for (const TraceField& f : event.fields) {
    if (!first)
      out += ',';
    first = false;
    out += f.json_key;
    JsonTextOut value(out);
    render_field(value, f, raw);
  }
  out += '}';
}

nlohmann::ordered_json fields_json(const TraceEvent& event, std::span<const uint8_t> raw) {
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();
  for (const TraceField& f : event.fields)
    fields[f.name] = field_json(f, raw);
  return fields;
}

}  // namespace pp::report

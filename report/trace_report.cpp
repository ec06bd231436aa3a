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

namespace pp::report {
namespace {

constexpr std::string_view kSortKeys[] = {"time", "cpu",   "pid",  "tid",
                                          "comm", "event", "bank", "severity"};
static_assert(std::size(kSortKeys) == size_t(SortKey::kSeverity) + 1);
constexpr std::string_view kMceEvent = "mce:mce_record";
// Output is handed to the stream in pieces of about this size.
constexpr size_t kFlushSize = 1 << 16;
// Distinct payloads whose rendering is kept (about 10 MB of text at most).
constexpr size_t kRenderCacheSize = 1 << 16;

void append_u64(std::string& out, uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;
  out.append(buf, size_t(end - buf));
}

// `v` right-aligned in `width` columns, zero-padded when `zero`.
void append_padded(std::string& out, uint64_t v, size_t width, char pad) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;
  size_t n = size_t(end - buf);
  if (n < width)
    out.append(width - n, pad);
  out.append(buf, n);
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
// as arrays of the same. One rendering for both writers: the streaming
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
      uint32_t es = v.element_size;
      for (size_t i = 0; es && i + es <= v.raw.size(); i += es) {
        uint64_t x = 0;
        if (es <= 8)
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

// Each line of `text` with `indent` before it.
void append_indented(std::string& out, std::string_view text, std::string_view indent) {
  for (std::string_view line : split(text, '\n')) {
    if (line.empty())
      continue;
    out += indent;
    out += line;
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
    : options_(options), decoder_(decoder), out_(out), err_(err) {
  buffer_.reserve(kFlushSize * 2);
}

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
  CommHistory& history = comm_of_tid_[tid];
  // The inherited name holds until the child's own COMM.
  if (history.empty() || history.front().first > time)
    history.insert(history.begin(), {time, parent});
}

uint32_t TraceReport::comm_at(int32_t signed_tid, uint64_t time) {
  auto tid = uint32_t(signed_tid);
  auto it = comm_of_tid_.find(tid);
  if (it != comm_of_tid_.end() && !it->second.empty()) {
    const CommHistory& history = it->second;
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
  Entry e{s.time, event, s.raw, s.cpu, int32_t(s.pid), int32_t(s.tid)};
  if (!wanted(e))
    return;
  if (event->name == kMceEvent) {
    mce::MceDecoded d = mce::decode_mce(mce_registers(*event, s.raw));
    if (!options_.severities.empty() &&
        std::find(options_.severities.begin(), options_.severities.end(), d.severity) ==
            options_.severities.end())
      return;
    e.mce = int32_t(mces_.size());
    mces_.push_back(std::move(d));
  }
  entries_.push_back(e);
}

bool TraceReport::wanted(const Entry& e) const {
  if (e.time < since_ || e.time > until_)
    return false;
  if (options_.cpus &&
      std::find(options_.cpus->begin(), options_.cpus->end(), int(e.cpu)) == options_.cpus->end())
    return false;
  if ((options_.mce_only || !options_.severities.empty()) && e.event->name != kMceEvent)
    return false;
  return true;
}

void TraceReport::sort_entries() {
  std::vector<SortKey> keys = options_.sort;
  if (keys.empty() || keys.back() != SortKey::kTime)
    keys.push_back(SortKey::kTime);  // ties in file order of time
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
  std::stable_sort(entries_.begin(), entries_.end(), [&](const Entry& a, const Entry& b) {
    for (SortKey k : keys) {
      if (int c = compare(a, b, k); c != 0)
        return c < 0;
    }
    return false;
  });
}

void TraceReport::print_text(const Entry& e) {
  std::string_view shown = comms_[e.comm];
  char tid[16];
  auto [tid_end, ec] = std::to_chars(tid, tid + sizeof(tid), e.tid);
  (void)ec;
  std::string_view tid_text(tid, size_t(tid_end - tid));
  std::string unknown;
  if (e.comm == 0) {
    unknown = ":" + std::string(tid_text);
    shown = unknown;
  }
  // Task names and string fields are what any process chose: escaped, so
  // that none can move the cursor or retitle the reader's terminal.
  std::string safe_comm = terminal_safe(shown);
  if (safe_comm.size() < 16)
    buffer_.append(16 - safe_comm.size(), ' ');
  buffer_ += safe_comm;
  buffer_ += ' ';
  if (tid_text.size() < 5)
    buffer_.append(5 - tid_text.size(), ' ');
  buffer_ += tid_text;
  buffer_ += " [";
  append_padded(buffer_, e.cpu, 3, '0');
  buffer_ += "] ";
  append_perf_time(buffer_, e.time);
  buffer_ += ": ";
  if (wall_) {
    buffer_ += format_wall_time(wall_->to_wall(e.time));
    buffer_ += ' ';
  }
  buffer_ += e.event->name;
  buffer_ += ": ";
  if (!e.event->pure_print) {
    std::string text;
    decoder_.print_fmt(*e.event, e.raw, int(e.cpu), text);
    append_terminal_safe(buffer_, text);
    stats_.rendered++;
    buffer_ += '\n';
    print_mce_text_of(e);
    return;
  }
  std::string_view key(reinterpret_cast<const char*>(e.raw.data()), e.raw.size());
  auto it = rendered_.find(key);
  if (it == rendered_.end()) {
    if (rendered_.size() >= kRenderCacheSize)
      rendered_.clear();
    std::string text;
    decoder_.print_fmt(*e.event, e.raw, int(e.cpu), text);
    stats_.rendered++;
    it = rendered_.emplace(key, terminal_safe(text)).first;
  }
  buffer_ += it->second;
  buffer_ += '\n';
  print_mce_text_of(e);
}

void TraceReport::print_mce_text_of(const Entry& e) {
  if (e.mce < 0)
    return;
  std::string text;
  mce::print_mce_text(mces_[size_t(e.mce)], text);
  append_indented(buffer_, text, "  ");
}

void TraceReport::print_json(const Entry& e) {
  JsonWriter w(buffer_);
  w.begin_object();
  w.key("time");
  w.number(e.time);
  if (wall_) {
    w.key("wall_time");
    w.string(format_wall_time(wall_->to_wall(e.time)));
  }
  w.key("cpu");
  w.number(e.cpu);
  w.key("pid");
  w.signed_number(e.pid);
  w.key("tid");
  w.signed_number(e.tid);
  if (e.comm != 0) {
    w.key("comm");
    w.string(comms_[e.comm]);
  }
  w.key("event");
  w.string(e.event->name);
  w.key("fields");
  w.begin_object();
  for (const TraceField& f : e.event->fields) {
    w.key(f.name);
    render_field(w, f, e.raw);
  }
  w.end_object();
  if (e.mce >= 0) {
    w.key("mce");
    w.raw(dump_json(mce::mce_json(mces_[size_t(e.mce)])));
  }
  w.end_object();
  buffer_ += '\n';
}

void TraceReport::print_summary() {
  std::map<std::pair<std::string, uint32_t>, uint64_t> counts;
  mce::MceTally machine_checks;
  for (const Entry& e : entries_) {
    counts[{e.event->name, e.cpu}]++;
    if (e.mce >= 0)
      machine_checks.add(mces_[size_t(e.mce)], e.cpu);
  }
  if (options_.json) {
    JsonWriter w(buffer_);
    w.begin_object();
    w.key("summary");
    w.begin_object();
    w.key("records");
    w.number(stats_.records);
    w.key("shown");
    w.number(entries_.size());
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
  append_u64(buffer_, entries_.size());
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
    for (const Entry& e : entries_) {
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
    err << "perf persistent report: " << path << ": " << warning
        << "; its records will be reported as undecodable\n";

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
  PP_RETURN_IF_ERROR(data.for_each_record([&](const PerfDataRecord& r) -> Status {
    if (r.type == PERF_RECORD_SAMPLE) {
      auto sample = data.sample(r);
      if (!sample.ok())
        report.bad_record(path, r.offset, sample.error());
      else
        report.sample(*sample, path, r.offset);
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

nlohmann::ordered_json fields_json(const TraceEvent& event, std::span<const uint8_t> raw) {
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();
  for (const TraceField& f : event.fields)
    fields[f.name] = field_json(f, raw);
  return fields;
}

}  // namespace pp::report

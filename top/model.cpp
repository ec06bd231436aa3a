// Why one file of ~800 lines: TopModel's three jobs (taking records in and
// counting them per event and CPU, closing intervals and carrying counts
// over, rendering text lines and JSON) share its per-event State and the
// tables of each kind (tracepoint keys, machine checks, IP symbols); the
// text and the JSON render one content and must not drift apart, so they
// stay together. The seam when it grows: render_event() and event_json()
// (~190 lines), once the tables they read have an interface of their own.
#include "top/model.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "base/json.h"
#include "base/strings.h"
#include "base/terminal.h"
#include "report/trace_report.h"
#include "sys/perf_abi_records.h"

namespace pp::top {
namespace {

constexpr char kKeySeparator = '\x1f';

bool has_field(const report::TraceEvent* trace, std::string_view key) {
  return trace && trace->field(key) != nullptr;
}

// top's own keys, in the order a message lists them; pseudo_key_for()
// says which samples have each.
constexpr std::string_view kOwnKeys[] = {
    "pid",  "tid",         "cpu",   "comm",       "sym", "dso", "ip", "severity", "kernel_severity",
    "bank", "error_class", "class", "status_bits"};

// Whether `key` is one of top's own keys that `kind` gives.
bool pseudo_key_for(TopKind kind, std::string_view key) {
  if (key == "pid" || key == "tid" || key == "cpu" || key == "comm")
    return true;
  if (key == "sym" || key == "dso" || key == "ip")
    return kind == TopKind::kSymbols;
  if (key == "severity" || key == "kernel_severity" || key == "bank" || key == "error_class" ||
      key == "class" || key == "status_bits")
    return kind == TopKind::kMce;
  return false;
}

std::string format_rate(double rate) {
  char text[32];
  std::snprintf(text, sizeof text, rate >= 100 ? "%.0f" : "%.1f", rate);
  return text;
}

std::string format_percent(double part) {
  char text[16];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * part);
  return text;
}

std::string pad(std::string text, size_t width, bool right = false) {
  if (text.size() >= width)
    return text;
  std::string spaces(width - text.size(), ' ');
  return right ? spaces + text : text + spaces;
}

std::string format_time(uint64_t ns) {
  char text[40];
  std::snprintf(text, sizeof text, "%" PRIu64 ".%06" PRIu64, uint64_t(ns / 1000000000U),
                uint64_t((ns % 1000000000U) / 1000U));
  return text;
}

bool uncorrected(mce::MceSeverity s) {
  return s != mce::MceSeverity::kInvalid && s != mce::MceSeverity::kCorrected &&
         s != mce::MceSeverity::kDeferred;
}

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t end = key.find(kKeySeparator, start);
    parts.push_back(key.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos)
      return parts;
    start = end + 1;
  }
}

template <typename Map>
std::vector<std::pair<std::string, uint64_t>> by_count(const Map& map, size_t rows) {
  std::vector<std::pair<std::string, uint64_t>> sorted;
  sorted.reserve(map.size());
  for (const auto& [key, value] : map) {
    if constexpr (std::is_same_v<typename Map::mapped_type, uint64_t>)
      sorted.emplace_back(key, value);
    else
      sorted.emplace_back(key, value.count);
  }
  size_t keep = std::min(rows, sorted.size());
  auto order = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  std::partial_sort(sorted.begin(), sorted.begin() + ptrdiff_t(keep), sorted.end(), order);
  sorted.resize(keep);
  return sorted;
}

}  // namespace

std::string_view top_kind_name(TopKind kind) {
  switch (kind) {
    case TopKind::kCount:
      return "count";
    case TopKind::kTracepoint:
      return "tracepoint";
    case TopKind::kMce:
      return "mce";
    case TopKind::kSymbols:
      return "symbols";
  }
  return "count";
}

TopKind top_kind_for(const sys::EventAttr& attr, std::string_view name) {
  const perf_event_attr& a = attr.attr;
  if (a.type == PERF_TYPE_TRACEPOINT && (a.sample_type & PERF_SAMPLE_RAW))
    return name == "mce:mce_record" ? TopKind::kMce : TopKind::kTracepoint;
  if (a.sample_type & PERF_SAMPLE_IP)
    return TopKind::kSymbols;
  return TopKind::kCount;
}

TopModel::TopModel(std::vector<TopEvent> events, const report::TraceDecoder* decoder,
                   SymbolSource* symbols)
    : events_(std::move(events)), states_(events_.size()), decoder_(decoder), symbols_(symbols) {
  for (size_t i = 0; i < events_.size(); ++i) {
    for (int cpu : events_[i].cpus)
      states_[i].cpus.push_back(Cpu{cpu, 0, 0, 0, 0, 0});
    states_[i].keys = default_keys(events_[i]);
  }
}

const report::TraceEvent* TopModel::trace_event(const TopEvent& event) const {
  if (!decoder_ || event.attr.attr.type != PERF_TYPE_TRACEPOINT)
    return nullptr;
  return decoder_->event(event.attr.attr.config);
}

std::vector<std::string> TopModel::default_keys(const TopEvent& event) const {
  if (const report::TraceEvent* trace = trace_event(event))
    for (const report::TraceField& f : trace->fields)
      if (f.kind == report::FieldKind::kString || f.kind == report::FieldKind::kDynString)
        return {f.name};
  return {"pid"};
}

void TopModel::set_detailed(std::optional<size_t> event) {
  for (size_t i = 0; i < states_.size(); ++i) {
    bool detailed = event && *event == i;
    if (detailed && !states_[i].detailed)
      clear_tables(states_[i]);
    states_[i].detailed = detailed;
  }
}

void TopModel::clear_tables(State& state) {
  state.values.clear();
  state.symbols.clear();
  state.machine_checks.clear();
  state.last.clear();
  state.last_ras.clear();
  state.counted = state.filtered = 0;
}

Status TopModel::set_sort(std::string_view text) {
  std::vector<std::string> keys;
  for (std::string_view part : split(text, ',')) {
    part = trim(part);
    if (part.empty())
      return usage_error("sort keys '" + std::string(text) +
                         "': a key is empty; give fields separated by commas (e.g. "
                         "prev_comm,next_comm)");
    keys.emplace_back(part);
  }
  if (keys.empty()) {
    sort_.clear();
    for (size_t i = 0; i < events_.size(); ++i) {
      states_[i].keys = default_keys(events_[i]);
      clear_tables(states_[i]);
    }
    return ok_status();
  }
  std::string available;
  bool any_tracepoint = false;
  for (const std::string& key : keys) {
    bool known = false;
    for (const TopEvent& e : events_) {
      if (e.kind != TopKind::kTracepoint)
        continue;
      any_tracepoint = true;
      known |= has_field(trace_event(e), key) || pseudo_key_for(e.kind, key);
    }
    if (!any_tracepoint)
      return usage_error("sort keys '" + std::string(text) +
                         "': no event shown is a tracepoint, whose fields -s groups by");
    if (!known) {
      for (const TopEvent& e : events_) {
        const report::TraceEvent* trace = trace_event(e);
        if (e.kind != TopKind::kTracepoint || !trace)
          continue;
        available += "; " + e.name + " has";
        for (const report::TraceField& f : trace->fields)
          available += " " + f.name;
      }
      std::string message = "sort key '" + key + "' is no field of the events shown";
      message += available;
      message += "; and every event has pid, tid, cpu, comm";
      return usage_error(message);
    }
  }
  sort_ = keys;
  for (size_t i = 0; i < events_.size(); ++i) {
    const report::TraceEvent* trace = trace_event(events_[i]);
    bool all = std::all_of(keys.begin(), keys.end(), [&](const std::string& k) {
      return has_field(trace, k) || pseudo_key_for(events_[i].kind, k);
    });
    states_[i].keys = all ? keys : default_keys(events_[i]);
    clear_tables(states_[i]);
  }
  return ok_status();
}

std::string TopModel::sort_text(size_t event) const {
  return join(states_.at(event).keys, ",");
}

Status TopModel::set_filter(std::string_view text, std::string_view what) {
  // The fields of the events shown: top's own that their kinds give, then
  // their formats'.
  filter::Keys keys;
  for (std::string_view key : kOwnKeys)
    for (const TopEvent& e : events_)
      if (pseudo_key_for(e.kind, key))
        keys.add(std::string(key), key == "severity"          ? &filter::mce_severity_scale()
                                   : key == "kernel_severity" ? &filter::kernel_severity_scale()
                                                              : nullptr);
  for (const TopEvent& e : events_)
    if (const report::TraceEvent* trace = trace_event(e))
      for (const report::TraceField& f : trace->fields)
        keys.add(f.name);
  PP_ASSIGN_OR_RETURN(filter::Expression filter, filter::Expression::parse(trim(text), keys, what));
  filter_ = std::move(filter);
  for (State& s : states_)
    clear_tables(s);
  return ok_status();
}

TopModel::Cpu& TopModel::cpu_state(State& state, int cpu) {
  for (Cpu& c : state.cpus)
    if (c.cpu == cpu)
      return c;
  state.cpus.push_back(Cpu{cpu, 0, 0, 0, 0, 0});
  return state.cpus.back();
}

void TopModel::records(size_t event, int cpu, std::span<const uint8_t> records) {
  State& state = states_.at(event);
  Cpu& c = cpu_state(state, cpu);
  bool tables = state.detailed && events_[event].kind != TopKind::kCount;
  sys::walk_records(records, [&](const perf_event_header& h, size_t offset) {
    if (h.type == PERF_RECORD_SAMPLE) {
      c.total++;
      c.interval++;
      if (tables)
        sample(event, state, cpu, records.subspan(offset, h.size));
    } else if (h.type == PERF_RECORD_LOST && h.size >= 24) {
      c.lost += sys::u64_at(records.data() + offset + 16);
    } else if (h.type == PERF_RECORD_LOST_SAMPLES && h.size >= 16) {
      c.lost += sys::u64_at(records.data() + offset + 8);
    }
    return true;
  });
}

void TopModel::lost(size_t event, int cpu, uint64_t count) {
  cpu_state(states_.at(event), cpu).lost += count;
}

void TopModel::set_fill(size_t event, int cpu, double fill) {
  cpu_state(states_.at(event), cpu).fill = fill;
}

void TopModel::set_readers(size_t event, std::optional<int> readers) {
  states_.at(event).readers = readers;
}

void TopModel::set_gone(size_t event) {
  states_.at(event).gone = true;
}

void TopModel::adopt_counts(const TopModel& old) {
  for (size_t i = 0; i < events_.size(); ++i) {
    for (size_t j = 0; j < old.events_.size(); ++j) {
      if (old.events_[j].id != events_[i].id)
        continue;
      for (const Cpu& c : old.states_[j].cpus) {
        Cpu& mine = cpu_state(states_[i], c.cpu);
        mine.total += c.total;
        mine.lost += c.lost;
        mine.rate = c.rate;
        mine.fill = c.fill;
      }
      states_[i].readers = old.states_[j].readers;
    }
  }
  last_refresh_ns_ = old.last_refresh_ns_;
  since_ns_ = old.since_ns_;
  interval_s_ = old.interval_s_;
}

// A machine check's decoding first, as watch's records have it (registers
// as hex text, which compares as the number it holds), then the event's
// fields, then top's own.
std::optional<filter::Value> TopModel::value_of(const TopEvent& event, const sys::Sample& s,
                                                const report::TraceEvent* trace,
                                                const SymbolHit* symbol, const mce::MceDecoded* mce,
                                                std::string_view key) const {
  using filter::Value;
  auto text = [](std::string t) { return Value::of_text(std::move(t)); };
  if (mce) {
    for (const auto& [name, reg] : mce::kMceHexRegisters)
      if (key == name && mce->regs.*reg)
        return text(hex_u64(*(mce->regs.*reg)));
    if (key == "severity")
      return text(std::string(mce::mce_severity_name(mce->severity)));
    if (key == "kernel_severity")
      return text(std::string(mce::kernel_severity_name(mce->kernel_severity)));
    if (key == "bank" && mce->regs.bank)
      return Value::of_unsigned(*mce->regs.bank);
    if (key == "error_class" || key == "class")
      return text(std::string(mce::mca_error_class_name(mce->error_code.error_class)));
    if (key == "status_bits") {
      std::vector<Value> bits;
      for (const std::string& bit : mce->status_bits)
        bits.push_back(text(bit));
      return Value::of_list(std::move(bits));
    }
  }
  if (trace) {
    if (const report::TraceField* f = trace->field(key)) {
      report::FieldValue fv = report::TraceDecoder::value(*f, s.raw);
      switch (fv.kind) {
        case report::FieldKind::kUnsigned:
          return Value::of_unsigned(fv.number);
        case report::FieldKind::kSigned:
          return Value::of_signed(int64_t(fv.number));
        case report::FieldKind::kPointer:
          return text(hex_u64(fv.number));
        case report::FieldKind::kString:
        case report::FieldKind::kDynString:
          return text(escape_invalid_utf8(fv.text));
        case report::FieldKind::kArray:
        case report::FieldKind::kDynArray: {
          std::string hex;
          for (uint8_t b : fv.raw) {
            char two[3];
            std::snprintf(two, sizeof two, "%02x", b);
            hex += two;
          }
          return text(hex);
        }
      }
    }
  }
  if (key == "pid")
    return Value::of_signed(int32_t(s.pid));
  if (key == "tid")
    return Value::of_signed(int32_t(s.tid));
  if (key == "cpu")
    return Value::of_unsigned(s.cpu);
  if (key == "comm") {
    std::string comm;
    if (comm_)
      comm = comm_(int32_t(s.pid));
    if (comm.empty() && decoder_)
      comm = std::string(decoder_->saved_comm(int32_t(s.pid)));
    return text(comm.empty() ? "[unknown]" : comm);
  }
  if (symbol) {
    if (key == "sym")
      return text(symbol->symbol);
    if (key == "dso")
      return text(symbol->dso);
    if (key == "ip")
      return text(hex_u64(s.ip));
  }
  (void)event;
  return std::nullopt;
}

void TopModel::sample(size_t event, State& state, int cpu, std::span<const uint8_t> record) {
  const TopEvent& e = events_[event];
  auto decoded = sys::decode_sample(e.attr.attr, record);
  if (!decoded.ok()) {
    state.bad++;
    return;
  }
  sys::Sample& s = *decoded;
  sys::fill_missing(s, e.attr.attr.sample_type, sys::sample_fill(e.attr.attr, cpu, 0));
  const report::TraceEvent* trace = nullptr;
  std::optional<mce::MceDecoded> mce;
  std::optional<SymbolHit> symbol;
  if (e.kind == TopKind::kTracepoint || e.kind == TopKind::kMce) {
    trace = decoder_ ? decoder_->event_of(s.raw) : nullptr;
    if (!trace || !decoder_->check(*trace, s.raw).ok()) {
      state.bad++;
      return;
    }
    if (e.kind == TopKind::kMce)
      mce = mce::decode_mce(report::mce_registers(*trace, s.raw), mce::CpuVendor::kUnknown,
                            mce::MceOrigin::kTracepoint);
  } else if (e.kind == TopKind::kSymbols) {
    bool kernel = (reinterpret_cast<const perf_event_header*>(record.data())->misc &
                   PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
    symbol = symbols_ ? symbols_->resolve(int32_t(s.pid), s.ip, kernel)
                      : SymbolHit{"[unknown]", "[unknown]", kernel};
  }
  const SymbolHit* sym = symbol ? &*symbol : nullptr;
  const mce::MceDecoded* m = mce ? &*mce : nullptr;
  auto lookup = [&](std::string_view key) { return value_of(e, s, trace, sym, m, key); };
  if (!filter_.empty() && !filter_.matches(filter::LookupRecord(lookup))) {
    state.filtered++;
    return;
  }
  state.counted++;
  switch (e.kind) {
    case TopKind::kTracepoint: {
      std::string key, scratch;
      for (size_t i = 0; i < state.keys.size(); ++i) {
        if (i)
          key += kKeySeparator;
        std::optional<filter::Value> v = value_of(e, s, trace, nullptr, nullptr, state.keys[i]);
        if (v)
          key += v->shown(scratch);
        else
          key += '-';
      }
      state.values[key]++;
      if (trace->is_ras) {
        if (auto d = mce::decode_ras_event(trace->name, report::ras_fields(*trace, s.raw))) {
          state.last_ras.push_front(Ras{s.time, int(s.cpu), std::move(*d)});
          if (state.last_ras.size() > kTopLastMce)
            state.last_ras.pop_back();
        }
      }
      break;
    }
    case TopKind::kSymbols: {
      std::string key = symbol->symbol + kKeySeparator + symbol->dso;
      Symbol& entry = state.symbols[key];
      entry.hit = *symbol;
      entry.count++;
      break;
    }
    case TopKind::kMce: {
      state.machine_checks.add(*mce, s.cpu);
      state.last.push_front(Mce{s.time, int(mce->regs.cpu.value_or(s.cpu)), std::move(*mce)});
      if (state.last.size() > kTopLastMce)
        state.last.pop_back();
      break;
    }
    case TopKind::kCount:
      break;
  }
}

void TopModel::refresh(uint64_t now_ns) {
  if (since_ns_ == 0)
    since_ns_ = now_ns;
  double seconds =
      last_refresh_ns_ && now_ns > last_refresh_ns_ ? double(now_ns - last_refresh_ns_) / 1e9 : 0.0;
  interval_s_ = seconds;
  for (State& state : states_) {
    for (Cpu& c : state.cpus) {
      c.rate = seconds > 0 ? double(c.interval) / seconds : 0.0;
      c.interval = 0;
    }
  }
  last_refresh_ns_ = now_ns;
}

void TopModel::zero() {
  for (State& state : states_) {
    for (Cpu& c : state.cpus)
      c.total = c.interval = c.lost = 0, c.rate = 0;
    clear_tables(state);
    state.bad = 0;
  }
  since_ns_ = last_refresh_ns_;
}

uint64_t TopModel::total(size_t event) const {
  uint64_t sum = 0;
  for (const Cpu& c : states_.at(event).cpus)
    sum += c.total;
  return sum;
}

uint64_t TopModel::lost_total(size_t event) const {
  uint64_t sum = 0;
  for (const Cpu& c : states_.at(event).cpus)
    sum += c.lost;
  return sum;
}

uint64_t TopModel::undecodable(size_t event) const {
  return states_.at(event).bad;
}

std::vector<TopLine> TopModel::render(const TopView& view) const {
  std::vector<TopLine> out;
  auto rate_of = [&](size_t i) {
    double sum = 0;
    for (const Cpu& c : states_[i].cpus)
      sum += c.rate;
    return sum;
  };
  auto fill_of = [&](size_t i) {
    double most = 0;
    for (const Cpu& c : states_[i].cpus)
      most = std::max(most, c.fill);
    return most;
  };
  if (view.overview) {
    size_t name_width = 6;
    for (const TopEvent& e : events_)
      name_width = std::max(name_width, e.text.size());
    size_t def_width = 10;
    for (size_t i = 0; i < events_.size(); ++i)
      def_width = std::max(def_width, events_[i].name.size() + (states_[i].gone ? 9 : 0));
    out.push_back({pad("EVENT", name_width) + "  " + pad("DEFINITION", def_width) + "  " +
                       pad("RATE/s", 10, true) + "  " + pad("TOTAL", 12, true) + "  " +
                       pad("LOST", 10, true) + "  " + pad("READERS", 7, true) + "  " +
                       pad("FILL", 5, true),
                   true, false});
    for (size_t i = 0; i < events_.size(); ++i) {
      const State& s = states_[i];
      std::string name = events_[i].name + (s.gone ? " (killed)" : "");
      out.push_back({pad(events_[i].text, name_width) + "  " + pad(name, def_width) + "  " +
                         pad(format_rate(rate_of(i)), 10, true) + "  " +
                         pad(std::to_string(total(i)), 12, true) + "  " +
                         pad(std::to_string(lost_total(i)), 10, true) + "  " +
                         pad(s.readers ? std::to_string(*s.readers) : "-", 7, true) + "  " +
                         pad(std::to_string(std::lround(fill_of(i) * 100)) + "%", 5, true),
                     false, lost_total(i) != 0});
      if (view.per_cpu)
        for (const Cpu& c : s.cpus)
          out.push_back({pad("  cpu " + std::to_string(c.cpu), name_width) + "  " +
                             pad("", def_width) + "  " + pad(format_rate(c.rate), 10, true) + "  " +
                             pad(std::to_string(c.total), 12, true) + "  " +
                             pad(std::to_string(c.lost), 10, true) + "  " + pad("", 7) + "  " +
                             pad(std::to_string(std::lround(c.fill * 100)) + "%", 5, true),
                         false, c.lost != 0});
    }
    if (view.event) {
      out.push_back({"", false, false});
      render_event(*view.event, view, out);
    }
  } else {
    for (size_t i = 0; i < events_.size(); ++i) {
      if (view.event && *view.event != i)
        continue;
      if (!out.empty())
        out.push_back({"", false, false});
      render_event(i, view, out);
    }
  }
  // Task names and string fields are any process's choice: escaped, so that
  // none reaches the terminal as a control sequence (--stdio prints raw).
  for (TopLine& l : out)
    l.text = terminal_safe(l.text);
  if (view.width)
    for (TopLine& l : out)
      if (l.text.size() > view.width)
        l.text.resize(view.width);
  return out;
}

void TopModel::render_event(size_t i, const TopView& view, std::vector<TopLine>& out) const {
  const TopEvent& e = events_[i];
  const State& s = states_[i];
  double rate = 0;
  for (const Cpu& c : s.cpus)
    rate += c.rate;
  std::string head = e.text + " " + e.name + ": " + format_rate(rate) + "/s, " +
                     std::to_string(total(i)) + " since attach, " + std::to_string(lost_total(i)) +
                     " lost";
  if (s.readers)
    head += ", " + std::to_string(*s.readers) + " reader" + (*s.readers == 1 ? "" : "s");
  if (s.gone)
    head += " (killed: nothing more comes)";
  out.push_back({head, true, false});
  out.push_back({"  " + pad("CPU", 5, true) + "  " + pad("RATE/s", 10, true) + "  " +
                     pad("TOTAL", 12, true) + "  " + pad("LOST", 10, true) + "  " +
                     pad("FILL", 5, true),
                 true, false});
  for (const Cpu& c : s.cpus)
    out.push_back({"  " + pad(std::to_string(c.cpu), 5, true) + "  " +
                       pad(format_rate(c.rate), 10, true) + "  " +
                       pad(std::to_string(c.total), 12, true) + "  " +
                       pad(std::to_string(c.lost), 10, true) + "  " +
                       pad(std::to_string(std::lround(c.fill * 100)) + "%", 5, true),
                   false, c.lost != 0});
  if (!filter_.empty())
    out.push_back({"  filter " + filter_.text() + ": " + std::to_string(s.counted) + " counted, " +
                       std::to_string(s.filtered) + " left out",
                   false, false});
  if (s.bad)
    out.push_back({"  " + std::to_string(s.bad) + " samples could not be decoded", false, true});
  switch (e.kind) {
    case TopKind::kCount:
      break;
    case TopKind::kTracepoint: {
      auto rows = by_count(s.values, view.rows);
      std::vector<size_t> widths(s.keys.size());
      for (size_t k = 0; k < s.keys.size(); ++k)
        widths[k] = s.keys[k].size();
      std::vector<std::vector<std::string>> parts;
      for (const auto& row : rows) {
        parts.push_back(split_key(row.first));
        for (size_t k = 0; k < widths.size() && k < parts.back().size(); ++k)
          widths[k] = std::max(widths[k], parts.back()[k].size());
      }
      std::string heading = "  " + pad("COUNT", 12, true) + "  " + pad("%", 7, true);
      for (size_t k = 0; k < s.keys.size(); ++k)
        heading += "  " + pad(s.keys[k], widths[k]);
      out.push_back({heading, true, false});
      for (size_t r = 0; r < rows.size(); ++r) {
        std::string line =
            "  " + pad(std::to_string(rows[r].second), 12, true) + "  " +
            pad(format_percent(s.counted ? double(rows[r].second) / double(s.counted) : 0), 7,
                true);
        for (size_t k = 0; k < parts[r].size() && k < widths.size(); ++k)
          line += "  " + pad(parts[r][k], widths[k]);
        out.push_back({line, false, false});
      }
      if (!s.last_ras.empty())
        out.push_back({"  last " + std::to_string(s.last_ras.size()) + " decoded (newest first)",
                       true, false});
      for (const Ras& r : s.last_ras) {
        std::string text;
        mce::print_ras_text(r.decoded, text);
        bool first = true;
        for (std::string_view line : split(text, '\n')) {
          if (line.empty())
            continue;
          out.push_back({"  " +
                             (first ? format_time(r.time) + " CPU " + std::to_string(r.cpu) + ": "
                                    : std::string()) +
                             std::string(line),
                         false, first && uncorrected(r.decoded.severity)});
          first = false;
        }
      }
      break;
    }
    case TopKind::kSymbols: {
      // As perf top: the object's file name (the JSON has the whole path).
      auto short_dso = [](const std::string& dso) {
        size_t slash = dso.rfind('/');
        return dso.empty() || dso[0] == '[' || slash == std::string::npos ? dso
                                                                          : dso.substr(slash + 1);
      };
      auto rows = by_count(s.symbols, view.rows);
      size_t dso_width = 13;
      for (const auto& row : rows)
        dso_width = std::max(dso_width, short_dso(s.symbols.at(row.first).hit.dso).size());
      out.push_back({"  " + pad("OVERHEAD", 8, true) + "  " + pad("SAMPLES", 10, true) + "  " +
                         pad("SHARED OBJECT", dso_width) + "  SYMBOL",
                     true, false});
      for (const auto& row : rows) {
        const Symbol& sym = s.symbols.at(row.first);
        out.push_back(
            {"  " +
                 pad(format_percent(s.counted ? double(sym.count) / double(s.counted) : 0), 8,
                     true) +
                 "  " + pad(std::to_string(sym.count), 10, true) + "  " +
                 pad(short_dso(sym.hit.dso), dso_width) + "  " +
                 (sym.hit.kernel ? "[k] " : "[.] ") + sym.hit.symbol,
             false, false});
      }
      break;
    }
    case TopKind::kMce: {
      std::string counts;
      mce::print_mce_tally_text(s.machine_checks, mce::MceTallyLayout::kLines, counts);
      for (std::string_view line : split(counts, '\n'))
        if (!line.empty())
          out.push_back({"  " + std::string(line), false, false});
      out.push_back({"  last " + std::to_string(s.last.size()) + " (newest first)", true, false});
      for (const Mce& m : s.last) {
        const mce::MceDecoded& d = m.decoded;
        std::string line = "  " + format_time(m.time) + " CPU " + std::to_string(m.cpu) + " bank " +
                           (d.regs.bank ? std::to_string(*d.regs.bank) : std::string("?")) + ": " +
                           std::string(mce::mce_severity_name(d.severity)) + ", " +
                           std::string(mce::mca_error_class_name(d.error_code.error_class)) +
                           ", status " + hex_u64(d.regs.status.value_or(0));
        // The address register holds an address only with ADDRV (bit 58).
        if (d.regs.addr && (d.regs.status.value_or(0) >> 58 & 1))
          line += ", addr " + hex_u64(*d.regs.addr);
        out.push_back({line, false, uncorrected(d.severity)});
      }
      break;
    }
  }
}

nlohmann::ordered_json TopModel::event_json(size_t i, const TopView& view, bool detail) const {
  const TopEvent& e = events_[i];
  const State& s = states_[i];
  nlohmann::ordered_json j;
  j["event"] = e.text;
  j["name"] = e.name;
  j["id"] = e.id;
  j["kind"] = std::string(top_kind_name(e.kind));
  double rate = 0, fill = 0;
  for (const Cpu& c : s.cpus)
    rate += c.rate, fill = std::max(fill, c.fill);
  j["rate"] = rate;
  j["total"] = total(i);
  j["lost"] = lost_total(i);
  j["readers"] = s.readers ? nlohmann::ordered_json(*s.readers) : nlohmann::ordered_json();
  j["fill"] = fill;
  j["killed"] = s.gone;
  nlohmann::ordered_json cpus = nlohmann::ordered_json::array();
  for (const Cpu& c : s.cpus)
    cpus.push_back(
        {{"cpu", c.cpu}, {"rate", c.rate}, {"total", c.total}, {"lost", c.lost}, {"fill", c.fill}});
  j["cpus"] = std::move(cpus);
  if (!detail || e.kind == TopKind::kCount)
    return j;
  j["counted"] = s.counted;
  j["filtered"] = s.filtered;
  j["undecodable"] = s.bad;
  switch (e.kind) {
    case TopKind::kCount:
      break;
    case TopKind::kTracepoint: {
      j["sort"] = s.keys;
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (const auto& [key, count] : by_count(s.values, view.rows)) {
        nlohmann::ordered_json values;
        std::vector<std::string> parts = split_key(key);
        for (size_t k = 0; k < s.keys.size() && k < parts.size(); ++k)
          values[s.keys[k]] = parts[k];
        rows.push_back({{"values", std::move(values)}, {"count", count}});
      }
      j["top"] = std::move(rows);
      if (mce::is_ras_event(e.name)) {
        nlohmann::ordered_json last = nlohmann::ordered_json::array();
        for (const Ras& r : s.last_ras)
          last.push_back({{"time", r.time}, {"cpu", r.cpu}, {"decoded", mce::ras_json(r.decoded)}});
        j["ras_last"] = std::move(last);
      }
      break;
    }
    case TopKind::kSymbols: {
      nlohmann::ordered_json rows = nlohmann::ordered_json::array();
      for (const auto& [key, count] : by_count(s.symbols, view.rows)) {
        const Symbol& sym = s.symbols.at(key);
        rows.push_back({{"symbol", sym.hit.symbol},
                        {"dso", sym.hit.dso},
                        {"kernel", sym.hit.kernel},
                        {"count", count},
                        {"percent", s.counted ? 100.0 * double(count) / double(s.counted) : 0}});
      }
      j["symbols"] = std::move(rows);
      break;
    }
    case TopKind::kMce: {
      nlohmann::ordered_json mce = mce::mce_tally_json(s.machine_checks);
      nlohmann::ordered_json last = nlohmann::ordered_json::array();
      for (const Mce& m : s.last) {
        nlohmann::ordered_json one;
        one["time"] = m.time;
        one["cpu"] = m.cpu;
        one["decoded"] = mce::mce_json(m.decoded);
        last.push_back(std::move(one));
      }
      mce["last"] = std::move(last);
      j["mce"] = std::move(mce);
      break;
    }
  }
  return j;
}

nlohmann::ordered_json TopModel::json(const TopView& view, const std::string& time) const {
  nlohmann::ordered_json j;
  if (!time.empty())
    j["time"] = time;
  j["interval"] = interval_s_;
  j["overview"] = view.overview;
  if (!filter_.empty())
    j["filter"] = filter_.text();
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  for (size_t i = 0; i < events_.size(); ++i) {
    bool detail = view.overview ? (view.event && *view.event == i) : true;
    if (!view.overview && view.event && *view.event != i)
      continue;
    events.push_back(event_json(i, view, detail));
  }
  j["events"] = std::move(events);
  return j;
}

}  // namespace pp::top

#include "report/trace_decoder.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include "base/json.h"
#include "base/strings.h"
#include "mce/ras_events.h"
#include "report/bytes.h"
#include "report/format_bounds.h"
#include "report/format_probe.h"

namespace pp::report {
namespace {

// Tracepoint ids are small integers; a table indexed by id beyond this is
// not worth it (a lookup falls back to libtraceevent's).
constexpr uint64_t kMaxTableId = 1 << 16;

uint64_t sign_extend(uint64_t v, uint32_t size) {
  if (size >= 8 || size == 0)
    return v;
  unsigned shift = 64 - size * 8;
  return uint64_t(int64_t(v << shift) >> shift);
}

FieldKind kind_of(const tep_format_field& f) {
  bool dynamic = f.flags & TEP_FIELD_IS_DYNAMIC;
  bool string = f.flags & TEP_FIELD_IS_STRING;
  if (dynamic)
    return string ? FieldKind::kDynString : FieldKind::kDynArray;
  if (f.flags & TEP_FIELD_IS_ARRAY)
    return string ? FieldKind::kString : FieldKind::kArray;
  if (f.flags & TEP_FIELD_IS_POINTER)
    return FieldKind::kPointer;
  if (f.size != 1 && f.size != 2 && f.size != 4 && f.size != 8)
    return FieldKind::kArray;  // an odd-sized blob: shown as bytes
  return (f.flags & TEP_FIELD_IS_SIGNED) ? FieldKind::kSigned : FieldKind::kUnsigned;
}

// "1234 comm\n" lines of saved_cmdlines.
std::vector<std::pair<int32_t, std::string>> parse_cmdlines(std::string_view text) {
  std::vector<std::pair<int32_t, std::string>> out;
  for (std::string_view line : split(text, '\n')) {
    size_t space = line.find(' ');
    if (space == std::string_view::npos)
      continue;
    int32_t pid = 0;
    auto [end, ec] = std::from_chars(line.data(), line.data() + space, pid);
    if (ec != std::errc() || end != line.data() + space)
      continue;
    out.emplace_back(pid, std::string(line.substr(space + 1)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

void append_hex(uint64_t v, std::string& out) {
  char buf[20];
  buf[0] = '0';
  buf[1] = 'x';
  auto [end, ec] = std::to_chars(buf + 2, buf + sizeof(buf), v, 16);
  (void)ec;
  out.append(buf, size_t(end - buf));
}

void append_number(uint64_t v, bool is_signed, std::string& out) {
  char buf[24];
  auto [end, ec] = is_signed ? std::to_chars(buf, buf + sizeof(buf), int64_t(v))
                             : std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;
  out.append(buf, size_t(end - buf));
}

}  // namespace

const TraceField* TraceEvent::field(std::string_view wanted) const {
  for (const TraceField& f : fields)
    if (f.name == wanted)
      return &f;
  return nullptr;
}

TraceDecoder::TraceDecoder() = default;

TraceDecoder::~TraceDecoder() {
  if (seq_) {
    trace_seq_destroy(seq_);
    delete seq_;
  }
  if (tep_) {
    if (plugins_)
      tep_unload_plugins(static_cast<tep_plugin_list*>(plugins_), tep_);
    tep_free(tep_);
  }
}

Result<std::unique_ptr<TraceDecoder>> TraceDecoder::create(const TracingData& data, bool plugins) {
  std::unique_ptr<TraceDecoder> d(new TraceDecoder());
  // libtraceevent reports parse problems on stderr by default; they become
  // warnings() here, said once and in our words.
  tep_set_loglevel(TEP_LOG_NONE);
  d->tep_ = tep_alloc();
  if (!d->tep_)
    return errorf(ENOMEM, "libtraceevent could not allocate its handle");
  tep_set_long_size(d->tep_, data.long_size ? data.long_size : int(sizeof(long)));
  tep_set_page_size(d->tep_, int(data.page_size));
  tep_set_file_bigendian(d->tep_, data.big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
  tep_set_local_bigendian(d->tep_, tep_is_bigendian() ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
  if (!data.header_page.empty()) {
    std::string page = data.header_page;
    tep_parse_header_page(d->tep_, page.data(), page.size(), data.long_size);
  }
  if (plugins)
    d->plugins_ = tep_load_plugins(d->tep_);

  // Each format, as the checks before parsing left it.
  struct Candidate {
    std::string system;  // "ftrace" is no string of `data`
    const std::string* format = nullptr;
    Status refused;           // by report/format_bounds.h: its print format is not parsed
    bool unparsable = false;  // libtraceevent fails on it: not parsed whole
    std::string fields_only;  // the format under an empty print format; "" when it has none
  };
  std::vector<Candidate> candidates;
  auto check = [&](const std::string& system, const std::string& format) {
    Candidate c{system, &format, ok_status(), false, {}};
    // libtraceevent's parser recurses on the print format, dereferences the
    // fields it names and divides without a check: a crafted one never
    // reaches it (report/format_bounds.h), and the checks say why.
    c.refused = check_format_bounds(format);
    if (c.refused.ok())
      c.refused = check_format_fields(format);
    if (c.refused.ok())
      c.refused = check_format_divisors(format);
    c.unparsable = c.refused.ok() && has_foreign_operator(format);
    if (c.refused.ok() && !c.unparsable)
      c.refused = check_format_conditionals(format);
    // Its fields still parse, under an empty print format, and print raw.
    size_t at = format.find("print fmt:");
    if (at != std::string::npos)
      c.fields_only = format.substr(0, at) + "print fmt: \"\"\n";
    candidates.push_back(std::move(c));
  };
  for (const std::string& format : data.ftrace_formats)
    check("ftrace", format);
  for (const TracingData::System& system : data.systems)
    for (const std::string& format : system.formats)
      check(system.name, format);

  // What libtraceevent makes of each, learnt in a throwaway child
  // (report/format_probe.h): this handle then parses only what parsed
  // there with no error, so that nothing in a file can crash it or take one
  // of its error paths (which leak).
  std::vector<FormatToProbe> to_probe;
  to_probe.reserve(candidates.size());
  for (const Candidate& c : candidates)
    to_probe.push_back({c.system, c.refused.ok() && !c.unparsable ? *c.format : std::string_view(),
                        c.fields_only});
  std::optional<FormatProbe> probe;
  if (auto probed = probe_formats(d->tep_, to_probe); probed.ok()) {
    probe = std::move(*probed);
    if (!probe->stopped.empty())
      d->warnings_.push_back(probe->stopped);
  } else {
    d->warnings_.push_back(probed.error().message() +
                           "; the formats are parsed in this process, unprobed");
  }

  for (size_t index = 0; index < candidates.size(); index++) {
    const Candidate& c = candidates[index];
    const std::string& system = c.system;
    const std::string& format = *c.format;
    Status refused = c.refused;
    // Which text this handle parses: the format when it parsed whole in the
    // child; else its fields alone, when they parsed there.
    const std::string* text = refused.ok() && !c.unparsable ? &format : &c.fields_only;
    std::string why_not;  // when neither is parsed: why
    if (probe) {
      const FormatProbeResult& r = probe->results[index];
      if (text == &format && r.whole != ProbeOutcome::kParsed) {
        text = &c.fields_only;
        // kFailed: the event is as one libtraceevent cannot parse.
        if (r.whole == ProbeOutcome::kDied)
          refused = Error(EINVAL, r.death);
        else if (r.whole == ProbeOutcome::kNotTried)
          refused = Error(EINVAL, "it was not parsed: " + probe->stopped);
      }
      if (text == &c.fields_only && r.fields_only != ProbeOutcome::kParsed) {
        if (r.fields_only == ProbeOutcome::kDied) {
          why_not = r.death;
        } else if (r.fields_only == ProbeOutcome::kFailed && r.error) {
          char why[128];
          tep_strerror(d->tep_, tep_errno(r.error), why, sizeof(why));
          why_not = why;
        } else if (r.fields_only == ProbeOutcome::kFailed || c.fields_only.empty()) {
          why_not = c.refused.ok() ? "libtraceevent cannot parse it" : c.refused.error().message();
        } else {
          why_not = "it was not parsed: " + probe->stopped;
        }
        text = nullptr;
      }
    } else if (text->empty()) {  // not to be parsed whole, and no print fmt to empty
      why_not = refused.ok() ? "libtraceevent cannot parse it" : refused.error().message();
      text = nullptr;
    }
    tep_event* event = nullptr;
    if (text) {
      enum tep_errno err =
          tep_parse_format(d->tep_, &event, text->data(), text->size(), system.c_str());
      if (!event) {  // unprobed only: the probe saw this parse succeed
        char why[128];
        tep_strerror(d->tep_, err, why, sizeof(why));
        why_not = why;
      }
    }
    if (!event) {
      std::string warning = "the format of ";
      warning.append(system).append(" (");
      warning.append(format, 0, std::min<size_t>(format.find('\n'), 128));
      warning.append(") is not parsed: ").append(why_not);
      warning.append("; its records will be reported as undecodable");
      d->warnings_.push_back(std::move(warning));
      continue;
    }
    auto te = std::make_unique<TraceEvent>();
    te->tep = event;
    te->id = event->id;
    te->name = system + ":" + (event->name ? event->name : "?");
    // FL_FAILED only unprobed: the probe saw this parse succeed.
    te->print_ok = text == &format && !(event->flags & TEP_EVENT_FL_FAILED);
    te->pure_print = event->handler == nullptr;
    uint32_t end = 0;
    for (tep_format_field* f = event->format.common_fields; f; f = f->next) {
      end = std::max(end, uint32_t(f->offset + f->size));
      if (std::strcmp(f->name, "common_type") == 0) {
        d->common_type_offset_ = uint32_t(f->offset);
        d->common_type_size_ = uint32_t(f->size);
      } else if (std::strcmp(f->name, "common_pid") == 0 && f->size == 4) {
        d->common_pid_offset_ = f->offset;
      }
    }
    for (tep_format_field* f = event->format.fields; f; f = f->next) {
      TraceField field;
      field.name = f->name;
      field.kind = kind_of(*f);
      field.offset = uint32_t(f->offset);
      field.size = uint32_t(f->size);
      field.element_size = f->elementsize ? f->elementsize : 1;
      field.relative = f->flags & TEP_FIELD_IS_RELATIVE;
      field.tep = f;
      append_json_string(field.json_key, field.name);
      field.json_key += ':';
      end = std::max(end, field.offset + field.size);
      te->fields.push_back(std::move(field));
    }
    te->min_size = end;
    append_json_string(te->json_name, te->name);
    te->is_mce = te->name == "mce:mce_record";
    te->is_ras = mce::is_ras_event(te->name);
    for (size_t i = 0; i < te->fields.size(); i++)
      if (te->fields[i].kind == FieldKind::kDynString || te->fields[i].kind == FieldKind::kDynArray)
        te->dynamic_fields.push_back(uint16_t(i));
    // Why libtraceevent must not print it, when it must not: its print
    // format was refused before parsing, it subscripts past the record or
    // prints an array by a count this decoder cannot bound.
    Status unsafe = refused;
    if (unsafe.ok() && te->print_ok)
      unsafe = check_print_subscripts(*event);
    if (unsafe.ok() && te->print_ok)
      unsafe = check_print_widths(*event);
    if (unsafe.ok() && te->print_ok) {
      Result<ArrayBounds> bounds = ArrayBounds::compile(*event);
      if (bounds.ok())
        te->array_bounds = std::move(*bounds);
      else
        unsafe = bounds.error();
    }
    if (!unsafe.ok()) {
      te->print_ok = false;
      te->print_note = unsafe.error().message();
      std::string warning = "the print format of ";
      warning.append(te->name).append(" is not used: ").append(te->print_note);
      warning.append("; its records will print their fields raw");
      d->warnings_.push_back(std::move(warning));
    } else if (!te->print_ok) {
      te->print_note = "libtraceevent could not parse its print format";
    } else if (data.big_endian != bool(tep_is_bigendian())) {
      te->print_note = "it was recorded on a host of the other byte order";
    } else {
      auto compiled =
          PrintFormat::compile(*event, data.long_size ? data.long_size : int(sizeof(long)));
      if (compiled.ok())
        te->print_format = std::move(*compiled);
      else
        te->print_note = compiled.error().message();
    }
    if (event->id >= 0 && uint64_t(event->id) < kMaxTableId) {
      if (d->by_id_.size() <= size_t(event->id))
        d->by_id_.resize(size_t(event->id) + 1, nullptr);
      d->by_id_[size_t(event->id)] = te.get();
    }
    d->events_.push_back(std::move(te));
  }

  d->cmdlines_ = parse_cmdlines(data.saved_cmdlines);
  d->seq_ = new trace_seq;
  trace_seq_init(d->seq_);
  return d;
}

const TraceEvent* TraceDecoder::event(uint64_t id) const {
  if (id < by_id_.size())
    return by_id_[size_t(id)];
  for (const auto& e : events_)
    if (uint64_t(e->id) == id)
      return e.get();
  return nullptr;
}

const TraceEvent* TraceDecoder::event_of(std::span<const uint8_t> raw) const {
  if (raw.size() < common_type_offset_ + common_type_size_)
    return nullptr;
  return event(read_unsigned(raw.data() + common_type_offset_, common_type_size_));
}

int32_t TraceDecoder::common_pid(std::span<const uint8_t> raw) const {
  if (common_pid_offset_ < 0 || raw.size() < size_t(common_pid_offset_) + 4)
    return -1;
  return int32_t(read_unsigned(raw.data() + common_pid_offset_, 4));
}

Status TraceDecoder::check(const TraceEvent& event, std::span<const uint8_t> raw) const {
  if (raw.size() < event.min_size)
    return errorf(EINVAL, "its %s payload has %zu bytes, but the format's fields need %u",
                  event.name.c_str(), raw.size(), event.min_size);
  for (uint16_t index : event.dynamic_fields) {
    const TraceField& f = event.fields[index];
    uint32_t loc = uint32_t(read_unsigned(raw.data() + f.offset, 4));
    uint64_t offset = loc & 0xffff, length = loc >> 16;
    if (f.relative)
      offset += f.offset + f.size;
    if (offset + length > raw.size())
      return errorf(EINVAL, "its %s field '%s' points at %llu bytes at %llu of a %zu-byte payload",
                    event.name.c_str(), f.name.c_str(), static_cast<unsigned long long>(length),
                    static_cast<unsigned long long>(offset), raw.size());
  }
  return ok_status();
}

FieldValue TraceDecoder::value(const TraceField& f, std::span<const uint8_t> raw) {
  FieldValue v;
  v.kind = f.kind;
  v.element_size = f.element_size;
  const uint8_t* p = raw.data() + f.offset;
  switch (f.kind) {
    case FieldKind::kUnsigned:
    case FieldKind::kPointer:
      v.number = read_unsigned(p, f.size);
      break;
    case FieldKind::kSigned:
      v.number = sign_extend(read_unsigned(p, f.size), f.size);
      break;
    case FieldKind::kString: {
      const char* s = reinterpret_cast<const char*>(p);
      v.text = std::string_view(s, strnlen(s, f.size));
      break;
    }
    case FieldKind::kArray:
      v.raw = raw.subspan(f.offset, f.size);
      break;
    case FieldKind::kDynString:
    case FieldKind::kDynArray: {
      uint32_t loc = uint32_t(read_unsigned(p, 4));
      size_t offset = loc & 0xffff, length = loc >> 16;
      if (f.relative)
        offset += f.offset + f.size;
      if (offset + length > raw.size())
        length = offset > raw.size() ? 0 : raw.size() - offset;
      auto bytes = raw.subspan(std::min(offset, raw.size()), length);
      if (f.kind == FieldKind::kDynString) {
        const char* s = reinterpret_cast<const char*>(bytes.data());
        v.text = std::string_view(s, strnlen(s, bytes.size()));
      } else {
        v.raw = bytes;
      }
      break;
    }
  }
  return v;
}

std::optional<uint64_t> TraceDecoder::number(const TraceEvent& event, std::span<const uint8_t> raw,
                                             std::string_view name) {
  const TraceField* f = event.field(name);
  if (!f || raw.size() < f->offset + f->size)
    return std::nullopt;
  if (f->kind != FieldKind::kUnsigned && f->kind != FieldKind::kSigned &&
      f->kind != FieldKind::kPointer)
    return std::nullopt;
  return value(*f, raw).number;
}

void TraceDecoder::print_fmt(const TraceEvent& event, std::span<const uint8_t> raw, int cpu,
                             std::string& out) const {
  if (event.print_format && event.pure_print) {
    // One decision for both printers: the compiled format renders what
    // libtraceevent renders, so a record libtraceevent must not print (a
    // __get_str() with no NUL before the record's end: the only bound a
    // compiled format can have, as it refuses the array helpers) prints its
    // fields raw here too, though the compiled format alone would stop at
    // the record's end. The kernel writes a __get_str() string with its NUL
    // inside its __data_loc length (__string() reserves strlen() + 1,
    // include/trace/stages/stage5_get_offsets.h): such a record is not as
    // the kernel wrote it, and its string has no end to print up to.
    if (event.array_bounds.empty() || event.array_bounds.check(raw).ok())
      event.print_format->render(raw, out);
    else
      append_raw_fields(event, raw, out);
    return;
  }
  print_fmt_libtraceevent(event, raw, cpu, out);
}

void TraceDecoder::print_fmt_libtraceevent(const TraceEvent& event, std::span<const uint8_t> raw,
                                           int cpu, std::string& out) const {
  // libtraceevent reads as many array bytes as the record's count says.
  if (!event.print_ok || !event.array_bounds.check(raw).ok()) {
    append_raw_fields(event, raw, out);
    return;
  }
  tep_record record{};
  record.data = const_cast<uint8_t*>(raw.data());
  record.size = int(raw.size());
  record.record_size = int(raw.size());
  record.cpu = cpu;
  trace_seq_reset(seq_);
  tep_print_event(tep_, seq_, &record, "%s", TEP_PRINT_INFO);
  if (seq_->state != TRACE_SEQ__GOOD) {
    append_raw_fields(event, raw, out);
    return;
  }
  out.append(seq_->buffer, seq_->len);
}

std::string_view TraceDecoder::saved_comm(int32_t pid) const {
  auto it = std::lower_bound(cmdlines_.begin(), cmdlines_.end(), pid,
                             [](const auto& entry, int32_t p) { return entry.first < p; });
  if (it == cmdlines_.end() || it->first != pid)
    return {};
  return it->second;
}

void append_raw_fields(const TraceEvent& event, std::span<const uint8_t> raw, std::string& out) {
  bool first = true;
  for (const TraceField& f : event.fields) {
    if (!first)
      out += ' ';
    first = false;
    out += f.name;
    out += '=';
    FieldValue v = TraceDecoder::value(f, raw);
    switch (v.kind) {
      case FieldKind::kUnsigned:
        append_number(v.number, false, out);
        break;
      case FieldKind::kSigned:
        append_number(v.number, true, out);
        break;
      case FieldKind::kPointer:
        append_hex(v.number, out);
        break;
      case FieldKind::kString:
      case FieldKind::kDynString:
        out += v.text;
        break;
      case FieldKind::kArray:
      case FieldKind::kDynArray: {
        out += '[';
        for (size_t i = 0; i + v.element_size <= v.raw.size(); i += v.element_size) {
          if (i)
            out += ',';
          uint32_t es = v.element_size;
          if (es == 1 || es == 2 || es == 4 || es == 8)
            append_hex(read_unsigned(v.raw.data() + i, es), out);
        }
        out += ']';
        break;
      }
    }
  }
}

}  // namespace pp::report

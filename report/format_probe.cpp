#include "report/format_probe.h"

#include <string>
#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>
#include <vector>

namespace pp::report {
namespace {

// Where the next parse is: a format, and which of its two texts.
struct Position {
  size_t index = 0;
  bool fields = false;  // fields_only, else whole
};

// Moves `at` onto the next text there is to parse (itself when it is one);
// false past the last format.
bool settle(std::span<const FormatToProbe> formats, Position& at) {
  while (at.index < formats.size()) {
    const FormatToProbe& f = formats[at.index];
    if (!at.fields && !f.whole.empty())
      return true;
    if (!at.fields) {
      at.fields = true;
      continue;
    }
    if (!f.fields_only.empty())
      return true;
    at = {at.index + 1, false};
  }
  return false;
}

// The parse after `at`, given whether `at` parsed: a format parsed whole is
// done; else its fields are next.
Position step(Position at, bool parsed) {
  if (!at.fields && !parsed)
    return {at.index, true};
  return {at.index + 1, false};
}

// A tep_errno in one byte of the child's report, and back.
char encode_error(int error) {
  long code = long(error) - long(__TEP_ERRNO__START);
  return code > 0 && code < 256 ? char(code) : char(0);
}

int decode_error(char code) {
  auto byte = static_cast<unsigned char>(code);
  return byte == 0 ? 0 : int(__TEP_ERRNO__START) + byte;
}

}  // namespace

std::string describe_death(const sys::IsolatedEnd& end, const sys::IsolatedLimits& limits) {
  if (end.out_of_cpu())
    return "libtraceevent did not finish parsing it within " + std::to_string(limits.cpu_seconds) +
           " s of CPU time";
  if (end.timed_out)
    return "libtraceevent did not finish parsing it within " + std::to_string(limits.wall.count()) +
           " ms";
  if (end.status.signal)
    return "libtraceevent crashed (" + sys::signal_name(end.status.signal) +
           ") parsing it or printing a record of zeros with it";
  if (end.overflowed || end.status.unknown)
    return "the process that parsed it " + end.describe(limits);
  return "libtraceevent ended the process that parsed it (" + end.status.describe() + ")";
}

namespace {

// In the probe's child: prints one record of `event` whose every byte but
// common_type is zero (a record's largest size: a perf sample's raw part
// is under 64 KiB).
void print_zero_record(tep_handle* tep, tep_event* event) {
  constexpr size_t kZeroRecordBytes = size_t(64) << 10;
  std::vector<unsigned char> zeros(kZeroRecordBytes, 0);
  if (tep_format_field* type = tep_find_common_field(event, "common_type");
      type && type->offset >= 0 && type->size >= 0 &&
      size_t(type->offset) + size_t(type->size) <= zeros.size()) {
    unsigned long long id = unsigned(event->id);
    for (size_t i = 0; i < size_t(type->size) && i < sizeof(id); i++)  // little-endian, as the host
      zeros[type->offset + i] = (unsigned char)(id >> (8 * i));
  }
  tep_record record{};
  record.data = zeros.data();
  record.size = int(zeros.size());
  trace_seq seq;
  trace_seq_init(&seq);
  tep_print_event(tep, &seq, &record, "%s", TEP_PRINT_INFO);
  trace_seq_destroy(&seq);
}

}  // namespace

Result<FormatProbe> probe_formats(tep_handle* tep, std::span<const FormatToProbe> formats) {
  FormatProbe probe;
  probe.results.resize(formats.size());
  const sys::IsolatedLimits limits{.cpu_seconds = kProbeCpuSeconds,
                                   .wall = kProbeWallLimit,
                                   // Two parses of a format at most, two bytes each.
                                   .max_output = 4 * formats.size() + 16};
  Position at;
  int deaths = 0, slow = 0;
  while (settle(formats, at)) {
    const Position start = at;
    auto work = [&](const sys::IsolatedReport& report) {
      // In the child: `tep` is its copy of the caller's handle.
      for (Position p = start; settle(formats, p);) {
        const FormatToProbe& f = formats[p.index];
        std::string_view text = p.fields ? f.fields_only : f.whole;
        std::string system(f.system);
        tep_event* event = nullptr;
        enum tep_errno error =
            tep_parse_format(tep, &event, text.data(), text.size(), system.c_str());
        bool parsed = error == 0 && event && !(event->flags & TEP_EVENT_FL_FAILED);
        // A print format that parsed is then printed once with a record
        // of zeros: libtraceevent folds only some constant arithmetic at
        // parse time ("!5 % 3 * 0" survives the parse and divides by
        // zero in every record's print), and what a record of zeros
        // crashes on, every record would.
        if (parsed && !p.fields)
          print_zero_record(tep, event);
        if (parsed) {
          report("y");
        } else {
          const char failed[2] = {'n', encode_error(error)};
          report(std::string_view(failed, 2));
        }
        p = step(p, parsed);
      }
    };
    PP_ASSIGN_OR_RETURN(sys::IsolatedRun run,
                        sys::run_isolated(limits, work, "parse the trace event formats"));
    // Replay what the child reported.
    std::string_view out = run.output;
    while (!out.empty() && settle(formats, at)) {
      bool parsed = out[0] == 'y';
      if (!parsed && out.size() < 2)
        break;  // cannot happen: each report is one write of under PIPE_BUF bytes
      FormatProbeResult& r = probe.results[at.index];
      (at.fields ? r.fields_only : r.whole) =
          parsed ? ProbeOutcome::kParsed : ProbeOutcome::kFailed;
      if (!parsed)
        r.error = decode_error(out[1]);
      out.remove_prefix(parsed ? 1 : 2);
      at = step(at, parsed);
    }
    if (!settle(formats, at))
      break;  // every parse reported: however the child then ended, it is done
    // The child ended before reporting the parse at `at`: the one it died on.
    FormatProbeResult& r = probe.results[at.index];
    (at.fields ? r.fields_only : r.whole) = ProbeOutcome::kDied;
    r.death = describe_death(run.end, limits);
    at = step(at, false);
    deaths++;
    if (run.end.timed_out || run.end.out_of_cpu())
      slow++;
    if (deaths >= kMaxProbeDeaths || slow >= kMaxProbeSlowChildren) {
      if (settle(formats, at))
        probe.stopped = "libtraceevent died on " + std::to_string(deaths) +
                        " of the file's formats (" + std::to_string(slow) +
                        " ran out of time); the formats after the last of them are not parsed";
      break;
    }
  }
  return probe;
}

}  // namespace pp::report

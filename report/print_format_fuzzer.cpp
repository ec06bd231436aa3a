// libFuzzer target: a record rendered by a compiled print format
// (report/print_format.h) and by libtraceevent's printer, which must give
// the same bytes (a difference aborts). Input: one byte that picks a format
// of the table below (the rules of report/print_format.h, and sched_switch's
// own format on these fields), then the record's bytes: the fixed part
// (kCaseFixedSize bytes; what is missing reads as zeros; common_type is the event's
// id) and whatever follows, where __data_loc fields may point. The formats
// are fixed: libtraceevent 1.7's own parser crashes (a null field, a
// division by zero) and leaks on many malformed formats, so fuzzing the
// format text would find its bugs, not ours; PrintFormat::compile() is held
// to libtraceevent on these formats and every fixture event by
// report/print_format_test.cpp. Seeds: tests/fuzz/corpus/print_format_fuzzer/.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "report/testing/print_format_cases.h"
#include "report/trace_decoder.h"
#include "report/tracing_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// sched_switch's own print format on the cases' fields, first (the seeds'
// first byte picks a format), then every case of print_format_cases.h.
constexpr const char* kSchedSwitch =
    R"("prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->name, REC->si, REC->sc, (REC->sl & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->sl & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->sl & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->name, REC->common_pid, REC->us)";

std::vector<const char*> formats() {
  std::vector<const char*> all{kSchedSwitch};
  all.insert(all.end(), std::begin(pp::report::testing::kCaseFormats),
             std::end(pp::report::testing::kCaseFormats));
  return all;
}

// One decoder of every format, ids 100 onwards: made once.
const pp::report::TraceDecoder& decoder() {
  static const std::unique_ptr<pp::report::TraceDecoder> made = [] {
    using namespace pp::report;
    TracingData tracing;
    tracing.version = "0.6";
    tracing.long_size = 8;
    tracing.page_size = 4096;
    TracingData::System system{"fuzz", {}};
    int id = 100;
    for (const char* print : formats()) {
      system.formats.push_back("name: f" + std::to_string(id) + "\nID: " + std::to_string(id) +
                               "\nformat:\n" + pp::report::testing::kCaseFields +
                               "print fmt: " + print + "\n");
      id++;
    }
    tracing.systems.push_back(system);
    auto d = TraceDecoder::create(tracing, /*plugins=*/false);
    if (!d.ok() || (*d)->events().size() != formats().size()) {
      std::fprintf(stderr, "print_format_fuzzer: the formats do not parse\n");
      std::abort();
    }
    for (const auto& event : (*d)->events())
      if (!event->print_format) {
        std::fprintf(stderr, "print_format_fuzzer: %s does not compile: %s\n", event->name.c_str(),
                     event->print_note.c_str());
        std::abort();
      }
    return std::move(*d);
  }();
  return *made;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pp::report;
  if (size < 1)
    return 0;
  const TraceDecoder& d = decoder();
  const TraceEvent& event = *d.events()[data[0] % d.events().size()];
  Bytes record(data + 1, data + size);
  if (record.size() < pp::report::testing::kCaseFixedSize)
    record.resize(pp::report::testing::kCaseFixedSize, 0);
  record[0] = uint8_t(event.id);
  record[1] = uint8_t(event.id >> 8);
  // Exactly the record's bytes (a copy is allocated to its size): a
  // printer that reads past the record is an ASan report. A __get_str()
  // with no NUL before the record's end prints the fields raw, through
  // both printers alike (TraceDecoder::print_fmt()).
  const Bytes exact = record;
  std::span<const uint8_t> view(exact);
  if (!d.check(event, view).ok())
    return 0;
  std::string compiled, reference;
  d.print_fmt(event, view, 0, compiled);
  d.print_fmt_libtraceevent(event, view, 0, reference);
  if (compiled != reference) {
    std::fprintf(stderr, "%s\ncompiled:      [%s]\nlibtraceevent: [%s]\n", event.name.c_str(),
                 compiled.c_str(), reference.c_str());
    std::abort();
  }
  return 0;
}

// libFuzzer target: TraceDecoder on a print format from the file, as a
// crafted perf.data's tracing data brings it, then a record of that event
// printed both ways (the compiled print format where it compiles, and
// libtraceevent's printer). Nothing may crash or read outside the record:
// the record is copied to a buffer of its own size, so ASan sees a read
// past it. Input: the text after "print fmt: " up to the first NUL byte (or
// the whole input), then the record's bytes: the fixed part of 104 bytes
// (what is missing reads as zeros; common_type is set to the event's id)
// and whatever follows, where __data_loc fields may point. The fields are
// fixed (every kind a format names): libtraceevent's field parser is not
// ours to fuzz; the print format is where a file decides what is read.
// report/format_bounds.h (nesting, length, fields, divisors) and the probe
// in a throwaway child (report/format_probe.h: libtraceevent's handle
// parses only what parsed there with no error) stand between the file and
// libtraceevent's parser; check_print_subscripts() and ArrayBounds
// (report/print_format.h) between the record and its printer. The child
// leaves its signals to their default action, so a crash there is no
// crash of this process; but a child that ended by exiting early (a
// sanitizer's report: libtraceevent misread memory and did not crash) is
// one here, since without a sanitizer the same format would parse, in the
// child and then in the reader. No leak suppression: the reader's
// libtraceevent never takes the error paths that leak. Seeds:
// tests/fuzz/corpus/trace_decoder_fuzzer/, with a regression seed per
// crash class it found (regress-*).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "report/testing/print_format_cases.h"
#include "report/trace_decoder.h"
#include "report/tracing_data.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// Each input forks the probe's child, and a fork costs a copy of this
// process's page tables: ASan's quarantine of freed memory (256 MiB by
// default) grows them over a run (to 510 MB of RSS in 300 s).
extern "C" const char* __asan_default_options() {
  return "quarantine_size_mb=16";
}

namespace {

// The print-format compiler's made-up fields (every kind it reads).
constexpr const char* kFields = pp::report::testing::kCaseFields;
constexpr size_t kFixedSize = pp::report::testing::kCaseFixedSize;
constexpr int kId = 100;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pp::report;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t nul = input.find('\0');
  std::string_view print = input.substr(0, nul);
  std::string_view rest =
      nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
  TracingData tracing;
  tracing.version = "0.6";
  tracing.long_size = 8;
  tracing.page_size = 4096;
  TracingData::System system{"fuzz", {}};
  system.formats.push_back("name: f\nID: " + std::to_string(kId) + "\nformat:\n" + kFields +
                           "print fmt: " + std::string(print) + "\n");
  tracing.systems.push_back(system);
  auto decoder = TraceDecoder::create(tracing, /*plugins=*/false);
  if (decoder.ok())
    for (const std::string& warning : (*decoder)->warnings())
      if (warning.find("ended the process that parsed it") != std::string::npos) {
        std::fprintf(stderr, "trace_decoder_fuzzer: %s\n", warning.c_str());
        std::abort();
      }
  if (!decoder.ok() || (*decoder)->events().empty())
    return 0;
  const TraceDecoder& d = **decoder;

  const TraceEvent& event = *d.events().front();
  Bytes record(rest.begin(), rest.end());
  if (record.size() < kFixedSize)
    record.resize(kFixedSize, 0);
  record[0] = uint8_t(kId);
  record[1] = uint8_t(kId >> 8);
  // Exactly the record: libtraceevent reading a __get_str() on to a NUL
  // past it (ArrayBounds::check() wants one inside) is an ASan report.
  std::span<const uint8_t> view(record.data(), record.size());
  if (!d.check(event, view).ok())
    return 0;
  std::string out;
  d.print_fmt(event, view, 0, out);
  out.clear();
  d.print_fmt_libtraceevent(event, view, 0, out);
  return 0;
}

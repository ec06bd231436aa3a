#include "report/format_probe.h"

#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <traceevent/event-parse.h>
#include <vector>

#include "report/format_bounds.h"
#include "report/trace_decoder.h"
#include "report/tracing_data.h"

namespace pp::report {
namespace {

const std::string kFields =
    "format:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n"
    "\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\n";

std::string format(int id, const std::string& print) {
  return "name: e" + std::to_string(id) + "\nID: " + std::to_string(id) + "\n" + kFields +
         "print fmt: " + print + "\n";
}

// libtraceevent 1.7 parses "5 % 3 * 0" as 5 % (3 * 0) and folds it: a
// SIGFPE while parsing. No check before parsing sees a divisor that may be
// 0 (the divisor "3" is followed by an operator); the child dies instead of
// the reader, the event's fields print raw with how libtraceevent died, and
// the formats after it are parsed as ever (found by fuzzing TraceDecoder).
constexpr char kCrashesLibtraceevent[] = "\"%d\", 5 % 3 * 0";

// "!5 % 3 * 0" is not folded while parsing: it parses cleanly and divides
// by zero in every record's print. The child prints a record of zeros with
// each format that parsed, so this one dies there, not in the reader
// (found by fuzzing TraceDecoder, seed regress-crash-divide-at-print).
TEST(FormatProbe, APrintFormatThatDividesByZeroWhenPrintedPrintsRaw) {
  const std::string crashing = format(100, "\"%d\",!5 % 3 * 0");
  TracingData data;
  data.long_size = 8;
  data.page_size = 4096;
  data.systems.push_back({"fuzz", {crashing, format(101, "\"%d\", REC->a + 1")}});
  auto decoder = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(decoder.ok()) << decoder.error().message();
  const TraceEvent* e = (*decoder)->event(100);
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e->print_ok);
  EXPECT_EQ(e->print_note,
            "libtraceevent crashed (SIGFPE) parsing it or printing a record of zeros with it");
  Bytes record(12, 0);
  record[0] = 100;
  record[8] = 7;
  std::string out;
  (*decoder)->print_fmt(*e, record, 0, out);
  EXPECT_EQ(out, "a=7");
  const TraceEvent* fine = (*decoder)->event(101);
  ASSERT_NE(fine, nullptr);
  EXPECT_TRUE(fine->print_ok) << fine->print_note;
}

TEST(FormatProbe, APrintFormatLibtraceeventCrashesOnPrintsRaw) {
  const std::string crashing = format(100, kCrashesLibtraceevent);
  ASSERT_TRUE(check_format_divisors(crashing).ok()) << "the check this test goes past";
  TracingData data;
  data.long_size = 8;
  data.page_size = 4096;
  data.systems.push_back(
      {"fuzz", {format(99, "\"a=%d\", REC->a"), crashing, format(101, "\"%d\", REC->a + 1")}});
  auto decoder = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(decoder.ok()) << decoder.error().message();
  const TraceEvent* e = (*decoder)->event(100);
  ASSERT_NE(e, nullptr) << "its fields still parse";
  EXPECT_FALSE(e->print_ok);
  EXPECT_EQ(e->print_note,
            "libtraceevent crashed (SIGFPE) parsing it or printing a record of zeros with it");
  ASSERT_EQ((*decoder)->warnings().size(), 1u);
  EXPECT_EQ((*decoder)->warnings()[0],
            "the print format of fuzz:e100 is not used: libtraceevent crashed (SIGFPE) parsing "
            "it or printing a record of zeros with it; its records will print their fields raw");
  Bytes record(12, 0);
  record[0] = 100;
  record[8] = 7;
  std::string out;
  (*decoder)->print_fmt(*e, record, 0, out);
  EXPECT_EQ(out, "a=7");
  for (int id : {99, 101}) {
    const TraceEvent* fine = (*decoder)->event(id);
    ASSERT_NE(fine, nullptr) << id;
    EXPECT_TRUE(fine->print_ok) << fine->print_note;
    record[0] = uint8_t(id);
    out.clear();
    (*decoder)->print_fmt(*fine, record, 0, out);
    EXPECT_EQ(out, id == 99 ? "a=7" : "8");
  }
}

// libtraceevent 1.7 leaks a token whenever what follows a unary operator
// fails to parse (found by fuzzing TraceDecoder: "!REoffset ~REC->a"); the
// child takes that path, the decoder's handle never does (under ASan,
// LeakSanitizer fails this test if it did). A format with unary operators
// that parses is used as ever.
TEST(FormatProbe, AFormatLibtraceeventFailsOnIsNeverParsedWhole) {
  TracingData data;
  data.long_size = 8;
  data.page_size = 4096;
  data.systems.push_back(
      {"fuzz",
       {format(100, "\"%d\", !REoffset ~REC->a"), format(101, "\"%d %d\", !REC->a, -REC->a")}});
  auto decoder = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(decoder.ok()) << decoder.error().message();
  const TraceEvent* leak = (*decoder)->event(100);
  ASSERT_NE(leak, nullptr);
  EXPECT_FALSE(leak->print_ok);
  EXPECT_EQ(leak->print_note, "libtraceevent could not parse its print format");
  EXPECT_TRUE((*decoder)->warnings().empty()) << (*decoder)->warnings()[0];
  const TraceEvent* fine = (*decoder)->event(101);
  ASSERT_NE(fine, nullptr);
  EXPECT_TRUE(fine->print_ok) << fine->print_note;
  Bytes record(12, 0);
  record[0] = 101;
  record[8] = 5;
  std::string out;
  (*decoder)->print_fmt(*fine, record, 0, out);
  EXPECT_EQ(out, "0 -5");
}

// ftrace's own formats (the tracing data's first section) are probed and
// parsed under the system name "ftrace", as the others under theirs.
TEST(FormatProbe, FtraceFormatsAreProbedToo) {
  TracingData data;
  data.long_size = 8;
  data.page_size = 4096;
  data.ftrace_formats = {format(1, "\"a=%d\", REC->a"), format(2, kCrashesLibtraceevent)};
  data.systems.push_back({"fuzz", {format(3, "\"%d\", REC->a")}});
  auto decoder = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(decoder.ok()) << decoder.error().message();
  ASSERT_NE((*decoder)->event(1), nullptr);
  EXPECT_EQ((*decoder)->event(1)->name, "ftrace:e1");
  EXPECT_TRUE((*decoder)->event(1)->print_ok);
  ASSERT_NE((*decoder)->event(2), nullptr);
  EXPECT_EQ((*decoder)->event(2)->print_note,
            "libtraceevent crashed (SIGFPE) parsing it or printing a record of zeros with it");
  ASSERT_NE((*decoder)->event(3), nullptr);
  EXPECT_EQ((*decoder)->event(3)->name, "fuzz:e3");
}

struct TepDeleter {
  void operator()(tep_handle* tep) const { tep_free(tep); }
};

std::unique_ptr<tep_handle, TepDeleter> handle() {
  std::unique_ptr<tep_handle, TepDeleter> tep(tep_alloc());
  tep_set_long_size(tep.get(), 8);
  tep_set_loglevel(TEP_LOG_NONE);
  return tep;
}

// The outcome of each parse, in order: a new child takes up after the one
// that died; fields_only is tried only when the whole did not parse; the
// probe's handle (the caller's) is left as it was.
TEST(FormatProbe, EachParseHasItsOutcome) {
  auto tep = handle();
  std::string good = format(1, "\"%d\", REC->a");
  std::string crash = format(2, kCrashesLibtraceevent);
  std::string fields2 = format(2, "\"\"");
  std::string fails = format(3, "\"%d\", !REoffset ~REC->a");
  std::string fields3 = format(3, "\"\"");
  std::string no_id = "name: e4\nformat:\n";
  std::vector<FormatToProbe> formats = {
      {"s", good, ""}, {"s", crash, fields2}, {"s", fails, fields3},
      {"s", "", good}, {"s", no_id, ""},      {"s", "", ""},
  };
  auto probe = probe_formats(tep.get(), formats);
  ASSERT_TRUE(probe.ok()) << probe.error().message();
  ASSERT_EQ(probe->results.size(), formats.size());
  EXPECT_TRUE(probe->stopped.empty());
  const auto& r = probe->results;
  EXPECT_EQ(r[0].whole, ProbeOutcome::kParsed);
  EXPECT_EQ(r[0].fields_only, ProbeOutcome::kNotTried);
  EXPECT_EQ(r[1].whole, ProbeOutcome::kDied);
  EXPECT_EQ(r[1].death,
            "libtraceevent crashed (SIGFPE) parsing it or printing a record of zeros with it");
  EXPECT_EQ(r[1].fields_only, ProbeOutcome::kParsed);
  EXPECT_EQ(r[2].whole, ProbeOutcome::kFailed);
  EXPECT_EQ(r[2].fields_only, ProbeOutcome::kParsed);
  EXPECT_EQ(r[3].whole, ProbeOutcome::kNotTried);
  EXPECT_EQ(r[3].fields_only, ProbeOutcome::kParsed);
  EXPECT_EQ(r[4].whole, ProbeOutcome::kFailed);
  EXPECT_EQ(r[4].error, TEP_ERRNO__READ_ID_FAILED) << "the tep_errno comes back";
  EXPECT_EQ(r[5].whole, ProbeOutcome::kNotTried);
  EXPECT_EQ(r[5].fields_only, ProbeOutcome::kNotTried);
  EXPECT_EQ(tep_get_events_count(tep.get()), 0) << "the parses happened in the children";
}

// A file whose every format kills libtraceevent costs kMaxProbeDeaths
// children, not one per format: the rest are not parsed, said once.
TEST(FormatProbe, TheProbeStopsAfterSoManyDeaths) {
  auto tep = handle();
  std::string crash = format(2, kCrashesLibtraceevent);
  std::vector<FormatToProbe> formats(kMaxProbeDeaths + 3, FormatToProbe{"s", crash, ""});
  auto probe = probe_formats(tep.get(), formats);
  ASSERT_TRUE(probe.ok()) << probe.error().message();
  for (int i = 0; i < kMaxProbeDeaths; i++)
    EXPECT_EQ(probe->results[size_t(i)].whole, ProbeOutcome::kDied) << i;
  for (size_t i = kMaxProbeDeaths; i < formats.size(); i++)
    EXPECT_EQ(probe->results[i].whole, ProbeOutcome::kNotTried) << i;
  EXPECT_EQ(probe->stopped,
            "libtraceevent died on " + std::to_string(kMaxProbeDeaths) +
                " of the file's formats (0 ran out of time); the formats after the last of "
                "them are not parsed");
}

TEST(FormatProbe, HowTheChildDiedIsSaid) {
  sys::IsolatedLimits limits{.cpu_seconds = 2, .wall = std::chrono::milliseconds(10'000)};
  sys::IsolatedEnd end;
  end.status.signal = SIGSEGV;
  EXPECT_EQ(describe_death(end, limits),
            "libtraceevent crashed (SIGSEGV) parsing it or printing a record of zeros with it");
  end.status.signal = SIGXCPU;
  EXPECT_EQ(describe_death(end, limits),
            "libtraceevent did not finish parsing it within 2 s of CPU time");
  end.status.signal = SIGKILL;
  end.timed_out = true;
  EXPECT_EQ(describe_death(end, limits), "libtraceevent did not finish parsing it within 10000 ms");
  end = {};
  end.status.code = 1;  // a sanitizer's report
  EXPECT_EQ(describe_death(end, limits),
            "libtraceevent ended the process that parsed it (exited with status 1)");
}

}  // namespace
}  // namespace pp::report

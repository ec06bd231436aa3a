// The compiled print formats (report/print_format.h) on every tracepoint of
// the running kernel: each event whose format compiles must render random
// records exactly as libtraceevent's printer does, which is what report
// printed before the formats were compiled and what perf script prints.
// The unit tests hold the compiler to the checked-in fixtures; this holds
// it to whatever kernel CI runs on.

#include <sys/resource.h>

#include <gtest/gtest.h>
#include <iostream>
#include <string>
#include <vector>

#include "report/format_probe.h"
#include "report/testing/synthetic_trace.h"
#include "report/trace_decoder.h"
#include "report/tracing_data.h"
#include "sys/tree.h"
#include "tests/kernel/kernel_env.h"

namespace pp::testing {
namespace {

// Records compared per compiled event: enough for each branch of a
// format's ?: and flags on random values, few enough for ~2000 events.
constexpr int kRecordsPerEvent = 40;

TEST(ReportPrintFormat, EveryEventOfThisKernelAsLibtraceeventPrintsIt) {
  std::string root = tracefs_root();
  PP_SKIP_UNLESS(!root.empty(), "no tracefs with events/ is mounted");
  sys::Tree tree(root);
  std::vector<report::Tracepoint> tracepoints;
  for (const std::string& system : tree.list("events").value_or(std::vector<std::string>{})) {
    for (const std::string& name :
         tree.list("events/" + system).value_or(std::vector<std::string>{})) {
      std::string id_file = "events/";
      id_file.append(system).append("/").append(name).append("/id");
      auto id = tree.read(id_file, 64);
      if (id.ok())
        tracepoints.push_back({system, name, std::stoull(*id)});
    }
  }
  ASSERT_GT(tracepoints.size(), 100u) << "tracefs at " << root << " lists too few events";
  auto built = report::build_tracing_data(tree, tracepoints, 4096);
  ASSERT_TRUE(built.ok()) << built.error().message();
  auto parsed = report::parse_tracing_data(*built);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  // The probe's child (report/format_probe.h) is the only child create()
  // makes: its CPU time, against its limit, is said below.
  rusage before{}, after{};
  ::getrusage(RUSAGE_CHILDREN, &before);
  auto decoder = report::TraceDecoder::create(*parsed, /*plugins=*/false);
  ::getrusage(RUSAGE_CHILDREN, &after);
  ASSERT_TRUE(decoder.ok()) << decoder.error().message();
  auto cpu_ms = [](const rusage& r) {
    return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000.0 +
           (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1000.0;
  };
  std::cout << "[ info ] the probe parsed " << tracepoints.size() << " formats in "
            << cpu_ms(after) - cpu_ms(before)
            << " ms of CPU (its limit: " << report::kProbeCpuSeconds << " s)\n";

  // No event of a real kernel is refused by the decoder's own checks
  // (report/format_bounds.h before parsing; subscripts and array counts
  // after) nor by its probe (libtraceevent did not die on any in the
  // child): only what libtraceevent itself fails on prints raw.
  for (const std::string& warning : (*decoder)->warnings())
    EXPECT_TRUE(warning.find("is not used") == std::string::npos &&
                warning.find("is not parsed") == std::string::npos)
        << warning;
  for (const auto& event : (*decoder)->events())
    EXPECT_TRUE(event->print_ok ||
                event->print_note == "libtraceevent could not parse its print format")
        << event->name << ": " << event->print_note;

  size_t compiled_events = 0, compared = 0;
  for (const auto& event : (*decoder)->events()) {
    if (!event->print_format)
      continue;
    compiled_events++;
    for (int i = 0; i < kRecordsPerEvent; i++) {
      report::Bytes raw = report::testing::synthetic_payload(
          uint64_t(event->id) * 7919 + uint64_t(i), *event, int32_t(i));
      // No NUL after the record: one libtraceevent would read past prints
      // raw through both printers.
      std::span<const uint8_t> view(raw);
      ASSERT_TRUE((*decoder)->check(*event, view).ok()) << event->name;
      std::string mine, reference;
      (*decoder)->print_fmt(*event, view, 0, mine);
      (*decoder)->print_fmt_libtraceevent(*event, view, 0, reference);
      ASSERT_EQ(mine, reference) << event->name << ", record " << i;
      compared++;
    }
  }
  // On 6.1 and 6.18 most events compile (sched_switch among them); fewer
  // than half would mean the compiler refuses what kernels write.
  EXPECT_GT(compiled_events * 2, (*decoder)->events().size())
      << compiled_events << " of " << (*decoder)->events().size() << " events compiled";
  const report::TraceEvent* sched_switch = nullptr;
  for (const auto& event : (*decoder)->events())
    if (event->name == "sched:sched_switch")
      sched_switch = event.get();
  ASSERT_NE(sched_switch, nullptr);
  EXPECT_TRUE(sched_switch->print_format) << sched_switch->print_note;
  std::cout << "[ info ] " << compiled_events << " of " << (*decoder)->events().size()
            << " events compiled; " << compared << " records compared\n";
}

}  // namespace
}  // namespace pp::testing

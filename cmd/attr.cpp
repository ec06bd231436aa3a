// perf persistent attr: the perf_event_attr each event of an event string
// becomes, in perf stat -vv's layout or as JSON.
#include <iostream>

#include "base/json.h"
#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "parse/parse_events.h"
#include "parse/written_terms.h"
#include "pmu/model.h"
#include "report/attr_printer.h"
#include "sys/tree.h"

namespace pp::cmd {
namespace {

int fail(bool json, const Error& error, const OptionParser* usage_of) {
  if (json) {
    std::cout << dump_json(error_json(error), 2) << '\n';
    return exit_status_of(error.kind());
  }
  std::string message = error.message();
  if (!message.empty() && message.back() != '\n')
    message += '\n';
  std::cerr << message;
  if (usage_of)
    std::cerr << '\n' << usage_of->usage();
  else
    std::cerr << "Run 'perf list' for the events this machine has; the syntax is in "
                 "'perf persistent help attr'.\n";
  return exit_status_of(error.kind());
}

// The parser's event as the printer takes it.
report::ListedEvent listed(const parse::EventSpec& e) {
  return {.attr = e.attr,
          .name = e.name,
          .pmu = e.pmu,
          .tracepoint = e.tracepoint,
          .leader = e.leader,
          .group_name = e.group_name,
          .cpus = e.cpus,
          .text = e.text,
          .terms = parse::written_terms(e.terms),
          .unit = e.unit,
          .scale = e.scale,
          .per_pkg = e.per_pkg,
          .snapshot = e.snapshot,
          .uncore = e.uncore,
          .sample_read = e.sample_read,
          .precise_max = e.precise_max,
          .weak_group = e.weak_group};
}

}  // namespace

int cmd_attr(int argc, const char** argv) {
  std::vector<std::string> event_texts;
  pmu::Roots roots;
  bool json = false;
  OptionParser opts({"perf persistent attr [<options>] -e <event>..."});
  opts.values('e', "event", "event", &event_texts,
              "event selector, as perf stat -e takes it; may be repeated")
      .value(0, "sysfs-root", "dir", &roots.sysfs,
             "read PMUs under <dir>/bus/event_source/devices (default /sys)")
      .value(0, "tracefs-root", "dir", &roots.tracefs,
             "read tracepoints under <dir>/events (default /sys/kernel/tracing)")
      .value(0, "run-dir", "dir", &roots.broker_run_dir,
             "the broker's run directory (default /run/perf-persistent)")
      .flag('j', "json", &json, "print JSON (errors too)");
  auto parsed = opts.parse(argc, argv);
  if (parsed.ok() && !parsed->help && event_texts.empty())
    parsed = usage_error("give at least one event with -e <event>");
  if (!parsed.ok())
    return fail(json, parsed.error().with_context("perf persistent attr"), &opts);
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }

  auto model = pmu::Model::load(roots);
  if (!model.ok())  // a tree given with --sysfs-root, --tracefs-root or --run-dir
    return fail(json, model.error().with_kind(ErrorKind::kUsage), nullptr);

  // Each -e is parsed on its own, as perf does, so an error points into the
  // string the user wrote; group leaders are renumbered into one list.
  std::vector<report::ListedEvent> events;
  for (const std::string& text : event_texts) {
    auto specs = parse::parse_events(text, *model);
    if (!specs.ok())
      return fail(json, specs.error(), nullptr);
    int base = int(events.size());
    for (const parse::EventSpec& spec : *specs) {
      events.push_back(listed(spec));
      events.back().leader += base;
    }
  }

  if (json)
    std::cout << dump_json(report::events_json(events), 2) << '\n';
  else
    report::print_events(std::cout, events);
  return kExitOk;
}

}  // namespace pp::cmd

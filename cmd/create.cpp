#include <iostream>

#include "base/json.h"
#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"
#include "persistent/event.h"
#include "persistent/event_json.h"
#include "persistent/parser_resolver.h"
#include "persistent/previous_boot.h"
#include "sys/clock.h"

namespace pp::cmd {

int cmd_create(int argc, const char** argv) {
  bool json = false;
  std::string run_dir;
  persistent::CreateRequest request;
  uint64_t pages = 0;
  bool no_context = false;
  std::string clock;
  OptionParser opts({"perf persistent create [<options>] -e EVENT"});
  opts.value('e', "event", "event", &request.event,
             "the event to make persistent, in perf's event syntax")
      .value(0, "name", "name", &request.name,
             "its name (default: the tracepoint's name, else the id)")
      .number('m', "mmap-pages", "pages", &pages, 1, persistent::kMaxPages,
              "data pages per CPU, a power of two (default 128)")
      .value('C', "cpu", "cpus", &request.cpus, "only these CPUs, e.g. 0-3,8 (default: all online)")
      .value(0, "filter", "filter", &request.filter, "a tracepoint filter, as perf record's")
      .flag(0, "no-context", &no_context,
            "keep no context stream (task names, maps) for it; see perf-persistent-create(1)")
      .value(0, "backend", "backend", &request.backend,
             "whose ring buffer holds its records: perf (default) or ftrace (tracepoints only; "
             "see perf-persistent-create(1))")
      .value('k', "clockid", "clockid", &clock,
             "the clock that stamps its records: monotonic (default), monotonic_raw, realtime, "
             "boottime, tai")
      .flag('j', "json", &json, "print JSON (schema in perf-persistent-create(1))")
      .value(0, "run-dir", "dir", &run_dir, kRunDirHelp);
  auto parsed = opts.parse(argc, argv);
  if (parsed.ok() && !parsed->help && request.event.empty())
    parsed = usage_error("no event: give one with -e EVENT");
  if (parsed.ok() && request.backend != persistent::kRingPerf &&
      request.backend != persistent::kRingFtrace)
    parsed = usage_error("--backend is perf or ftrace, not '" + request.backend + "'");
  if (parsed.ok() && !clock.empty()) {
    if (auto id = sys::parse_clockid(clock); id.ok())
      request.clockid = *id;
    else
      parsed = id.error();
  }
  if (!parsed.ok()) {
    opts.salvage(argc, argv, "json");
    return report_usage_error("create", parsed.error(), opts, json);
  }
  if (parsed->help) {
    std::cout << opts.usage()
              << "\nThe seconds before a crash survive it (Linux 6.12+) with a boot-mapped ftrace\n"
                 "instance on the kernel command line:\n    "
              << persistent::kBootMappedCmdline
              << "\nThe broker keeps the previous boot's buffer and arms the instance at start\n"
                 "(perf-persistent-daemon(1), THE PREVIOUS BOOT'S BUFFER).\n";
    return kExitOk;
  }
  request.pages = pages;
  request.context = !no_context;
  persistent::BackendOptions options = backend_options(run_dir, true);
  auto resolver = persistent::make_parser_resolver(options.sysfs_root, "");
  options.resolver = resolver.get();
  auto backend = persistent::make_backend(options);
  std::string note;
  auto created = backend->create(request, &note);
  if (!note.empty())
    std::cerr << "perf persistent create: " << note << "\n";
  if (!created.ok())
    return report_error("create", created.error(), json);
  if (json)
    std::cout << dump_json(pp::json{{"event", persistent::event_to_json(*created)}}) << std::endl;
  else
    std::cout << created->id << std::endl;
  return kExitOk;
}

}  // namespace pp::cmd

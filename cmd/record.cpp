#include <iostream>

#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"
#include "record/recorder.h"
#include "sys/process.h"

namespace pp::cmd {

int cmd_record(int argc, const char** argv) {
  record::RecordRequest request;
  std::string run_dir;
  bool no_follow = false;
  bool quiet = false;
  OptionParser opts(
      {"perf persistent record -e persistent/NAME/ [<options>] [[--] COMMAND [ARGS]]"},
      OptionParser::Positionals::kStopAtFirst);
  opts.values('e', "event", "event", &request.events,
              "persistent event to record: persistent/NAME/ (repeatable, or a comma list)")
      .value('o', "output", "file", &request.output,
             "output file name (default perf.data; - writes perf's pipe format to stdout)")
      .value('C', "cpu", "cpus", &request.cpus, "record only these CPUs (e.g. 0-3,8)")
      .flag(0, "snapshot", &request.snapshot,
            "first write what the buffers already hold (the flight recorder)")
      .flag(0, "no-follow", &no_follow, "write what the buffers hold and exit (implies --snapshot)")
      .flag('q', "quiet", &quiet, "print no summary")
      .value(0, "run-dir", "dir", &run_dir, kRunDirHelp);
  auto parsed = opts.parse(argc, argv);
  if (!parsed.ok())
    return report_usage_error("record", parsed.error(), opts, false);
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  if (no_follow) {
    request.follow = false;
    request.snapshot = true;
  }
  request.command = parsed->args;
  request.backend = backend_options(run_dir, false);
  request.roots.broker_run_dir = request.backend.run_dir;
  request.cmdline = {sys::self_executable().value_or("perf-persistent")};
  for (int i = 0; i < argc; i++)
    request.cmdline.emplace_back(argv[i]);

  auto result = record::record(request, std::cerr);
  if (!result.ok())
    return report_error("record", result.error(), false);
  if (!quiet && !result->command_error)
    std::cerr << record::record_summary(*result);
  if (std::optional<Error> error = record::final_error(*result))
    report_error("record", *error, false);
  return record::exit_status(*result);
}

}  // namespace pp::cmd

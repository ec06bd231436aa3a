#include <iostream>

#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"
#include "top/session.h"

namespace pp::cmd {

int cmd_top(int argc, const char** argv) {
  top::TopRequest request;
  bool stdio = false, json = false;
  std::string run_dir;
  uint64_t rows = 0;
  OptionParser opts({"perf persistent top [-e persistent/NAME/ ...] [<options>]"});
  opts.values('e', "event", "event", &request.events,
              "show persistent/NAME/ in detail (repeatable); none: one row per event")
      .value('d', "delay", "seconds", &request.delay,
             "refresh every this many seconds (default 2; 0.5 for half a second)")
      .value('C', "cpu", "cpus", &request.cpus, "only these CPUs' buffers (e.g. 0-3,8)")
      .value('s', "sort", "keys", &request.sort,
             "count tracepoint samples by these fields (e.g. prev_comm,next_comm)")
      .value(0, "filter", "expr", &request.filter,
             "count only samples that match (e.g. 'prev_comm==bash && next_pid>100')")
      .number('n', "rows", "n", &rows, 1, 100000, "rows of each table (default: what fits)")
      .flag(0, "per-cpu", &request.per_cpu, "the overview's rows per CPU too")
      .flag(0, "stdio", &stdio, "print text blocks every refresh instead of the screen")
      .flag('j', "json", &json, "print one JSON object per refresh, one per line")
      .value(0, "run-dir", "dir", &run_dir, kRunDirHelp);
  auto parsed = opts.parse(argc, argv);
  if (!parsed.ok())
    opts.salvage(argc, argv, "json");
  if (!parsed.ok())
    return report_usage_error("top", parsed.error(), opts, json);
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  if (stdio && json)
    return report_usage_error("top",
                              usage_error("--stdio and --json each choose the output: "
                                          "give one of them"),
                              opts, json);
  request.output = json ? top::Output::kJson : stdio ? top::Output::kStdio : top::Output::kScreen;
  request.rows = size_t(rows);
  request.backend = backend_options(run_dir, false);
  request.roots.broker_run_dir = request.backend.run_dir;
  Status status = top::run_top(request, std::cout);
  if (!status.ok())
    return report_error("top", status.error(), json);
  return kExitOk;
}

}  // namespace pp::cmd

#include <fstream>
#include <iostream>

#include "base/json.h"
#include "base/options.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"
#include "record/instance_record.h"
#include "record/record_options.h"
#include "record/recorder.h"
#include "record/summary_json.h"
#include "sys/process.h"
#include "sys/realtime.h"

namespace pp::cmd {
namespace {

// --json[=FILE]: the summary (or the error) as one object on stderr or in FILE.
int print_json(const std::string& file, const json& doc, int status) {
  std::string text = dump_json(doc) + "\n";
  if (file.empty()) {
    std::cerr << text;
    return status;
  }
  std::ofstream out(file, std::ios::trunc);
  out << text;
  out.flush();
  if (!out) {
    std::cerr << "perf persistent record: cannot write the JSON summary to " << file << "; it is:\n"
              << text;
    return status ? status : exit_status_of(ErrorKind::kOutput);
  }
  return status;
}

// --instance NAME, --previous-boot: the ftrace instance's buffer, written
// and done.
int record_instance(const std::string& instance, bool previous_boot, const std::string& output,
                    int argc, const char** argv, bool quiet, bool json,
                    const std::string& json_file) {
  record::InstanceRequest request;
  request.instance = instance;
  request.previous_boot = previous_boot;
  if (!output.empty())
    request.output = output;
  request.cmdline = {sys::self_executable().value_or("perf-persistent")};
  for (int i = 0; i < argc; i++)
    request.cmdline.emplace_back(argv[i]);
  auto result = record::record_instance(request);
  if (!result.ok())
    return json ? print_json(json_file, error_json(result.error()),
                             exit_status_of(result.error().kind()))
                : report_error("record", result.error(), false);
  if (json)
    return print_json(json_file, record::instance_summary_json(*result), kExitOk);
  if (!quiet)
    std::cerr << record::instance_summary(*result);
  return kExitOk;
}

}  // namespace

int cmd_record(int argc, const char** argv) {
  record::RecordRequest request;
  std::string run_dir, switch_output, max_size, json_file, instance;
  bool no_follow = false, quiet = false, all_cpus = false, switch_given = false, json = false;
  bool previous_boot = false;
  uint64_t max_files = 0, realtime = 0;
  OptionParser opts({"perf persistent record -e persistent/NAME/ [<options>] [[--] COMMAND [ARGS]]",
                     "perf persistent record --instance NAME [-o FILE]",
                     "perf persistent record --previous-boot [--instance NAME] [-o FILE]"},
                    OptionParser::Positionals::kStopAtFirst);
  opts.values('e', "event", "event", &request.events,
              "persistent event to record: persistent/NAME/ (repeatable, or a comma list)")
      .value('o', "output", "file", &request.output,
             "output file name (default perf.data; - writes perf's pipe format to stdout)")
      .value('C', "cpu", "cpus", &request.cpus, "record only these CPUs (e.g. 0-3,8)")
      .flag('a', "all-cpus", &all_cpus, "every CPU the events cover (the default)")
      .value(0, "instance", "name", &instance,
             "write what the ftrace instance NAME holds (consumes it) and exit")
      .flag(0, "previous-boot", &previous_boot,
            "write the previous boot's buffer of the kernel command line's boot-mapped instance")
      .flag(0, "snapshot", &request.snapshot,
            "first write what the buffers already hold (the flight recorder)")
      .flag(0, "no-follow", &no_follow, "write what the buffers hold and exit (implies --snapshot)")
      .optional_value("switch-output", "signal or size[BKMG] or time[smhd]", &switch_output,
                      &switch_given,
                      "switch to a new file at SIGUSR2 (signal, the default) or at a size or "
                      "time threshold")
      .number(0, "switch-max-files", "n", &max_files, 1, 1000000,
              "with --switch-output, keep only the newest n files")
      .value(0, "max-size", "size", &max_size,
             "stop once the output reaches size (bytes, or with B, K, M, G)")
      .number('r', "realtime", "prio", &realtime, 1, 99,
              "read the buffers at this SCHED_FIFO priority (1-99)")
      .counter('v', "verbose", &request.verbose,
               "say what is attached (each CPU's buffer, its id and layout), the clock and "
               "each file")
      .optional_value("json", "file", &json_file, &json,
                      "print the end-of-run summary as JSON on stderr, or into file")
      .flag('q', "quiet", &quiet, "print no summary")
      .value(0, "run-dir", "dir", &run_dir, kRunDirHelp);
  for (const record::RefusedOption& r : record::kRefusedOptions)
    opts.refuse(r.short_name, std::string(r.long_name), std::string(r.reason));
  auto parsed = opts.parse(argc, argv);
  if (parsed.ok() && switch_given) {
    if (auto sw = record::parse_switch_output(switch_output); sw.ok())
      request.switch_output = *sw;
    else
      parsed = sw.error();
  }
  if (parsed.ok() && max_files && !switch_given)
    parsed = usage_error("--switch-max-files limits the files --switch-output makes; give both");
  if (parsed.ok() && !max_size.empty()) {
    if (auto size = record::parse_size(max_size, "--max-size"); size.ok())
      request.max_size = *size;
    else
      parsed = size.error();
  }
  if (parsed.ok() && (!instance.empty() || previous_boot) &&
      (!request.events.empty() || !parsed->args.empty() || request.snapshot || no_follow ||
       switch_given || !max_size.empty() || !request.cpus.empty() || realtime || !run_dir.empty() ||
       request.verbose))
    parsed = usage_error(
        "--instance and --previous-boot write an ftrace instance's buffer as it is; they take "
        "only -o, -q and --json "
        "(not -e, -C, a COMMAND, --snapshot, --no-follow, --switch-output, --max-size, -r, -v "
        "or --run-dir)");
  if (!parsed.ok()) {
    opts.salvage(argc, argv, "json");
    if (json)
      return print_json(json_file, error_json(parsed.error()), exit_status_of(ErrorKind::kUsage));
    return report_usage_error("record", parsed.error(), opts, false);
  }
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  if (!instance.empty() || previous_boot)
    return record_instance(instance, previous_boot, request.output, argc, argv, quiet, json,
                           json_file);
  if (no_follow) {
    request.follow = false;
    request.snapshot = true;
  }
  request.switch_max_files = max_files;
  request.command = parsed->args;
  request.backend = backend_options(run_dir, false);
  request.roots.broker_run_dir = request.backend.run_dir;
  request.cmdline = {sys::self_executable().value_or("perf-persistent")};
  for (int i = 0; i < argc; i++)
    request.cmdline.emplace_back(argv[i]);

  if (realtime) {
    Status rt = sys::set_realtime_priority(int(realtime));
    if (!rt.ok())
      return json ? print_json(json_file, error_json(rt.error()), exit_status_of(rt.error().kind()))
                  : report_error("record", rt.error(), false);
  }
  auto result = record::record(request, std::cerr);
  if (!result.ok())
    return json ? print_json(json_file, error_json(result.error()),
                             exit_status_of(result.error().kind()))
                : report_error("record", result.error(), false);
  bool json_on_stderr = json && json_file.empty();
  if (!quiet && !json_on_stderr && !result->command_error)
    std::cerr << record::record_summary(*result);
  if (std::optional<Error> error = record::final_error(*result); error && !json_on_stderr)
    report_error("record", *error, false);
  int status = record::exit_status(*result);
  if (json)
    return print_json(json_file, record::summary_json(*result), status);
  return status;
}

}  // namespace pp::cmd

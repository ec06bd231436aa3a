#include "cmd/commands.h"

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "base/options.h"
#include "base/strings.h"
#include "cmd/exit_codes.h"
#include "cmd/persistent_common.h"
#include "sys/process.h"
#include "sys/tree.h"

namespace pp::cmd {
namespace {

// In the order a user meets them: the event lifecycle, then the tools.
constexpr Command kCommands[] = {
    {"list", "List the persistent events, with their buffers and counts", cmd_list},
    {"create", "Create a persistent event that runs with no process attached", cmd_create},
    {"kill", "Kill persistent events by id or name", cmd_kill},
    {"record", "Record persistent events into perf.data without stopping them", cmd_record},
    {"top", "Show persistent events live: rates, top field values, machine checks, symbols",
     cmd_top},
    {"report", "Decode tracepoint records, machine checks explained, from perf.data or a buffer",
     cmd_report},
    {"watch", "Keep machine checks and records: history, triggers, Prometheus, the journal",
     cmd_watch},
    {"daemon", "Run the broker that holds persistent events on kernels without the kernel ABI",
     cmd_daemon},
    {"check", "Check that this host records machine checks and samples; a monitoring plugin",
     cmd_check},
    {"decode", "Decode a machine check's registers or a kernel log's machine-check lines",
     cmd_decode},
    {"attr", "Show the perf_event_attr each event of an event string becomes", cmd_attr},
    {"help", "Show the usage of perf-persistent or of one of its commands", cmd_help},
    {"version", "Show the version of perf-persistent and what it was built with", cmd_version},
};

const Command* find(std::string_view name) {
  for (const Command& c : kCommands)
    if (name == c.name)
      return &c;
  return nullptr;
}

std::string global_usage() {
  std::string out =
      " Usage: perf persistent [--version] [--help] COMMAND [ARGS]\n"
      "    or: perf-persistent COMMAND [ARGS]\n"
      "\n"
      " The commands are:\n";
  for (const Command& c : kCommands) {
    std::string name = c.name;
    out +=
        "   " + name + std::string(name.size() < 12 ? 12 - name.size() : 1, ' ') + c.summary + "\n";
  }
  out += "\n See 'perf persistent help COMMAND' for more information on a specific command.\n";
  return out;
}

}  // namespace

std::span<const Command> commands() {
  return kCommands;
}

int cmd_help(int argc, const char** argv) {
  OptionParser opts({"perf persistent help [COMMAND]"}, OptionParser::Positionals::kInterleaved);
  auto parsed = opts.parse(argc, argv);
  if (parsed.ok() && parsed->args.size() > 1)
    parsed = usage_error("give at most one COMMAND");
  if (!parsed.ok())
    return report_usage_error("help", parsed.error(), opts, false);
  if (parsed->help) {
    std::cout << opts.usage();
    return kExitOk;
  }
  if (parsed->args.empty()) {
    std::cout << global_usage();
    return kExitOk;
  }
  const Command* c = find(parsed->args[0]);
  if (!c) {
    std::cerr << "perf persistent help: '" << parsed->args[0]
              << "' is not a perf persistent command; see 'perf persistent --help'\n";
    return kExitUsage;
  }
  const char* help_argv[] = {c->name, "--help", nullptr};
  return c->run(2, help_argv);
}

int run_main(int argc, const char** argv) {
  if (argc < 2) {
    std::cerr << global_usage();
    return kExitUsage;
  }
  std::string_view verb = argv[1];
  if (verb == "--help" || verb == "-h") {
    std::cout << global_usage();
    return kExitOk;
  }
  if (verb == "--version" || verb == "-v")
    verb = "version";
  if (verb == "--list-cmds") {
    // For scripts, completion and the test that checks the man pages.
    for (const Command& c : kCommands)
      std::cout << c.name << '\t' << c.summary << '\n';
    return kExitOk;
  }
  if (const Command* c = find(verb)) {
    // Started as `perf persistent VERB`: end when perf does (sys/process.h).
    (void)sys::end_with_perf_parent(sys::Tree(sys::kDefaultProcRoot));
    return c->run(argc - 1, argv + 1);
  }

  std::vector<std::string> names;
  for (const Command& c : kCommands)
    names.emplace_back(c.name);
  std::cerr << "perf persistent: '" << verb << "' is not a perf persistent command.";
  if (std::string near = nearest_word(verb, names); !near.empty())
    std::cerr << " Did you mean '" << near << "'?";
  std::cerr << "\nSee 'perf persistent --help' for the list of commands.\n";
  return kExitUsage;
}

}  // namespace pp::cmd

// The table of perf-persistent's verbs. Each verb is one file, cmd/<verb>.cpp,
// whose entry point takes the verb's own argc/argv (argv[0] is the verb) and
// returns the exit status. cmd/ parses options and calls the libraries; it
// holds no logic of its own.
#pragma once

#include <span>
#include <string>

namespace pp::cmd {

struct Command {
  const char* name;     // exact verb: no prefix matching, scripts must stay stable
  const char* summary;  // one line; the NAME line of Documentation/perf-persistent-<name>.txt
  int (*run)(int argc, const char** argv);
};

std::span<const Command> commands();

// The entry point of the program: dispatches argv[1] to its verb.
int run_main(int argc, const char** argv);

// Entry points, one per cmd/<verb>.cpp.
int cmd_attr(int argc, const char** argv);
int cmd_help(int argc, const char** argv);
int cmd_version(int argc, const char** argv);
int cmd_list(int argc, const char** argv);
int cmd_kill(int argc, const char** argv);
int cmd_record(int argc, const char** argv);
int cmd_create(int argc, const char** argv);
int cmd_daemon(int argc, const char** argv);
int cmd_report(int argc, const char** argv);
int cmd_top(int argc, const char** argv);
int cmd_decode(int argc, const char** argv);
int cmd_check(int argc, const char** argv);
int cmd_watch(int argc, const char** argv);

}  // namespace pp::cmd

// Runs a program to completion and captures what it printed, for tests that
// drive perf-persistent (and perf itself) as a user or a script would.
#pragma once

#include <string>
#include <vector>

namespace pp::testing {

struct CommandResult {
  int status = -1;       // exit status, or 128 + signal when killed
  std::string out, err;  // stdout, stderr
};

struct CommandOptions {
  std::string input;             // written to the program's stdin
  std::vector<std::string> env;  // extra NAME=value entries
  int timeout_seconds = 60;      // SIGKILL after this long
};

CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options = {});

// run_command({binary_path(), args...}).
CommandResult run_pp(const std::vector<std::string>& args, const CommandOptions& options = {});

}  // namespace pp::testing

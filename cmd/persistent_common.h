// What the persistent-event verbs (list, create, kill, daemon) share: the
// --run-dir option, the backend they talk to, and how an error ends them:
// "perf persistent VERB: message" on stderr, or under --json one object on
// stdout,
//
//   {"error": {"message": "...", "errno": "EEXIST", "exit_status": 3}}
//
// with the exit status of cmd/exit_codes.h either way.
#pragma once

#include <string>
#include <string_view>

#include "base/options.h"
#include "base/result.h"
#include "persistent/backend.h"

namespace pp::cmd {

inline constexpr const char* kRunDirHelp =
    "the broker's run directory (default: $PERF_PERSISTENT_RUN_DIR, else /run/perf-persistent)";

// The exit status for an error from persistent/ (persistent/backend.h).
int exit_status_of(const Error& error);

// Prints `error` for `verb` and returns its exit status.
int report_error(std::string_view verb, const Error& error, bool json);

// A bad command line: the message and the usage (text), exit status 1.
int report_usage_error(std::string_view verb, const Error& error, const OptionParser& options,
                       bool json);

// The options for make_backend(): the run directory, and how to start the
// broker (this very program's `daemon`) when `start_broker`.
persistent::BackendOptions backend_options(const std::string& run_dir, bool start_broker);

}  // namespace pp::cmd

// What the persistent-event verbs (list, create, kill, daemon) share: the
// --run-dir option, the backend they talk to, and how an error ends them:
// "perf persistent VERB: message" on stderr, or under --json the one error
// shape (base/json.h) on stdout,
//
//   {"error": {"kind": "name-taken", "exit_status": 3, "errno": "EEXIST", "message": "..."}}
//
// with the exit status of the error's kind either way.
#pragma once

#include <cerrno>
#include <string>
#include <string_view>

#include "base/options.h"
#include "base/result.h"
#include "persistent/backend.h"

namespace pp::cmd {

inline constexpr const char* kRunDirHelp =
    "the broker's run directory (default: $PERF_PERSISTENT_RUN_DIR, else /run/perf-persistent)";

// Prints `error` for `verb` and returns its exit status (its kind's).
int report_error(std::string_view verb, const Error& error, bool json);

// The output's reader went away (EPIPE writing it: `... | head`): the end a
// user asked for, which a verb ends quietly with status 0.
inline bool reader_went_away(const Error& error) {
  return error.kind() == ErrorKind::kOutput && error.code() == EPIPE;
}

// A bad command line: the message and the usage (text); a usage error.
int report_usage_error(std::string_view verb, const Error& error, const OptionParser& options,
                       bool json);

// The options for make_backend(): the run directory, and how to start the
// broker (this very program's `daemon`) when `start_broker`.
persistent::BackendOptions backend_options(const std::string& run_dir, bool start_broker);

}  // namespace pp::cmd

// A daemon's log file on its stdout and stderr, kept to a size: when it is
// full it moves to <path>.1 (replacing the one before) and a new <path>
// takes its place, so at most twice the limit is kept on disk.
//
//   PP_ASSIGN_OR_RETURN(uint64_t size, rotate_log_if_over(log_path, 4 << 20));
//   ... stderr is <log_path>, opened O_APPEND ...
//   PP_RETURN_IF_ERROR(rotate_log(log_path));                   // when full
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace pp::sys {

// Moves `path` to `path`.1 and points stdout and stderr at a new, empty
// `path` (mode 0600, appended to).
Status rotate_log(const std::string& path);

// Moves `path` to `path`.1 when it holds more than `max_bytes`: the bytes
// `path` holds now (0 when moved or missing).
Result<uint64_t> rotate_log_if_over(const std::string& path, uint64_t max_bytes);

}  // namespace pp::sys

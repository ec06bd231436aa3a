// A path made absolute against the current directory, for what outlives
// it: the detached broker changes to / (sys::Detached), so `daemon
// --config ./perf-persistent.conf` must be /home/me/perf-persistent.conf
// before it does.
//
//   PP_ASSIGN_OR_RETURN(std::string p, sys::absolute_path("run/x"));  // "/home/me/run/x"
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace pp::sys {

// `path` when it is absolute or empty; else the current directory, "/",
// and `path` (lexically: no link is followed, "." and ".." are kept).
Result<std::string> absolute_path(std::string_view path);

}  // namespace pp::sys

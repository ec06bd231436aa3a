// A whole input file that a command names on its command line, or standard
// input when the name is "-": a kernel log for `decode --log`, a pstore dump
// for watch's harvest. Bounded, so that a huge file is refused with a hint
// instead of filling memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace pp::sys {

// The text of `path`, or of standard input when `path` is "-". `what` names
// the input in errors ("the log"): "cannot open the log /x: No such file or
// directory". A file over `limit` bytes is EFBIG, with the advice to give
// the part around the error.
Result<std::string> read_input(const std::string& path, std::string_view what,
                               size_t limit = size_t(256) << 20);

// When `path` was last modified (stat(2)'s st_mtim), in ns since the epoch:
// how old a file is that its writer rewrites on a schedule (watch's metrics
// file). ENOENT when it does not exist.
Result<uint64_t> modified_time_ns(const std::string& path);

}  // namespace pp::sys

// A whole input file that a command names on its command line, or standard
// input when the name is "-": a kernel log for `decode --log`, a pstore dump
// for watch's harvest. Bounded, so that a huge file is refused with a hint
// instead of filling memory.
#pragma once

#include <cstddef>
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

}  // namespace pp::sys

// The exit statuses cmd/ returns by name; every other status comes from an
// Error's kind through the one table, pp::kErrorKinds (base/result.h). Each
// man page's EXIT STATUS section lists the ones its verb uses.
#pragma once

#include "base/result.h"

namespace pp::cmd {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = exit_status_of(ErrorKind::kUsage);
inline constexpr int kExitNotFound = exit_status_of(ErrorKind::kNotFound);
inline constexpr int kExitInternal = exit_status_of(ErrorKind::kInternal);

}  // namespace pp::cmd

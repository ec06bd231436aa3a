// Exit statuses shared by every verb, named for cmd/. The statuses come from
// the one table, pp::kErrorKinds (base/result.h): an Error's kind decides its
// status. Each man page's EXIT STATUS section lists the ones its verb uses.
#pragma once

#include "base/result.h"

namespace pp::cmd {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = exit_status_of(ErrorKind::kUsage);
inline constexpr int kExitRefused = exit_status_of(ErrorKind::kRefused);
inline constexpr int kExitNameTaken = exit_status_of(ErrorKind::kNameTaken);
inline constexpr int kExitNotFound = exit_status_of(ErrorKind::kNotFound);
inline constexpr int kExitOutput = exit_status_of(ErrorKind::kOutput);
inline constexpr int kExitCommand = exit_status_of(ErrorKind::kCommand);
inline constexpr int kExitInternal = exit_status_of(ErrorKind::kInternal);

}  // namespace pp::cmd

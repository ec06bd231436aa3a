// Exit statuses shared by every verb; each man page's EXIT STATUS section
// lists the ones its verb uses.
#pragma once

namespace pp::cmd {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 1;        // bad option, bad event string, bad name
inline constexpr int kExitRefused = 2;      // the kernel or the broker refused (errno explained)
inline constexpr int kExitNameTaken = 3;    // create: the name is in use
inline constexpr int kExitNotFound = 4;     // no such persistent event
inline constexpr int kExitOutput = 5;       // record: the output failed (disk full...)
inline constexpr int kExitNoCommand = 127;  // record: COMMAND could not be run

}  // namespace pp::cmd

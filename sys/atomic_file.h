// Replacing a file so that a crash at any instant leaves either the old
// content or the new one, never a mix or an empty file: the broker's state
// (<run-dir>/state.json) and everything it publishes under <run-dir>/devices/.
//
//   write_file_atomically("/run/perf-persistent/state.json", text, 0600);
//
// Steps: write <path>.tmp.<pid> (created with `mode`, O_EXCL), fsync it,
// rename it over <path>, fsync the directory. The temporary file is removed
// when any step fails.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "base/result.h"

namespace pp::sys {

// kSync survives a crash of the machine; kNoSync only makes the replacement
// atomic for readers (no fsync), for files derived from others and rebuilt at
// start, such as the broker's published registry on tmpfs.
enum class Durability { kSync, kNoSync };

Status write_file_atomically(const std::string& path, std::string_view content, mode_t mode,
                             Durability durability = Durability::kSync);

// Removes `path` and, with kSync, fsyncs its directory; a missing file is not
// an error.
Status remove_file_durably(const std::string& path, Durability durability = Durability::kSync);

// fsync of a directory, after changing several of its entries.
Status sync_directory(const std::string& dir);

// Creates `path` and its missing parents with `mode` (existing ones are left
// as they are).
Status make_directories(const std::string& path, mode_t mode);

}  // namespace pp::sys

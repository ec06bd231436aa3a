// Replacing a file so that a crash at any instant leaves either the old
// content or the new one, never a mix or an empty file: the broker's state
// (<run-dir>/state.json) and everything it publishes under <run-dir>/devices/.
//
//   write_file_atomically("/run/perf-persistent/state.json", text, 0600);
//
// Steps: write .<name>.tmp.<pid> beside it (created with `mode`, O_EXCL),
// fsync it, rename it over <path>, fsync the directory. The temporary file
// is removed when any step fails. Its name starts with '.', so a reader
// that lists the directory for what it holds (the published registry's
// events/, node_exporter's *.prom) never takes it for a file of its own:
// temporary_of() names it.
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

// The temporary write_file_atomically() writes `path` through, for this
// process: "dir/.name.tmp.<pid>".
std::string temporary_of(const std::string& path);

// Whether a directory entry's name is such a temporary (of any process):
// ".<name>.tmp.<decimal pid>".
bool is_temporary_name(std::string_view name);

// Removes `path` and, with kSync, fsyncs its directory; a missing file is not
// an error.
Status remove_file_durably(const std::string& path, Durability durability = Durability::kSync);

// fsync of a directory, after changing several of its entries.
Status sync_directory(const std::string& dir);

// Creates `path` and its missing parents with `mode` (existing ones are left
// as they are).
Status make_directories(const std::string& path, mode_t mode);

// rename(2) of a file or a directory: "cannot rename FROM to TO".
Status rename_path(const std::string& from, const std::string& to);

// Removes `path` and, when it is a directory, everything under it (symbolic
// links are removed, never followed); a missing path is not an error.
Status remove_tree(const std::string& path);

// Sets the permission bits of `path` (chmod(2): a symbolic link is
// followed) to `mode`, whatever the umask: "cannot set the mode of PATH".
Status set_mode(const std::string& path, mode_t mode);

// Makes sure `path` is a regular file of this process's euid that only it
// may read or write: created 0600 when missing; an existing one of a wider
// mode is tightened to 0600 (its contents were open to others until now:
// the caller may say so; `tightened_from` gets the old mode, else 0). A
// symbolic link is not followed (O_NOFOLLOW): ELOOP; another user's file or
// anything but a regular file, EPERM. Each error names the path and what to do.
Status make_private_file(const std::string& path, const std::string& what,
                         mode_t* tightened_from = nullptr);

}  // namespace pp::sys

// The kernel's "a RAS daemon runs" gate: debugfs's ras/daemon_active
// (drivers/ras/debugfs.c). While any process holds that file open,
// ras_userspace_consumers() is true and the eMCA driver
// (drivers/acpi/acpi_extlog.c) traces each memory error as
// ras:extlog_mem_event instead of leaving it to the kernel log alone; with
// nobody holding it, the tracepoint stays silent whoever keeps it.
//
//   PP_ASSIGN_OR_RETURN(sys::Fd gate, sys::open_ras_daemon_active("/sys"));
//   // ... held while an event keeps ras:extlog_mem_event; closing it is the release
#pragma once

#include <string>

#include "base/result.h"
#include "sys/fd.h"

namespace pp::sys {

// <sysfs_root>/kernel/debug/ras/daemon_active, relative to the sysfs root.
inline constexpr const char* kRasDaemonActive = "kernel/debug/ras/daemon_active";

// Opens <sysfs_root>/kernel/debug/ras/daemon_active read-only (the kernel
// counts openers; nothing is read). ENOENT when debugfs is not mounted or
// the kernel has no CONFIG_RAS, with a message naming the file and what to do.
Result<Fd> open_ras_daemon_active(const std::string& sysfs_root);

}  // namespace pp::sys

// The EventResolver that every real create uses: parse/ over a pmu::Model
// loaded from the system's roots, so `create -e` accepts exactly what
// `perf record -e` accepts (and persistent/ never builds an attr itself).
#pragma once

#include <memory>
#include <string>

#include "persistent/create.h"

namespace pp::persistent {

// The model is loaded at each resolve(): tracefs gains events when a module
// loads, and the broker runs for months. `tracefs_root` "" means the
// system's. The broker's published persistent PMU is left out of the model:
// create never takes a persistent event, and a persistent event named after
// its tracepoint (sys_enter_getppid) must not change how that tracepoint's
// own string (syscalls:sys_enter_getppid) parses.
std::unique_ptr<EventResolver> make_parser_resolver(std::string sysfs_root,
                                                    std::string tracefs_root);

}  // namespace pp::persistent

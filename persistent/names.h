// Names of persistent events, and how a command-line reference (`kill 7`,
// `kill ctxsw`) finds its event.
//
// A name is 1 to 64 characters from [A-Za-z0-9_.-] that starts with a letter
// or '_', and `persistent/NAME/` must mean that event and nothing else: so a
// name is never a number, never an option (-x), never a hidden file (.x),
// never a term of the event grammar (config, period, name, call-graph, ...)
// nor the persistent PMU's own format term (persistent). A name of digits
// only is reserved for the event's own id (the default name of an event that
// is not a tracepoint, as the kernel names a detached event after its id): so
// a reference of digits only is always an id, and any other reference is
// always a name. `kill 7` kills the event with id 7, never an event someone
// named "7".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "persistent/event.h"

namespace pp::persistent {

inline constexpr size_t kMaxNameLength = 64;

// Whether `text` is a decimal id: one or more digits, nothing else.
bool is_id_reference(std::string_view text);

// Checks a name chosen with `create --name`; a usage error (EINVAL) explains
// the rule.
Status validate_name(std::string_view name);

// Whether `name` can be a file name in the run directory: the characters and
// length of the rule above, not "." or "..". Weaker than validate_name(): a
// registry saved by an older broker may hold names the rule now refuses, and
// they stay usable by id.
bool is_safe_file_name(std::string_view name);

// The name an event gets when create has no --name: a tracepoint's event
// name ("syscalls:sys_enter_getppid" -> "sys_enter_getppid", as the kernel
// names mce_record), else the id.
std::string default_name(std::string_view tracepoint, uint64_t id);

// The event `reference` names among `events`, by id or by name as above. An
// id matches an event's id or, in the kernel backend, any of its per-CPU ids.
// not-found (ENOENT): "no persistent event 'x'; see 'perf persistent list'".
Result<const EventInfo*> find_event(const std::vector<EventInfo>& events,
                                    std::string_view reference);

// The not-found error (ENOENT) for a reference that matches nothing.
Error not_found(std::string_view reference);

}  // namespace pp::persistent

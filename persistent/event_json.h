// EventInfo as JSON: one schema for `list --json`, the broker's replies and
// its state file, so what a script reads is what the broker sent. Keys are
// stable; counts, ids and sizes are numbers, the attr's words (bit patterns)
// "0x..." strings (base/json.h); times are unix seconds.
//
//   {"id": 1, "name": "sys_enter_getppid", "event": "syscalls:sys_enter_getppid",
//    "backend": "broker", "state": "running", "cpus": [0, 1], "pages": 128,
//    "page_size": 4096, "buffer_bytes": 524288, "layout": "backward", "filter": "",
//    "created": 1733150000, "buffer_start": 1733150000, "restarted": false,
//    "creator": {"uid": 0, "pid": 4242}, "attr": ["0x8000000002", "0x4d2", ...17 words...],
//    "role": "event", "context": 1099511627776,
//    "counts": [{"cpu": 0, "count": 1000}, ...], "readers": 0}
//
// "role" is "context" for a context stream (persistent/tracking.h), whose
// "context" is null; an event's "context" is the id of the stream that keeps
// its context, null when it was created with --no-context.
// "error" appears only when state is "failed"; "cpu_ids" only for the kernel
// backend; "counts" and "readers" only from a verbose list ("readers" is null
// where the backend cannot count readers). "attr" holds the 17 u64 words of
// struct perf_event_attr (the N of a sysfs format's attrN); a reader takes numbers
// too, as state files written before the words became strings hold them.
#pragma once

#include "base/json.h"
#include "base/result.h"
#include "persistent/event.h"

namespace pp::persistent {

json event_to_json(const EventInfo& event);

// Strict: every type is checked; EINVAL names the field. `what` names the
// document in errors ("the broker's reply", "/run/perf-persistent/state.json").
Result<EventInfo> event_from_json(const json& value, std::string_view what);

}  // namespace pp::persistent

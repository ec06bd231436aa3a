// How `perf persistent list` shows the registry, to a stream it is given.
//
// Text, one line per event, columns separated by two spaces:
//
//   ID  NAME               EVENT                       CPUS  BUFFER  BACKEND  AGE
//   1   sys_enter_getppid  syscalls:sys_enter_getppid  0-1   512KiB  broker   3m12s
//
// -v adds the context streams (persistent/tracking.h; EVENT "context
// stream"), CONTEXT (the name of the event's context stream, "-" for none),
// READERS (connected readers; "-" where the backend cannot tell), KEPT
// ("yes" when the keeper holds its buffers across broker restarts, "-"
// where the backend has none) and COUNTS ("0:1000,1:3": CPU:count, events
// counted since the buffers started).
// An empty registry prints the header only. AGE is since the event was
// created; "*" marks an event whose buffers restarted later (a broker
// restart) and a note says when and why; BUFFER is "failed" for an event
// the broker could not create or re-create, "n/a" for an optional one
// (state "unavailable"), each with the reason in a note. Notes go to their own
// stream (stderr), so the table stays clean for scripts.
//
// JSON: {"events": [<event_to_json()>...]} on one line (persistent/event_json.h);
// the context streams ("role": "context") only when verbose. When the broker
// is down: BUFFER "down" for each event its registry holds (state "down"),
// and in JSON "broker": "down" and "error": <error_object()> beside them.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "persistent/backend.h"
#include "persistent/event.h"

namespace pp::persistent {

void print_list_text(std::ostream& out, std::ostream& notes, const std::vector<EventInfo>& events,
                     bool verbose, int64_t now);
void print_list_json(std::ostream& out, const std::vector<EventInfo>& events, bool verbose = false,
                     const Error* broker_down = nullptr);

// kill's report: {"killed": [<event_to_json()>...], "errors": [{"ref": REF,
// "error": <error_object()>}...], "exit_status": N}, on one line.
void print_kill_json(std::ostream& out, const KillReport& report);

// One event as `create` and `kill` confirm it: "1 sys_enter_getppid".
void print_event_line(std::ostream& out, const EventInfo& event);

// "45s", "3m12s", "2h05m", "3d04h"; "-" for a negative age (unknown).
std::string format_age(int64_t seconds);
// "512KiB", "4MiB", "1536B".
std::string format_bytes(uint64_t bytes);

}  // namespace pp::persistent

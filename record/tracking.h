// The context streams a recording reads beside its events
// (persistent/tracking.h): each recorded event that has one names it, and its
// COMM, FORK, EXIT and MMAP2 records go into perf.data with the samples,
// under an attr of their own with the stream's ids, so perf names tasks that
// exited long before the recording started. Read like any persistent event:
// the same backend open, read-only mapping and ring reader, from the oldest
// record with --snapshot, from now otherwise, as the samples are.
#pragma once

#include <ostream>
#include <vector>

#include "base/result.h"
#include "persistent/backend.h"
#include "record/events.h"

namespace pp::record {

// The context streams `events` name, once each, as events to attach to: their
// CPUs are those of `events` that the stream covers, their name perf's
// tracking event's (kContextName). A stream that is gone or failed is left
// out with a line on `notes` (perf then names only the tasks still alive).
Result<std::vector<ResolvedEvent>> context_events(const std::vector<ResolvedEvent>& events,
                                                  persistent::Backend& backend,
                                                  std::ostream& notes);

// Whether every event in `events` that could use a context stream
// has one among `contexts`: then the reader opens no tracking event of its own.
bool contexts_cover(const std::vector<ResolvedEvent>& events,
                    const std::vector<ResolvedEvent>& contexts);

// The name the context streams' attr has in perf.data (perf record's
// tracking event is a dummy event too).
inline constexpr const char* kContextName = "dummy:HG";

}  // namespace pp::record

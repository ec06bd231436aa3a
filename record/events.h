// The persistent events a reader names, resolved once: record, and later top
// and a live report, take the same -e and -C and must agree on what they
// mean.
//
//   -e persistent/ctxsw/ -> parse/ (through pmu/'s persistent PMU, kernel
//   sysfs or the broker's run dir) -> attr{type, config = id} -> the event
//   the backend lists with that id: its attr (how its records are laid
//   out), the name perf shows ("sched:sched_switch") and the CPUs to read.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "base/result.h"
#include "persistent/backend.h"
#include "pmu/model.h"
#include "sys/clock.h"
#include "sys/perf_attr.h"

namespace pp::record {

// One persistent event to read.
struct ResolvedEvent {
  persistent::EventInfo info;  // as the backend lists it
  std::string text;            // as the user named it: "persistent/mce_record/"
  std::string name;            // what perf shows: "mce:mce_record"
  std::vector<int> cpus;       // the CPUs to read
};

// Resolves each -e string (a comma list may name several events) against
// what `backend` lists, and `cpus` (a -C list, "" for every CPU an event
// covers) against each event's CPUs. Fails (EINVAL or ENOENT, with a message
// that says what to do) on an event that is not persistent, not running,
// has no known attr, is named twice, or has no buffer on a CPU asked for;
// on several events whose records carry no sample id, not even once
// completed (a lean event's are: persistent/sample_layout.h), as one file could not
// tell them apart, or whose clocks differ (`one_file` false: a reader that
// keeps each buffer's records apart, as top does, takes them). `notes` gets
// lines for the user that are not errors (an event whose buffers restarted
// with the broker).
Result<std::vector<ResolvedEvent>> resolve_events(const std::vector<std::string>& events,
                                                  const std::string& cpus, const pmu::Model& model,
                                                  persistent::Backend& backend, std::ostream& notes,
                                                  bool one_file = true);

// How the events' sample times become wall-clock times: their own clock
// (use_clockid, the same for every event), read now beside CLOCK_REALTIME
// (sys::read_clock_pair); nullopt when they have none, or not one clock
// (perf's default clock cannot be converted). Read it again to follow a
// wall clock that was stepped (NTP at boot).
std::optional<sys::ClockPair> wall_clock_for(const std::vector<ResolvedEvent>& events);

// Whether records of `attr`, once completed (persistent::completed_attr()),
// carry the sample id (PERF_SAMPLE_IDENTIFIER or PERF_SAMPLE_ID), which
// tells events apart in one file: a lean event's readers add the id of the
// buffer each record came from.
bool has_sample_id(const sys::EventAttr& attr);

}  // namespace pp::record

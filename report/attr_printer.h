// What `perf persistent attr` prints: for each event its attr block (as
// `perf stat -vv` prints it; the field table and the block renderer are
// sys/perf_abi_attr.h) and a line about the event, or the same as JSON.
// The events come in as ListedEvent, filled from the event parser's
// results by the caller, so this printer needs nothing above sys/.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "sys/perf_abi_attr.h"
#include "sys/perf_attr.h"

namespace pp::report {

// One event of an event string as the parser resolved it: its attr and
// what lives beside the attr (see parse::EventSpec for each field).
struct ListedEvent {
  sys::EventAttr attr;
  std::string name;
  std::string pmu;
  std::string tracepoint;  // "sys:event", or "" when not a tracepoint
  int leader = 0;          // index of its group leader (its own when alone)
  std::string group_name;
  std::vector<int> cpus;  // [] = all
  std::string text;
  // The terms written in the event string, in perf's spelling, as
  // parse::written_terms() gives them: a number, a string, true for a
  // flag term ("inherit"), or a list of strings (driver-config).
  std::vector<std::pair<std::string, nlohmann::ordered_json>> terms;
  std::string unit;
  double scale = 1.0;
  bool per_pkg = false;
  bool snapshot = false;
  bool uncore = false;
  bool sample_read = false;
  bool precise_max = false;
  bool weak_group = false;
};

// The attr as JSON. Every field is present, zero or not, under its C name
// (sys::AttrField::json_name), counts as JSON numbers, registers and bit masks (the
// "%#llx" fields: config words, sample_regs_*; and sample_type, read_format,
// branch_sample_type) as "0x..." strings; the unions are split:
//   "sample_period" / "sample_freq"       (by the freq bit; the other is 0)
//   "wakeup_events" / "wakeup_watermark"  (by the watermark bit)
//   "config1" and "config2" are bp_addr and bp_len for breakpoints
// plus "sample_type_names", "read_format_names" and
// "branch_sample_type_names" (arrays of perf's flag names, unnamed bits as
// "0x..." strings), and "words": the 17 u64 words of the struct as "0x..."
// strings, word 16 being config3. Documentation/perf-persistent-attr.txt has the schema.
nlohmann::ordered_json attr_json(const sys::EventAttr& attr);

// What `perf persistent attr` prints for each event: its attr block, then one
// line with its name, its group leader (an event outside any group leads
// itself), the group's name when it has one, its PMU, and what lives beside
// the attr (terms applied at open, modifiers S, P, W):
//
//   event 1: task-clock:u, group leader 0 (cpu-clock:u), group mygrp, pmu software
//   event 2: cpu-clock/call-graph=fp/, group leader 2 (itself), pmu software, terms call-graph=fp
void print_events(std::ostream& out, std::span<const ListedEvent> events);

// {"events": [...]}: per event, in order,
//   "index", "name", "leader" (index), "group" (name or null), "pmu",
//   "tracepoint" (or null), "cpus" ([] = all), "text", "unit", "scale",
//   "per_pkg", "snapshot", "uncore", "sample_read", "precise_max",
//   "weak_group", "terms" (only the terms written, by their perf names),
//   "attr" (attr_json()).
nlohmann::ordered_json events_json(std::span<const ListedEvent> events);

}  // namespace pp::report

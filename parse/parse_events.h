// Event strings, as `perf record -e TEXT` and `perf stat -e TEXT` read them
// (perf 6.1's parse-events), turned into the perf_event_attr of each event.
//
//   cycles,instructions:u                 symbolic events, modifiers
//   L1-dcache-load-misses                 the legacy cache family
//   r1a8  r0x1a8  4:0x1a8                 raw and numeric type:config
//   sched:sched_switch  sched:sched_*     tracepoints, with globs
//   mem:0x1000/8:rw                       breakpoints
//   cpu/event=0x3c,umask=0,period=1000/k  PMU terms (sysfs formats)
//   msr/tsc/  tsc  persistent/mce_record/ aliases from a PMU's events/
//   {cycles,instructions}:u  g{a,b}       groups, named groups
//
// The syntax, every term and modifier, and the deliberate differences from
// perf 6.1 are in Documentation/perf-persistent-event-syntax-common.txt.
//
// Pure: every name is resolved through the pmu::Model (PMUs, formats,
// aliases, tracepoints); nothing here reads a file or calls the kernel.
//
// Built as perf builds it: parse/lexer.h (parse-events.l), parse/grammar.h
// (parse-events.y, into the located tree of parse/ast.h), then resolution
// per event family (parse/resolver.h lists the files), with the PMU formats
// applied by pmu/config.h (perf's perf_pmu__config).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "pmu/model.h"
#include "sys/perf_attr.h"

namespace pp::parse {

// The terms perf keeps beside the attr and applies when it opens the event
// (its evsel config terms). Terms an alias brings in are weak: a command-line
// option (-c, -F) overrides them, a term the user wrote does not.
struct ConfigTerms {
  std::optional<uint64_t> period;  // period=N   (also in attr.sample_period)
  std::optional<uint64_t> freq;    // freq=N     (also in attr.sample_freq, attr.freq)
  bool period_weak = false, freq_weak = false;
  std::optional<bool> time;                 // time=0|1: PERF_SAMPLE_TIME off or on
  std::optional<std::string> call_graph;    // call-graph=fp|dwarf|lbr|no
  std::optional<uint64_t> stack_size;       // stack-size=N (dwarf call graphs)
  std::optional<uint64_t> max_stack;        // max-stack=N
  std::optional<uint64_t> max_events;       // nr=N
  std::optional<bool> inherit;              // inherit, no-inherit
  std::optional<bool> overwrite;            // overwrite, no-overwrite (write_backward)
  std::optional<std::string> branch_type;   // branch_type=any|u|k|...|no
  std::optional<bool> percore;              // percore=0|1
  std::optional<bool> aux_output;           // aux-output
  std::optional<uint64_t> aux_sample_size;  // aux-sample-size=N
  std::vector<std::string> driver_config;   // @cfg, @key=value
  std::string metric_id;                    // metric-id=NAME
};

struct EventSpec {
  sys::EventAttr attr;     // what perf's parse-events decides: type, config,
                           // config1/bp_addr, config2/bp_len, config3, bp_type,
                           // exclude_* (exclude_guest = 1 unless a modifier says
                           // otherwise, as perf 6.1), precise_ip, pinned,
                           // exclusive, sample_period/freq and freq from terms,
                           // branch_sample_type; tracepoints: sample_type
                           // RAW|TIME|CPU|PERIOD and sample_period 1, as perf;
                           // breakpoints: sample_period 1. attr.size = 128, or
                           // 136 when config3 is written.
  std::string name;        // the name perf gives the evsel (perf stat/script)
  std::string pmu;         // "hardware", "software", "hw_cache", "raw",
                           // "tracepoint", "breakpoint", or the sysfs PMU's name
                           // ("persistent", "msr", ...); for type:config, the
                           // name of the PMU of that type, else the type number
  std::string tracepoint;  // "sys:event" for tracepoints, else ""
  int leader = 0;          // index of its group leader in the returned vector
                           // (its own index when leader or ungrouped)
  std::string group_name;  // for name{...} groups: the name, on every member
  std::vector<int> cpus;   // the PMU's cpumask when it has one, else empty
                           // (= all online CPUs)
  std::string text;        // the source text this event came from

  ConfigTerms terms;         // period, freq, call-graph, ... as written
  std::string unit;          // from the alias's .unit, "" when none
  double scale = 1.0;        // from the alias's .scale
  bool per_pkg = false;      // the alias has .per-pkg
  bool snapshot = false;     // the alias has .snapshot
  bool uncore = false;       // the PMU has a cpumask: perf counts it system-wide
  bool sample_read = false;  // modifier S
  bool precise_max = false;  // modifier P
  bool weak_group = false;   // modifier W
  bool bpf_counter = false;  // modifier b
};

// Parses a comma-separated event list as `perf stat -e TEXT` would. On error:
// kind usage (not-found for a persistent event that does not exist), code
// EINVAL (ENOENT for a PMU, tracepoint or persistent event that does not
// exist), and a message in perf's caret form, one block per error, in order:
//
//   event syntax error: 'msr/umsk=1/'
//                            \___ unknown term 'umsk' for PMU 'msr'
//   valid terms: event,config,config1,...
Result<std::vector<EventSpec>> parse_events(std::string_view text, const pmu::Model& model);

// What perf applies to an event's attr when it opens it
// (evsel__apply_config_terms), for the terms that live in the attr: period,
// freq, time, branch_type, inherit, overwrite, aux-output. Call it after
// filling in the command's own defaults (sample_type, inherit, ...).
// call-graph, stack-size and max-stack need the call-graph machinery of the
// command that opens the event and are left to it.
void apply_config_terms(const ConfigTerms& terms, sys::EventAttr* attr);

}  // namespace pp::parse

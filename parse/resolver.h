// Resolution: the located tree of parse/ast.h turned into the EventSpecs of
// parse/parse_events.h, as perf's parse-events.c does in the grammar's
// actions. Each event family resolves in its own file:
//
//   parse/legacy.cpp      cycles, cpu-clock (value_sym); L1-dcache-load-misses
//   parse/raw.cpp         r1a8, 4:0x1a8 (parse_events_add_numeric)
//   parse/breakpoint.cpp  mem:0x1000/8:rw
//   parse/tracepoint.cpp  sched:sched_switch, sched:sched_*, through the
//                         model's tracefs lookups
//   parse/pmu_event.cpp   cpu/event=0x3c/, aliases (tsc, persistent/ctxsw/),
//                         through the PMU's formats (pmu/config.h)
//   parse/terms.cpp       the static terms: period=, name=, call-graph=, ...
//   parse/modifiers.cpp   :u :k :p :G ... on an event or a group
//
// Internal to parse/: what parse_events() uses, not an interface for others.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "parse/ast.h"
#include "parse/parse_events.h"
#include "pmu/model.h"

namespace pp::parse {

// Every static term, for "valid terms" lists (perf's config_term_names).
inline constexpr std::string_view kStaticTerms =
    "config,config1,config2,config3,name,period,freq,branch_type,time,call-graph,stack-size,"
    "no-inherit,inherit,max-stack,nr,no-overwrite,overwrite,driver-config,percore,aux-output,"
    "aux-sample-size,metric-id";

// An event being built: its spec and what the modifiers and the attr size
// still need to know.
struct Evsel {
  EventSpec spec;
  bool exclude_gh = false;
  bool config3_used = false;
};

class Resolver {
 public:
  explicit Resolver(const pmu::Model& model) : model_(model) {}

  // Resolves the events of `list` in order, stopping at the first that fails.
  Status resolve(const ParsedList& list);

  std::vector<Evsel>& events() { return out_; }
  // The diagnostics of the failure resolve() returned, in order.
  const std::vector<Diagnostic>& errors() const { return errors_; }

 private:
  Status resolve_def(const EventDef& def);

  // Every resolution error is made here.
  Error fail(size_t col, int code, std::string message, std::string help = {},
             ErrorKind kind = ErrorKind::kUsage);
  Error unknown_word(const Word& word);

  // --- shared by the families (parse/terms.cpp) ---
  Evsel& new_evsel(std::string pmu_label);
  Status apply_static_term(const Term& t, sys::EventAttr* attr, bool* config3_used,
                           std::string_view what);
  void finish_evsel(Evsel& e, const std::vector<Term>& terms);
  Status add_numeric(uint32_t type, uint64_t config, const std::vector<Term>& terms,
                     std::string_view what);

  // --- the families ---
  Status add_symbol(const EventDef& def);       // parse/legacy.cpp
  Status add_cache(const EventDef& def);        // parse/legacy.cpp
  Status add_raw(const EventDef& def);          // parse/raw.cpp
  Status add_type_config(const EventDef& def);  // parse/raw.cpp
  Status add_breakpoint(const EventDef& def);   // parse/breakpoint.cpp

  // parse/tracepoint.cpp
  Status add_tracepoints(const EventDef& def);
  Status add_tracepoint_event(size_t col, const std::string& sys, const std::string& event,
                              const std::vector<Term>& terms);
  Status add_tracepoint(size_t col, const std::string& sys, const std::string& event,
                        const std::vector<Term>& terms);
  Error tracepoint_error(size_t col, const std::string& sys, const std::string& event,
                         const Error& error);

  // parse/pmu_event.cpp
  Status add_pmu_event(const EventDef& def);
  Status add_alias_everywhere(const EventDef& def);
  Status add_pmu(const pmu::PmuEntry& entry, const std::vector<Term>& terms, size_t col);
  Error no_persistent_event(const pmu::Pmu& pmu, const std::string& name, size_t col);

  // parse/modifiers.cpp: the modifiers on events [first, end).
  Status apply_modifiers(size_t first, const Word& mods, bool group);

  const pmu::Model& model_;
  std::vector<Evsel> out_;
  std::vector<Diagnostic> errors_;
};

}  // namespace pp::parse

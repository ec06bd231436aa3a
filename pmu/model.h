// The PMU and tracepoint model the event parser resolves names against: what
// perf reads from sysfs and tracefs, loaded once, with every root a parameter.
//
// For each PMU under <sysfs>/bus/event_source/devices/<pmu>/:
//
//   type                   "4\n"                    attr.type for its events
//   format/<term>          "config:0-7\n"           see pmu/format.h
//   events/<alias>         "event=0x3c,umask=0x00\n"  terms an alias stands for
//   events/<alias>.unit    "Joules\n"
//   events/<alias>.scale   "2.3283064365386962890625e-10\n"
//   events/<alias>.per-pkg, events/<alias>.snapshot   (present or not)
//   cpumask or cpus        "0-3\n"                  the CPUs its events count on
//
// The persistent PMU (the seed patch set) is looked up there first; when the
// kernel has none, in <broker_run_dir>/devices/persistent/, which the broker
// publishes in the same layout:
//
//   type                   "6\n"
//   format/persistent      "attr5:23\n"
//   events/mce_record      "persistent,config=106\n"
//
// Tracepoints: <tracefs>/events/<system>/<event>/id holds attr.config.
//
// Nothing malformed is silently ignored: a PMU, format or alias that cannot be
// used keeps the Error that says why (naming the file), and the parser reports
// it when an event names that PMU, term or alias. A missing or unreadable
// broker directory is simply "no broker PMU".
//
// Pure data once built: the parser asks the model and never touches files,
// except tracepoint lookups, which read tracefs on demand (a machine has
// thousands). Model::in_memory() builds one with no files at all, for tests and
// fuzzers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/result.h"
#include "pmu/format.h"
#include "sys/tree.h"

namespace pp::pmu {

struct Roots {
  std::string sysfs = "/sys";                           // <sysfs>/bus/event_source/devices/<pmu>/
  std::string tracefs;                                  // "" means sys::default_tracefs_root()
  std::string broker_run_dir = "/run/perf-persistent";  // <dir>/devices/persistent/
};

// Where the event source devices live under the sysfs root.
inline constexpr const char* kDevicesDir = "bus/event_source/devices";
inline constexpr const char* kPersistentPmu = "persistent";

// format/<name>: a format file, parsed, or the reason it cannot be used.
struct FormatFile {
  std::string name;  // the term it defines: "event", "umask", "persistent"
  std::string path;  // the file, for messages
  Format format;     // valid when !problem
  std::optional<Error> problem;
};

// events/<name>: an alias for a list of terms.
struct Alias {
  std::string name;
  std::string terms;       // the file, trimmed: "event=0x3c,umask=0x00"
  std::string path;        // the file, for messages
  std::string unit;        // <name>.unit, "" when there is none
  double scale = 1.0;      // <name>.scale
  bool has_unit = false;   // <name>.unit exists
  bool has_scale = false;  // <name>.scale exists
  bool per_pkg = false;    // <name>.per-pkg exists
  bool snapshot = false;   // <name>.snapshot exists
  std::optional<Error> problem;
};

struct Pmu {
  std::string name;
  uint32_t type = 0;
  std::string path;                 // its directory, for messages
  bool from_broker = false;         // read from the broker's run directory
  bool is_uncore = false;           // has a cpumask file (perf counts these system-wide)
  std::vector<int> cpus;            // from cpumask or cpus; empty: every online CPU
  std::vector<FormatFile> formats;  // sorted by name
  std::vector<Alias> aliases;       // sorted by name

  const FormatFile* find_format(std::string_view term) const;
  // Case-insensitive, as perf matches aliases.
  const Alias* find_alias(std::string_view name) const;
};

// A PMU directory: the PMU, or why it cannot be used (no type, bad cpumask).
struct PmuEntry {
  std::string name;
  std::optional<Pmu> pmu;
  std::optional<Error> problem;
};

// One tracepoint, for Model::in_memory().
struct Tracepoint {
  std::string system, event;
  uint64_t id = 0;
};

// How the event lexer sees a bare word, as perf's perf_pmu__parse_check()
// does: the full name of some PMU's alias ("tsc"), or the part before or
// after the first '-' of an alias with one ("mem-loads": "mem", "loads").
enum class AliasSymbol { kNone, kEvent, kPrefix, kSuffix };

class Model {
 public:
  // Reads every PMU under the sysfs root, and the broker's persistent PMU
  // when the kernel has none. Fails only when a root that must exist does
  // not (the sysfs root; the tracefs root when one was given).
  static Result<Model> load(const Roots& roots);

  // A model with no files behind it: these PMUs (in this order) and these
  // tracepoints (events of a system in this order).
  static Model in_memory(std::vector<PmuEntry> pmus, std::vector<Tracepoint> tracepoints);

  // Every PMU directory, in the order the kernel lists them.
  const std::vector<PmuEntry>& pmus() const { return pmus_; }
  // The PMU directory called `name` exactly, or nullptr.
  const PmuEntry* find_pmu(std::string_view name) const;
  // The usable PMU whose type is `type`, or nullptr.
  const Pmu* find_pmu_by_type(uint32_t type) const;

  AliasSymbol alias_symbol(std::string_view word) const;

  // Tracepoints. ENOENT when there is no such tracepoint (or system); the
  // message names the file that is missing.
  Result<uint64_t> tracepoint_id(std::string_view system, std::string_view event) const;
  // The systems under events/, in directory order, without the files
  // enable, header_event and header_page.
  Result<std::vector<std::string>> tracepoint_systems() const;
  // The events of a system, in directory order, without enable and filter.
  Result<std::vector<std::string>> tracepoint_events(std::string_view system) const;
  // For messages: "<tracefs>/events/<relative>".
  std::string tracefs_events_path(std::string_view relative) const;

  const std::string& tracefs_root() const { return tracefs_root_; }
  const std::string& broker_run_dir() const { return broker_run_dir_; }
  const std::string& sysfs_root() const { return sysfs_root_; }

 private:
  Model() = default;
  void index_aliases();

  std::vector<PmuEntry> pmus_;
  std::unordered_map<std::string, AliasSymbol> symbols_;  // lower-case keys
  std::optional<sys::Tree> tracefs_;                      // when loaded from files
  std::vector<Tracepoint> tracepoints_;                   // when in memory
  std::string tracefs_root_;
  std::string broker_run_dir_;
  std::string sysfs_root_;
};

// Loads one PMU directory (`dir` relative to `tree`): what Model::load() does
// for each, exposed for tests. `name` is the PMU's name.
PmuEntry load_pmu(const sys::Tree& tree, std::string_view dir, std::string_view name);

// A PMU built in memory for Model::in_memory(), from what its files would
// hold: formats {"event", "config:0-7"}, aliases {"tsc", "event=0x00"}. A
// format that does not parse keeps its Error, as load() would.
using NamedText = std::pair<std::string, std::string>;
PmuEntry memory_pmu(std::string name, uint32_t type, const std::vector<NamedText>& formats,
                    const std::vector<NamedText>& aliases);

}  // namespace pp::pmu

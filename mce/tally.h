// Machine checks counted: the one model behind every summary of them
// (`report --summary`, `report --db --summary`, top's machine-check view).
// Each machine check counts once under its severity, its bank, its CPU,
// its socket and its error class; one text printer and one JSON printer
// show the counts, under the same names everywhere.
//
//   MceTally tally;
//   tally.add(decoded, sample_cpu);        // a decoded record
//   tally.add(MceTallyKey{...}, 12);       // or twelve alike, counted elsewhere
//   std::string text;
//   print_mce_tally_text(tally, MceTallyLayout::kBlocks, text);
//   nlohmann::ordered_json j = mce_tally_json(tally);
//
// The JSON object (every key always there; each list in the order of its
// key: severities mildest first, numbers ascending, names alphabetically;
// an unknown bank, CPU or socket is null and comes last):
//
//   {"records": 3,
//    "severities": [{"severity": "corrected", "count": 2}, {"severity": "fatal", "count": 1}],
//    "banks": [{"bank": 1, "count": 2}, {"bank": null, "count": 1}],
//    "cpus": [{"cpu": 0, "count": 3}],
//    "sockets": [{"socket": 0, "count": 3}],
//    "error_classes": [{"error_class": "cache", "count": 3}]}
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mce/decode.h"

namespace pp::mce {

// What a tally counts of one machine check. Severity and error class are
// the decoder's names (mce_severity_name(), mca_error_class_name()); a name
// the decoder does not know (a newer program's, read from a history) is
// counted under itself, after the known ones.
struct MceTallyKey {
  std::string severity;
  std::optional<uint32_t> bank, cpu, socket;
  std::string error_class;
};

// The groupings, in the order the printers show them.
enum class MceTallyGrouping { kSeverity, kBank, kCpu, kSocket, kErrorClass };
inline constexpr MceTallyGrouping kMceTallyGroupings[] = {
    MceTallyGrouping::kSeverity, MceTallyGrouping::kBank, MceTallyGrouping::kCpu,
    MceTallyGrouping::kSocket, MceTallyGrouping::kErrorClass};

// One count of a grouping: a name (severity, error class) or a number
// (bank, CPU, socket); neither when the record did not say.
struct MceTallyRow {
  std::optional<std::string> name;
  std::optional<uint32_t> number;
  uint64_t count = 0;
};

class MceTally {
 public:
  // `d` once: its CPU is the record's own (mce_record's cpu field), else
  // `record_cpu` (the CPU whose buffer held the record).
  void add(const MceDecoded& d, std::optional<uint32_t> record_cpu = std::nullopt);
  // `count` machine checks alike.
  void add(const MceTallyKey& key, uint64_t count = 1);
  void clear();

  uint64_t records() const { return records_; }
  bool empty() const { return records_ == 0; }
  // A grouping's counts, in printing order.
  std::vector<MceTallyRow> rows(MceTallyGrouping grouping) const;

 private:
  struct SeverityOrder {
    bool operator()(const std::string& a, const std::string& b) const;
  };
  struct UnknownLast {
    bool operator()(const std::optional<uint32_t>& a, const std::optional<uint32_t>& b) const;
  };
  using Numbers = std::map<std::optional<uint32_t>, uint64_t, UnknownLast>;

  uint64_t records_ = 0;
  std::map<std::string, uint64_t, SeverityOrder> severities_;
  Numbers banks_, cpus_, sockets_;
  std::map<std::string, uint64_t> error_classes_;
};

enum class MceTallyLayout {
  // A block per grouping under a '#' heading, the layout of report's
  // summaries; nothing for an empty tally:
  //
  //   #
  //   # 3 machine checks
  //   #
  //   # machine checks per severity
  //   #
  //   #    count  severity
  //            2  corrected
  //            1  fatal
  //   ...
  kBlocks,
  // A line per grouping, for a screen ("-" when there is nothing to count):
  //
  //   severity  corrected=2  fatal=1
  //   bank      1=2  ?=1
  //   ...
  kLines,
};

// Appends the tally's text, each line ending in '\n'; an unknown bank, CPU
// or socket is "?".
void print_mce_tally_text(const MceTally& tally, MceTallyLayout layout, std::string& out);

// The object above.
nlohmann::ordered_json mce_tally_json(const MceTally& tally);

}  // namespace pp::mce

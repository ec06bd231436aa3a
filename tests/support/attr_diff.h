// The differential test of the event parser against the real perf: reading
// what perf 6.1 and `perf-persistent attr --json` show for one event string,
// and saying how they differ.
//
// perf's side comes from its -vv output. For each perf_event_open attempt it
// prints an attr block, then the call and its result:
//
//   ------------------------------------------------------------
//   perf_event_attr:
//     type                             1
//     ...
//   ------------------------------------------------------------
//   sys_perf_event_open: pid 8155  cpu -1  group_fd 3  flags 0x8 = 4
//   sys_perf_event_open failed, error -2          (instead of "= 4")
//   switching off exclude_guest, exclude_host     (a retry of the same event)
//
// and perf stat then names each counter, in event order, with either
//
//   cpu-clock:u: 729799 733836 733836             (read)
//   failed to read counter cycles                 (not opened or not read)
//
// The corpus (tests/diff/corpus.txt) holds one case a line:
//
//   stat    cpu-clock:u                         compare with perf stat -vv
//   record  cpu-clock/period=1000/              compare with perf record -vv
//   expect  persistent/mce_record/ => type=1003 config=0x6a mmap2=1 name=... leader=0
//   reject  krava/krava01=1,krava01=2/ => message part
//
// `expect` and `reject` are for what perf 6.1 cannot show (attr<index> and
// config3 formats) or where perf-persistent differs on purpose; an
// expectation lists each event's fields (attr JSON names, `word<N>` for a
// whole u64 word, `name`, `leader`), events separated by " ; ".
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sys/perf_attr.h"

namespace pp::testing {

// One event as a tool showed it.
struct ShownEvent {
  sys::EventAttr attr;
  std::optional<std::string> name;  // perf stat names its counters; record does not
  int leader = -1;                  // index of its group leader (itself when alone); -1 unknown
};

struct Shown {
  bool rejected = false;  // the tool refused the string: no event
  std::string message;    // the refusal, for the report
  std::vector<ShownEvent> events;
  // perf gave up after a failed open (a group leader it could not open): the
  // events after the last one shown are not known.
  bool stopped_early = false;
  // perf switched off exclude_guest/exclude_host for every event after this
  // one (it does so when the kernel refused an event with EINVAL); -1 never.
  int guest_bits_cleared_after = -1;
};

// Reads `perf stat -vv -e STRING true` (stderr and stdout together) and its
// exit status. EINVAL when the output holds something this reader does not
// understand (a weak-group reopen, a block without its open line), so a case
// is never passed on a misreading.
Result<Shown> read_perf_stat(std::string_view output, int status);

// Reads `perf record -vv -e STRING -o FILE true`: the events before its
// side-band events (the first "mmap size" line). No names.
Result<Shown> read_perf_record(std::string_view output, int status);

// Reads `perf-persistent attr --json -e STRING`: {"events": [...]} or
// {"error": {...}} with a non-zero status.
Result<Shown> read_attr_json(std::string_view json, int status);

enum class DiffMode {
  kStat,    // the fields perf stat shows of what the parser decides
  kRecord,  // the same plus sample_period and freq (set by period/freq terms)
  kExpect,  // every field but size, against an expectation
};

// The fields compared in a mode, by their printed names.
std::vector<std::string_view> compared_fields(DiffMode mode);

// The differences between the reference (perf, or an expectation) and ours,
// one line each, written for a person: "event 1 (cpu-clock:u): exclude_hv:
// perf 1, ours 0". Empty when they agree. `notes` gets what could not be
// checked (events after perf stopped, names perf did not print).
std::vector<std::string> diff_shown(const Shown& reference, const Shown& ours, DiffMode mode,
                                    std::vector<std::string>* notes = nullptr);

struct CorpusCase {
  int line = 0;
  std::string mode;  // stat, record, expect, reject
  std::string text;  // the event string
  std::string expectation;
};

// For gtest's messages: "line 12: stat 'cpu-clock:u'". gtest looks the
// function up by this name.
void PrintTo(const CorpusCase& c, std::ostream* out);  // NOLINT(readability-identifier-naming)

// Reads the corpus; EINVAL names the line of a malformed case. A mode may
// carry options after a colon ("stat:any-order").
Result<std::vector<CorpusCase>> read_corpus(std::string_view text);

// An `expect` case's expectation as a Shown.
Result<Shown> read_expectation(std::string_view expectation);

}  // namespace pp::testing

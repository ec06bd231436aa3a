// `perf persistent check`: every reason this host could miss machine checks
// or samples, each a Finding with what to do, reported as monitoring plugins
// report (Nagios, Icinga): OK, WARNING, CRITICAL or UNKNOWN, the worst one
// deciding the exit status (0, 1, 2, 3).
//
//   CheckInputs in;                      // the real roots by default
//   in.backend = backend.get();          // the broker's (or kernel's) answers
//   CheckReport report = run_checks(in);
//   print_check_text(std::cout, report, /*verbose=*/false);
//   return report.exit_status();
//
// Everything it reads comes through the roots and the Backend in CheckInputs,
// so each cause can be laid out in a fake tree; nothing here calls the kernel.
// Each finding's id is stable (scripts and monitoring rules key on it);
// Documentation/perf-persistent-check.txt lists them with their severities.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "persistent/backend.h"

namespace pp::check {

// The plugin states, valued as their exit statuses.
enum class CheckStatus { kOk = 0, kWarning = 1, kCritical = 2, kUnknown = 3 };

// "OK", "WARNING", "CRITICAL", "UNKNOWN".
std::string_view check_status_name(CheckStatus status);

// Whether `a` is worse than `b`: OK < UNKNOWN < WARNING < CRITICAL. A check
// that could not tell (UNKNOWN) must not hide a problem that was found, and
// must not pass for OK either.
bool check_status_worse(CheckStatus a, CheckStatus b);

struct Finding {
  std::string id;  // stable, kebab-case: "mce-tracepoint-absent"
  CheckStatus status = CheckStatus::kOk;
  std::string found;   // what was found, for a person
  std::string source;  // the file (or the broker's answer) it came from
  std::string action;  // what to do; "" when OK
};

struct CheckReport {
  std::vector<Finding> findings;  // in the order the checks ran
  size_t events = 0;              // persistent events held (context streams not counted)

  // The worst status of the findings; OK when there are none.
  CheckStatus status() const;
  int exit_status() const { return int(status()); }
  // The findings that are not OK.
  std::vector<const Finding*> problems() const;
  // The first one with this id, or null.
  const Finding* find(std::string_view id) const;
};

struct CheckInputs {
  std::string sysfs_root = sys::kDefaultSysfsRoot;
  std::string proc_root = sys::kDefaultProcRoot;
  std::string tracefs_root = sys::kDefaultTracefsRoot;
  std::string debugfs_root = "/sys/kernel/debug";
  std::string etc_root = "/etc";  // where systemd keeps enabled units (systemd/system/*.wants/)
  std::string run_dir;            // "" means default_run_dir()
  // The machine (uname -m); "" means <proc>/sys/kernel/arch.
  std::string machine;
  // What holds the events; asked list(verbose = true). May be null: then no
  // event is known, and the broker's answers are UNKNOWN.
  persistent::Backend* backend = nullptr;
  int64_t now = 0;  // unix seconds, for the rates of events-losing
};

// The roots under `root` (a mounted image, or a test's fake tree):
// <root>/sys, <root>/proc, <root>/sys/kernel/tracing, <root>/sys/kernel/debug,
// <root>/etc; the run directory stays as given.
CheckInputs check_inputs_under(const std::string& root);

// The environment variable that makes `check` read its roots under a
// directory (check_inputs_under()); for checking an image, and for tests.
inline constexpr const char* kCheckRootEnv = "PERF_PERSISTENT_CHECK_ROOT";

// The real roots (tracefs where sys::default_tracefs_root() finds it), or
// those under $PERF_PERSISTENT_CHECK_ROOT when it is set and not empty.
CheckInputs check_inputs_from_env();

// A buffer that holds less history than this at the rate it sees is too
// small (events-losing).
inline constexpr int64_t kMinHistorySeconds = 3600;
// A restart that lost an event's samples is a WARNING for less than this long.
inline constexpr int64_t kBuffersLostWindowSeconds = 24 * 3600;
// The share of a limit past which fd-limit and mlock-limit warn, in percent.
inline constexpr uint64_t kLimitWarnPercent = 80;

CheckReport run_checks(const CheckInputs& inputs);

// The plugin's output: the first line "PERSISTENT <STATUS> - <summary> |
// <perfdata>", then one block per problem (with `verbose`, per finding).
void print_check_text(std::ostream& out, const CheckReport& report, bool verbose);
// The JSON document (schema in Documentation/perf-persistent-check.txt);
// every finding, OK ones too.
ordered_json check_json(const CheckReport& report);

// When check itself cannot run (a bad option): UNKNOWN, as plugins say it.
// The text is the plugin line; the JSON has the same keys as check_json()
// with no findings, and the error (base/json.h) under "error".
void print_check_error_text(std::ostream& out, const Error& error);
ordered_json check_error_json(const Error& error);

// The bytes one sample of `attr` takes in the ring buffer, estimated: the
// header, 8 bytes per fixed sample_type field, and for PERF_SAMPLE_RAW the
// raw size plus its 4-byte length, rounded up to 8. `raw_bytes` is the
// tracepoint's record size (from its format file), 0 when unknown (then 64).
uint64_t estimated_sample_bytes(const sys::EventAttr& attr, uint64_t raw_bytes);

// The size of a tracepoint's raw record from its format file's field lines
// (the largest offset + size); 0 when there is none.
uint64_t tracepoint_raw_bytes(std::string_view format);

}  // namespace pp::check

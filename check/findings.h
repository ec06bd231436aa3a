// What `perf persistent check` found, and how it says it: each Finding
// with its plugin status (OK, WARNING, CRITICAL, UNKNOWN), the report the
// rules (check/check.h) build from them, and its text and JSON printers, as
// monitoring plugins (Nagios, Icinga) print:
//
//   PERSISTENT WARNING - 1 problem: broker-not-enabled | critical=0 warning=1 unknown=0
//   acknowledged=0 events=2 errors=0c
//   WARNING broker-not-enabled: perf-persistent.service is not enabled: ...
//       from: /etc/systemd/system/*.wants/perf-persistent.service
//       what to do: enable it: 'systemctl enable perf-persistent.service' ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"
#include "base/result.h"

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
  // A problem the user acknowledged (--ignore): status is then OK, and
  // `found` starts "acknowledged (was WARNING): ".
  bool acknowledged = false;
};

struct CheckReport {
  std::vector<Finding> findings;  // in the order the checks ran
  size_t events = 0;              // persistent events held (context streams not counted)
  // Machine checks in watch's history (its counters' total): the
  // performance data's errors=; nullopt when there is no history to count.
  std::optional<uint64_t> machine_checks;

  // The worst status of the findings; OK when there are none.
  CheckStatus status() const;
  int exit_status() const { return int(status()); }
  // The findings that are not OK.
  std::vector<const Finding*> problems() const;
  // The first one with this id, or null.
  const Finding* find(std::string_view id) const;
};

// Acknowledges the problems with these ids (--ignore ID,..., or the
// config file's [check] ignore): each becomes OK, marked acknowledged, its
// text kept. An id no finding has is a usage error naming `where` the id
// came from ("--ignore", "/etc/perf-persistent-watch.conf [check] ignore")
// and the ids there are (a typo must not pass for an acknowledgement); an
// id whose finding is OK acknowledges nothing.
Status acknowledge(CheckReport& report, const std::vector<std::string>& ids,
                   std::string_view where = "--ignore");

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

}  // namespace pp::check

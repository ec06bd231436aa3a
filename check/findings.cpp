#include "check/findings.h"

#include <algorithm>

#include "base/strings.h"

namespace pp::check {

std::string_view check_status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk:
      return "OK";
    case CheckStatus::kWarning:
      return "WARNING";
    case CheckStatus::kCritical:
      return "CRITICAL";
    case CheckStatus::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

namespace {

int rank(CheckStatus s) {
  switch (s) {
    case CheckStatus::kOk:
      return 0;
    case CheckStatus::kUnknown:
      return 1;
    case CheckStatus::kWarning:
      return 2;
    case CheckStatus::kCritical:
      return 3;
  }
  return 1;
}

}  // namespace

bool check_status_worse(CheckStatus a, CheckStatus b) {
  return rank(a) > rank(b);
}

CheckStatus CheckReport::status() const {
  CheckStatus worst = CheckStatus::kOk;
  for (const Finding& f : findings)
    if (check_status_worse(f.status, worst))
      worst = f.status;
  return worst;
}

std::vector<const Finding*> CheckReport::problems() const {
  std::vector<const Finding*> out;
  for (const Finding& f : findings)
    if (f.status != CheckStatus::kOk)
      out.push_back(&f);
  return out;
}

const Finding* CheckReport::find(std::string_view id) const {
  for (const Finding& f : findings)
    if (f.id == id)
      return &f;
  return nullptr;
}

namespace {

std::string summary(const CheckReport& report) {
  auto problems = report.problems();
  if (problems.empty())
    return std::to_string(report.findings.size()) + " checks passed, " +
           std::to_string(report.events) + " event(s) held";
  std::vector<std::string> ids;
  for (const Finding* f : problems)
    if (std::find(ids.begin(), ids.end(), f->id) == ids.end())
      ids.push_back(f->id);
  return std::to_string(problems.size()) + (problems.size() == 1 ? " problem: " : " problems: ") +
         join(ids, ", ");
}

size_t count(const CheckReport& report, CheckStatus status) {
  return size_t(std::count_if(report.findings.begin(), report.findings.end(),
                              [&](const Finding& f) { return f.status == status; }));
}

}  // namespace

Status acknowledge(CheckReport& report, const std::vector<std::string>& ids,
                   std::string_view where) {
  for (const std::string& id : ids) {
    bool known = false;
    for (Finding& f : report.findings) {
      if (f.id != id)
        continue;
      known = true;
      if (f.status == CheckStatus::kOk)
        continue;
      f.found = "acknowledged (was " + std::string(check_status_name(f.status)) + "): " + f.found;
      f.status = CheckStatus::kOk;
      f.acknowledged = true;
    }
    if (!known) {
      std::vector<std::string> all;
      for (const Finding& f : report.findings)
        if (std::find(all.begin(), all.end(), f.id) == all.end())
          all.push_back(f.id);
      return usage_error(std::string(where) + " " + id + ": no check has that id; the ids are " +
                         join(all, ", ") + " (perf-persistent-check(1), CHECKS)");
    }
  }
  return ok_status();
}

void print_check_text(std::ostream& out, const CheckReport& report, bool verbose) {
  size_t acknowledged = size_t(std::count_if(report.findings.begin(), report.findings.end(),
                                             [](const Finding& f) { return f.acknowledged; }));
  out << "PERSISTENT " << check_status_name(report.status()) << " - " << summary(report)
      << " | critical=" << count(report, CheckStatus::kCritical)
      << " warning=" << count(report, CheckStatus::kWarning)
      << " unknown=" << count(report, CheckStatus::kUnknown) << " acknowledged=" << acknowledged
      << " events=" << report.events
      << " errors="
      // A counter ("c"), or undetermined ("U") without a history, as the
      // plugin guidelines write performance data.
      << (report.machine_checks ? std::to_string(*report.machine_checks) + "c" : "U") << "\n";
  for (const Finding& f : report.findings) {
    if (f.status == CheckStatus::kOk && !verbose)
      continue;
    out << check_status_name(f.status) << ' ' << f.id << ": " << f.found << "\n"
        << "    from: " << f.source << "\n";
    if (!f.action.empty())
      out << "    what to do: " << f.action << "\n";
  }
}

ordered_json check_json(const CheckReport& report) {
  ordered_json findings = ordered_json::array();
  for (const Finding& f : report.findings)
    findings.push_back(ordered_json{{"id", f.id},
                                    {"status", std::string(check_status_name(f.status))},
                                    {"found", f.found},
                                    {"source", f.source},
                                    {"action", f.action},
                                    {"acknowledged", f.acknowledged}});
  return ordered_json{{"status", std::string(check_status_name(report.status()))},
                      {"exit_status", report.exit_status()},
                      {"summary", summary(report)},
                      {"events", report.events},
                      {"errors", report.machine_checks ? ordered_json(*report.machine_checks)
                                                       : ordered_json(nullptr)},
                      {"findings", std::move(findings)}};
}

void print_check_error_text(std::ostream& out, const Error& error) {
  out << "PERSISTENT UNKNOWN - " << error.message() << "\n";
}

ordered_json check_error_json(const Error& error) {
  return ordered_json{{"status", "UNKNOWN"},
                      {"exit_status", int(CheckStatus::kUnknown)},
                      {"summary", error.message()},
                      {"events", 0},
                      {"errors", nullptr},
                      {"findings", ordered_json::array()},
                      {"error", ordered_json{{"kind", std::string(kind_name(error.kind()))},
                                             {"message", error.message()}}}};
}

}  // namespace pp::check

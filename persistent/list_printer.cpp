#include "persistent/list_printer.h"

#include <cstdio>

#include "base/cpu_list.h"
#include "base/strings.h"
#include "persistent/event_json.h"

namespace pp::persistent {

std::string format_age(int64_t s) {
  if (s < 0)
    return "-";
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof(buf), "%llds", (long long)s);
  else if (s < 3600)
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  else if (s < 86400)
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", (long long)(s / 3600),
                  (long long)(s % 3600 / 60));
  else
    std::snprintf(buf, sizeof(buf), "%lldd%02lldh", (long long)(s / 86400),
                  (long long)(s % 86400 / 3600));
  return buf;
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    unit++;
  }
  return std::to_string(bytes) + units[unit];
}

namespace {

// The CONTEXT column: the name of the event's context stream, its id when it
// is not listed, "-" for none (and for a stream itself).
std::string context_column(const std::vector<EventInfo>& events, const EventInfo& e) {
  if (e.is_context || e.context == 0)
    return "-";
  for (const EventInfo& stream : events)
    if (stream.is_context && stream.id == e.context)
      return stream.name;
  return std::to_string(e.context);
}

}  // namespace

namespace {

// A broker's reason on one line, for list without -v: a parse error's
// "Error: ..." line when it has one (the caret form takes four), else its
// first line; "(-v: the whole reason)" when lines were left out.
//   "event syntax error: 'mce:mce_record'\n ... \nError: /sys/.../mce_record does not exist.\nHint:
//   ..."
std::string one_line_reason(const std::string& error) {
  if (error.find('\n') == std::string::npos)
    return error;
  return error_line(error) + " ('perf persistent list -v' says all)";
}

}  // namespace

void print_list_text(std::ostream& out, std::ostream& notes, const std::vector<EventInfo>& events,
                     bool verbose, int64_t now) {
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"ID", "NAME", "EVENT", "CPUS", "BUFFER", "BACKEND", "AGE"});
  if (verbose) {
    rows[0].push_back("CONTEXT");
    rows[0].push_back("CLOCK");
    rows[0].push_back("READERS");
    rows[0].push_back("KEPT");
    rows[0].push_back("COUNTS");
  }
  std::vector<std::string> footnotes;
  for (const EventInfo& e : events) {
    if (e.is_context && !verbose)
      continue;
    bool failed = e.state == "failed";
    bool unavailable = e.state == "unavailable";
    bool down = e.state == "down";
    std::string age = e.created > 0 ? format_age(now - e.created) : "-";
    if (e.restarted() && e.created > 0 && !failed && !unavailable) {
      age += "*";
      footnotes.push_back("* " + e.name + ": the buffers restarted " +
                          format_age(now - e.buffer_start) + " ago (" +
                          (e.lost_reason.empty() ? "broker restart" : e.lost_reason) +
                          "); samples from before are gone");
    }
    if (failed)
      footnotes.push_back(e.name + ": failed: " + e.error +
                          " (tried again at every reload: 'perf persistent daemon --reload')");
    if (unavailable)
      footnotes.push_back(e.name + ": unavailable on this host (optional in the config): " +
                          (verbose ? e.error : one_line_reason(e.error)));
    if (e.tamper_count) {
      bool ftrace = e.ring == kRingFtrace;
      footnotes.push_back("! " + e.name + ": tampered with " + std::to_string(e.tamper_count) +
                          " time" + (e.tamper_count == 1 ? "" : "s") +
                          (ftrace ? " through its ftrace instance " + e.instance
                                  : std::string(" through a reader's fd")) +
                          " (see TRUST MODEL in perf-persistent-daemon(1))");
      for (const Tampering& t : e.tampered)
        footnotes.push_back("    " + format_age(now - t.time) + " ago" +
                            (ftrace ? "" : ", CPU " + std::to_string(t.cpu)) + ": " + t.what +
                            (t.holders.empty() ? "" : "; fds held by " + t.holders));
    }
    // A context stream's id (from 2^40, persistent/tracking.h) is internal:
    // it cannot be killed or read by itself, and its name identifies it.
    std::vector<std::string> row = {e.is_context ? std::string("-") : std::to_string(e.id), e.name,
                                    e.is_context      ? "context stream"
                                    : e.event.empty() ? "-"
                                                      : e.event,
                                    e.cpus.empty() ? "-" : format_cpu_list(e.cpus),
                                    failed        ? "failed"
                                    : unavailable ? "n/a"
                                    : down        ? "down"
                                                  : format_bytes(e.buffer_bytes()),
                                    // The broker's ftrace-backend events say so.
                                    e.ring == kRingFtrace ? std::string(kRingFtrace) : e.backend,
                                    age + (e.tamper_count ? "!" : "")};
    if (verbose) {
      row.push_back(context_column(events, e));
      row.push_back(e.clock().empty() ? "-" : e.clock());
      row.push_back(e.readers ? std::to_string(*e.readers) : "-");
      row.push_back(e.kept ? (*e.kept ? "yes" : "no") : "-");
      std::string counts;
      if (e.counts)
        for (const CpuCount& c : *e.counts)
          counts +=
              (counts.empty() ? "" : ",") + std::to_string(c.cpu) + ":" + std::to_string(c.count);
      row.push_back(counts.empty() ? "-" : counts);
    }
    rows.push_back(std::move(row));
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); i++)
      widths[i] = std::max(widths[i], row[i].size());
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); i++) {
      line += row[i];
      if (i + 1 < row.size())
        line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out << line << '\n';
  }
  for (const std::string& note : footnotes)
    notes << note << '\n';
}

void print_list_json(std::ostream& out, const std::vector<EventInfo>& events, bool verbose,
                     const Error* broker_down) {
  json doc = {{"events", json::array()}};
  for (const EventInfo& e : events)
    if (verbose || !e.is_context)
      doc["events"].push_back(event_to_json(e));
  if (broker_down) {
    doc["broker"] = "down";
    doc["error"] = error_object(*broker_down);
  }
  out << dump_json(doc) << '\n';
}

void print_kill_json(std::ostream& out, const KillReport& report) {
  json doc = {{"killed", json::array()}, {"errors", json::array()}};
  for (const EventInfo& event : report.killed)
    doc["killed"].push_back(event_to_json(event));
  for (const auto& [reference, error] : report.failed)
    doc["errors"].push_back({{"ref", reference}, {"error", error_object(error)}});
  doc["exit_status"] = report.exit_status();
  out << dump_json(doc) << '\n';
}

void print_event_line(std::ostream& out, const EventInfo& event) {
  out << event.id << ' ' << event.name << '\n';
}

}  // namespace pp::persistent

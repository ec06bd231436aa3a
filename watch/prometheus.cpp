#include "watch/prometheus.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "base/json.h"
#include "build_info.h"
#include "mce/decode.h"
#include "mce/edac.h"
#include "mce/error_code.h"
#include "mce/fault.h"
#include "sys/atomic_file.h"
#include "sys/clock.h"

namespace pp::watch {

namespace {

// ns since the epoch as seconds, exactly: "1796285030.5", "1796285030".
std::string seconds_text(uint64_t ns) {
  std::string out = std::to_string(ns / 1000000000ull);
  uint64_t frac = ns % 1000000000ull;
  if (frac) {
    char digits[16];
    snprintf(digits, sizeof digits, "%09llu", static_cast<unsigned long long>(frac));
    std::string f(digits);
    while (!f.empty() && f.back() == '0')
      f.pop_back();
    out += "." + f;
  }
  return out;
}

bool all_digits(const std::string& s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (c < '0' || c > '9')
      return false;
  return true;
}

std::string dir_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct Family {
  const char* name;
  const char* type;
  const char* help;
};

constexpr std::string_view kMcEvent = "ras:mc_event";

constexpr Family kRecords{"perf_persistent_records_total", "counter",
                          "Records the watcher read from a persistent event's buffer, per CPU, "
                          "counted over its history (from its start without one)."};
constexpr Family kLost{"perf_persistent_samples_lost_total", "counter",
                       "Samples a persistent event's buffer overwrote before the watcher read "
                       "them, per CPU, counted over its history (from its start without one)."};
constexpr Family kMachineChecks{
    "perf_persistent_machine_checks_total", "counter",
    "Machine checks counted over the watcher's history (from its start without one), by "
    "decoded severity, bank, MCA error class, CPU and origin (live buffer, kmsg: this boot's "
    "kernel log, pstore: a previous boot's)."};
constexpr Family kBySeverity{
    "perf_persistent_machine_checks_by_severity_total", "counter",
    "Machine checks counted over the watcher's history (from its start without one), by "
    "decoded severity; every severity is present from the start."};
constexpr Family kMemoryErrors{
    "perf_persistent_memory_errors_total", "counter",
    "Memory errors EDAC reported (ras:mc_event records, their error counts summed) counted over "
    "the watcher's history (from its start without one), by DIMM (the label the kernel gives, "
    "which is the DIMM's EDAC "
    "dimm_label) and type (corrected, uncorrected, deferred, fatal, info)."};
// The other RAS records' counters, one family per source
// (mce/ras_events.h), each labelled by keys of the record's "ras" object.
struct RasFamily {
  std::string_view source;
  Family family;
  std::vector<const char*> labels;  // the label names, and the "ras" keys they show
};
const RasFamily kRasFamilies[] = {
    {"aer",
     {"perf_persistent_aer_errors_total", "counter",
      "PCIe AER errors (ras:aer_event records) by PCI device and AER severity (corrected, "
      "non-fatal, fatal), counted over the watcher's history (from its start without one)."},
     {"device", "aer_severity"}},
    {"memory_failure",
     {"perf_persistent_memory_failures_total", "counter",
      "Pages the kernel handled after an uncorrected memory error (ras:memory_failure_event "
      "records) by page type and result (Ignored, Failed, Delayed, Recovered), counted over "
      "the watcher's history (from its start without one)."},
     {"page_type", "result"}},
    {"arm",
     {"perf_persistent_arm_errors_total", "counter",
      "ARM processor error sections of firmware (CPER) records (ras:arm_event) by severity, "
      "counted over the watcher's history (from its start without one)."},
     {"severity"}},
    {"non_standard",
     {"perf_persistent_vendor_errors_total", "counter",
      "Firmware (CPER) error sections of a vendor's type (ras:non_standard_event) by section "
      "type GUID and severity, counted over the watcher's history (from its start without one)."},
     {"section_type", "severity"}},
    {"extlog_mem",
     {"perf_persistent_extlog_memory_errors_total", "counter",
      "eMCA memory errors (ras:extlog_mem_event) by memory error type and severity, counted "
      "over the watcher's history (from its start without one)."},
     {"error_type", "severity"}},
    {"cxl",
     {"perf_persistent_cxl_events_total", "counter",
      "CXL memory device errors and event records (cxl:* tracepoints) by memory device, "
      "tracepoint and severity, counted over the watcher's history (from its start without one)."},
     {"memdev", "event", "severity"}},
};

constexpr Family kOfflineActions{
    "perf_persistent_page_offline_total", "counter",
    "Page offlining actions counted over the watcher's history (from its start without one), by "
    "action (account, soft, hard) and result (offlined, accounted, dry-run, already-poisoned, "
    "disabled, capped, retrying, failed)."};
constexpr Family kLastRecord{"perf_persistent_last_record_timestamp_seconds", "gauge",
                             "Wall-clock time of the newest record of a persistent event."};
constexpr Family kLastMce{"perf_persistent_last_machine_check_timestamp_seconds", "gauge",
                          "Wall-clock time of the newest machine check of a severity."};
constexpr Family kBrokerUp{"perf_persistent_broker_up", "gauge",
                           "1 when the broker that holds the persistent events answers, else 0."};
constexpr Family kWatchUp{"perf_persistent_watch_up", "gauge",
                          "1 while perf persistent watch runs; 0 in the file it leaves when it "
                          "stops."};
constexpr Family kStart{"perf_persistent_watch_start_time_seconds", "gauge",
                        "Wall-clock time perf persistent watch started (the counters count "
                        "from it only when it keeps no history)."};

constexpr Family kBuildInfo{"perf_persistent_build_info", "gauge",
                            "Always 1; the labels say which perf-persistent wrote the file "
                            "(its version and the source revision it was built from)."};

void append_header(std::string& out, const Family& f) {
  out += "# HELP ";
  out += f.name;
  out += ' ';
  out += f.help;
  out += "\n# TYPE ";
  out += f.name;
  out += ' ';
  out += f.type;
  out += '\n';
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

bool PrometheusFile::LabelsLess::operator()(const std::vector<std::string>& a,
                                            const std::vector<std::string>& b) const {
  for (size_t i = 0; i < a.size() && i < b.size(); i++) {
    if (a[i] == b[i])
      continue;
    if (all_digits(a[i]) && all_digits(b[i])) {
      if (a[i].size() != b[i].size())
        return a[i].size() < b[i].size();
    }
    return a[i] < b[i];
  }
  return a.size() < b.size();
}

PrometheusFile::PrometheusFile(const PrometheusOptions& options) : options_(options) {
  if (!options_.start_wall_ns)
    options_.start_wall_ns = sys::realtime_ns();
  if (!options_.interval_ms)
    options_.interval_ms = 1;
  if (options_.version.empty())
    options_.version = PP_VERSION;
  if (options_.commit.empty())
    options_.commit = PP_REVISION;
  for (std::string_view s : mce::mce_severity_names())
    by_severity_[{std::string(s)}] = 0;
}

Result<std::unique_ptr<PrometheusFile>> PrometheusFile::open(const PrometheusOptions& options) {
  const std::string& path = options.path;
  std::string base = base_of(path);
  if (base.size() <= 5 || base.compare(base.size() - 5, 5, ".prom") != 0 || base[0] == '.')
    return usage_error("the Prometheus file '" + path +
                       "' must be named <name>.prom, not starting with '.': node_exporter's "
                       "textfile collector reads only those");
  std::string dir = dir_of(path);
  struct stat st {};
  int err = ::stat(dir.c_str(), &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  if (err)
    return errorf(ErrorKind::kOutput, err,
                  "the Prometheus file's directory '%s' does not exist or is not a "
                  "directory; give a file in node_exporter's --collector.textfile.directory",
                  dir.c_str());
  if (::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0)
    return errorf(ErrorKind::kOutput, errno,
                  "cannot write in the Prometheus file's directory '%s'; run as a user that "
                  "may write there, or give a file in another directory node_exporter's "
                  "textfile collector reads",
                  dir.c_str());
  return std::unique_ptr<PrometheusFile>(new PrometheusFile(options));
}

void PrometheusFile::add_event(const std::string& event, const std::vector<int>& cpus) {
  for (int cpu : cpus) {
    records_.try_emplace({event, std::to_string(cpu)}, 0);
    lost_.try_emplace({event, std::to_string(cpu)}, 0);
  }
}

Status PrometheusFile::take(const WatchRecord& r, const RecordJson& json) {
  // A live record's fields are in its object alone (r.fields is empty): the
  // tree is made for EDAC's records, which are rare, and for no other.
  if (r.tracepoint == kMcEvent)
    return record(r, json.tree());
  count(r, nullptr);
  return ok_status();
}

void PrometheusFile::seed(const HistoryTotals& totals) {
  auto text = [](const std::optional<int64_t>& v) {
    return v ? std::to_string(*v) : std::string("unknown");
  };
  auto latest = [](uint64_t& last, uint64_t ns) { last = std::max(last, ns); };
  for (const HistoryTotals::Records& r : totals.records) {
    records_[{r.event, text(r.cpu)}] += r.count;
    if (r.last_wall_ns)
      latest(last_record_ns_[{r.event}], r.last_wall_ns);
  }
  for (const HistoryTotals::MachineChecks& m : totals.machine_checks) {
    machine_checks_[{m.severity, text(m.bank), m.error_class, text(m.cpu), m.origin}] += m.count;
    by_severity_[{m.severity}] += m.count;
    if (m.last_wall_ns)
      latest(last_mce_ns_[{m.severity}], m.last_wall_ns);
  }
  for (const HistoryTotals::Lost& l : totals.lost)
    lost_[{l.event, text(l.cpu)}] += l.records;
  for (const HistoryTotals::McEvents& m : totals.mc_events)
    if (auto fields = parse_json(m.fields, "an ras:mc_event record's fields"); fields.ok())
      count_memory_errors(nlohmann::ordered_json(*fields), m.count);
  for (const HistoryTotals::RasEvents& e : totals.ras_events)
    if (auto ras = parse_json(e.ras, "an RAS record's decoding"); ras.ok() && ras->is_object())
      count_ras(e.source, nlohmann::ordered_json(*ras), e.count);
}

Status PrometheusFile::record(const WatchRecord& r, const nlohmann::ordered_json& json) {
  auto fields = json.find("fields");
  count(r, fields == json.end() ? nullptr : &*fields);
  return ok_status();
}

void PrometheusFile::count(const WatchRecord& r, const nlohmann::ordered_json* fields) {
  std::string cpu = r.cpu >= 0 ? std::to_string(r.cpu) : "unknown";
  if (!r.event.empty()) {
    records_[{r.event, cpu}]++;
    if (r.wall_ns) {
      uint64_t& last = last_record_ns_[{r.event}];
      last = std::max(last, r.wall_ns);
    }
  }
  if (r.tracepoint == kMcEvent && fields)
    count_memory_errors(*fields, 1);
  if (r.ras)
    count_ras(r.ras->source, r.ras->json, 1);
  if (r.mce) {
    const mce::MceDecoded& d = *r.mce;
    std::string severity(mce::mce_severity_name(d.severity));
    std::string mce_cpu = d.regs.cpu ? std::to_string(*d.regs.cpu) : cpu;
    std::string bank = d.regs.bank ? std::to_string(*d.regs.bank) : "unknown";
    std::string error_class(mce::mca_error_class_name(d.error_code.error_class));
    machine_checks_[{severity, bank, error_class, mce_cpu, std::string(origin_name(r.origin))}]++;
    by_severity_[{severity}]++;
    // The watcher and the harvest give a machine check the wall time of
    // its registers (TIME) when it has one.
    if (r.wall_ns) {
      uint64_t& last = last_mce_ns_[{severity}];
      last = std::max(last, r.wall_ns);
    }
  }
}

void PrometheusFile::count_ras(std::string_view source, const nlohmann::ordered_json& ras,
                               uint64_t times) {
  for (const RasFamily& f : kRasFamilies) {
    if (f.source != source)
      continue;
    std::vector<std::string> values;
    for (const char* label : f.labels) {
      auto v = ras.find(label);
      std::string text = v == ras.end() ? "" : json_scalar_text(*v);
      values.push_back(text.empty() ? "unknown" : text);
    }
    ras_[std::string(f.source)][values] += times;
  }
}

void PrometheusFile::count_memory_errors(const nlohmann::ordered_json& fields, uint64_t times) {
  mce::EdacError e = mce::decode_mc_event(mce::mc_event_fields_from_json(fields));
  std::string dimm = mce::dimm_name(e.location);
  memory_errors_[{dimm.empty() ? std::string("unknown") : dimm,
                  std::string(mce::edac_error_type_name(e.type))}] += e.count * times;
}

Status PrometheusFile::lost(const LostNotice& n) {
  lost_[{n.event, n.cpu >= 0 ? std::to_string(n.cpu) : "unknown"}] += n.records;
  return ok_status();
}

Status PrometheusFile::tick(uint64_t now_ms, bool final) {
  if (final)
    watch_up_ = false;
  else if (written_ && now_ms - last_write_ms_ < options_.interval_ms)
    return ok_status();
  written_ = true;
  last_write_ms_ = now_ms;
  return write_file();
}

std::string PrometheusFile::text() const {
  std::string out;
  auto family = [&](const Family& f, const std::vector<const char*>& labels, const Series& series,
                    bool as_seconds) {
    if (series.empty())
      return;
    append_header(out, f);
    for (const auto& [values, value] : series) {
      out += f.name;
      out += '{';
      size_t i = 0;
      for (const char* label : labels) {
        if (i)
          out += ',';
        out += label;
        out += "=\"";
        out += escape_label_value(values[i]);
        out += '"';
        i++;
      }
      out += "} ";
      out += as_seconds ? seconds_text(value) : std::to_string(value);
      out += '\n';
    }
  };
  auto single = [&](const Family& f, const std::string& value) {
    append_header(out, f);
    out += f.name;
    out += ' ';
    out += value;
    out += '\n';
  };
  family(kRecords, {"event", "cpu"}, records_, false);
  family(kLost, {"event", "cpu"}, lost_, false);
  family(kMachineChecks, {"mce_severity", "bank", "error_class", "cpu", "origin"}, machine_checks_,
         false);
  family(kBySeverity, {"mce_severity"}, by_severity_, false);
  family(kMemoryErrors, {"dimm", "type"}, memory_errors_, false);
  for (const RasFamily& f : kRasFamilies)
    if (auto it = ras_.find(std::string(f.source)); it != ras_.end())
      family(f.family, f.labels, it->second, false);
  family(kOfflineActions, {"action", "result"}, offlining_, false);
  family(kLastRecord, {"event"}, last_record_ns_, true);
  family(kLastMce, {"mce_severity"}, last_mce_ns_, true);
  single(kBrokerUp, broker_up_ ? "1" : "0");
  single(kWatchUp, watch_up_ ? "1" : "0");
  single(kStart, seconds_text(options_.start_wall_ns));
  append_header(out, kBuildInfo);
  out += kBuildInfo.name;
  out += "{version=\"" + escape_label_value(options_.version) + "\",commit=\"" +
         escape_label_value(options_.commit) + "\"} 1\n";
  return out;
}

// Replaced atomically through a hidden temporary beside it (node_exporter
// reads only *.prom): sys/atomic_file.h. No fsync of the file and its
// directory every interval: watch writes it again at start.
Status PrometheusFile::write_file() const {
  Status written =
      sys::write_file_atomically(options_.path, text(), 0644, sys::Durability::kNoSync);
  if (!written.ok())
    return Error(ErrorKind::kOutput, written.error().code(),
                 "writing the Prometheus file " + options_.path + ": " + written.error().message() +
                     "; the next interval tries again");
  return ok_status();
}

}  // namespace pp::watch

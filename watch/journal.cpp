#include "watch/journal.h"

#include <sys/uio.h>

#include <iostream>
#include <systemd/sd-journal.h>

#include "base/json.h"
#include "base/wall_time.h"
#include "mce/error_code.h"
#include "sys/tree.h"

namespace pp::watch {

JournalWriter::~JournalWriter() = default;

namespace {

class SdJournalWriter final : public JournalWriter {
 public:
  Status send(const std::vector<std::string>& fields) override {
    // libsystemd drops an entry silently, and succeeds, when no journald
    // listens (its socket is missing): say so instead, so that the sink's
    // note is written (once).
    if (!socket_checked_) {
      socket_checked_ = true;
      socket_missing_ = !sys::Tree("/run").exists("systemd/journal/socket");
    }
    if (socket_missing_)
      return Error(ENOENT, "no journal: /run/systemd/journal/socket does not exist");
    std::vector<iovec> iov;
    iov.reserve(fields.size());
    for (const auto& f : fields)
      iov.push_back(iovec{const_cast<char*>(f.data()), f.size()});
    int r = sd_journal_sendv(iov.data(), int(iov.size()));
    if (r < 0)
      return error_from_errno(-r, "sd_journal_sendv");
    return ok_status();
  }

 private:
  bool socket_checked_ = false, socket_missing_ = false;
};

// A JSON value as a journal field's value: a scalar as json_scalar_text()
// gives it, an array's elements space-separated (["VAL","UC"] -> "VAL UC"),
// an object as JSON; nullopt for null and [] (no bits set: no field).
std::optional<std::string> value_text(const nlohmann::ordered_json& v) {
  if (v.is_null())
    return std::nullopt;
  if (v.is_object())
    return dump_json(v);
  if (!v.is_array())
    return json_scalar_text(v);
  if (v.empty())
    return std::nullopt;
  std::string out;
  for (const auto& e : v) {
    auto t = value_text(e);
    if (!t)
      continue;
    if (!out.empty())
      out += ' ';
    out += *t;
  }
  return out;
}

void add_field(std::vector<std::string>& fields, std::string_view prefix, std::string_view name,
               const nlohmann::ordered_json& value) {
  auto text = value_text(value);
  if (text)
    fields.push_back(journal_field_name(prefix, name) + "=" + *text);
}

// PERF_PERSISTENT_<KEY> for the record's own keys, MCE_<KEY> for "mce"'s,
// TP_<KEY> for "fields"'.
void add_record_fields(std::vector<std::string>& fields, const nlohmann::ordered_json& json) {
  if (!json.is_object())
    return;
  for (const auto& [key, value] : json.items()) {
    if (key == "mce" || key == "ras" || key == "fields")
      continue;
    add_field(fields, "PERF_PERSISTENT_", key, value);
  }
  auto mce = json.find("mce");
  if (mce != json.end() && mce->is_object())
    for (const auto& [key, value] : mce->items())
      add_field(fields, "MCE_", key, value);
  auto ras = json.find("ras");
  if (ras != json.end() && ras->is_object())
    for (const auto& [key, value] : ras->items())
      add_field(fields, "RAS_", key, value);
  auto tp = json.find("fields");
  if (tp != json.end() && tp->is_object())
    for (const auto& [key, value] : tp->items())
      add_field(fields, "TP_", key, value);
}

std::vector<std::string> head(const std::string& message, const char* id, int priority) {
  return {"MESSAGE=" + message, std::string("MESSAGE_ID=") + id,
          "PRIORITY=" + std::to_string(priority),
          std::string("SYSLOG_IDENTIFIER=") + kSyslogIdentifier};
}

}  // namespace

std::unique_ptr<JournalWriter> real_journal_writer() {
  return std::make_unique<SdJournalWriter>();
}

int journal_priority(mce::MceSeverity severity) {
  using mce::MceSeverity;
  switch (severity) {
    case MceSeverity::kFatal:
      return 2;  // LOG_CRIT: processor context corrupt, the machine must reset
    case MceSeverity::kUncorrected:
    case MceSeverity::kSrar:
    case MceSeverity::kSrao:
      return 3;  // LOG_ERR: data was lost (SRAO: found, not consumed; signalled as #MC)
    case MceSeverity::kUcna:
    case MceSeverity::kDeferred:
      return 4;  // LOG_WARNING: not consumed, signalled like a corrected error (CMCI)
    case MceSeverity::kCorrected:
      return 5;  // LOG_NOTICE
    case MceSeverity::kInvalid:
      return 6;  // LOG_INFO
  }
  return 3;
}

std::string journal_field_name(std::string_view prefix, std::string_view name) {
  std::string out;
  for (std::string_view part : {prefix, name})
    for (char c : part) {
      if (c >= 'a' && c <= 'z')
        c = char(c - 'a' + 'A');
      else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
        c = '_';
      if (out.empty() && (c == '_' || (c >= '0' && c <= '9')))
        continue;
      out += c;
    }
  if (out.size() > 64)
    out.resize(64);
  return out.empty() ? "X" : out;
}

std::string machine_check_message(const WatchRecord& r) {
  std::string out = "machine check";
  if (r.origin == Origin::kKmsg)
    out += " (kernel log)";
  else if (r.origin == Origin::kPstore)
    out += " (previous boot, pstore)";
  else if (r.origin == Origin::kErst)
    out += " (previous boot, ERST)";
  else if (r.origin == Origin::kPreviousBoot)
    out += " (previous boot, trace buffer)";
  // A harvested error is read long after it happened (at the next start, or
  // the next boot): the entry's own time is when it was read, so the
  // message says when it happened (the log's TIME).
  if (r.origin != Origin::kLive && r.wall_ns)
    out += " at " + format_wall_time(r.wall_ns);
  out += ": ";
  if (!r.mce)
    return out + "not decoded";
  const mce::MceDecoded& d = *r.mce;
  std::string cpu = d.regs.cpu   ? std::to_string(*d.regs.cpu)
                    : r.cpu >= 0 ? std::to_string(r.cpu)
                                 : "?";
  out += "CPU " + cpu + " bank " + (d.regs.bank ? std::to_string(*d.regs.bank) : "?") + ": " +
         std::string(mce::mce_severity_name(d.severity)) + ", " + mce::describe_error_code(d);
  if (d.regs.addr)
    out += ", addr " + hex_u64(*d.regs.addr);
  return out;
}

std::vector<std::string> machine_check_entry(const WatchRecord& r,
                                             const nlohmann::ordered_json& json) {
  auto severity = r.mce ? r.mce->severity : mce::MceSeverity::kInvalid;
  auto fields = head(machine_check_message(r), kMachineCheckMessageId, journal_priority(severity));
  add_record_fields(fields, json);
  return fields;
}

std::vector<std::string> lost_entry(const LostNotice& n) {
  std::string cpu = n.cpu >= 0 ? std::to_string(n.cpu) : "?";
  auto fields = head("samples lost: " + std::to_string(n.records) + " records of event " + n.event +
                         " on CPU " + cpu + " were overwritten before the watcher read them",
                     kSamplesLostMessageId, 4);
  fields.push_back("PERF_PERSISTENT_EVENT=" + n.event);
  if (n.cpu >= 0)
    fields.push_back("PERF_PERSISTENT_CPU=" + std::to_string(n.cpu));
  fields.push_back("PERF_PERSISTENT_LOST_RECORDS=" + std::to_string(n.records));
  if (n.wall_ns)
    fields.push_back("PERF_PERSISTENT_WALL_TIME=" + format_wall_time(n.wall_ns));
  return fields;
}

std::vector<std::string> record_entry(const WatchRecord& r, const nlohmann::ordered_json& json) {
  std::string message =
      (r.event.empty() ? std::string(origin_name(r.origin)) : r.event) + ": " + r.tracepoint;
  if (r.cpu >= 0)
    message += " on CPU " + std::to_string(r.cpu);
  if (r.pid >= 0)
    message += ", pid " + std::to_string(r.pid);
  if (!r.comm.empty())
    message += " (" + r.comm + ")";
  auto fields = head(message, kRecordMessageId, 6);
  add_record_fields(fields, json);
  return fields;
}

JournalSink::JournalSink(std::unique_ptr<JournalWriter> writer, JournalOptions options)
    : writer_(std::move(writer)), options_(options) {}

void JournalSink::send(const std::vector<std::string>& fields) {
  Status s = writer_->send(fields);
  if (s.ok())
    return;
  if (failed_++ == 0) {
    std::ostream& log = options_.log ? *options_.log : std::cerr;
    log << "perf persistent watch: cannot write to the systemd journal: " << s.error().message()
        << "; is the watcher running under systemd (/run/systemd/journal/socket)? Journal "
           "entries are dropped from now on; the watcher goes on (the history and --ndjson "
           "keep every record)\n";
    log.flush();
  }
}

std::vector<std::string> ras_entry(const WatchRecord& r, const nlohmann::ordered_json& json) {
  std::string message = r.ras && !r.ras->lines.empty() ? r.ras->lines[0] : r.tracepoint;
  if (from_previous_boot(r.origin))
    message += " (previous boot)";
  auto fields = head(message, kRasErrorMessageId,
                     journal_priority(r.ras ? r.ras->severity : mce::MceSeverity::kUncorrected));
  add_record_fields(fields, json);
  return fields;
}

Status JournalSink::record(const WatchRecord& r, const nlohmann::ordered_json& json) {
  if (r.mce)
    send(machine_check_entry(r, json));
  else if (r.ras)
    send(ras_entry(r, json));
  else if (options_.every_record)
    send(record_entry(r, json));
  return ok_status();
}

Status JournalSink::take(const WatchRecord& r, const RecordJson& json) {
  if (!r.mce && !r.ras && !options_.every_record)
    return ok_status();
  return record(r, json.tree());
}

Status JournalSink::lost(const LostNotice& notice) {
  send(lost_entry(notice));
  return ok_status();
}

Status JournalSink::tick(uint64_t /*now_ms*/, bool /*final*/) {
  return ok_status();
}

}  // namespace pp::watch

// watch's journal entries: each machine check (and each loss of samples, and
// with every_record each record) as one structured systemd-journal entry,
// every decoded field a journal field, so `journalctl MCE_SEVERITY=fatal`
// and `journalctl MESSAGE_ID=9bf6feb612cb4010889354da986b2bfa` find them.
//
//   JournalSink sink(real_journal_writer(), JournalOptions{});
//   PP_RETURN_IF_ERROR(sink.record(r, record_json(r)));
//
// A machine check's entry (Documentation/perf-persistent-watch.txt, JOURNAL):
//
//   MESSAGE=machine check: CPU 1 bank 2: corrected, memory-controller: mmm=read, channel 1,
//           addr 0x5678000
//   MESSAGE_ID=9bf6feb612cb4010889354da986b2bfa
//   PRIORITY=5
//   SYSLOG_IDENTIFIER=perf-persistent-watch
//   PERF_PERSISTENT_ORIGIN=live  PERF_PERSISTENT_EVENT=mce_record  PERF_PERSISTENT_CPU=1 ...
//   MCE_STATUS=0x9400000000000091  MCE_BANK=2  MCE_SEVERITY=corrected
//   MCE_STATUS_BITS=VAL EN ADDRV ...
//   TP_<FIELD>=...                 the tracepoint's fields
//
// Another RAS record's entry (MESSAGE_ID kRasErrorMessageId, the priority
// of its severity on the machine checks' scale):
//
//   MESSAGE=PCIe AER uncorrected (non-fatal) on 0000:01:00.0: Completion Timeout
//   RAS_SOURCE=aer  RAS_SEVERITY=uncorrected  RAS_AER_SEVERITY=non-fatal
//   RAS_DEVICE=0000:01:00.0  RAS_STATUS=0x00004000  RAS_STATUS_BITS=Completion Timeout
//
// The record's object (record_json) gives the fields: its own keys as
// PERF_PERSISTENT_<KEY>, "mce"'s as MCE_<KEY>, "fields"' as TP_<KEY>, each
// name made a valid journal field name (journal_field_name), arrays joined
// with spaces, numbers in decimal, registers as the object has them ("0x..").
//
// When the journal cannot be written (no /run/systemd/journal/socket: not
// under systemd), the sink says so once on the log and goes on: entries are
// dropped, the watcher is not stopped.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "mce/decode.h"
#include "watch/record.h"

namespace pp::watch {

// The entries' MESSAGE_IDs, fixed forever (journalctl --catalog, alerting
// rules and scripts match them).
inline constexpr const char* kMachineCheckMessageId = "9bf6feb612cb4010889354da986b2bfa";
inline constexpr const char* kSamplesLostMessageId = "dd8e57929aa84b01841a550ec3519fe2";
inline constexpr const char* kRecordMessageId = "8a65308e806e46bfa01b812fbc2e9305";
// A RAS record other than a machine check (AER, memory failure, ARM, vendor
// CPER, eMCA, CXL): "ras"'s keys as RAS_<KEY>.
inline constexpr const char* kRasErrorMessageId = "d7e46b76479942ed81a129c7fa6893f0";
inline constexpr const char* kSyslogIdentifier = "perf-persistent-watch";

// The seam to the journal: one entry, its fields "NAME=value" each.
class JournalWriter {
 public:
  virtual ~JournalWriter();
  virtual Status send(const std::vector<std::string>& fields) = 0;
};

// sd_journal_sendv(3) (libsystemd).
std::unique_ptr<JournalWriter> real_journal_writer();

struct JournalOptions {
  bool every_record = false;  // default: machine checks and lost samples only
  // Where the one line saying the journal cannot be written goes; nullptr:
  // standard error.
  std::ostream* log = nullptr;
};

class JournalSink final : public Sink {
 public:
  JournalSink(std::unique_ptr<JournalWriter> writer, JournalOptions options);

  Status record(const WatchRecord& record, const nlohmann::ordered_json& json) override;
  // The tree only for the records it writes (machine checks, or every
  // record under every_record).
  Status take(const WatchRecord& record, const RecordJson& json) override;
  Status lost(const LostNotice& notice) override;
  Status tick(uint64_t now_ms, bool final) override;

  // Entries the journal refused (dropped) so far.
  uint64_t failed() const { return failed_; }

 private:
  void send(const std::vector<std::string>& fields);

  std::unique_ptr<JournalWriter> writer_;
  JournalOptions options_;
  uint64_t failed_ = 0;
};

// The syslog priority of a machine check's entry (PRIORITY=): fatal 2
// (crit); uncorrected, SRAR and SRAO 3 (err); UCNA and deferred 4
// (warning); corrected 5 (notice); invalid 6 (info). The journal section
// of the watch man page says why.
int journal_priority(mce::MceSeverity severity);

// A valid journal field name from `name` behind `prefix` ("TP_", "prev-comm"
// -> "TP_PREV_COMM"): letters upper-cased, every other byte but A-Z, 0-9
// and '_' becomes '_', leading underscores and digits dropped (journald
// keeps names starting with '_' for itself and refuses a leading digit),
// at most 64 characters; "X" if nothing is left.
std::string journal_field_name(std::string_view prefix, std::string_view name);

// The entry for a machine check, a loss and a plain record (every_record),
// as the sink sends them.
std::vector<std::string> machine_check_entry(const WatchRecord& record,
                                             const nlohmann::ordered_json& json);
std::vector<std::string> lost_entry(const LostNotice& notice);
std::vector<std::string> record_entry(const WatchRecord& record,
                                      const nlohmann::ordered_json& json);
// Another RAS record's (WatchRecord::ras), sent whether or not every_record.
std::vector<std::string> ras_entry(const WatchRecord& record, const nlohmann::ordered_json& json);

// The one line MESSAGE of a machine check: "machine check: CPU 1 bank 2:
// corrected, memory-controller: mmm=read, channel 1, addr 0x5678000";
// harvested ones say where from ("machine check (previous boot, pstore): ...").
std::string machine_check_message(const WatchRecord& record);

}  // namespace pp::watch

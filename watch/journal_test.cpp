#include "watch/journal.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <random>
#include <sstream>
#include <thread>

#include "mce/decode.h"
#include "tests/support/run_command.h"

namespace pp::watch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uint64_t kWallNs = 1796285030500000000ull;

// The seam's fake: every entry sent, and a failure to return when set.
class FakeJournal final : public JournalWriter {
 public:
  explicit FakeJournal(std::vector<std::vector<std::string>>* entries, bool fail = false)
      : entries_(entries), fail_(fail) {}
  Status send(const std::vector<std::string>& fields) override {
    if (fail_)
      return error_from_errno(ENOENT, "sd_journal_sendv");
    entries_->push_back(fields);
    return ok_status();
  }

 private:
  std::vector<std::vector<std::string>>* entries_;
  bool fail_;
};

WatchRecord mce_record(Origin origin, uint64_t status, uint32_t bank, uint32_t cpu) {
  WatchRecord r;
  r.origin = origin;
  r.tracepoint = "mce:mce_record";
  if (origin == Origin::kLive) {
    r.event = "mce_record";
    r.time = 18970883561123;
    r.wall_ns = kWallNs;
    r.cpu = int32_t(cpu);
    r.pid = r.tid = 0;
    r.fields = {{"bank", bank}, {"status", "0x9400000000000091"}};
  }
  mce::MceRegisters regs;
  regs.status = status;
  regs.bank = bank;
  regs.cpu = cpu;
  regs.addr = 0x5678000;
  r.mce = mce::decode_mce(regs);
  r.key = "k1";
  return r;
}

bool valid_journal_field_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '_' || (name[0] >= '0' && name[0] <= '9'))
    return false;
  for (char c : name)
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

TEST(JournalEntry, CorrectedMachineCheckHasExactFields) {
  WatchRecord r = mce_record(Origin::kLive, 0x9400000000000091, 2, 1);
  EXPECT_THAT(
      machine_check_entry(r, record_json(r)),
      ElementsAre(
          "MESSAGE=machine check: CPU 1 bank 2: corrected, memory-controller: mmm=read, "
          "channel 1, addr 0x5678000",
          "MESSAGE_ID=9bf6feb612cb4010889354da986b2bfa", "PRIORITY=5",
          "SYSLOG_IDENTIFIER=perf-persistent-watch", "PERF_PERSISTENT_ORIGIN=live",
          "PERF_PERSISTENT_EVENT=mce_record", "PERF_PERSISTENT_TRACEPOINT=mce:mce_record",
          "PERF_PERSISTENT_TIME=18970883561123",
          "PERF_PERSISTENT_WALL_TIME=2026-12-03T08:03:50.500000000Z", "PERF_PERSISTENT_CPU=1",
          "PERF_PERSISTENT_PID=0", "PERF_PERSISTENT_TID=0", "PERF_PERSISTENT_KEY=k1",
          "MCE_ADDR=0x5678000",
          "MCE_ADVICE=Corrected and isolated (CPU 1 bank 2); no action unless it repeats at the "
          "same place.",
          "MCE_BANK=2", "MCE_CCCC=1", "MCE_CPU=1", "MCE_ERROR_CLASS=memory-controller",
          "MCE_ERROR_CODE=0x0091", "MCE_F=false", "MCE_KERNEL_SEVERITY=keep",
          "MCE_KERNEL_SEVERITY_RULE=Corrected error (kernel context, polled)", "MCE_MMM=read",
          "MCE_MSCOD=0x0", "MCE_NOTES=MCG_CAP unknown: graded as without SER_P (give --mcgcap)",
          "MCE_SEVERITY=corrected",
          "MCE_SEVERITY_RULE=UC=0: the error was corrected (SDM: IA32_MCi_STATUS.UC, bit 61; "
          "class CE)",
          "MCE_STATUS=0x9400000000000091", "MCE_STATUS_BITS=VAL EN ADDRV", "MCE_VENDOR=unknown",
          "TP_BANK=2", "TP_STATUS=0x9400000000000091"));
}

TEST(JournalEntry, FatalFromPstoreIsCriticalAndSaysWhereFrom) {
  WatchRecord r = mce_record(Origin::kPstore, 0xbe00000000000150, 1, 0);
  auto fields = machine_check_entry(r, record_json(r));
  ASSERT_GE(fields.size(), 6u);
  EXPECT_EQ(fields[0],
            "MESSAGE=machine check (previous boot, pstore): CPU 0 bank 1: fatal, cache: "
            "instruction fetch (rrrr=ird), tt=instr, ll=00 (L1), addr 0x5678000");
  EXPECT_EQ(fields[1], "MESSAGE_ID=9bf6feb612cb4010889354da986b2bfa");
  EXPECT_EQ(fields[2], "PRIORITY=2");
  EXPECT_EQ(fields[4], "PERF_PERSISTENT_ORIGIN=pstore");
  EXPECT_THAT(fields, ::testing::Contains("MCE_SEVERITY=fatal"));
  EXPECT_THAT(fields, ::testing::Contains("MCE_STATUS_BITS=VAL UC EN MISCV ADDRV PCC"));
  EXPECT_THAT(fields, ::testing::Contains("MCE_KERNEL_SEVERITY=panic"));
  for (const auto& f : fields)
    EXPECT_FALSE(f.starts_with("PERF_PERSISTENT_EVENT=")) << "a harvested record has no event";
}

// A harvested error is journalled when it is read: its message says when
// it happened.
TEST(JournalEntry, AHarvestedErrorSaysWhenItHappened) {
  WatchRecord r = mce_record(Origin::kKmsg, 0xbe00000000000150, 1, 0);
  r.wall_ns = 1796285030ull * 1000000000ull;
  auto fields = machine_check_entry(r, record_json(r));
  ASSERT_FALSE(fields.empty());
  EXPECT_EQ(
      fields[0].rfind("MESSAGE=machine check (kernel log) at 2026-12-03T08:03:50.000000000Z: CPU 0 "
                      "bank 1: fatal",
                      0),
      0u)
      << fields[0];
  EXPECT_THAT(fields,
              ::testing::Contains("PERF_PERSISTENT_WALL_TIME=2026-12-03T08:03:50.000000000Z"));
}

TEST(JournalEntry, EveryFieldNameIsValid) {
  WatchRecord r = mce_record(Origin::kLive, 0xbe00000000000150, 1, 0);
  r.fields = {{"prev-comm", "x"}, {"_private", 1}, {"9th", true}, {"ünï", "y"}};
  for (const auto& entry :
       {machine_check_entry(r, record_json(r)), record_entry(r, record_json(r))})
    for (const auto& f : entry) {
      auto eq = f.find('=');
      ASSERT_NE(eq, std::string::npos) << f;
      EXPECT_TRUE(valid_journal_field_name(f.substr(0, eq))) << f;
    }
}

TEST(JournalPriority, FollowsTheSeverity) {
  using mce::MceSeverity;
  std::vector<std::pair<MceSeverity, int>> expected = {
      {MceSeverity::kFatal, 2},     {MceSeverity::kUncorrected, 3}, {MceSeverity::kSrar, 3},
      {MceSeverity::kSrao, 3},      {MceSeverity::kUcna, 4},        {MceSeverity::kDeferred, 4},
      {MceSeverity::kCorrected, 5}, {MceSeverity::kInvalid, 6},
  };
  EXPECT_EQ(expected.size(), mce::mce_severity_names().size()) << "a severity without a test";
  for (auto [severity, priority] : expected)
    EXPECT_EQ(journal_priority(severity), priority) << mce::mce_severity_name(severity);
}

TEST(JournalFieldName, Sanitizes) {
  EXPECT_EQ(journal_field_name("TP_", "prev_comm"), "TP_PREV_COMM");
  EXPECT_EQ(journal_field_name("TP_", "prev-comm.x"), "TP_PREV_COMM_X");
  EXPECT_EQ(journal_field_name("", "_hidden"), "HIDDEN");
  EXPECT_EQ(journal_field_name("", "9lives"), "LIVES");
  EXPECT_EQ(journal_field_name("", "__9a"), "A");
  EXPECT_EQ(journal_field_name("", ""), "X");
  EXPECT_EQ(journal_field_name("", "-"), "X");
  EXPECT_EQ(journal_field_name("TP_", "\xc3\xbcn"), "TP___N");
  std::string longest = journal_field_name("TP_", std::string(100, 'a'));
  EXPECT_EQ(longest, "TP_" + std::string(61, 'A'));
  EXPECT_EQ(longest.size(), 64u);
  for (std::string_view name : {"a b", "Ab9", "x=y", "\n", "___", "0_0"})
    EXPECT_TRUE(valid_journal_field_name(journal_field_name("", name))) << name;
}

TEST(JournalSink, DefaultSendsMachineChecksAndLossesOnly) {
  std::vector<std::vector<std::string>> entries;
  JournalSink sink(std::make_unique<FakeJournal>(&entries), JournalOptions{});
  WatchRecord plain;
  plain.event = "getppid";
  plain.tracepoint = "syscalls:sys_enter_getppid";
  plain.cpu = 0;
  plain.key = "p";
  ASSERT_TRUE(sink.record(plain, record_json(plain)).ok());
  EXPECT_THAT(entries, IsEmpty());
  WatchRecord m = mce_record(Origin::kLive, 0x9400000000000091, 2, 1);
  ASSERT_TRUE(sink.record(m, record_json(m)).ok());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0], machine_check_entry(m, record_json(m)));
  ASSERT_TRUE(sink.tick(0, true).ok());
}

// An AER record is sent without --journal=all, at its severity's
// priority, its decoding as RAS_ fields; its object, the stored JSON and
// --match see the same "ras" keys.
TEST(JournalSink, RasRecordsAreSentWithTheirDecoding) {
  std::vector<std::vector<std::string>> entries;
  JournalSink sink(std::make_unique<FakeJournal>(&entries), JournalOptions{});
  WatchRecord r;
  r.event = "aer_event";
  r.tracepoint = "ras:aer_event";
  r.cpu = 0;
  r.pid = r.tid = 0;
  r.key = "live:b:aer_event:0:5";
  r.ras = mce::decode_ras_event("ras:aer_event",
                                mce::ras_fields_from_json(nlohmann::ordered_json::parse(
                                    R"({"dev_name":"0000:01:00.0","status":16384,"severity":1})")));
  ASSERT_TRUE(r.ras);
  RecordJson json(r);
  ASSERT_TRUE(sink.take(r, json).ok());
  ASSERT_EQ(entries.size(), 1u);
  const std::vector<std::string>& e = entries[0];
  EXPECT_EQ(e[0], "MESSAGE=PCIe AER fatal on 0000:01:00.0: Completion Timeout");
  EXPECT_EQ(e[1], std::string("MESSAGE_ID=") + kRasErrorMessageId);
  EXPECT_EQ(e[2], "PRIORITY=2");
  auto has = [&](const std::string& field) {
    return std::find(e.begin(), e.end(), field) != e.end();
  };
  EXPECT_TRUE(has("RAS_SOURCE=aer"));
  EXPECT_TRUE(has("RAS_AER_SEVERITY=fatal"));
  EXPECT_TRUE(has("RAS_DEVICE=0000:01:00.0"));
  EXPECT_TRUE(has("RAS_STATUS_BITS=Completion Timeout"));
  EXPECT_TRUE(has("PERF_PERSISTENT_TRACEPOINT=ras:aer_event"));
  EXPECT_NE(json.text().find(R"("ras":{"source":"aer","severity":"fatal")"), std::string::npos)
      << json.text();
  const nlohmann::ordered_json* v = record_field(json.tree(), "aer_severity");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, "fatal");
}

TEST(JournalSink, EveryRecordSendsPlainRecordsAsInfo) {
  std::vector<std::vector<std::string>> entries;
  JournalOptions o;
  o.every_record = true;
  JournalSink sink(std::make_unique<FakeJournal>(&entries), o);
  WatchRecord r;
  r.event = "ctxsw";
  r.tracepoint = "sched:sched_switch";
  r.cpu = 3;
  r.pid = r.tid = 42;
  r.comm = "bash";
  r.fields = {{"prev_comm", "bash"}, {"prev_pid", 42}};
  r.key = "c";
  ASSERT_TRUE(sink.record(r, record_json(r)).ok());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_THAT(
      entries[0],
      ElementsAre("MESSAGE=ctxsw: sched:sched_switch on CPU 3, pid 42 (bash)",
                  "MESSAGE_ID=8a65308e806e46bfa01b812fbc2e9305", "PRIORITY=6",
                  "SYSLOG_IDENTIFIER=perf-persistent-watch", "PERF_PERSISTENT_ORIGIN=live",
                  "PERF_PERSISTENT_EVENT=ctxsw", "PERF_PERSISTENT_TRACEPOINT=sched:sched_switch",
                  "PERF_PERSISTENT_CPU=3", "PERF_PERSISTENT_PID=42", "PERF_PERSISTENT_TID=42",
                  "PERF_PERSISTENT_COMM=bash", "PERF_PERSISTENT_KEY=c", "TP_PREV_COMM=bash",
                  "TP_PREV_PID=42"));
}

TEST(JournalSink, LostSamplesAreOneWarning) {
  std::vector<std::vector<std::string>> entries;
  JournalSink sink(std::make_unique<FakeJournal>(&entries), JournalOptions{});
  LostNotice n;
  n.event = "mce_record";
  n.cpu = 1;
  n.records = 12;
  n.wall_ns = kWallNs;
  ASSERT_TRUE(sink.lost(n).ok());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_THAT(
      entries[0],
      ElementsAre("MESSAGE=samples lost: 12 records of event mce_record on CPU 1 were "
                  "overwritten before the watcher read them",
                  "MESSAGE_ID=dd8e57929aa84b01841a550ec3519fe2", "PRIORITY=4",
                  "SYSLOG_IDENTIFIER=perf-persistent-watch", "PERF_PERSISTENT_EVENT=mce_record",
                  "PERF_PERSISTENT_CPU=1", "PERF_PERSISTENT_LOST_RECORDS=12",
                  "PERF_PERSISTENT_WALL_TIME=2026-12-03T08:03:50.500000000Z"));
}

TEST(JournalSink, UnreachableJournalIsSaidOnceAndNotAnError) {
  std::vector<std::vector<std::string>> entries;
  std::ostringstream log;
  JournalOptions o;
  o.log = &log;
  JournalSink sink(std::make_unique<FakeJournal>(&entries, /*fail=*/true), o);
  WatchRecord m = mce_record(Origin::kLive, 0x9400000000000091, 2, 1);
  EXPECT_TRUE(sink.record(m, record_json(m)).ok());
  EXPECT_TRUE(sink.record(m, record_json(m)).ok());
  EXPECT_TRUE(sink.lost(LostNotice{"mce_record", 0, 1, 0}).ok());
  EXPECT_TRUE(sink.tick(0, true).ok());
  EXPECT_EQ(sink.failed(), 3u);
  std::string text = log.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
  EXPECT_NE(text.find("cannot write to the systemd journal: sd_journal_sendv: "), std::string::npos)
      << text;
  EXPECT_NE(text.find("systemd"), std::string::npos) << text;
}

// The real writer where no journald listens (libsystemd then succeeds and
// drops the entry): the note, once; where one listens, no note.
TEST(JournalSink, TheRealWriterSaysOnceThatNoJournalListens) {
  bool journald = access("/run/systemd/journal/socket", F_OK) == 0;
  std::ostringstream log;
  JournalOptions o;
  o.log = &log;
  JournalSink sink(real_journal_writer(), o);
  WatchRecord m = mce_record(Origin::kLive, 0x9400000000000091, 2, 1);
  m.key = "journal-note-test";
  EXPECT_TRUE(sink.record(m, record_json(m)).ok());
  EXPECT_TRUE(sink.record(m, record_json(m)).ok());
  std::string text = log.str();
  if (journald) {
    EXPECT_EQ(sink.failed(), 0u) << text;
    EXPECT_TRUE(text.empty()) << text;
  } else {
    EXPECT_EQ(sink.failed(), 2u);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
    EXPECT_NE(text.find("cannot write to the systemd journal: no journal: "
                        "/run/systemd/journal/socket does not exist"),
              std::string::npos)
        << text;
  }
}

// The real journal: one entry with a unique field, read back by journalctl.
TEST(JournalSink, RealJournalStoresTheEntry) {
  if (access("/usr/bin/journalctl", X_OK) != 0 && access("/bin/journalctl", X_OK) != 0)
    GTEST_SKIP() << "no journalctl here: the journal test runs where systemd does (the QEMU "
                    "guest of tests/qemu)";
  if (access("/run/systemd/journal/socket", F_OK) != 0)
    GTEST_SKIP() << "no /run/systemd/journal/socket: journald does not run here (a container); "
                    "the journal test runs in the QEMU guest of tests/qemu";
  std::random_device rd;
  std::string id = std::to_string(rd()) + std::to_string(rd());
  std::ostringstream log;
  JournalOptions o;
  o.log = &log;
  JournalSink sink(real_journal_writer(), o);
  WatchRecord m = mce_record(Origin::kLive, 0x9400000000000091, 2, 1);
  m.key = "journal-test-" + id;
  ASSERT_TRUE(sink.record(m, record_json(m)).ok());
  ASSERT_EQ(sink.failed(), 0u) << log.str();
  std::string out;
  for (int i = 0; i < 50 && out.empty(); i++) {  // journald stores asynchronously
    auto r = testing::run_command(
        {"journalctl", "-o", "json", "--no-pager", "PERF_PERSISTENT_KEY=journal-test-" + id});
    ASSERT_EQ(r.status, 0) << r.err;
    out = r.out;
    if (out.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(out.empty()) << "the entry did not reach the journal in 5 s";
  EXPECT_NE(out.find("\"MESSAGE_ID\":\"9bf6feb612cb4010889354da986b2bfa\""), std::string::npos)
      << out;
  EXPECT_NE(out.find("\"MCE_SEVERITY\":\"corrected\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"PRIORITY\":\"5\""), std::string::npos) << out;
}

}  // namespace
}  // namespace pp::watch

#include "watch/harvest.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

#include "base/json.h"
#include "ftrace/ring_page.h"
#include "ftrace/testing/page_builder.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::watch {
namespace {

using pp::testing::TempDir;

// tests/fixtures/pstore/: what Debian's 6.1 kernel kept and logged under
// QEMU (tests/qemu/pstore-test): the panic log of
// `mce -b 0 1 0xbe00000000000150 0x5 0x1234000 0x86` in ramoops, and the
// next boot's /dev/kmsg, which logs the kept banks again.
std::string fixture(const std::string& name) {
  return pp::testing::read_fixture("pstore/" + name);
}

constexpr char kPanicKey[] =
    "mce:cpu=0:bank=1:status=be00000000000150:addr=1234000:misc=86:time=1796397471";

bool has_note(const Harvest& h, const std::string& part) {
  return std::any_of(h.notes.begin(), h.notes.end(),
                     [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

std::string all_notes(const Harvest& h) {
  std::string s;
  for (const std::string& n : h.notes)
    s += n + "\n";
  return s;
}

// The sources to read; systemd-pstore's archive only where a test names it.
HarvestOptions opts(std::string kmsg, std::string pstore) {
  HarvestOptions o;
  o.kmsg = std::move(kmsg);
  o.pstore = std::move(pstore);
  return o;
}

Harvest must_harvest(const HarvestOptions& options) {
  Result<Harvest> h = harvest(options);
  EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.error().message());
  return h.ok() ? std::move(h).value() : Harvest{};
}

TEST(MceKey, NamesEveryRegisterThatIdentifiesTheError) {
  mce::MceRegisters regs;
  regs.cpu = 0;
  regs.bank = 1;
  regs.status = 0xbe00000000000150;
  regs.addr = 0x1234000;
  regs.misc = 0x86;
  regs.walltime = 1796285030;
  EXPECT_EQ(mce_key(regs),
            "mce:cpu=0:bank=1:status=be00000000000150:addr=1234000:misc=86:time=1796285030");
}

TEST(MceKey, LeavesOutWhatTheLogOmits) {
  // The kernel prints ADDR and MISC only when nonzero; a record carries 0.
  mce::MceRegisters regs;
  regs.cpu = 3;
  regs.bank = 2;
  regs.status = 0x9000000000000134;
  regs.addr = 0;
  regs.misc = 0;
  EXPECT_EQ(mce_key(regs), "mce:cpu=3:bank=2:status=9000000000000134");
}

TEST(MceKey, IgnoresWhatDiffersBetweenALiveRecordAndTheLog) {
  // What the mce_record tracepoint gives (walltime is the m->time the log
  // prints as TIME) ...
  mce::MceRegisters live;
  live.cpu = 0;
  live.bank = 1;
  live.status = 0xbe00000000000150;
  live.mcgstatus = 0x5;
  live.mcgcap = 0x100010a;
  live.addr = 0x1234000;
  live.misc = 0x86;
  live.synd = 0;
  live.ipid = 0;
  live.ip = 0xffffffff9c8592eb;
  live.tsc = 0x5663dac3e;
  live.walltime = 1796285030;
  live.cpuid = 0x50654;
  live.apicid = 0;
  live.socketid = 0;
  live.microcode = 1;
  live.cs = 0x10;
  live.cpuvendor = 0;
  // ... and the kernel's log of the same error.
  std::vector<std::string> notes;
  std::vector<WatchRecord> logged = records_from_log(
      "<0>[   6.8] mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 1: "
      "be00000000000150\n"
      "<0>[   6.8] mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff9c8592eb> "
      "{native_safe_halt+0xb/0x10}\n"
      "<0>[   6.8] mce: [Hardware Error]: TSC 5663dac3e ADDR 1234000 MISC 86 \n"
      "<0>[   6.8] mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796285030 SOCKET 0 APIC 0 "
      "microcode 1\n",
      Origin::kKmsg, "/dev/kmsg", notes);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].key, mce_key(live));
  EXPECT_EQ(logged[0].key,
            "mce:cpu=0:bank=1:status=be00000000000150:addr=1234000:misc=86:time=1796285030");
  EXPECT_TRUE(notes.empty());
}

TEST(Harvest, ReadsTheMachineCheckOfAPanicInPstore) {
  TempDir dir;
  dir.write("dmesg-ramoops-0", fixture("dmesg-ramoops-0"));
  dir.write("console-ramoops-0", "not a dmesg record\n");
  Harvest h = must_harvest(opts("", dir.path()));
  ASSERT_EQ(h.records.size(), 1u) << all_notes(h);
  const WatchRecord& r = h.records[0];
  EXPECT_EQ(r.origin, Origin::kPstore);
  EXPECT_EQ(r.tracepoint, "mce:mce_record");
  EXPECT_EQ(r.event, "");
  EXPECT_EQ(r.cpu, 0);
  EXPECT_EQ(r.wall_ns, 1796397471ull * 1000000000ull);
  EXPECT_EQ(r.key, kPanicKey);
  EXPECT_EQ(r.fields.value("pstore_file", ""), "dmesg-ramoops-0");
  EXPECT_EQ(r.fields.value("kernel_message", ""), "Processor context corrupt");
  ASSERT_TRUE(r.mce.has_value());
  EXPECT_EQ(r.mce->severity, mce::MceSeverity::kFatal);
  EXPECT_EQ(r.mce->regs.bank, 1u);
  EXPECT_EQ(r.mce->regs.status, 0xbe00000000000150u);
  EXPECT_EQ(r.mce->regs.addr, 0x1234000u);
  EXPECT_EQ(r.mce->regs.mcgstatus, 0x5u);
  // Decoded as a kernel-log record, the kernel's verdict compared.
  EXPECT_EQ(r.mce->origin, mce::MceOrigin::kKernelLog);
  ASSERT_TRUE(r.mce->kernel_verdict.has_value());
  EXPECT_EQ(r.mce->kernel_verdict->text, "Processor context corrupt");
  EXPECT_TRUE(r.mce->kernel_verdict->agrees);
  EXPECT_TRUE(has_note(h, "read " + dir.path("dmesg-ramoops-0") + ": 1 machine check"))
      << all_notes(h);
  // The object the sinks get says where it came from.
  nlohmann::ordered_json j = record_json(r);
  EXPECT_EQ(j.value("origin", ""), "pstore");
  EXPECT_EQ(j.value("key", ""), kPanicKey);
}

TEST(Harvest, TheNextBootsRelogOfTheKeptBanksIsThePstoreError) {
  TempDir dir;
  dir.write("pstore/dmesg-ramoops-0", fixture("dmesg-ramoops-0"));
  dir.write("kmsg", fixture("kmsg-boot2"));
  Harvest h = must_harvest(opts(dir.path("kmsg"), dir.path("pstore")));
  // pstore's error, seen again in the boot's relog of CPU 0's bank (one
  // record, both origins), then CPU 1's relogged bank (what QEMU's
  // broadcast wrote there).
  ASSERT_EQ(h.records.size(), 2u) << all_notes(h);
  EXPECT_EQ(h.records[0].origin, Origin::kPstore);
  EXPECT_EQ(h.records[0].key, kPanicKey);
  EXPECT_EQ(dump_json(h.records[0].fields["origins"]), R"(["pstore","kmsg"])");
  EXPECT_TRUE(has_note(h,
                       "record 362: CPU 0 bank 1 status 0xbe00000000000150 is the machine "
                       "check a previous boot left (pstore)"))
      << all_notes(h);
  const WatchRecord& other = h.records[1];
  EXPECT_EQ(other.origin, Origin::kKmsg);
  EXPECT_EQ(other.cpu, 1);
  EXPECT_EQ(other.key, "mce:cpu=1:bank=1:status=a000000000000000:time=1796397484");
  EXPECT_EQ(dump_json(other.fields["origins"]), R"(["kmsg"])");
  EXPECT_TRUE(has_note(h, "read " + dir.path("kmsg") + ": 412 record(s), 2 machine check(s)"))
      << all_notes(h);
}

// The kernel's struct mce in ERST (tests/fixtures/pstore/mce-erst-*, 128
// bytes in the 6.1 layout, made from the values of the panic the other
// fixtures hold): one record of origin erst with its registers exact, the
// panic text and the next boot's relog of the same error folded into it.
TEST(Harvest, AnErstRecordIsThePanicsErrorWithEveryOrigin) {
  TempDir dir;
  dir.write("pstore/dmesg-erst-7330904870197624834", fixture("dmesg-ramoops-0"));
  dir.write("pstore/mce-erst-7330904870197624833", fixture("mce-erst-7330904870197624833"));
  dir.write("kmsg", fixture("kmsg-boot2"));
  Harvest h = must_harvest(opts(dir.path("kmsg"), dir.path("pstore")));
  ASSERT_EQ(h.records.size(), 2u) << all_notes(h);
  const WatchRecord& r = h.records[0];
  EXPECT_EQ(r.origin, Origin::kErst);
  EXPECT_EQ(r.key, kPanicKey);
  EXPECT_EQ(dump_json(r.fields["origins"]), R"(["erst","pstore","kmsg"])");
  EXPECT_EQ(r.fields.value("pstore_file", ""), "mce-erst-7330904870197624833");
  EXPECT_EQ(r.fields.value("kernel_severity", ""), "panic");
  ASSERT_TRUE(r.mce.has_value());
  EXPECT_EQ(r.mce->severity, mce::MceSeverity::kFatal);
  EXPECT_EQ(r.mce->regs.status, 0xbe00000000000150u);
  EXPECT_EQ(r.mce->regs.bank, 1u);
  EXPECT_EQ(r.mce->regs.addr, 0x1234000u);
  EXPECT_EQ(r.mce->regs.misc, 0x86u);
  EXPECT_EQ(r.mce->regs.mcgstatus, 0x5u);
  EXPECT_EQ(r.mce->regs.cpuid, 0x50654u);
  EXPECT_EQ(r.wall_ns, 1796397471ull * 1000000000ull);
  EXPECT_EQ(record_json(r).value("origin", ""), "erst");
  // A live sample of the relog finds it too.
  EXPECT_EQ(relogged_error(h.records, h.records[0].mce->regs), nullptr) << "MCIP: the #MC's own";
  mce::MceRegisters relog = r.mce->regs;
  relog.mcgstatus = 0;
  EXPECT_EQ(relogged_error(h.records, relog), &h.records[0]);
}

TEST(Harvest, ATruncatedErstRecordIsRefusedWithItsReason) {
  TempDir dir;
  dir.write("mce-erst-1", fixture("mce-erst-7330904870197624833").substr(0, 100));
  dir.write("mce-erst-2", std::string(128, '\0'));
  Harvest h = must_harvest(opts("", dir.path()));
  EXPECT_TRUE(h.records.empty());
  EXPECT_TRUE(has_note(h, dir.path("mce-erst-1") +
                              " holds 100 bytes, and the kernel's struct mce is 128 (Linux 5.9 "
                              "and later): truncated, or an older kernel's layout; not read"))
      << all_notes(h);
  EXPECT_TRUE(has_note(h, "mce-erst-2 holds a struct mce whose status is 0")) << all_notes(h);
}

// systemd-pstore moved the files out of pstore at boot: its archive is
// read (a record directory's files, read-only), unless pstore.conf keeps
// them in the journal only.
TEST(Harvest, ReadsSystemdPstoresArchiveAsConfigured) {
  TempDir dir;
  dir.write("pstore/.keep", "");
  dir.write("archive/7330904870197624833/mce-erst-7330904870197624833",
            fixture("mce-erst-7330904870197624833"));
  dir.write("archive/7330904870197624833/dmesg.txt", fixture("dmesg-ramoops-0"));
  dir.write("pstore.conf", "[PStore]\n#Storage=external\n");
  HarvestOptions o = opts("", dir.path("pstore"));
  o.systemd_pstore = dir.path("archive");
  o.systemd_pstore_conf = dir.path("pstore.conf");
  Harvest h = must_harvest(o);
  ASSERT_EQ(h.records.size(), 1u) << all_notes(h);
  EXPECT_EQ(h.records[0].origin, Origin::kErst);
  EXPECT_EQ(h.records[0].fields.value("pstore_file", ""),
            "systemd-pstore/7330904870197624833/mce-erst-7330904870197624833");
  EXPECT_EQ(dump_json(h.records[0].fields["origins"]), R"(["erst","pstore"])");
  EXPECT_TRUE(std::filesystem::exists(dir.path("archive/7330904870197624833/dmesg.txt")));

  dir.write("pstore.conf.d/50-journal.conf", "[PStore]\nStorage = journal\n");
  Harvest journal = must_harvest(o);
  EXPECT_TRUE(journal.records.empty());
  EXPECT_TRUE(has_note(journal, "Storage=journal")) << all_notes(journal);
}

TEST(Harvest, ALiveSampleOfTheRelogFindsThePstoreError) {
  TempDir dir;
  dir.write("dmesg-ramoops-0", fixture("dmesg-ramoops-0"));
  Harvest h = must_harvest(opts("", dir.path()));
  ASSERT_EQ(h.records.size(), 1u) << all_notes(h);
  // The boot-time poll's mce_record: MCG_STATUS 0, a new walltime.
  mce::MceRegisters live;
  live.cpu = 0;
  live.bank = 1;
  live.status = 0xbe00000000000150;
  live.mcgstatus = 0;
  live.addr = 0x1234000;
  live.misc = 0x86;
  live.synd = 0;
  live.walltime = 1796397484;
  const WatchRecord* kept = relogged_error(h.records, live);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->key, kPanicKey);
  live.mcgstatus = 0x5;  // MCIP: the handler's own, a new error
  EXPECT_EQ(relogged_error(h.records, live), nullptr);
  live.mcgstatus = 0;
  live.misc = 0x8c;  // other registers: another error
  EXPECT_EQ(relogged_error(h.records, live), nullptr);
}

TEST(Harvest, TheSameBootsExceptionIsNotARelog) {
  // With MCIP the kmsg line is the #MC handler's own: a new error that
  // happens to have the same registers, not the kept banks.
  TempDir dir;
  dir.write("pstore/dmesg-ramoops-0", fixture("dmesg-ramoops-0"));
  dir.write("kmsg",
            "0,10,5,-;mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 1: "
            "be00000000000150\n"
            "0,11,5,-;mce: [Hardware Error]: TSC 0 ADDR 1234000 MISC 86 \n"
            "0,12,5,-;mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796399999 SOCKET 0 APIC 0 "
            "microcode 1\n"
            // Without MCIP but another address: another error.
            "0,13,5,-;mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 1: be00000000000150\n"
            "0,14,5,-;mce: [Hardware Error]: TSC 0 ADDR 5678000 MISC 86 \n"
            "0,15,5,-;mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796399999 SOCKET 0 APIC 0 "
            "microcode 1\n");
  Harvest h = must_harvest(opts(dir.path("kmsg"), dir.path("pstore")));
  ASSERT_EQ(h.records.size(), 3u) << all_notes(h);
  EXPECT_EQ(h.records[1].key,
            "mce:cpu=0:bank=1:status=be00000000000150:addr=1234000:misc=86:time=1796399999");
  EXPECT_EQ(h.records[2].key,
            "mce:cpu=0:bank=1:status=be00000000000150:addr=5678000:misc=86:time=1796399999");
  EXPECT_FALSE(has_note(h, "kept in pstore")) << all_notes(h);
}

// A cgroup named after a machine-check header, quoted by the pids
// controller in a kernel message, and a user's write to /dev/kmsg: neither is
// what the machine-check code wrote, and nothing is harvested from them.
TEST(Harvest, ASpoofedMachineCheckInTheKernelLogIsIgnored) {
  constexpr char kSpoof[] =
      "mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 1: be00000000000150";
  TempDir dir;
  dir.write("kmsg", std::string("6,40,5,-;cgroup: fork rejected by pids controller in "
                                "/user.slice/user-1000.slice/") +
                        kSpoof + "\n" +
                        // /dev/kmsg gives a user's write facility 1 (LOG_USER).
                        "8,41,5,-;" + kSpoof + "\n" + "12,42,5,-;" + kSpoof + "\n" +
                        // The kernel's own, for comparison.
                        "0,43,5,-;mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 2: "
                        "9000000000000134\n");
  dir.write("pstore/dmesg-ramoops-0",
            std::string("Panic#1 Part1\n") + "<6>[    9.1] cgroup: fork rejected in /a\n" + kSpoof +
                "\n" +  // a newline inside a name: a line without <pri>
                "<14>[    9.2] " + kSpoof + "\n");
  Harvest h = must_harvest(opts(dir.path("kmsg"), dir.path("pstore")));
  ASSERT_EQ(h.records.size(), 1u) << all_notes(h);
  EXPECT_EQ(h.records[0].key, "mce:cpu=1:bank=2:status=9000000000000134");
  EXPECT_EQ(h.records[0].fields.value("raw_line", ""),
            "0,43,5,-;mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 2: 9000000000000134");
  EXPECT_TRUE(has_note(h, "kmsg: " + dir.path("kmsg") + ": 3 line(s) mention a hardware error"))
      << all_notes(h);
  EXPECT_TRUE(has_note(h, "dmesg-ramoops-0: 2 line(s) mention a hardware error")) << all_notes(h);
  EXPECT_TRUE(has_note(h, "read " + dir.path("kmsg") + ": 4 record(s), 1 machine check"))
      << all_notes(h);
}

TEST(Harvest, KeepsTheLineItReadWithEachRecord) {
  TempDir dir;
  dir.write("dmesg-ramoops-0", fixture("dmesg-ramoops-0"));
  Harvest h = must_harvest(opts("", dir.path()));
  ASSERT_EQ(h.records.size(), 1u) << all_notes(h);
  EXPECT_EQ(h.records[0].fields.value("raw_line", ""),
            "<0>[   12.630100] mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 1: "
            "be00000000000150");
}

TEST(Harvest, ARelogWithoutPstoreIsStoredAsKmsgs) {
  TempDir dir;
  dir.write("kmsg", fixture("kmsg-boot2"));
  dir.mkdir("pstore");
  Harvest h = must_harvest(opts(dir.path("kmsg"), dir.path("pstore")));
  ASSERT_EQ(h.records.size(), 2u) << all_notes(h);
  EXPECT_EQ(h.records[0].origin, Origin::kKmsg);
  EXPECT_EQ(h.records[0].key,
            "mce:cpu=0:bank=1:status=be00000000000150:addr=1234000:misc=86:time=1796397484");
  EXPECT_TRUE(has_note(h, "pstore: no dmesg-* or mce-* file in " + dir.path("pstore")))
      << all_notes(h);
}

TEST(Harvest, SkipsWhatItCannotReadAndSaysSo) {
  TempDir dir;
  dir.write("dmesg-efi-176839182000001.enc.z", std::string("\x78\x9c\x01\x02\x03", 5));
  dir.mkdir("dmesg-ramoops-1");  // read() fails: EISDIR
  dir.write("dmesg-ramoops-0", fixture("dmesg-ramoops-0"));
  Harvest h = must_harvest(opts("", dir.path()));
  ASSERT_EQ(h.records.size(), 1u) << all_notes(h);
  EXPECT_EQ(h.records[0].key, kPanicKey);
  EXPECT_TRUE(has_note(h, dir.path("dmesg-efi-176839182000001.enc.z") + " is compressed"))
      << all_notes(h);
  EXPECT_TRUE(has_note(h, dir.path("dmesg-ramoops-1"))) << all_notes(h);
  EXPECT_TRUE(has_note(h, "skipped")) << all_notes(h);
}

TEST(Harvest, AKernelLogWithoutMachineChecksGivesNone) {
  std::string log = fixture("kmsg-boot2");
  std::string without;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find("Hardware Error") == std::string::npos)
      without += line + "\n";
  ASSERT_LT(without.size(), log.size());
  TempDir dir;
  dir.write("kmsg", without);
  Harvest h = must_harvest(opts(dir.path("kmsg"), ""));
  EXPECT_TRUE(h.records.empty());
  EXPECT_TRUE(has_note(h, ": 404 record(s), 0 machine check(s)")) << all_notes(h);
}

TEST(Harvest, AbsentSourcesAreNotesNotErrors) {
  TempDir dir;
  Harvest h = must_harvest(opts(dir.path("no-kmsg"), dir.path("no-pstore")));
  EXPECT_TRUE(h.records.empty());
  EXPECT_TRUE(has_note(h, "kmsg: no " + dir.path("no-kmsg"))) << all_notes(h);
  EXPECT_TRUE(has_note(h, "pstore: no " + dir.path("no-pstore"))) << all_notes(h);
  // And "" skips a source without a word.
  Harvest none = must_harvest(opts("", ""));
  EXPECT_TRUE(none.records.empty());
  EXPECT_TRUE(none.notes.empty());
}

TEST(Harvest, JoinsFragmentsAndUnescapes) {
  // A pr_cont the kernel could not merge comes as its own record, flagged
  // 'c'; a tab comes as \x09; dictionary lines start with a space.
  TempDir dir;
  dir.write("kmsg",
            "0,20,5,-;mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 2: "
            "9400000000000091\n"
            " SUBSYSTEM=cpu\n"
            "0,21,5,-;mce: [Hardware Error]: TSC 0\n"
            "4,22,5,c; ADDR 5678000\\x09\n"
            "0,23,5,-;mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796390000 SOCKET 0 APIC 1 "
            "microcode 1\n");
  Harvest h = must_harvest(opts(dir.path("kmsg"), ""));
  ASSERT_EQ(h.records.size(), 1u) << all_notes(h);
  EXPECT_EQ(h.records[0].key,
            "mce:cpu=1:bank=2:status=9400000000000091:addr=5678000:time=1796390000");
  EXPECT_EQ(h.records[0].mce->severity, mce::MceSeverity::kCorrected);
  EXPECT_EQ(h.records[0].fields.value("kmsg_seq", 0), 20);
}

// The relog's ADDR and MISC as Debian's 6.1 wrote them to /dev/kmsg under
// QEMU (tests/qemu/pstore-test; seen in one of its runs): other CPUs' records
// came between the "TSC" line and its registers, which arrive as a fragment
// of their own. They still belong to it: the relog keeps its ADDR and MISC,
// so it is the ERST record's error, not a second one. A fragment that is
// not registers, or far from the line in time, joins nothing.
TEST(Harvest, RegistersPrintedAfterOtherCpusRecordsStillJoinTheirLine) {
  const std::string relog =
      "6,360,9627695,-;mce: [Hardware Error]: Machine check events logged\n"
      "0,361,9627899,-;mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 1: "
      "be00000000000150\n"
      "0,362,9628942,-;mce: [Hardware Error]: TSC 0 \n"
      "6,363,9629557,-;No MBM correction factor available\n"
      "6,364,9630062,-;IPI shorthand broadcast: enabled\n";
  const std::string rest =
      "0,366,9630927,-;mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796397471 SOCKET 0 APIC "
      "0 microcode 1\n";
  TempDir dir;
  dir.write("pstore/dmesg-erst-7330904870197624834", fixture("dmesg-ramoops-0"));
  dir.write("pstore/mce-erst-7330904870197624833", fixture("mce-erst-7330904870197624833"));
  dir.write("kmsg", relog + "4,365,9628968,c;ADDR 1234000 MISC 86 \n" + rest);
  Harvest h = must_harvest(opts(dir.path("kmsg"), dir.path("pstore")));
  ASSERT_EQ(h.records.size(), 1u) << all_notes(h);
  EXPECT_EQ(h.records[0].origin, Origin::kErst);
  EXPECT_EQ(dump_json(h.records[0].fields["origins"]), R"(["erst","pstore","kmsg"])");

  for (const char* fragment :
       {"4,365,9628968,c;ADDR 1234000 MISC 86 (dropped)\n",
        "4,365,19628968,c;ADDR 1234000 MISC 86 \n", "12,365,9628968,c;ADDR 1234000 MISC 86 \n"}) {
    SCOPED_TRACE(fragment);
    std::string kmsg = relog;
    kmsg += fragment;
    kmsg += rest;
    dir.write("kmsg", kmsg);
    Harvest apart = must_harvest(opts(dir.path("kmsg"), dir.path("pstore")));
    ASSERT_EQ(apart.records.size(), 2u) << all_notes(apart);
    EXPECT_EQ(apart.records[1].origin, Origin::kKmsg);
    EXPECT_FALSE(apart.records[1].mce->regs.addr.has_value());
  }
}

TEST(Harvest, ReadsANonBlockingSourceUntilEagain) {
  // /dev/kmsg ends with EAGAIN, not EOF: a FIFO whose writer stays open
  // does the same (and cannot seek).
  TempDir dir;
  const std::string fifo = dir.path("kmsg");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int writer = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
  ASSERT_GE(writer, 0);
  const std::string text =
      "0,5,1,-;mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 4: 9000000000000134\n"
      "0,6,1,-;mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796390001 SOCKET 0 APIC 0 "
      "microcode 1\n";
  ASSERT_EQ(::write(writer, text.data(), text.size()), ssize_t(text.size()));
  Result<Harvest> h = harvest(opts(fifo, ""));
  ::close(writer);
  ASSERT_TRUE(h.ok()) << h.error().message();
  ASSERT_EQ(h->records.size(), 1u) << all_notes(*h);
  EXPECT_EQ(h->records[0].key, "mce:cpu=0:bank=4:status=9000000000000134:time=1796390001");
}

TEST(Harvest, AKernelLogItCannotReadIsAnError) {
  // A directory opens, and its read() fails (EISDIR), whoever runs this.
  TempDir dir;
  dir.mkdir("kmsg");
  Result<Harvest> h = harvest(opts(dir.path("kmsg"), ""));
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().kind(), ErrorKind::kRefused);
  EXPECT_EQ(h.error().code(), EISDIR);
  EXPECT_NE(h.error().message().find("harvest: cannot read the kernel log " + dir.path("kmsg")),
            std::string::npos)
      << h.error().message();
  EXPECT_NE(h.error().message().find("--no-kmsg"), std::string::npos) << h.error().message();
  EXPECT_NE(h.error().message().find("harvest = no"), std::string::npos) << h.error().message();
}

// A previous boot's trace buffer as the broker keeps it
// (persistent/previous_boot.h), its formats those of Debian's 6.1
// (tests/fixtures/tracefs-debian-6.1: mce_record id 113) and ftrace/print's
// of the 6.18 fixture (id 5, the clock markers).
class PreviousBootHarvest : public ::testing::Test {
 protected:
  static std::string tracefs(const std::string& kernel, const std::string& relative) {
    std::ifstream in(pp::testing::fixtures_dir() + "/" + kernel + "/" + relative, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // mce_record's 6.1 layout: mcgstatus 16, status 24, addr 32, misc 40,
  // walltime 80, cpu 88, bank 105.
  static std::vector<uint8_t> mce_record(uint32_t cpu, uint8_t bank, uint64_t status, uint64_t addr,
                                         uint64_t walltime) {
    std::vector<uint8_t> r(108, 0);
    uint16_t id = 113;
    std::memcpy(r.data(), &id, 2);
    std::memcpy(r.data() + 24, &status, 8);
    std::memcpy(r.data() + 32, &addr, 8);
    std::memcpy(r.data() + 80, &walltime, 8);
    std::memcpy(r.data() + 88, &cpu, 4);
    r[105] = bank;
    return r;
  }
  void SetUp() override {
    const std::string copy = "kept/1796285100-boot2/";
    const std::string inst = copy + "instances/boot_mapped/";
    for (const char* f : {"events/header_page", "events/header_event",
                          "events/mce/mce_record/format", "events/mce/mce_record/id"})
      dir_.write(inst + f, tracefs("tracefs-debian-6.1", f));
    for (const char* f : {"events/ftrace/print/format", "events/ftrace/print/id"})
      dir_.write(inst + f, tracefs("tracefs-6.18", f));
    dir_.write(inst + "last_boot_info", "text delta:\t0\n");
    dir_.write(inst + "set_event", "");
    dir_.write(
        copy + "kept.json",
        R"({"version": 1, "instance": "boot_mapped", "boot_id": "boot2", "kept_at": 1796285100})");
    auto layout = ftrace::parse_ring_layout(tracefs("tracefs-debian-6.1", "events/header_page"),
                                            tracefs("tracefs-debian-6.1", "events/header_event"));
    ASSERT_TRUE(layout.ok()) << layout.error().message();
    ftrace::testing::PageBuilder cpu1(*layout, 5000);
    cpu1.big_record(0, mce_record(1, 2, 0x9400000000000000, 0x5678000, 1796285030), 113);
    const std::vector<uint8_t>& bytes = cpu1.bytes();
    dir_.write(inst + "per_cpu/cpu1/trace_pipe_raw", std::string(bytes.begin(), bytes.end()));
    dir_.write(inst + "per_cpu/cpu0/trace_pipe_raw", "");
  }
  HarvestOptions options(bool kmsg) const {
    HarvestOptions o = opts(kmsg ? dir_.path("kmsg") : "", "");
    o.kept_dir = dir_.path("kept");
    return o;
  }
  TempDir dir_;
};

TEST_F(PreviousBootHarvest, AMachineCheckOfTheKeptBufferIsOneRecordOfOriginPreviousBoot) {
  Harvest h = must_harvest(options(false));
  ASSERT_EQ(h.records.size(), 1u) << all_notes(h);
  const WatchRecord& r = h.records[0];
  EXPECT_EQ(r.origin, Origin::kPreviousBoot);
  EXPECT_EQ(r.tracepoint, "mce:mce_record");
  EXPECT_EQ(r.cpu, 1);
  EXPECT_EQ(r.key, "mce:cpu=1:bank=2:status=9400000000000000:addr=5678000:time=1796285030")
      << "the key a live record of the same error had in its own boot";
  EXPECT_EQ(r.wall_ns, 1796285030000000000u);
  ASSERT_TRUE(r.mce.has_value());
  EXPECT_EQ(r.mce->regs.bank, 2u);
  EXPECT_EQ(r.fields.value("kept_copy", ""), "1796285100-boot2");
  EXPECT_EQ(dump_json(r.fields["origins"]), R"(["previous-boot"])");
  EXPECT_EQ(record_json(r)["origin"], "previous-boot");
  EXPECT_TRUE(has_note(h, "1 machine check(s), 0 other RAS record(s)")) << all_notes(h);
  // Read again (a second watch start): the same record, the same key.
  Harvest again = must_harvest(options(false));
  ASSERT_EQ(again.records.size(), 1u);
  EXPECT_EQ(again.records[0].key, r.key);
}

TEST_F(PreviousBootHarvest, TheNextBootsRelogOfTheSameBankIsTheSameRecord) {
  // QEMU keeps the banks across the reset: boot 2's kernel logs CPU 1's
  // corrected error again, with a TIME of its own.
  dir_.write("kmsg",
             "6,1,100,-;mce: [Hardware Error]: Machine check events logged\n"
             "0,2,101,-;mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 2: 9400000000000000\n"
             "0,3,102,-;mce: [Hardware Error]: TSC 0 ADDR 5678000 \n"
             "0,4,103,-;mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796285099 SOCKET 0 APIC 1 "
             "microcode 1\n");
  Harvest h = must_harvest(options(true));
  ASSERT_EQ(h.records.size(), 1u) << all_notes(h);
  EXPECT_EQ(h.records[0].origin, Origin::kPreviousBoot);
  EXPECT_EQ(dump_json(h.records[0].fields["origins"]), R"(["previous-boot","kmsg"])");
  EXPECT_TRUE(has_note(h, "is the machine check a previous boot left (previous-boot)"))
      << all_notes(h);
}

TEST_F(PreviousBootHarvest, ThePanicTextsCopyOfTheSameErrorKeepsTheTracepointsRecord) {
  // The kernel printed the corrected error before the panic, so pstore's
  // copy of the log holds it too, read before the kept buffer: one record,
  // the kept buffer's (every register), pstore named among its origins.
  dir_.write("pstore/dmesg-ramoops-0",
             "Panic#1 Part1\n"
             "<6>[   18.77] mce: [Hardware Error]: Machine check events logged\n"
             "<0>[   18.78] mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 2: "
             "9400000000000000\n"
             "<0>[   18.78] mce: [Hardware Error]: TSC 0 ADDR 5678000 \n"
             "<0>[   18.78] mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796285030 SOCKET 0 APIC "
             "1 microcode 1\n");
  HarvestOptions o = options(false);
  o.pstore = dir_.path("pstore");
  Harvest h = must_harvest(o);
  ASSERT_EQ(h.records.size(), 1u) << all_notes(h);
  const WatchRecord& r = h.records[0];
  EXPECT_EQ(r.origin, Origin::kPreviousBoot);
  EXPECT_EQ(r.key, "mce:cpu=1:bank=2:status=9400000000000000:addr=5678000:time=1796285030");
  EXPECT_EQ(dump_json(r.fields["origins"]), R"(["previous-boot","pstore"])");
  EXPECT_EQ(r.fields.value("kept_copy", ""), "1796285100-boot2");
  EXPECT_FALSE(r.fields.contains("pstore_file")) << "the kept record is the tracepoint's";
  EXPECT_TRUE(
      has_note(h, "pstore: read " + dir_.path("pstore/dmesg-ramoops-0") + ": 1 machine check(s)"))
      << all_notes(h);
}

TEST_F(PreviousBootHarvest, NoCopyIsANote) {
  HarvestOptions o = options(false);
  o.kept_dir = dir_.path("none");
  Harvest h = must_harvest(o);
  EXPECT_TRUE(h.records.empty());
  EXPECT_TRUE(has_note(h, "previous-boot: no previous boot's trace buffer kept in"))
      << all_notes(h);
  EXPECT_TRUE(has_note(h, "e.g. 'memmap=12M$0x10000000 trace_instance=boot_mapped^traceoff@"))
      << "the note says what to add to the kernel command line: " << all_notes(h);
}

}  // namespace
}  // namespace pp::watch

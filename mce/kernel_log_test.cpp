// Kernel log lines back into machine-check registers. The texts are what
// Linux prints (arch/x86/kernel/cpu/mce/core.c); the first is a real panic
// recovered from pstore after a QEMU injection of
// `mce -b 0 1 0xbe00000000000150 0x5 0x1234000 0x86` on Skylake-Server-v4.
#include "mce/kernel_log.h"

#include <gtest/gtest.h>

namespace pp::mce {
namespace {

constexpr const char* kPanicLog =
    "[    1.234567] Run /init as init process\n"
    "mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 1: be00000000000150\n"
    "mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff9c8592eb> {native_safe_halt+0xb/0x10}\n"
    "mce: [Hardware Error]: TSC 5663dac3e ADDR 1234000 MISC 86\n"
    "mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796285030 SOCKET 0 APIC 0 microcode 1\n"
    "mce: [Hardware Error]: Run the above through 'mcelog --ascii'\n"
    "mce: [Hardware Error]: Machine check: Processor context corrupt\n"
    "Kernel panic - not syncing: Fatal machine check\n";

TEST(MceLog, KernelPanicTextIsOneErrorWithEveryField) {
  MceLog log = parse_mce_log(kPanicLog);
  EXPECT_TRUE(log.problems.empty());
  ASSERT_EQ(log.entries.size(), 1u);
  const MceLogEntry& e = log.entries[0];
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.kernel_message, "Processor context corrupt");
  MceRegisters want;
  want.cpu = 0;
  want.mcgstatus = 0x5;
  want.bank = 1;
  want.status = 0xbe00000000000150;
  want.cs = 0x10;
  want.ip = 0xffffffff9c8592eb;
  want.tsc = 0x5663dac3e;
  want.addr = 0x1234000;
  want.misc = 0x86;
  want.cpuvendor = 0;
  want.cpuid = 0x50654;
  want.walltime = 1796285030;
  want.socketid = 0;
  want.apicid = 0;
  want.microcode = 1;
  EXPECT_EQ(e.regs, want);
  MceDecoded d = decode_mce(e.regs);
  EXPECT_EQ(d.vendor, CpuVendor::kIntel);
  EXPECT_EQ(d.severity, MceSeverity::kFatal);
  EXPECT_EQ(d.kernel_severity, KernelSeverity::kPanic);
  EXPECT_EQ(d.kernel_severity_rule.rfind(e.kernel_message, 0), 0u) << d.kernel_severity_rule;
}

// dmesg timestamps, syslog prefixes, the polled form "Machine Check: 0" (no
// "Exception"), an exact RIP, and several errors in a row.
TEST(MceLog, PrefixesAndThePolledFormAndSeveralErrors) {
  MceLog log = parse_mce_log(
      "[   12.345678] mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 2: 9400000000000000\r\n"
      "[   12.345679] mce: [Hardware Error]: TSC 1f ADDR 5678000 \r\n"
      "[   12.345680] mce: [Hardware Error]: PROCESSOR 0:806f8 TIME 1700000000 SOCKET 1 APIC 4 "
      "microcode 2b000161\r\n"
      "Dec 03 12:00:00 host kernel: mce: [Hardware Error]: CPU 3: Machine Check Exception: 7 "
      "Bank 4: bd80000000100134\n"
      "Dec 03 12:00:00 host kernel: mce: [Hardware Error]: RIP 33:<00007f0012345678>\n"
      "Dec 03 12:00:00 host kernel: mce: [Hardware Error]: TSC 2 ADDR 3 MISC 4 PPIN "
      "1122334455667788\n");
  EXPECT_TRUE(log.problems.empty()) << log.problems[0].message;
  ASSERT_EQ(log.entries.size(), 2u);
  const MceRegisters& a = log.entries[0].regs;
  EXPECT_EQ(log.entries[0].line, 1u);
  EXPECT_EQ(a.cpu, 1u);
  EXPECT_EQ(a.bank, 2u);
  EXPECT_EQ(a.mcgstatus, 0u);
  EXPECT_EQ(a.status, 0x9400000000000000u);
  EXPECT_EQ(a.addr, 0x5678000u);
  EXPECT_EQ(a.misc, std::nullopt);
  EXPECT_EQ(a.socketid, 1u);
  EXPECT_EQ(a.apicid, 4u);
  EXPECT_EQ(a.microcode, 0x2b000161u);
  EXPECT_EQ(a.cpuid, 0x806f8u);
  EXPECT_EQ(a.ip, std::nullopt);
  const MceRegisters& b = log.entries[1].regs;
  EXPECT_EQ(log.entries[1].line, 4u);
  EXPECT_EQ(b.cpu, 3u);
  EXPECT_EQ(b.mcgstatus, 7u);
  EXPECT_EQ(b.cs, 0x33);
  EXPECT_EQ(b.ip, 0x00007f0012345678u);
  EXPECT_EQ(b.ppin, 0x1122334455667788u);
  EXPECT_EQ(b.cpuvendor, std::nullopt);
  EXPECT_TRUE(log.entries[1].kernel_message.empty());
}

// AMD SMCA: the TSC line carries SYND and IPID; PROCESSOR's vendor is 2.
TEST(MceLog, AmdSyndAndIpid) {
  MceLog log = parse_mce_log(
      "mce: [Hardware Error]: CPU 5: Machine Check: 0 Bank 17: 9c2018000000011b\n"
      "mce: [Hardware Error]: TSC 0 ADDR 1f7aff840 MISC d01a000101000000 SYND 4d000002 IPID "
      "9600150f00\n"
      "mce: [Hardware Error]: PROCESSOR 2:a00f11 TIME 1700000000 SOCKET 0 APIC a microcode "
      "a0011ce\n"
      "[Hardware Error]: Deferred error, no action required.\n"
      "[Hardware Error]: CPU:5 (19:1:1) MC17_STATUS[-|-|MiscV|AddrV|-|-|SyndV|-|Deferred|Poison]: "
      "0x9c2018000000011b\n");
  EXPECT_TRUE(log.problems.empty()) << log.problems[0].message;
  ASSERT_EQ(log.entries.size(), 1u);
  const MceRegisters& r = log.entries[0].regs;
  EXPECT_EQ(r.synd, 0x4d000002u);
  EXPECT_EQ(r.ipid, 0x9600150f00u);
  EXPECT_EQ(r.cpuvendor, 2);
  EXPECT_EQ(r.apicid, 0xau);
  MceDecoded d = decode_mce(r);
  EXPECT_EQ(d.vendor, CpuVendor::kAmd);
  EXPECT_EQ(d.smca_bank_type, "umc");
  EXPECT_EQ(d.severity, MceSeverity::kDeferred);
}

// A malformed line is a problem naming its line; the error it belonged to is
// skipped with its continuation lines, and parsing goes on.
TEST(MceLog, MalformedLinesNameTheirLineAndParsingGoesOn) {
  MceLog log = parse_mce_log(
      "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 2: zz00\n"  // 1 bad header
      "mce: [Hardware Error]: TSC 1 ADDR 2\n"                          // 2 skipped with it
      "mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 3: 9000000000000000\n"  // 3
      "mce: [Hardware Error]: TSC 1 ADDR xyz\n"                                    // 4 bad value
      "mce: [Hardware Error]: RIP 10:ffff\n"                                       // 5 bad RIP
      "mce: [Hardware Error]: PROCESSOR x:1\n"  // 6 bad PROCESSOR
      "mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 4: 9000000000000001\n"  // 7
      "mce: [Hardware Error]: PROCESSOR 0:1 TIME soon\n"                           // 8 bad TIME
      "mce: [Hardware Error]: CPU 99999999999: Machine Check: 0 Bank 1: 1\n"       // 9 CPU too big
      "mce: [Hardware Error]: CPU 2: Machine Check: 0 Bank 5: 10000000000000000\n");  // 10 > 64
                                                                                      // bits
  ASSERT_EQ(log.problems.size(), 7u);
  const size_t lines[] = {1, 4, 5, 6, 8, 9, 10};
  for (size_t i = 0; i < 7; i++) {
    EXPECT_EQ(log.problems[i].line, lines[i]);
    EXPECT_EQ(log.problems[i].message.rfind("line " + std::to_string(lines[i]) + ": ", 0), 0u)
        << log.problems[i].message;
  }
  EXPECT_NE(log.problems[0].message.find("expected 'CPU <n>: Machine Check"), std::string::npos);
  EXPECT_NE(log.problems[1].message.find("ADDR needs a hex value, got 'xyz'"), std::string::npos)
      << log.problems[1].message;
  ASSERT_EQ(log.entries.size(), 2u);
  EXPECT_EQ(log.entries[0].regs.bank, 3u);
  EXPECT_EQ(log.entries[0].regs.addr, std::nullopt);  // the bad TSC line added nothing
  EXPECT_EQ(log.entries[1].regs.bank, 4u);
  EXPECT_EQ(log.entries[1].regs.walltime, std::nullopt);
}

TEST(MceLog, ContinuationWithoutHeaderIsAProblem) {
  MceLog log = parse_mce_log("x\nmce: [Hardware Error]: TSC 1 ADDR 2\n");
  ASSERT_EQ(log.problems.size(), 1u);
  EXPECT_EQ(log.problems[0].line, 2u);
  EXPECT_NE(log.problems[0].message.find("no 'CPU N: Machine Check' line came before it"),
            std::string::npos);
  EXPECT_TRUE(log.entries.empty());
}

TEST(MceLog, TextWithoutMachineChecksGivesNothing) {
  for (const char* text : {"", "\n\n", "[    0.000000] Linux version 6.1.0\n",
                           "[    0.5] TSC deadline timer available\n",
                           "EDAC MC0: Giving out device to module skx_edac controller Skylake\n",
                           "mce: [Hardware Error]: Machine check: Processor context corrupt\n"}) {
    MceLog log = parse_mce_log(text);
    EXPECT_TRUE(log.entries.empty()) << text;
    EXPECT_TRUE(log.problems.empty()) << text;
  }
}

TEST(MceLog, RegisterHexWithOrWithout0x) {
  EXPECT_EQ(*parse_register_hex("be00000000000150", "STATUS"), 0xbe00000000000150u);
  EXPECT_EQ(*parse_register_hex("0xBE00000000000150", "STATUS"), 0xbe00000000000150u);
  EXPECT_EQ(*parse_register_hex("86", "--misc"), 0x86u);
  EXPECT_EQ(*parse_register_hex("0000000000000000ff", "--addr"), 0xffu);
  auto bad = parse_register_hex("xyz", "--addr");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kUsage);
  EXPECT_NE(bad.error().message().find("--addr: 'xyz' is not hexadecimal"), std::string::npos);
  auto big = parse_register_hex("10000000000000000", "STATUS");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message().find("does not fit in 64 bits"), std::string::npos);
  EXPECT_FALSE(parse_register_hex("", "STATUS").ok());
  EXPECT_FALSE(parse_register_hex("0x", "STATUS").ok());
  EXPECT_FALSE(parse_register_hex("-1", "STATUS").ok());
}

TEST(MceLog, FillAbsentKeepsWhatTheLogSays) {
  MceRegisters log;
  log.status = 1;
  log.bank = 2;
  MceRegisters given;
  given.status = 9;
  given.mcgcap = 0x1000c0a;
  MceRegisters r = fill_absent(log, given);
  EXPECT_EQ(r.status, 1u);
  EXPECT_EQ(r.bank, 2u);
  EXPECT_EQ(r.mcgcap, 0x1000c0au);
}

// A UCNA (UC=1, PCC=0, S=0, AR=0: 0xb400000000000090) that the log says
// the kernel panicked on: its grader saw what the record lacks (MCG_CAP, the
// context of the IP). decode --log decodes it as a kernel-log record and
// says that the kernel's verdict differs from the decode's.
TEST(MceLog, EntryComparesTheKernelsVerdictAndSaysWhenItDisagrees) {
  MceLog log = parse_mce_log(
      "mce: [Hardware Error]: CPU 2: Machine Check Exception: 5 Bank 7: b400000000000090\n"
      "mce: [Hardware Error]: TSC 0 ADDR 1234000 MISC 86\n"
      "mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796285030 SOCKET 0 APIC 4 microcode 1\n"
      "mce: [Hardware Error]: Machine check: Processor context corrupt\n");
  ASSERT_EQ(log.entries.size(), 1u);
  ASSERT_EQ(log.entries[0].kernel_message, "Processor context corrupt");
  MceDecoded d = decode_mce_log_entry(log.entries[0]);
  EXPECT_EQ(d.origin, MceOrigin::kKernelLog);
  ASSERT_TRUE(d.kernel_verdict);
  EXPECT_EQ(d.kernel_verdict->severity, KernelSeverity::kPanic);
  EXPECT_NE(d.kernel_severity, KernelSeverity::kPanic);
  EXPECT_FALSE(d.kernel_verdict->agrees);
  EXPECT_NE(d.advice.find("; the kernel panics;"), std::string::npos) << d.advice;

  nlohmann::json j = mce_log_entry_json(log.entries[0], CpuVendor::kUnknown);
  EXPECT_EQ(j["origin"], "kernel-log") << j.dump();
  EXPECT_EQ(j["kernel_verdict"]["text"], "Processor context corrupt") << j.dump();
  EXPECT_EQ(j["kernel_verdict"]["severity"], "panic") << j.dump();
  EXPECT_EQ(j["kernel_verdict"]["agrees"], false) << j.dump();
  std::string text;
  print_mce_log_entry_text(log.entries[0], CpuVendor::kUnknown, text);
  EXPECT_NE(text.find("kernel said \"Processor context corrupt\" (panic), disagrees with this "
                      "decode\n"),
            std::string::npos)
      << text;
}

// The panic log's verdict agrees with the decode, and says so.
TEST(MceLog, EntryWhoseKernelVerdictAgreesSaysSo) {
  MceLog log = parse_mce_log(kPanicLog);
  ASSERT_EQ(log.entries.size(), 1u);
  MceDecoded d = decode_mce_log_entry(log.entries[0]);
  ASSERT_TRUE(d.kernel_verdict);
  EXPECT_TRUE(d.kernel_verdict->agrees);
  EXPECT_EQ(mce_log_entry_json(log.entries[0], CpuVendor::kUnknown)["kernel_verdict"]["agrees"],
            true);
}

TEST(MceLog, EntryJsonSaysWhereAndWhatTheKernelSaid) {
  MceLog log = parse_mce_log(kPanicLog);
  ASSERT_EQ(log.entries.size(), 1u);
  nlohmann::json j = mce_log_entry_json(log.entries[0], CpuVendor::kUnknown);
  EXPECT_EQ(j["log_line"], 2);
  EXPECT_EQ(j["kernel_message"], "Processor context corrupt");
  EXPECT_EQ(j["severity"], "fatal");
  std::string text;
  print_mce_log_entry_text(log.entries[0], CpuVendor::kUnknown, text);
  EXPECT_NE(text.find("  log line 2, the kernel said: Processor context corrupt\n"),
            std::string::npos)
      << text;
}

// AMD's decoder alone (the core printed nothing): the CPU line gives CPU,
// bank, status, the CPUID signature (17:71:0 is 0x870f10) and the vendor;
// the address, IPID and syndrome lines add to it; its words are kept.
TEST(MceLog, AmdDecoderLinesAreAnError) {
  MceLog log = parse_mce_log(
      "Jun 01 10:00:00 host kernel: [Hardware Error]: Corrected error, no action required.\n"
      "Jun 01 10:00:00 host kernel: [Hardware Error]: CPU:0 (17:71:0) "
      "MC22_STATUS[Over|CE|MiscV|AddrV|-|-|SyndV|CECC|-|-|-]: 0xdc2040000000011b\n"
      "Jun 01 10:00:00 host kernel: [Hardware Error]: Error Addr: 0x0000000735c6c440\n"
      "Jun 01 10:00:00 host kernel: [Hardware Error]: IPID: 0x0000009600050f00, Syndrome: "
      "0x000000005b240a00\n"
      "Jun 01 10:00:00 host kernel: [Hardware Error]: Unified Memory Controller Ext. Error Code: "
      "0, DRAM ECC error.\n"
      "Jun 01 10:00:00 host kernel: EDAC MC0: 1 CE on mc#0csrow#1channel#0 (csrow:1 channel:0 "
      "page:0x735c6c offset:0x440 grain:64 syndrome:0x5b24)\n");
  EXPECT_TRUE(log.problems.empty()) << log.problems[0].message;
  ASSERT_EQ(log.entries.size(), 1u);
  const MceLogEntry& e = log.entries[0];
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.regs.cpu, 0u);
  EXPECT_EQ(e.regs.bank, 22u);
  EXPECT_EQ(e.regs.status, 0xdc2040000000011bu);
  EXPECT_EQ(e.regs.addr, 0x735c6c440u);
  EXPECT_EQ(e.regs.ipid, 0x9600050f00u);
  EXPECT_EQ(e.regs.synd, 0x5b240a00u);
  EXPECT_EQ(e.regs.cpuid, 0x870f10u);
  EXPECT_EQ(e.regs.cpuvendor, 2);
  ASSERT_EQ(e.kernel_decode.size(), 2u);
  EXPECT_EQ(e.kernel_decode[0], "Corrected error, no action required.");
  EXPECT_EQ(e.kernel_decode[1], "Unified Memory Controller Ext. Error Code: 0, DRAM ECC error.");
  // The EDAC line at the same page joins it.
  ASSERT_TRUE(e.edac.has_value());
  EXPECT_EQ(e.edac->location.chip_select, 1u);
  EXPECT_EQ(e.edac->location.channel, 0u);
  EXPECT_EQ(e.edac->location.controller, 0u);
  EXPECT_EQ(decode_mce(e.regs).vendor, CpuVendor::kAmd);
  nlohmann::json j = mce_log_entry_json(e, CpuVendor::kUnknown);
  EXPECT_EQ(j["source"], "mce");
  EXPECT_EQ(j["edac"]["location"]["chip_select"], 1);
  EXPECT_EQ(j["kernel_decode"].size(), 2u);
}

// Intel EDAC lines alone: the DIMM name and its numbers into the location.
TEST(MceLog, IntelEdacLinesAreErrorsWithALocation) {
  MceLog log = parse_mce_log(
      "[ 9.1] EDAC MC0: Giving out device to module skx_edac controller Skylake Socket#0 IMC#0\n"
      "[ 99.5] EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 "
      "slot:0 page:0x8a6c1 offset:0xa00 grain:32 syndrome:0x0 - err_code:0x0000:0x009f "
      "socket:0 imc:0 rank:3 bg:2 ba:1 row:0x1d26 col:0x140)\n"
      "[ 99.6] EDAC MC1: 2 UE memory scrubbing error on CPU_SrcID#1_Ha#0_Chan#0_DIMM#0 "
      "(channel:0 slot:0 page:0xee30a0 offset:0x0 grain:32 -  area:DRAM err_code:0008:00c2 "
      "socket:1 ha:0 channel_mask:1 rank:0)\n");
  EXPECT_TRUE(log.problems.empty()) << log.problems[0].message;
  ASSERT_EQ(log.entries.size(), 2u);
  ASSERT_TRUE(log.entries[0].edac.has_value());
  EXPECT_FALSE(log.entries[0].has_mce);
  const EdacError& a = *log.entries[0].edac;
  EXPECT_EQ(a.type, EdacErrorType::kCorrected);
  EXPECT_EQ(a.count, 1u);
  EXPECT_EQ(a.mc, 0u);
  EXPECT_EQ(a.message, "memory read error");
  EXPECT_EQ(a.label, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
  EXPECT_EQ(a.location.socket, 0u);
  EXPECT_EQ(a.location.controller, 0u);
  EXPECT_EQ(a.location.channel, 1u);
  EXPECT_EQ(a.location.slot, 0u);
  EXPECT_EQ(a.location.rank, 3u);
  EXPECT_EQ(a.location.bank_group, 2u);
  EXPECT_EQ(a.location.bank, 1u);
  EXPECT_EQ(a.location.row, 0x1d26u);
  EXPECT_EQ(a.location.column, 0x140u);
  EXPECT_EQ(a.location.address, 0x8a6c1a00u);
  EXPECT_EQ(a.grain, 32u);
  EXPECT_EQ(a.syndrome, 0u);
  const EdacError& b = *log.entries[1].edac;
  EXPECT_EQ(b.type, EdacErrorType::kUncorrected);
  EXPECT_EQ(b.count, 2u);
  EXPECT_EQ(b.location.socket, 1u);
  EXPECT_EQ(b.location.controller, 0u);
  EXPECT_EQ(b.location.address, 0xee30a0000u);
  EXPECT_EQ(b.syndrome, std::nullopt);
  nlohmann::json j = mce_log_entry_json(log.entries[0], CpuVendor::kUnknown);
  EXPECT_EQ(j["source"], "edac");
  EXPECT_EQ(j["type"], "corrected");
  EXPECT_EQ(j["address"], "0x8a6c1a00");
  EXPECT_EQ(j["location"]["row"], 0x1d26);
}

// sb_edac's copy of the registers ("EDAC sbridge MC1: CPU 1: Machine Check
// Event: ..."), then the EDAC line at the same page: one error.
TEST(MceLog, SbridgeRegistersAndTheEdacLineAreOneError) {
  MceLog log = parse_mce_log(
      "Feb 23 03:28:16 kernel: mce: [Hardware Error]: Machine check events logged\n"
      "Feb 23 03:28:16 kernel: EDAC sbridge MC1: HANDLING MCE MEMORY ERROR\n"
      "Feb 23 03:28:16 kernel: EDAC sbridge MC1: CPU 1: Machine Check Event: 0 Bank 11: "
      "8c00004f000800c2\n"
      "Feb 23 03:28:16 kernel: EDAC sbridge MC1: TSC 0\n"
      "Feb 23 03:28:16 kernel: EDAC sbridge MC1: ADDR ee30a0000\n"
      "Feb 23 03:28:16 kernel: EDAC sbridge MC1: MISC 900040004001e8c\n"
      "Feb 23 03:28:16 kernel: EDAC sbridge MC1: PROCESSOR 0:306e4 TIME 1519356496 SOCKET 1 "
      "APIC 20\n"
      "Feb 23 03:28:16  kernel: EDAC MC1: 1 CE memory scrubbing error on "
      "CPU_SrcID#1_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0 page:0xee30a0 offset:0x0 grain:32 "
      "syndrome:0x0 -  area:DRAM err_code:0008:00c2 socket:1 ha:0 channel_mask:1 rank:0)\n");
  EXPECT_TRUE(log.problems.empty()) << log.problems[0].message;
  ASSERT_EQ(log.entries.size(), 1u);
  const MceLogEntry& e = log.entries[0];
  EXPECT_EQ(e.regs.bank, 11u);
  EXPECT_EQ(e.regs.status, 0x8c00004f000800c2u);
  EXPECT_EQ(e.regs.addr, 0xee30a0000u);
  EXPECT_EQ(e.regs.misc, 0x900040004001e8cu);
  EXPECT_EQ(e.regs.walltime, 1519356496u);
  ASSERT_TRUE(e.edac.has_value());
  EXPECT_EQ(e.edac->location.socket, 1u);
  std::string text;
  print_mce_log_entry_text(e, CpuVendor::kUnknown, text);
  EXPECT_NE(text.find("  time 2018-02-23T03:28:16Z\n"), std::string::npos) << text;
  EXPECT_NE(text.find("on CPU_SrcID#1_Ha#0_Chan#0_DIMM#0"), std::string::npos) << text;
}

// A mail: quote marks, CRLF, a header wrapped after "Bank", the marker
// wrapped inside; a Linux 3.x bare header with PROCESSOR on the TSC line.
TEST(MceLog, MailQuotesWrapsAndBareLines) {
  MceLog log = parse_mce_log(
      "> [  123.4] mce: [Hardware Error]: CPU 3: Machine Check Exception: 5 Bank\r\n"
      "> 1: be00000000000150\r\n"
      "> [  123.4] mce: [Hardware\r\n"
      "> Error]: TSC 5663dac3e ADDR 1234000 MISC 86\r\n"
      ">> [  123.4] mce: [Hardware Error]: Machine check: Processor context corrupt\r\n"
      "Jun  8 04:46:54 array01 kernel: sbridge: HANDLING MCE MEMORY ERROR\n"
      "Jun  8 04:46:54 array01 kernel: CPU 6: Machine Check Exception: 0 Bank 9: "
      "8c00004e000800c1\n"
      "Jun  8 04:46:54 array01 kernel: TSC 0 ADDR 1fb6d78000 MISC 1229410001001c8c PROCESSOR "
      "0:206d7 TIME 1402195613 SOCKET 1 APIC 20\n"
      "Jun  8 04:46:55 array01 kernel: EDAC MC1: CE row 1, channel 0, label "
      "\"CPU_SrcID#1_Channel#0_DIMM#1\": 1 Unknown error(s): memory scrubbing on FATAL area : "
      "cpu=6 Err=0008:00c1 (ch=1), addr = 0x1fb6d78000 => socket=1, Channel=0(mask=1), rank=5\n");
  EXPECT_TRUE(log.problems.empty()) << log.problems[0].message;
  ASSERT_EQ(log.entries.size(), 2u);
  const MceLogEntry& a = log.entries[0];
  EXPECT_EQ(a.line, 1u);
  EXPECT_EQ(a.regs.cpu, 3u);
  EXPECT_EQ(a.regs.bank, 1u);
  EXPECT_EQ(a.regs.status, 0xbe00000000000150u);
  EXPECT_EQ(a.regs.addr, 0x1234000u);
  EXPECT_EQ(a.kernel_message, "Processor context corrupt");
  EXPECT_FALSE(a.found_at_boot);
  const MceLogEntry& b = log.entries[1];
  EXPECT_EQ(b.regs.cpu, 6u);
  EXPECT_EQ(b.regs.bank, 9u);
  EXPECT_EQ(b.regs.addr, 0x1fb6d78000u);
  EXPECT_EQ(b.regs.cpuid, 0x206d7u);
  EXPECT_EQ(b.regs.socketid, 1u);
  ASSERT_TRUE(b.edac.has_value());
  EXPECT_EQ(b.edac->label, "CPU_SrcID#1_Channel#0_DIMM#1");
  EXPECT_EQ(b.edac->location.rank, 5u);
  EXPECT_EQ(b.edac->location.channel, 0u);
}

// The boot-time relog: polled ("Machine Check: 0"), no MCIP, UC and PCC.
TEST(MceLog, FoundAtBootIsSaid) {
  MceLog log = parse_mce_log(
      "[    0.064261] mce: [Hardware Error]: Machine check events logged\n"
      "[    0.064265] mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 4: "
      "b200000000070f0f\n"
      "[    0.064270] mce: [Hardware Error]: TSC 0 \n"
      "[    0.064277] mce: [Hardware Error]: PROCESSOR 0:906ea TIME 1537152664 SOCKET 0 APIC 0 "
      "microcode 28\n"
      "[    9.1] mce: [Hardware Error]: CPU 1: Machine Check: 0 Bank 6: cc59dec000041152\n");
  ASSERT_EQ(log.entries.size(), 2u);
  EXPECT_TRUE(log.entries[0].found_at_boot);
  EXPECT_FALSE(log.entries[1].found_at_boot);  // corrected
  std::string text;
  print_mce_log_entry_text(log.entries[0], CpuVendor::kUnknown, text);
  EXPECT_NE(text.find("found at boot"), std::string::npos) << text;
  EXPECT_NE(text.find("most likely what reset the machine"), std::string::npos) << text;
  EXPECT_NE(text.find("time 2018-09-17T02:51:04Z"), std::string::npos) << text;
  nlohmann::json j = mce_log_entry_json(log.entries[0], CpuVendor::kUnknown);
  EXPECT_EQ(j["found_at_boot"], true);
  EXPECT_EQ(j["time"], "2018-09-17T02:51:04Z");
}

TEST(MceLog, NoErrorsNamesWhatWasLookedFor) {
  MceLog none = parse_mce_log("[    0.0] Linux version 6.1.0\n");
  Error e = no_errors_in_log(none, "-");
  EXPECT_EQ(e.kind(), ErrorKind::kNotFound);
  EXPECT_NE(e.message().find("no hardware error that decode can read in standard input"),
            std::string::npos)
      << e.message();
  MceLog ghes = parse_mce_log(
      "{7}[Hardware Error]: Hardware error from APEI Generic Hardware Error Source: 4\n");
  EXPECT_TRUE(ghes.entries.empty());
  EXPECT_EQ(ghes.hardware_lines, 1u);
  EXPECT_NE(no_errors_in_log(ghes, "x.log").message().find("1 line(s) name a hardware error"),
            std::string::npos);
}

}  // namespace
}  // namespace pp::mce

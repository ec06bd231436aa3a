// Hardware errors from a kernel log, as a user pastes it: every form Linux
// prints for a machine check or a memory error, back into the registers the
// decoder takes and the locations EDAC gives, one MceLogEntry per error.
//
// The machine-check lines of the core (arch/x86/kernel/cpu/mce/core.c, also
// at a panic and in a pstore dump):
//
//   mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 1: be00000000000150
//   mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff9c8592eb> {native_safe_halt+0xb/0x10}
//   mce: [Hardware Error]: TSC 5663dac3e ADDR 1234000 MISC 86
//   mce: [Hardware Error]: PROCESSOR 0:50654 TIME 1796285030 SOCKET 0 APIC 0 microcode 1
//   mce: [Hardware Error]: Machine check: Processor context corrupt
//
// The header ("CPU <cpu>: Machine Check[ Exception| Event]: <MCG_STATUS hex>
// Bank <bank>: <status hex>") starts an error; the RIP line (cs and ip,
// hex), the TSC line (TSC, then ADDR, MISC, PPIN, SYND, IPID when nonzero;
// Linux 3.x put PROCESSOR on the same line) and the PROCESSOR line (vendor
// number : CPUID hex, TIME decimal seconds, SOCKET, APIC hex, microcode hex)
// add to it; "Machine check: <message>" is the kernel's verdict on the
// error before it. The same lines come without the "[Hardware Error]: "
// marker from old kernels and with "EDAC sbridge MC1: " before them from
// sb_edac ("CPU 1: Machine Check Event: 0 Bank 11: 8c00004f000800c2", then
// "TSC 0", "ADDR ee30a0000", "MISC ...", "PROCESSOR ..." each on a line).
//
// AMD's decoder (drivers/edac/mce_amd.c) prints, for the same error:
//
//   [Hardware Error]: Corrected error, no action required.
//   [Hardware Error]: CPU:0 (17:71:0) MC22_STATUS[Over|CE|MiscV|AddrV|-|-|SyndV|CECC|-|-|-]:
//   0xdc2040000000011b
//   [Hardware Error]: Error Addr: 0x0000000735c6c440
//   [Hardware Error]: IPID: 0x0000009600050f00, Syndrome: 0x000000005b240a00
//   [Hardware Error]: Unified Memory Controller Ext. Error Code: 0, DRAM ECC error.
//
// (the CPU line on one line): CPU, family:model:stepping (hex; the CPUID
// signature and the vendor, AMD or Hygon for family 18h, follow from them),
// bank and status; the address, IPID and syndrome lines add to it, and its
// words (the class line before it, the lines after) are kept as the
// kernel's decoding. An error printed by both the core and AMD's decoder
// (same CPU, bank and status) is one error.
//
// The EDAC core's memory-error lines ("EDAC MC0: 1 CE memory read error on
// ...", mce/edac.h) are errors of their own, or join the machine check at
// the same physical page printed just before them.
//
// What a paste adds is taken away: anything before the marker (a dmesg
// timestamp, a syslog or journald prefix in any locale), CR of CRLF, leading
// quote marks ("> ") of a mail, and a line that a mail client wrapped (the
// rest of a line that did not parse, on the next line with no prefix of
// its own, is joined to it).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "mce/decode.h"
#include "mce/edac.h"

namespace pp::mce {

struct MceLogEntry {
  bool has_mce = true;                     // a machine check; false: an EDAC line alone
  MceRegisters regs;                       // the machine check's registers (has_mce)
  std::optional<EdacError> edac;           // the EDAC line of this error, if the log has one
  size_t line = 0;                         // 1-based number of its first line
  std::string kernel_message;              // "Processor context corrupt", when the log says
  std::vector<std::string> kernel_decode;  // AMD's decoder's words, in log order
  // "Machine Check: <mcgstatus> Bank ..." (polled) with no MCIP for an error
  // with UC and PCC: no CPU goes on after that, so it was in the bank when
  // the kernel booted and most likely what reset the machine.
  bool found_at_boot = false;
};

struct MceLogProblem {
  size_t line = 0;      // 1-based
  std::string message;  // "line 3: ..." : what is wrong and what was expected
};

struct MceLog {
  std::vector<MceLogEntry> entries;     // in log order
  std::vector<MceLogProblem> problems;  // malformed machine-check lines, skipped
  size_t hardware_lines = 0;            // lines that name a hardware error (any form)
};

// Parses `text`. Never fails as a whole: a malformed machine-check line is a
// problem naming its line, and parsing goes on with the next line (the lines
// that continue a malformed header are skipped with it).
MceLog parse_mce_log(std::string_view text);

// The error of a log in which no error could be read (decode --log's exit 4,
// kNotFound): what was looked for, and whether lines that name hardware
// errors were there but in a form not read (`path` "-": standard input).
Error no_errors_in_log(const MceLog& log, std::string_view path);

// Each register of `fallback` that `regs` lacks (MCG_CAP and the vendor,
// which the kernel's log lines do not carry, from the command line).
MceRegisters fill_absent(MceRegisters regs, const MceRegisters& fallback);

// An entry's machine check decoded as the log gives it: origin kKernelLog,
// and when the log carried the kernel's verdict line (kernel_message), that
// verdict compared with the decode (apply_kernel_verdict(): d.kernel_verdict,
// and a note when they disagree). decode --log and watch's harvest share it.
MceDecoded decode_mce_log_entry(const MceLogEntry& entry, CpuVendor vendor = CpuVendor::kUnknown);

// An entry as decode --log prints it (its machine check from
// decode_mce_log_entry()): print_mce_text() (or print_edac_text()
// for an EDAC line alone), the EDAC location of a joined error, the time of
// the PROCESSOR line as a date, "found at boot", and a line saying where in
// the log it was and what the kernel said; in JSON, mce_json() (or
// edac_json()) with "source" ("mce" or "edac"), "log_line", and when the
// log has them "time", "found_at_boot", "edac", "kernel_decode" and
// "kernel_message".
void print_mce_log_entry_text(const MceLogEntry& entry, CpuVendor vendor, std::string& out);
nlohmann::json mce_log_entry_json(const MceLogEntry& entry, CpuVendor vendor);

// A register value as the kernel prints it and as users copy it: hexadecimal,
// with or without 0x, at most 64 bits ("be00000000000150", "0x1234000").
// EINVAL usage error naming `what` otherwise.
Result<uint64_t> parse_register_hex(std::string_view text, std::string_view what);

}  // namespace pp::mce

// Machine checks from a kernel log: the lines Linux prints for each error
// (arch/x86/kernel/cpu/mce/core.c, also at a panic and in a pstore dump),
// back into the registers the decoder takes, one MceRegisters per error.
//
//   [   12.345678] mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 1:
//   be00000000000150 mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff9c8592eb>
//   {native_safe_halt+0xb/0x10} mce: [Hardware Error]: TSC 5663dac3e ADDR 1234000 MISC 86 mce:
//   [Hardware Error]: PROCESSOR 0:50654 TIME 1796285030 SOCKET 0 APIC 0 microcode 1 mce: [Hardware
//   Error]: Machine check: Processor context corrupt
//
// The header line ("CPU <cpu decimal>: Machine Check[ Exception]: <MCG_STATUS
// hex> Bank <bank decimal>: <status hex>") starts an error; the RIP line
// (cs and ip, hex), the TSC line (TSC, then ADDR, MISC, PPIN, SYND, IPID when
// nonzero, all hex) and the PROCESSOR line (vendor number : CPUID hex, TIME
// decimal seconds, SOCKET decimal, APIC hex, microcode hex) add to it; a
// "Machine check: <message>" line is the kernel's grading message. Anything
// before "[Hardware Error]: " (a dmesg timestamp, a syslog prefix) is
// ignored, and so are lines without it and [Hardware Error] lines of other
// kinds (EDAC's decoding, "Run the above through 'mcelog --ascii'").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "mce/decode.h"

namespace pp::mce {

struct MceLogEntry {
  MceRegisters regs;
  size_t line = 0;             // 1-based number of its header line
  std::string kernel_message;  // "Processor context corrupt", when the log says
};

struct MceLogProblem {
  size_t line = 0;      // 1-based
  std::string message;  // "line 3: ..." : what is wrong and what was expected
};

struct MceLog {
  std::vector<MceLogEntry> entries;     // in log order
  std::vector<MceLogProblem> problems;  // malformed machine-check lines, skipped
};

// Parses `text`. Never fails as a whole: a malformed machine-check line is a
// problem naming its line, and parsing goes on with the next line (the lines
// that continue a malformed header are skipped with it).
MceLog parse_mce_log(std::string_view text);

// Each register of `fallback` that `regs` lacks (MCG_CAP and the vendor,
// which the kernel's log lines do not carry, from the command line).
MceRegisters fill_absent(MceRegisters regs, const MceRegisters& fallback);

// An entry as decode --log prints it: print_mce_text() and a line saying
// where in the log it was and what the kernel said; in JSON, mce_json()
// with "log_line" and, when the log has it, "kernel_message".
void print_mce_log_entry_text(const MceLogEntry& entry, CpuVendor vendor, std::string& out);
nlohmann::json mce_log_entry_json(const MceLogEntry& entry, CpuVendor vendor);

// A register value as the kernel prints it and as users copy it: hexadecimal,
// with or without 0x, at most 64 bits ("be00000000000150", "0x1234000").
// EINVAL usage error naming `what` otherwise.
Result<uint64_t> parse_register_hex(std::string_view text, std::string_view what);

}  // namespace pp::mce

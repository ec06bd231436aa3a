// A machine check the kernel wrote to the firmware's ERST (APEI Error
// Record Serialization Table) as it panicked, read back on the next boot
// through pstore as `mce-erst-<id>`: the record's data after the CPER record
// header and section descriptor, which is the kernel's `struct mce` itself
// (arch/x86/kernel/cpu/mce/apei.c, apei_write_mce(), struct cper_mce_record;
// drivers/acpi/apei/erst.c, erst_reader(), hands pstore the bytes after
// the section descriptor). The layout is the uapi one
// (arch/x86/include/uapi/asm/mce.h) of Linux 5.9 to at least 6.18, 128
// bytes; the record carries no version of its own (pstore drops the CPER
// header and its revision), so its size is the version: fewer than 128
// bytes is an older kernel's layout or a truncated file, and is refused.
//
//   PP_ASSIGN_OR_RETURN(ErstMce m, parse_erst_mce(bytes, "mce-erst-7330904870197624833"));
//   m.regs.status;      // 0xbe00000000000150
//   m.kernel_severity;  // 7: MCE_PANIC_SEVERITY
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "base/result.h"
#include "mce/decode.h"

namespace pp::mce {

// sizeof(struct mce) in the 6.1 uapi layout.
inline constexpr size_t kStructMceSize = 128;

struct ErstMce {
  MceRegisters regs;
  // The kernel's own grade of the error (struct mce's severity byte: the
  // index of arch/x86/kernel/cpu/mce/internal.h's enum severity_level, 0
  // MCE_NO_SEVERITY ... 7 MCE_PANIC_SEVERITY on 6.1), as KernelSeverity.
  std::optional<KernelSeverity> kernel_severity;
  uint8_t raw_severity = 0;
  size_t extra_bytes = 0;  // bytes past the 128 read (a newer layout's fields)
};

// Reads `bytes` as struct mce; a usage error naming `name` for fewer than
// kStructMceSize bytes or a record with no status (an empty slot). Pure.
Result<ErstMce> parse_erst_mce(std::span<const uint8_t> bytes, std::string_view name);

}  // namespace pp::mce

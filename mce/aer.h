// PCIe Advanced Error Reporting as the kernel traces it: the ras:aer_event
// tracepoint (drivers/pci/pcie/aer.c, include/ras/ras_event.h). Its fields
// on Linux 6.1 (tests/fixtures/tracefs-debian-6.1/events/ras/aer_event/format):
//
//   __data_loc char[] dev_name;  u32 status;  u8 severity;
//   u8 tlp_header_valid;         u32 tlp_header[4];
//
// and the line the kernel's own print format gives for one:
//
//   0000:01:00.0 PCIe Bus Error: severity=Uncorrected, non-fatal, Completion Timeout,
//   TLP Header=Not available
//
// `severity` is the kernel's AER_NONFATAL 0, AER_FATAL 1, AER_CORRECTABLE 2
// (include/linux/aer.h). `status` is the device's Correctable Error Status
// register for a corrected error and its Uncorrectable Error Status register
// otherwise, each already masked by the device's mask register; the bit
// names are the PCI Express Base Specification's (section 7.8.4, Advanced
// Error Reporting Extended Capability: Uncorrectable Error Status Register,
// Correctable Error Status Register).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mce/decode.h"

namespace pp::mce {

// The tracepoint's severity, in the kernel's numbering.
enum class AerSeverity { kNonFatal = 0, kFatal = 1, kCorrected = 2 };
// "non-fatal", "fatal", "corrected"; "unknown" outside the enum.
std::string_view aer_severity_name(AerSeverity severity);
// On the machine checks' scale (mce/decode.h): corrected is corrected, an
// uncorrected non-fatal error is uncorrected, a fatal one fatal.
MceSeverity aer_common_severity(AerSeverity severity);

// One named bit of an error status register.
struct StatusBit {
  unsigned bit;
  std::string_view name;
};
// The names of the bits set in `status`, lowest bit first, from `table`; a
// set bit the table does not name (one the specification reserves) is
// "bit N". AER's registers below, and CXL's RAS capability (ras_events.cpp).
std::vector<std::string> status_bit_names(uint32_t status, std::span<const StatusBit> table);

// status_bit_names() from the correctable table when `correctable`, the
// uncorrectable one otherwise.
std::vector<std::string> aer_status_bits(uint32_t status, bool correctable);

struct AerError {
  std::string device;  // the PCI device's name, "0000:01:00.0"
  uint32_t status = 0;
  uint8_t raw_severity = 0;                           // as traced; severity() reads it
  std::optional<std::array<uint32_t, 4>> tlp_header;  // when the record says it is valid

  // raw_severity as the enum; nullopt for a value the kernel does not send.
  std::optional<AerSeverity> severity() const;
  bool correctable() const { return raw_severity == uint8_t(AerSeverity::kCorrected); }
};

}  // namespace pp::mce

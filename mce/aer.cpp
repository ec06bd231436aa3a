#include "mce/aer.h"

namespace pp::mce {
namespace {

// PCI Express Base Specification, Correctable Error Status Register
// (section 7.8.4.5): bits 1-5 and 9-11 are reserved.
constexpr StatusBit kCorrectableBits[] = {
    {0, "Receiver Error"},
    {6, "Bad TLP"},
    {7, "Bad DLLP"},
    {8, "REPLAY_NUM Rollover"},
    {12, "Replay Timer Timeout"},
    {13, "Advisory Non-Fatal Error"},
    {14, "Corrected Internal Error"},
    {15, "Header Log Overflow"},
};

// PCI Express Base Specification, Uncorrectable Error Status Register
// (section 7.8.4.2): bit 0 was Link Training Error before revision 1.1;
// bits 1-3 and 6-11 are reserved; 27-31 were added by revisions 5.0 and 6.0.
constexpr StatusBit kUncorrectableBits[] = {
    {0, "Undefined"},
    {4, "Data Link Protocol Error"},
    {5, "Surprise Down Error"},
    {12, "Poisoned TLP"},
    {13, "Flow Control Protocol Error"},
    {14, "Completion Timeout"},
    {15, "Completer Abort"},
    {16, "Unexpected Completion"},
    {17, "Receiver Overflow"},
    {18, "Malformed TLP"},
    {19, "ECRC Error"},
    {20, "Unsupported Request Error"},
    {21, "ACS Violation"},
    {22, "Uncorrectable Internal Error"},
    {23, "MC Blocked TLP"},
    {24, "AtomicOp Egress Blocked"},
    {25, "TLP Prefix Blocked Error"},
    {26, "Poisoned TLP Egress Blocked"},
    {27, "DMWr Request Egress Blocked"},
    {28, "IDE Check Failed"},
    {29, "Misrouted IDE TLP"},
    {30, "PCRC Check Failed"},
    {31, "TLP Translation Egress Blocked"},
};

}  // namespace

std::string_view aer_severity_name(AerSeverity severity) {
  switch (severity) {
    case AerSeverity::kNonFatal:
      return "non-fatal";
    case AerSeverity::kFatal:
      return "fatal";
    case AerSeverity::kCorrected:
      return "corrected";
  }
  return "unknown";
}

MceSeverity aer_common_severity(AerSeverity severity) {
  switch (severity) {
    case AerSeverity::kNonFatal:
      return MceSeverity::kUncorrected;
    case AerSeverity::kFatal:
      return MceSeverity::kFatal;
    case AerSeverity::kCorrected:
      return MceSeverity::kCorrected;
  }
  return MceSeverity::kUncorrected;
}

std::vector<std::string> status_bit_names(uint32_t status, std::span<const StatusBit> table) {
  std::vector<std::string> out;
  for (unsigned bit = 0; bit < 32; bit++) {
    if (!(status & (uint32_t(1) << bit)))
      continue;
    std::string name = "bit " + std::to_string(bit);
    for (const StatusBit& b : table)
      if (b.bit == bit)
        name = std::string(b.name);
    out.push_back(std::move(name));
  }
  return out;
}

std::vector<std::string> aer_status_bits(uint32_t status, bool correctable) {
  return status_bit_names(
      status, correctable ? std::span<const StatusBit>(kCorrectableBits) : kUncorrectableBits);
}

std::optional<AerSeverity> AerError::severity() const {
  if (raw_severity > uint8_t(AerSeverity::kCorrected))
    return std::nullopt;
  return AerSeverity(raw_severity);
}

}  // namespace pp::mce

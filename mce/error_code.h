// The MCA error code, IA32_MCi_STATUS bits 15:0, split into the SDM's class
// and sub-fields (Intel SDM vol. 3B, "Interpreting the MCA Error Codes":
// the simple error codes and the compound error codes, with their forms
//
//   000F 0000 0000 11LL   generic cache hierarchy
//   000F 0000 0001 TTLL   TLB
//   000F 0000 1MMM CCCC   memory controller
//   000F 0001 RRRR TTLL   cache hierarchy
//   000F 0010 1MMM CCCC   memory used as cache (near memory of a 2-level memory)
//   000F 1PPT RRRR IILL   bus and interconnect
//   0000 01xx xxxx xxxx   internal (timer, unclassified)
//
// where F, bit 12, is the correction report filtering bit, masked before the
// form is matched). AMD's MCA_STATUS uses the same forms for its error code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace pp::mce {

enum class McaErrorClass {
  kSimple,
  kGeneric,
  kTlb,
  kMemoryController,
  kCache,
  kMemoryAsCache,
  kBus,
  kInternal,
};
// "simple", "generic", "tlb", "memory-controller", "cache", "memory-as-cache", "bus", "internal".
std::string_view mca_error_class_name(McaErrorClass c);

struct McaErrorCode {
  uint16_t raw = 0;
  McaErrorClass error_class = McaErrorClass::kSimple;
  // The sub-fields the class has, by the SDM's names; absent otherwise.
  std::optional<std::string> simple;    // the simple code's name ("no error", "unclassified"...)
  std::optional<std::string> tt;        // instr, data, generic, reserved
  std::optional<uint8_t> ll;            // raw LL, 0..3, as the SDM encodes it
  std::optional<std::string> rrrr;      // err, rd, wr, drd, dwr, ird, prefetch, evict, snoop
  std::optional<std::string> pp;        // src, res, obs, generic
  std::optional<bool> t;                // timeout
  std::optional<std::string> ii;        // mem, reserved, io, other
  std::optional<std::string> mmm;       // generic, read, write, addr-cmd, scrub, reserved
  std::optional<uint8_t> cccc;          // channel 0..14; 15 is "unspecified"
  bool f = false;                       // bit 12, correction report filtering
  std::optional<std::string> internal;  // internal: "timer" or "unclassified"
};

McaErrorCode decode_mca_error_code(uint16_t code);

// Which cache a raw LL names: "L1", "L2", "L3", "generic" (see the .cpp for
// the SDM's evidence that LL=00 is the first level).
std::string_view cache_level_name(uint8_t ll);

// One line: "cache: data read (rrrr=drd), tt=data, ll=00 (L1)", the cache
// level named by `level_name` (a vendor's, see vendor.h; the SDM's by
// default).
std::string describe_mca_error_code(const McaErrorCode& code,
                                    std::string_view (*level_name)(uint8_t ll) = cache_level_name);

}  // namespace pp::mce

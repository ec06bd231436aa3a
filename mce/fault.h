// Faults, not errors: memory errors grouped by where they happened. One
// failing part of a DRAM (a cell, a row, a column, a bank, a whole device
// or rank, or the channel or controller above it) gives many errors; the
// mode of the fault says what part failed, and so what comes next and what
// to replace. Pure: errors in (their location, time and count), faults out.
//
//   std::vector<FaultError> errors = ...;     // from EDAC records and machine checks
//   errors = join_machine_checks(std::move(errors), 5'000'000'000);
//   std::vector<Fault> faults = group_faults(errors);
//   std::string text;
//   print_faults_text(faults, text);
//
// The modes, per DIMM (its label, else socket/controller/channel/slot):
// - errors that give a row and a column are grouped by rank (or chip select)
//   and bank (bank group and bank): one cell is a cell fault; cells on one
//   row a row fault; cells on one column a column fault; cells on several
//   rows and columns of one bank a bank fault;
// - the errors of one rank in three or more banks are one rank fault, or a
//   device fault when all of them name the same failed DRAM device;
// - errors that give no row or column (EDAC lines of drivers that print
//   none, machine checks located by address alone) are one fault of mode
//   unknown per DIMM and rank (per physical page when not even the DIMM is
//   known): the DIMM is still named;
// - unknown or rank faults on two or more DIMMs of one channel are one
//   channel fault; channel faults on two or more channels of one controller
//   one controller fault.
// The modes follow the field studies of DRAM faults (Sridharan and Liberty,
// "A study of DRAM failures in the field", SC 2012; Sridharan et al.,
// "Memory errors in modern systems", ASPLOS 2015).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mce/decode.h"
#include "mce/location.h"

namespace pp::mce {

enum class FaultMode {
  kCell,
  kRow,
  kColumn,
  kBank,
  kDevice,
  kRank,
  kChannel,
  kController,
  kUnknown
};

// "cell", "row", "column", "bank", "device", "rank", "channel", "controller", "unknown".
std::string_view fault_mode_name(FaultMode mode);

struct FaultError {
  MemoryLocation location;
  uint64_t wall_ns = 0;  // when; 0 when unknown
  uint32_t count = 1;    // errors the record stands for (EDAC's error_count)
  bool uncorrected = false;
  bool machine_check = false;  // from a machine check (false: EDAC)
  // The machine check decoded, for the fault's advice (mce_advice()); null
  // for an EDAC error. Shared, not inline: a decode is kilobytes, an EDAC
  // error without one (most of a history) pays a pointer.
  std::shared_ptr<const MceDecoded> mce;
};

struct Fault {
  FaultMode mode = FaultMode::kUnknown;
  std::string dimm;      // the DIMM's label, else "socket 0 controller 0 channel 1 slot 0"
  MemoryLocation where;  // the layers all its errors share
  uint64_t first_ns = 0, last_ns = 0;  // 0: unknown
  uint64_t errors = 0, uncorrected = 0;
  uint32_t rows = 0, columns = 0, banks = 0;  // distinct ones seen
  // One sentence for the on-call engineer: mce_advice() of its worst machine
  // check with the fault's mode; for EDAC errors alone, the same words
  // ("Hardware event, not a software error: memory at DIMM X has a row
  // fault; plan to replace it.", "Corrected and isolated; no action unless
  // it repeats.").
  std::string advice;
};

// A DIMM's name for a location: its label when known, else the layers from
// the socket to the slot that are known ("socket 0 controller 1 channel 2
// slot 0"; with no slot, the rank or chip select: "... channel 2 rank 1");
// "" when none is.
std::string dimm_name(const MemoryLocation& location);

// Machine checks that EDAC reported too (an EDAC error at the same physical
// page within `window_ns`): the machine check is dropped, the EDAC error,
// which carries the location, stays. The kernel's EDAC drivers derive their
// event from the machine check, so both are one error.
std::vector<FaultError> join_machine_checks(std::vector<FaultError> errors, uint64_t window_ns);

// Machine checks located without the DIMM's label (a model's MCi_MISC gives
// socket, controller, channel and slot, never the label) take the label of
// the EDAC errors at the same socket, controller, channel and slot (and
// rank, when both give one), when those name exactly one; so a machine
// check and the EDAC errors of its DIMM are grouped as one fault.
std::vector<FaultError> label_machine_checks(std::vector<FaultError> errors);

// The faults of `errors` (the rules above), most errors first.
std::vector<Fault> group_faults(const std::vector<FaultError>& errors);

// One block per fault:
//
//   row fault on CPU_SrcID#0_MC#0_Chan#1_DIMM#0: 3 errors (0 uncorrected),
//   2026-12-04T03:00:00Z to 2026-12-04T03:02:00Z
//     socket 0, controller 0, channel 1, slot 0, rank 0, bank group 2, bank 1, row 0x1d26;
//     1 row, 3 columns
//     advice: Hardware event, not a software error: ...
void print_faults_text(const std::vector<Fault>& faults, std::string& out);

// One fault as report --db --faults --json prints it (a line each):
//   {"mode": "row", "dimm": "...", "errors": 3, "uncorrected": 0,
//    "first_seen": "...Z", "last_seen": "...Z", "rows": 1, "columns": 3, "banks": 1,
//    "location": {...memory_location_json()...}, "advice": "..."}
nlohmann::json fault_json(const Fault& fault);

}  // namespace pp::mce

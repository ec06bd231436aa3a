// `report --db --faults`: the history's memory errors as faults
// (mce/fault.h). The records are what `watch --db` stored (watch/record.h's
// object): ras:mc_event records give EDAC's location (decoded from their
// "fields"); machine checks give memory_location() (socket, controller,
// channel, slot, rank, bank, row, column where the CPU model's tables give
// them), else, of the memory-controller class, their physical address; a
// machine check that EDAC reported too is counted once, and one located at
// a DIMM EDAC named takes that DIMM's label (mce::label_machine_checks()).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "mce/fault.h"

namespace pp::watch {

// A stored record's "mce" object decoded again as the watcher decoded it:
// origin "live" is a traced record (mce::MceOrigin::kTracepoint: the kernel
// survived it, never a panic); "kmsg" and "pstore" are kernel-log records,
// with the kernel's verdict line (fields.kernel_message) compared. nullopt
// when the record holds no machine check.
std::optional<mce::MceDecoded> stored_mce(const nlohmann::ordered_json& record);

// One stored record as a memory error, or nullopt when it is none (another
// tracepoint, a machine check of another class or without an address).
std::optional<mce::FaultError> fault_error_of(const nlohmann::ordered_json& record);

// The window within which a machine check and an EDAC error at the same
// page are one error.
inline constexpr uint64_t kEdacJoinWindowNs = 5'000'000'000ull;

// The faults of the stored records, in the order of group_faults().
std::vector<mce::Fault> faults_of(const std::vector<nlohmann::ordered_json>& records);
// The same from the records' memory errors (fault_error_of()).
std::vector<mce::Fault> faults_of(std::vector<mce::FaultError> errors);

}  // namespace pp::watch

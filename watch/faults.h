// `report --db --faults`: the history's memory errors as faults
// (mce/fault.h). The records are what `watch --db` stored (watch/record.h's
// object): ras:mc_event records give EDAC's location (decoded from their
// "fields"); machine checks of the memory-controller class give their
// physical address (and, where the decoder locates them, more); a machine
// check that EDAC reported too is counted once.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "mce/fault.h"

namespace pp::watch {

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

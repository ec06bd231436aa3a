// The DIMMs EDAC knows, from its sysfs: for each memory controller mcN and
// each DIMM (dimmM, or rankM where the controller cannot tell DIMMs apart)
// the label an administrator or the firmware set and where EDAC places it:
//
//   <sysfs>/devices/system/edac/mc/mc0/dimm3/dimm_label     "CPU0_DIMM_A1\n"
//   <sysfs>/devices/system/edac/mc/mc0/dimm3/dimm_location  "channel 1 slot 0 \n"
//
// (Documentation/admin-guide/ras.rst, "dimmX or rankX directories"). All
// reads go through a sys::Tree on the sysfs root, so tests give a temp dir.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "sys/tree.h"

namespace pp::sys {

struct EdacDimm {
  uint32_t mc = 0;       // mcN
  std::string name;      // "dimm3", "rank0"
  std::string label;     // dimm_label, trimmed
  std::string location;  // dimm_location, trimmed ("channel 1 slot 0")
};

// Every DIMM of every controller, by controller then name. A host without
// EDAC (no edac/mc directory) has none: an empty list, not an error. A
// DIMM whose files cannot be read is left out.
Result<std::vector<EdacDimm>> read_edac_dimms(const Tree& sysfs);

}  // namespace pp::sys

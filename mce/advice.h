// Advice: one sentence an on-call engineer can act on, for every decoded
// machine check. It says whether this is a hardware event, what part it
// points at (the DIMM by label when known, else socket/controller/channel/
// rank; the unit of a CPU bank), and what to do: nothing unless it repeats,
// plan a replacement, expect the kernel to offline a page, or look at why a
// panic happened.
//
//   "Corrected and isolated; no action unless it repeats."
//   "Hardware event, not a software error: memory at DIMM CPU0_DIMM_A1
//    (controller 0, channel 1, rank 3) has a row fault; plan to replace it."
#pragma once

#include <string>
#include <string_view>

#include "mce/decode.h"

namespace pp::mce {

// The sentence for `d`. `fault_mode`, from the fault model when it has
// grouped this error with others at one location ("cell", "row", "column",
// "bank", "device", "rank", "channel", "controller"; empty: unknown), makes
// the advice name the fault and ask for a replacement plan. The DIMM label
// comes from d.location->label when set. Whether the kernel survived is the
// kernel's own verdict when d carries one that names a level (a log's
// "Kernel panic - not syncing: Fatal machine check"), else d.kernel_severity.
std::string mce_advice(const MceDecoded& d, std::string_view fault_mode = {});

}  // namespace pp::mce

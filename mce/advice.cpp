#include "mce/advice.h"

#include <vector>

#include "base/json.h"
#include "base/strings.h"

namespace pp::mce {
namespace {

// A memory location in an engineer's words: "DIMM CPU0_DIMM_A1 (controller
// 0, channel 1, rank 3)" or "socket 0, controller 0, channel 1, rank 3"; empty
// when it names no memory part.
std::string memory_part(const MemoryLocation& l) {
  std::vector<std::string> layers;
  auto add = [&](const char* name, const std::optional<uint32_t>& v) {
    if (v)
      layers.push_back(std::string(name) + " " + std::to_string(*v));
  };
  if (l.label.empty())
    add("socket", l.socket);
  add("controller", l.controller);
  add("channel", l.channel);
  add("slot", l.slot);
  add("rank", l.rank);
  add("chip select", l.chip_select);
  if (!l.label.empty())
    return "DIMM " + l.label + (layers.empty() ? "" : " (" + join(layers, ", ") + ")");
  if (!l.controller && !l.channel && !l.rank && !l.chip_select)
    return l.page ? "the page at " + hex_u64(*l.page << 12) : std::string();
  return join(layers, ", ");
}

// What the error points at: "memory at <part>", "the <unit>", or "CPU n bank
// m" when no table names it.
std::string part(const MceDecoded& d) {
  if (d.location) {
    std::string m = memory_part(*d.location);
    if (!m.empty())
      return "memory at " + m;
  }
  if (d.unit)
    return "the " + *d.unit + (d.regs.cpu ? " of CPU " + std::to_string(*d.regs.cpu) : "");
  std::string where = "CPU ";
  where += d.regs.cpu ? std::to_string(*d.regs.cpu) : "?";
  where += " bank ";
  where += d.regs.bank ? std::to_string(*d.regs.bank) : "?";
  return where;
}

// The kernel's level: its own verdict, when the log carried one that names
// a level (its grader saw what a record lacks: MCG_CAP, the context of the
// IP), else this decode's grade of the registers.
KernelSeverity kernel_level(const MceDecoded& d) {
  if (d.kernel_verdict && d.kernel_verdict->severity)
    return *d.kernel_verdict->severity;
  return d.kernel_severity;
}

}  // namespace

std::string mce_advice(const MceDecoded& d, std::string_view fault_mode) {
  const std::string what = part(d);
  const KernelSeverity kernel = kernel_level(d);
  const bool survived = kernel != KernelSeverity::kPanic;
  const bool has_page = (d.location && d.location->page) ||
                        (d.regs.addr && (d.regs.status.value_or(0) & (uint64_t{1} << 58)));
  if (!fault_mode.empty() && fault_mode != "unknown" && d.severity != MceSeverity::kInvalid)
    return "Hardware event, not a software error: " + what + " has a " + std::string(fault_mode) +
           " fault; plan to replace it.";
  switch (d.severity) {
    case MceSeverity::kInvalid:
      return "Not an error: the bank holds no valid record; no action.";
    case MceSeverity::kCorrected:
      if (kernel == KernelSeverity::kAo)
        return "Hardware event, not a software error: a patrol scrub found uncorrectable data in " +
               what + " before any use; the kernel will offline the page.";
      return "Corrected and isolated (" + what +
             "); no action unless it repeats at the same place.";
    case MceSeverity::kDeferred:
      return "Hardware event, not a software error: an uncorrectable error in " + what +
             " was contained before use; the kernel will offline the page; plan to replace the "
             "part if it repeats.";
    case MceSeverity::kUcna:
      if (!survived)
        break;
      // uc_decode_notifier() in core.c hands AO and deferred errors to
      // memory_failure(); newer kernels take UCNA errors too, older ones
      // leave the page in use.
      return "Hardware event, not a software error: uncorrected data in " + what +
             " was not consumed; newer kernels offline the page" +
             (has_page ? "" : " when they have the address") +
             " (HardwareCorrupted in /proc/meminfo grows), older ones leave it; plan to replace "
             "the part if it repeats.";
    case MceSeverity::kSrao:
      if (!survived)
        break;
      return "Hardware event, not a software error: uncorrected data found in " + what +
             " in the background (scrub or cache writeback); the kernel will offline the page; "
             "no process was affected.";
    case MceSeverity::kSrar:
      if (!survived)
        return "Hardware event, not a software error: the kernel consumed uncorrected data in " +
               what + " and panics; replace the part before the machine returns to service.";
      return "Hardware event, not a software error: a process consumed uncorrected data in " +
             what +
             "; the kernel offlined the page and signalled the process; plan to replace "
             "the part if it repeats.";
    case MceSeverity::kFatal:
      if (!survived)
        return "Hardware event, not a software error: processor context corrupt in " + what +
               "; the kernel panics; have the part serviced before the machine returns to "
               "service.";
      return "Hardware event, not a software error: processor context corrupt in " + what +
             ", which the kernel survived; have the part checked.";
    case MceSeverity::kUncorrected:
      break;
  }
  if (!survived)
    return "Hardware event, not a software error: uncorrected error in " + what +
           "; the kernel panics; have the part serviced before the machine returns to service.";
  return "Hardware event, not a software error: uncorrected error in " + what +
         "; check the kernel log for what it did, and plan to service the part.";
}

}  // namespace pp::mce

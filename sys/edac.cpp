#include "sys/edac.h"

#include <charconv>

#include "base/strings.h"

namespace pp::sys {
namespace {

constexpr std::string_view kMcDir = "devices/system/edac/mc";

// "mc12" -> 12; nullopt for "power", "subsystem" and the like.
std::optional<uint32_t> numbered(std::string_view name, std::string_view prefix) {
  if (!starts_with(name, prefix) || name.size() == prefix.size())
    return std::nullopt;
  std::string_view digits = name.substr(prefix.size());
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size())
    return std::nullopt;
  return v;
}

}  // namespace

Result<std::vector<EdacDimm>> read_edac_dimms(const Tree& sysfs) {
  std::vector<EdacDimm> dimms;
  if (!sysfs.is_directory(kMcDir))
    return dimms;
  PP_ASSIGN_OR_RETURN(std::vector<std::string> mcs, sysfs.list(kMcDir));
  for (const std::string& mc_name : mcs) {
    std::optional<uint32_t> mc = numbered(mc_name, "mc");
    if (!mc)
      continue;
    std::string mc_dir = std::string(kMcDir) + "/" + mc_name;
    auto entries = sysfs.list(mc_dir);
    if (!entries.ok())
      continue;
    for (const std::string& name : *entries) {
      if (!numbered(name, "dimm") && !numbered(name, "rank"))
        continue;
      std::string dimm_dir = mc_dir;
      dimm_dir += '/';
      dimm_dir += name;
      auto label = sysfs.read(dimm_dir + "/dimm_label", 4096);
      auto location = sysfs.read(dimm_dir + "/dimm_location", 4096);
      if (!label.ok() || !location.ok())
        continue;
      dimms.push_back({*mc, name, std::string(trim(*label)), std::string(trim(*location))});
    }
  }
  return dimms;
}

}  // namespace pp::sys

#include "base/cpu_list.h"

#include <algorithm>

#include "base/strings.h"

namespace pp {
namespace {

Result<int> parse_cpu(std::string_view list, std::string_view part) {
  auto value = parse_u64(part, "CPU number");
  if (!value.ok() || *value >= uint64_t(kMaxCpu))
    return errorf(ErrorKind::kUsage, EINVAL,
                  "CPU list '%.*s': '%.*s' is not a CPU number (0 to %d)", int(list.size()),
                  list.data(), int(part.size()), part.data(), kMaxCpu - 1);
  return int(*value);
}

}  // namespace

Result<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::string_view list = trim(text);
  if (list.empty())
    return errorf(ErrorKind::kUsage, EINVAL, "empty CPU list: give CPUs as in '0-3,8'");
  std::vector<int> cpus;
  for (std::string_view part : split(list, ',')) {
    size_t dash = part.find('-');
    PP_ASSIGN_OR_RETURN(int first, parse_cpu(list, part.substr(0, dash)));
    int last = first;
    if (dash != std::string_view::npos) {
      PP_ASSIGN_OR_RETURN(last, parse_cpu(list, part.substr(dash + 1)));
      if (last < first)
        return errorf(ErrorKind::kUsage, EINVAL, "CPU list '%.*s': range '%.*s' runs backwards",
                      int(list.size()), list.data(), int(part.size()), part.data());
    }
    for (int cpu = first; cpu <= last; cpu++)
      cpus.push_back(cpu);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
      j++;
    if (!out.empty())
      out += ',';
    out += std::to_string(cpus[i]);
    if (j > i)
      out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace pp

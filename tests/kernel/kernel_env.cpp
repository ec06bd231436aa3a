#include "tests/kernel/kernel_env.h"

#include <cstring>
#include <regex>

#include "sys/kernel.h"
#include "sys/tree.h"

namespace pp::testing {

bool perf_allowed(std::string* why) {
  sys::EventAttr attr;
  attr.attr.type = PERF_TYPE_SOFTWARE;
  attr.attr.size = sys::kAttrSizeVer7;
  attr.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.attr.disabled = 1;
  auto fd = sys::real_kernel().perf_event_open(attr, -1, 0, -1, 0);
  if (!fd.ok() && why)
    *why = fd.error().message();
  return fd.ok();
}

std::string tracefs_root() {
  std::string root = sys::default_tracefs_root();
  return sys::Tree(root).exists("events") ? root : "";
}

long tracepoint_id(const std::string& sys, const std::string& name) {
  std::string root = tracefs_root();
  if (root.empty())
    return -1;
  auto text = sys::Tree(root).read("events/" + sys + "/" + name + "/id");
  return text.ok() ? std::strtol(text->c_str(), nullptr, 10) : -1;
}

pid_t workload_pid(const std::string& err) {
  std::smatch m;
  if (!std::regex_search(err, m, std::regex("pid ([0-9]+)")))
    return -1;
  return pid_t(std::stol(m[1]));
}

}  // namespace pp::testing

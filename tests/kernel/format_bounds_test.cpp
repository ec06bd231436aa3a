// The bounds report/format_bounds.h puts on formats read from a file must
// never refuse a format of a real kernel: every event of this one passes.
#include "report/format_bounds.h"

#include <dirent.h>

#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "sys/tree.h"
#include "tests/kernel/kernel_env.h"

namespace pp::testing {
namespace {

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d)
    return out;
  while (const dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..")
      out.push_back(name);
  }
  ::closedir(d);
  return out;
}

TEST(FormatBoundsOnThisKernel, EveryEventFormatPasses) {
  std::string root = tracefs_root();
  PP_SKIP_UNLESS(!root.empty(), "no tracefs with events/ is mounted");
  sys::Tree tree(root);
  size_t checked = 0;
  for (const std::string& system : names_in(root + "/events"))
    for (const std::string& name : names_in(root + "/events/" + system)) {
      auto format = tree.read("events/" + system + "/" + name + "/format");
      if (!format.ok())
        continue;  // enable, filter: files, not events
      Status s = report::check_format_bounds(*format);
      EXPECT_TRUE(s.ok()) << system << ":" << name << ": " << s.error().message();
      checked++;
    }
  EXPECT_GT(checked, 100u) << "tracefs at " << root << " lists too few events";
}

}  // namespace
}  // namespace pp::testing

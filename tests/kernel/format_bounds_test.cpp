// The checks report/format_bounds.h makes of formats read from a file (its
// bounds, the fields its print format names, its divisors) must never
// refuse a format of a real kernel: every event of this one passes. The
// decoder's own (subscripts, __print_hex() and __print_array() counts) are
// in report_print_format_test.cpp.
#include "report/format_bounds.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "sys/tree.h"
#include "tests/kernel/kernel_env.h"

namespace pp::testing {
namespace {

TEST(FormatBoundsOnThisKernel, EveryEventFormatPasses) {
  std::string root = tracefs_root();
  PP_SKIP_UNLESS(!root.empty(), "no tracefs with events/ is mounted");
  sys::Tree tree(root);
  size_t checked = 0;
  for (const std::string& system : tree.list("events").value_or(std::vector<std::string>{}))
    for (const std::string& name :
         tree.list("events/" + system).value_or(std::vector<std::string>{})) {
      auto format = tree.read("events/" + system + "/" + name + "/format");
      if (!format.ok())
        continue;  // enable, filter: files, not events
      Status s = report::check_format_bounds(*format);
      EXPECT_TRUE(s.ok()) << system << ":" << name << ": " << s.error().message();
      Status fields = report::check_format_fields(*format);
      EXPECT_TRUE(fields.ok()) << system << ":" << name << ": " << fields.error().message();
      Status divisors = report::check_format_divisors(*format);
      EXPECT_TRUE(divisors.ok()) << system << ":" << name << ": " << divisors.error().message();
      Status conditionals = report::has_foreign_operator(*format)
                                ? ok_status()  // what libtraceevent fails on anyway
                                : report::check_format_conditionals(*format);
      EXPECT_TRUE(conditionals.ok())
          << system << ":" << name << ": " << conditionals.error().message();
      checked++;
    }
  EXPECT_GT(checked, 100u) << "tracefs at " << root << " lists too few events";
}

}  // namespace
}  // namespace pp::testing

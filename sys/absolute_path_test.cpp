#include "sys/absolute_path.h"

#include <unistd.h>

#include <climits>
#include <gtest/gtest.h>

namespace pp::sys {
namespace {

TEST(AbsolutePath, RelativeIsJoinedToTheCurrentDirectory) {
  char cwd[PATH_MAX];
  ASSERT_NE(::getcwd(cwd, sizeof(cwd)), nullptr);
  std::string here(cwd);
  EXPECT_EQ(*absolute_path("run/x"), (here == "/" ? "" : here) + "/run/x");
  EXPECT_EQ(*absolute_path("./a.conf"), (here == "/" ? "" : here) + "/./a.conf");
  EXPECT_EQ(*absolute_path("/etc/perf-persistent.conf"), "/etc/perf-persistent.conf");
  EXPECT_EQ(*absolute_path(""), "");
}

}  // namespace
}  // namespace pp::sys

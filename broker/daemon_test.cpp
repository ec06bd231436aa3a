#include "broker/daemon.h"

#include <unistd.h>

#include <climits>
#include <gtest/gtest.h>

namespace pp::broker {
namespace {

// The detached broker runs in /: a relative --run-dir or --config must name
// what it named where the command was typed.
TEST(DaemonPaths, RelativeRunDirAndConfigBecomeAbsoluteBeforeDetaching) {
  char cwd[PATH_MAX];
  ASSERT_NE(::getcwd(cwd, sizeof(cwd)), nullptr);
  std::string here = std::string(cwd) == "/" ? "" : std::string(cwd);
  DaemonOptions options;
  options.run_dir = "run";
  options.config_file = "./perf-persistent.conf";
  options.config_given = true;
  auto made = absolute_paths(options);
  ASSERT_TRUE(made.ok()) << made.error().message();
  EXPECT_EQ(made->run_dir, here + "/run");
  EXPECT_EQ(made->config_file, here + "/./perf-persistent.conf");
  EXPECT_TRUE(made->config_given);

  DaemonOptions defaults;  // the default run directory, the default config file
  made = absolute_paths(defaults);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->run_dir, "");
  EXPECT_EQ(made->config_file, "");

  options.run_dir = "/run/perf-persistent";
  options.config_file = "/etc/perf-persistent.conf";
  made = absolute_paths(options);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ(made->run_dir, "/run/perf-persistent");
  EXPECT_EQ(made->config_file, "/etc/perf-persistent.conf");
}

}  // namespace
}  // namespace pp::broker

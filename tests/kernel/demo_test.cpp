// scripts/demo, the README's first command, on this kernel with a private
// run directory (PERF_PERSISTENT_RUN_DIR): it ends with status 0 and stops
// the broker it started, saying so; a broker that ran before it is left
// running. A small workload (CALLS) keeps it to a few seconds.
#include <gtest/gtest.h>

#include "tests/kernel/kernel_env.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

class Demo : public PrivateBrokerTest {
 protected:
  CommandResult demo() {
    CommandOptions o;
    o.env = {"PP=" + binary_path(), "CALLS=2000", "PERF_PERSISTENT_RUN_DIR=" + run_dir_};
    o.timeout_seconds = 120;
    return run_command({source_dir() + "/scripts/demo"}, o);
  }

  CommandResult status() {
    return run_command({binary_path(), "daemon", "--status", "--run-dir", run_dir_});
  }
};

TEST_F(Demo, StopsTheBrokerItStartedAndSaysSo) {
  CommandResult r = demo();
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("stopped the broker of " + run_dir_), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("The demo started that broker (none ran before it), so it stopped it."),
            std::string::npos)
      << r.out;
  EXPECT_EQ(status().status, 3) << "no broker is left running";
}

TEST_F(Demo, LeavesABrokerThatRanBeforeIt) {
  CommandResult started =
      run_command({binary_path(), "daemon", "--run-dir", run_dir_});  // detaches
  ASSERT_EQ(started.status, 0) << started.err;
  CommandResult r = demo();
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("A broker ran before the demo"), std::string::npos) << r.out;
  EXPECT_EQ(status().status, 0) << "it still runs";
  CommandResult stop = run_command({binary_path(), "daemon", "--stop", "--run-dir", run_dir_});
  EXPECT_EQ(stop.status, 0) << stop.err;
}

}  // namespace
}  // namespace pp::testing

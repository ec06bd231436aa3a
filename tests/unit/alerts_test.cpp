// The documented alerting rules (contrib/perf-persistent-alerts.yml, shown
// in perf-persistent-watch(1), PROMETHEUS) under `promtool test rules`:
// tests/prometheus/alerts_test.yml feeds them series as watch writes them,
// a watch restart among them, and says when each alert must fire.
#include <cstdlib>
#include <gtest/gtest.h>

#include "tests/support/run_command.h"
#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

bool have_promtool() {
  return run_command({"sh", "-c", "command -v promtool"}).status == 0;
}

TEST(AlertRules, PromtoolTestsPassWithARestartInTheSeries) {
  if (!have_promtool()) {
    ASSERT_EQ(getenv("CI"), nullptr) << "promtool is missing (./scripts/setup --test installs it)";
    GTEST_SKIP() << "promtool is missing; ./scripts/setup --test installs it";
  }
  std::string dir = source_dir();
  CommandResult check =
      run_command({"promtool", "check", "rules", dir + "/contrib/perf-persistent-alerts.yml"});
  EXPECT_EQ(check.status, 0) << check.out << check.err;
  CommandResult test = run_command(
      {"sh", "-c", "cd '" + dir + "/tests/prometheus' && promtool test rules alerts_test.yml"});
  EXPECT_EQ(test.status, 0) << test.out << test.err;
}

}  // namespace
}  // namespace pp::testing

#include "watch/config.h"

#include <gtest/gtest.h>
#include <string>

#include "tests/support/temp_dir.h"

namespace pp::watch {
namespace {

using pp::testing::TempDir;

bool has(const Error& e, const std::string& part) {
  return e.message().find(part) != std::string::npos;
}

TEST(WatchConfig, ReadsTheWatchSectionAndATrigger) {
  WatchOptions options;
  Status s = parse_watch_config(
      "# a comment\n"
      "[watch]\n"
      "event = persistent/a/\n"
      "event = persistent/b/   # two\n"
      "retention-days = 2\n"
      "prometheus-interval = 0.5\n"
      "harvest = no\n"
      "\n"
      "[trigger ue]\n"
      "match = severity >= ucna\n"
      "threshold = 2 in 1h\n"
      "key = cpu, bank\n"
      "exec = true\n"
      "timeout = 1.5\n",
      "w.conf", options);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(options.events, (std::vector<std::string>{"persistent/a/", "persistent/b/"}));
  EXPECT_EQ(options.history.max_age_s, 2u * 86400);
  EXPECT_EQ(options.prometheus_interval_ms, 500u);
  EXPECT_FALSE(options.harvest);
  ASSERT_EQ(options.triggers.size(), 1u);
  EXPECT_EQ(options.triggers[0].name, "ue");
  EXPECT_EQ(options.triggers[0].key, (std::vector<std::string>{"cpu", "bank"}));
  EXPECT_EQ(options.triggers[0].timeout_ms, 1500u);
}

// A rule's mistake is found when its section ends, not when the service
// starts its triggers: a config error (exit 9, no restart loop) at the
// section's line.
TEST(WatchConfig, ABadThresholdIsAConfigErrorAtItsSection) {
  WatchOptions options;
  Status s = parse_watch_config(
      "[watch]\n"
      "harvest = yes\n"
      "[trigger dimm]\n"
      "threshold = ten in 1h\n"
      "exec = true\n"
      "[watch]\n"
      "max-children = 2\n",
      "/etc/perf-persistent-watch.conf", options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kConfig);
  EXPECT_TRUE(has(s.error(), "/etc/perf-persistent-watch.conf:3: ")) << s.error().message();
  EXPECT_TRUE(has(s.error(), "dimm")) << s.error().message();
}

TEST(WatchConfig, TheLastTriggerIsCheckedToo) {
  WatchOptions options;
  Status s = parse_watch_config("[trigger no-command]\nmatch = bank == 1\n", "w.conf", options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kConfig);
  EXPECT_TRUE(has(s.error(), "w.conf:1: ")) << s.error().message();
  EXPECT_TRUE(has(s.error(), "no command to run")) << s.error().message();
}

// The file's syntax is base/ini's; its mistakes, and watch's own, name the
// file and the line and point to the man page.
TEST(WatchConfig, MistakesNameTheFileAndLine) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"[watch\n", "w.conf:1: a section header is '[NAME]', not '[watch'"},
      {"[watch]\nharvest yes\n", "w.conf:2: expected 'key = value' or '[NAME]', not 'harvest yes'"},
      {"# first\nharvest = yes\n", "w.conf:2: a key before any section; start with [watch]"},
      {"[watch]\n[watcher]\n", "w.conf:2: unknown section [watcher]"},
      {"[watch]\nharvest = maybe\n", "w.conf:2: harvest 'maybe': say yes or no"},
      {"[trigger a]\nexec = x\n[trigger a]\nexec = y\n", "w.conf:3: a second [trigger a]"},
      {"[check]\nignores = x\n", "w.conf:2: unknown key 'ignores' ([check] has ignore)"},
  };
  for (const Case& c : cases) {
    WatchOptions options;
    Status s = parse_watch_config(c.text, "w.conf", options);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.error().kind(), ErrorKind::kConfig) << c.text;
    EXPECT_TRUE(has(s.error(), c.expect)) << c.text << "-> " << s.error().message();
    EXPECT_TRUE(has(s.error(), "; see perf-persistent-watch(1), CONFIG FILE"))
        << s.error().message();
  }
}

// check's section: its acknowledgements, which watch keeps and ignores.
TEST(WatchConfig, TheCheckSectionListsAcknowledgedIds) {
  WatchOptions options;
  Status s = parse_watch_config(
      "[watch]\nharvest = no\n[check]\nignore = other-consumer, ,metrics-stale\n"
      "ignore = watch-not-alive\n",
      "w.conf", options);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(options.check_ignore,
            (std::vector<std::string>{"other-consumer", "metrics-stale", "watch-not-alive"}));
  EXPECT_FALSE(options.harvest);
}

TEST(WatchConfig, APrometheusIntervalUnderATenthIsAConfigError) {
  WatchOptions options;
  Status s = parse_watch_config("[watch]\nprometheus-interval = 0.05\n", "w.conf", options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kConfig);
  EXPECT_TRUE(has(s.error(), "w.conf:2: prometheus-interval '0.05': give at least 0.1 seconds"))
      << s.error().message();
  EXPECT_FALSE(has(s.error(), "--prometheus-interval")) << s.error().message();
}

// A budget smaller than the history's own tables would have retention
// delete every record, the newest machine check included: refused.
TEST(WatchConfig, ARetentionSizeUnderOneMegabyteIsAConfigError) {
  WatchOptions options;
  Status s = parse_watch_config("[watch]\nretention-size = 256K\n", "w.conf", options);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kConfig);
  EXPECT_TRUE(has(s.error(), "w.conf:2: retention-size '256K': give at least 1M"))
      << s.error().message();
  WatchOptions none;
  ASSERT_TRUE(parse_watch_config("[watch]\nretention-size = 0\n", "w.conf", none).ok());
  EXPECT_EQ(none.history.max_bytes, 0u);
  WatchOptions least;
  ASSERT_TRUE(parse_watch_config("[watch]\nretention-size = 1M\n", "w.conf", least).ok());
  EXPECT_EQ(least.history.max_bytes, 1u << 20);
}

// The command line goes through the same setters: the same limits, named
// as the option, as usage errors.
TEST(WatchConfig, CommandLineMistakesAreUsageErrorsNamingTheOption) {
  WatchArgs args;
  args.prometheus_interval = "0.05";
  auto options = watch_options(args, {});
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.error().kind(), ErrorKind::kUsage);
  EXPECT_TRUE(has(options.error(), "--prometheus-interval '0.05': give at least 0.1 seconds"))
      << options.error().message();

  args = {};
  args.retention_days = "40000";
  options = watch_options(args, {});
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.error().kind(), ErrorKind::kUsage);
  EXPECT_TRUE(has(options.error(), "--retention-days '40000': give a number from 0 to 36500"))
      << options.error().message();

  args = {};
  args.exec = "true";
  args.threshold = "ten in 1h";
  options = watch_options(args, {});
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.error().kind(), ErrorKind::kUsage);
  EXPECT_TRUE(has(options.error(), "command line")) << options.error().message();
}

TEST(WatchConfig, TheFileNamesItsKeyAndTheCommandLineWins) {
  TempDir dir;
  dir.write("w.conf", "[watch]\nretention-days = 40000\n");
  WatchArgs args;
  args.config = dir.path("w.conf");
  auto options = watch_options(args, {});
  ASSERT_FALSE(options.ok());
  EXPECT_EQ(options.error().kind(), ErrorKind::kConfig);
  EXPECT_TRUE(has(options.error(),
                  dir.path("w.conf") + ":2: retention-days '40000': give a number from 0 to 36500"))
      << options.error().message();

  dir.write("w.conf", "[watch]\nevent = persistent/a/\nretention-days = 3\n");
  args.events = {"persistent/b/"};
  args.retention_days = "4";
  options = watch_options(args, {});
  ASSERT_TRUE(options.ok()) << options.error().message();
  EXPECT_EQ(options->events, (std::vector<std::string>{"persistent/b/"}));
  EXPECT_EQ(options->history.max_age_s, 4u * 86400);
}

}  // namespace
}  // namespace pp::watch

#include "record/record_options.h"

#include <gtest/gtest.h>

namespace pp::record {
namespace {

using std::chrono::milliseconds;

TEST(RecordOptions, SwitchOutputModesAsPerfTakesThem) {
  EXPECT_EQ(parse_switch_output("")->mode, SwitchOutput::Mode::kSignal);
  EXPECT_EQ(parse_switch_output("signal")->mode, SwitchOutput::Mode::kSignal);
  auto size = parse_switch_output("100M");
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(size->mode, SwitchOutput::Mode::kSize);
  EXPECT_EQ(size->bytes, 100u << 20);
  EXPECT_EQ(parse_switch_output("64k")->bytes, 64u << 10);
  EXPECT_EQ(parse_switch_output("2G")->bytes, 2ull << 30);
  EXPECT_EQ(parse_switch_output("512B")->bytes, 512u);
  auto time = parse_switch_output("30s");
  ASSERT_TRUE(time.ok());
  EXPECT_EQ(time->mode, SwitchOutput::Mode::kTime);
  EXPECT_EQ(time->every, milliseconds(30000));
  EXPECT_EQ(parse_switch_output("2m")->every, milliseconds(120000));
  EXPECT_EQ(parse_switch_output("1h")->every, milliseconds(3600000));
  EXPECT_EQ(parse_switch_output("1d")->every, milliseconds(86400000));
  for (const char* bad : {"100", "0M", "0s", "10x", "M", "1.5M", "signals", "10MB"}) {
    auto r = parse_switch_output(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind(), ErrorKind::kUsage);
    EXPECT_NE(r.error().message().find("give 'signal'"), std::string::npos);
  }
}

TEST(RecordOptions, MaxSizeTakesBytesOrAUnit) {
  EXPECT_EQ(*parse_size("4096", "--max-size"), 4096u);
  EXPECT_EQ(*parse_size("200K", "--max-size"), 200u << 10);
  EXPECT_EQ(*parse_size("1g", "--max-size"), 1ull << 30);
  for (const char* bad : {"", "0", "1s", "K", "-1", "99999999999999999999G"})
    EXPECT_FALSE(parse_size(bad, "--max-size").ok()) << bad;
}

// perf's names: 14 digits of local time and two of hundredths; a stamp
// that would not be later than the last one is made later.
TEST(RecordOptions, SwitchStampsAsPerfNamesThemAndInOrder) {
  auto now = std::chrono::system_clock::now();
  std::string a = switch_stamp(now, "");
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(a.find_first_not_of("0123456789"), std::string::npos);
  std::string b = switch_stamp(now, a);
  EXPECT_GT(b, a);
  std::string c = switch_stamp(now, b);
  EXPECT_GT(c, b);
  EXPECT_EQ(switch_stamp(now + std::chrono::seconds(5), a).size(), 16u);
}

TEST(RecordOptions, EveryRefusalSaysWhy) {
  for (const RefusedOption& r : kRefusedOptions) {
    EXPECT_TRUE(r.short_name || !r.long_name.empty());
    EXPECT_GT(r.reason.size(), 20u) << r.long_name;
  }
}

}  // namespace
}  // namespace pp::record

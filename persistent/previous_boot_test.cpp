#include "persistent/previous_boot.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace pp::persistent {
namespace {

TEST(ClockMarker, RoundTripsAndIgnoresOtherText) {
  ClockMarker m{"local", 1796285030123456789ULL, "6f0c"};
  std::string text = clock_marker_text(m);
  text += "\n";
  text.push_back('\0');
  auto back = parse_clock_marker(text);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->clock, "local");
  EXPECT_EQ(back->realtime_ns, 1796285030123456789ULL);
  EXPECT_EQ(back->boot_id, "6f0c");
  EXPECT_FALSE(parse_clock_marker("PPTEST-CPU1\n").has_value());
  EXPECT_FALSE(parse_clock_marker("perf-persistent clock-marker clock=local").has_value())
      << "no time, no marker";
  EXPECT_FALSE(parse_clock_marker("perf-persistent clock-marker realtime_ns=12x").has_value());
}

TEST(MarkerClock, EachTimeFromTheLastMarkerAtOrBeforeIt) {
  MarkerClock clock;
  EXPECT_FALSE(clock.wall_ns(5).has_value());
  clock.add(2000, {"local", 9'000'000, "b"});
  clock.add(1000, {"local", 5'000'000, "a"});  // out of order
  EXPECT_EQ(clock.size(), 2U);
  EXPECT_FALSE(clock.wall_ns(999).has_value()) << "before the first marker";
  EXPECT_EQ(clock.wall_ns(1000), 5'000'000U);
  EXPECT_EQ(clock.wall_ns(1999), 5'000'999U);
  EXPECT_EQ(clock.wall_ns(2000), 9'000'000U) << "a marker resets the drift";
  EXPECT_EQ(clock.wall_ns(2500), 9'000'500U);
  ASSERT_NE(clock.last(), nullptr);
  EXPECT_EQ(clock.last()->boot_id, "b");
  EXPECT_EQ(clock.last_time(), 2000U);
}

TEST(KeptBoots, ListedOldestFirstAndHalfWrittenOnesLeftOut) {
  pp::testing::TempDir dir;
  EXPECT_TRUE(list_kept_boots(dir.path("none"))->empty()) << "no directory, no copy";
  KeptBoot a;
  a.instance = "bb";
  a.boot_id = "b1";
  a.kept_at = 200;
  a.cpus = 2;
  a.bytes = 8192;
  KeptBoot b;
  b.instance = "bb";
  b.boot_id = "b0";
  b.kept_at = 100;
  dir.write(kept_dir_name(200, "b1") + "/kept.json", kept_boot_json(a));
  dir.write(kept_dir_name(100, "b0") + "/kept.json", kept_boot_json(b));
  dir.write(".keeping-b2.7/kept.json", kept_boot_json(a));  // being written
  dir.write("300-b3/kept.json", "{not json");
  dir.write("400-b4/kept.json", R"({"version": 1, "instance": "../etc"})");
  dir.write("500-b5/kept.json", R"({"version": 2, "instance": "bb"})");
  auto kept = list_kept_boots(dir.path());
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 2U);
  EXPECT_EQ((*kept)[0].boot_id, "b0");
  EXPECT_EQ((*kept)[1].boot_id, "b1");
  EXPECT_EQ((*kept)[1].cpus, 2U);
  EXPECT_EQ((*kept)[1].bytes, 8192U);
  EXPECT_EQ((*kept)[1].path, dir.path("200-b1"));
  EXPECT_NE(parse_kept_boot(R"({"version": 2, "instance": "bb"})", "/k")
                .error()
                .message()
                .find("version 2"),
            std::string::npos);
}

TEST(KeptBoots, KeptByBootMatchesTheBootAndTheInstance) {
  std::vector<KeptBoot> copies(3);
  copies[0].boot_id = "b1", copies[0].instance = "other";
  copies[1].boot_id = "b1", copies[1].instance = "bb";
  copies[2].boot_id = "b2", copies[2].instance = "bb";
  EXPECT_EQ(kept_by_boot(copies, "b1", "bb"), &copies[1]);
  EXPECT_EQ(kept_by_boot(copies, "b2", "bb"), &copies[2]);
  EXPECT_EQ(kept_by_boot(copies, "b2", "other"), nullptr);
  EXPECT_EQ(kept_by_boot(copies, "b3", "bb"), nullptr);
  copies[0].boot_id = "";
  EXPECT_EQ(kept_by_boot(copies, "", "other"), nullptr);  // an unknown boot kept nothing
}

}  // namespace
}  // namespace pp::persistent

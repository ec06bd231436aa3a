#include "report/attr_printer.h"

#include <gtest/gtest.h>

#include "base/json.h"
#include "tests/support/attr_goldens.h"

namespace pp::report {
namespace {

using sys::attr_fields;

using testing::breakpoint;  // `perf stat -vv -e mem:0x1000/4:rw true`

TEST(AttrJson, EveryFieldIsPresentWithItsValue) {
  nlohmann::ordered_json j = attr_json(breakpoint());
  EXPECT_EQ(j["type"], 5);
  EXPECT_EQ(j["size"], 128);
  // Registers and bit masks are "0x..." strings (base/json.h); counts numbers.
  EXPECT_EQ(j["config"], "0x0");
  EXPECT_EQ(j["bp_type"], 3);
  EXPECT_EQ(j["config1"], "0x1000");
  EXPECT_EQ(j["config2"], "0x4");
  EXPECT_EQ(j["config3"], "0x0");
  EXPECT_EQ(j["exclude_guest"], 1);
  EXPECT_EQ(j["exclude_host"], 0);
  EXPECT_EQ(*u64_from_hex_json(j["sample_type"]), uint64_t(PERF_SAMPLE_IDENTIFIER));
  EXPECT_EQ(j["sample_type_names"], nlohmann::ordered_json::array({"IDENTIFIER"}));
  EXPECT_EQ(j["read_format_names"],
            nlohmann::ordered_json::array({"TOTAL_TIME_ENABLED", "TOTAL_TIME_RUNNING"}));
  EXPECT_EQ(j["branch_sample_type_names"], nlohmann::ordered_json::array());
  ASSERT_EQ(j["words"].size(), sys::kAttrWords);
  EXPECT_EQ(j["words"][7], "0x1000");
  // One key per field, the unions split in two, the flag names, the words.
  EXPECT_EQ(j.size(), attr_fields().size() + 2 + 3 + 1);
}

TEST(AttrJson, UnionsFollowTheirSelectorBits) {
  sys::EventAttr a;
  a.attr.sample_period = 4000;
  a.attr.wakeup_events = 8;
  nlohmann::ordered_json j = attr_json(a);
  EXPECT_EQ(j["sample_period"], 4000);
  EXPECT_EQ(j["sample_freq"], 0);
  EXPECT_EQ(j["wakeup_events"], 8);
  EXPECT_EQ(j["wakeup_watermark"], 0);
  a.attr.freq = 1;
  a.attr.watermark = 1;
  j = attr_json(a);
  EXPECT_EQ(j["sample_period"], 0);
  EXPECT_EQ(j["sample_freq"], 4000);
  EXPECT_EQ(j["wakeup_events"], 0);
  EXPECT_EQ(j["wakeup_watermark"], 8);
}

TEST(AttrJson, SixtyFourBitValuesAndSignedClockidSurvive) {
  sys::EventAttr a;
  a.attr.config = 0xc00000000002a823;
  a.attr.clockid = -1;
  a.config3() = ~uint64_t(0);
  a.attr.sample_type = uint64_t(1) << 63;
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(dump_json(attr_json(a)));
  EXPECT_EQ(j["config"], "0xc00000000002a823") << "a string: jq keeps every bit";
  EXPECT_EQ(*u64_from_hex_json(j["config"]), 0xc00000000002a823);
  EXPECT_EQ(j["clockid"].get<int64_t>(), -1);
  EXPECT_EQ(j["config3"], "0xffffffffffffffff");
  EXPECT_EQ(j["sample_type_names"], nlohmann::ordered_json::array({"0x8000000000000000"}));
}

}  // namespace
}  // namespace pp::report

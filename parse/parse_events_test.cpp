// parse_events() against fake sysfs and tracefs trees: the attr, name and
// group of every syntax element, checked against what perf 6.1 builds for the
// same string (`perf stat -vv -e STRING true`, on this kind of machine, with
// the same fake PMUs bind-mounted over /sys/bus/event_source/devices).
#include "parse/parse_events.h"

#include <gtest/gtest.h>

#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"

namespace pp::parse {
namespace {

using testing::FakeSysfs;
using testing::TempDir;

class ParseEventsTest : public ::testing::Test {
 protected:
  ParseEventsTest() : fake_(dir_) {
    fake_.standard_pmus();
    fake_.tracepoint("sched", "sched_switch", 316);
  }

  pmu::Model model() {
    auto m = pmu::Model::load(fake_.roots());
    EXPECT_TRUE(m.ok()) << m.error().message();
    return std::move(m).value();
  }

  TempDir dir_;
  FakeSysfs fake_;
};

TEST_F(ParseEventsTest, KravaFormatVectors) {
  pmu::Model m = model();
  auto r = parse_events(
      "krava/krava01=15,krava02=170,krava03=1,krava11=27,krava12=1,krava13=2,krava21=119,"
      "krava22=11,krava23=2/",
      m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 1u);
  const perf_event_attr& a = (*r)[0].attr.attr;
  EXPECT_EQ(a.type, 40u);
  EXPECT_EQ(a.config, 0xc00000000002a823ull);
  EXPECT_EQ(a.config1, 0x8000400000000145ull);
  EXPECT_EQ(a.config2, 0x0400000020041d07ull);
}

TEST_F(ParseEventsTest, SymbolsTracepointsAndGroups) {
  pmu::Model m = model();
  auto r = parse_events("cycles:u,{cpu-clock,sched:sched_switch}:k", m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].name, "cycles:u");
  EXPECT_EQ((*r)[0].attr.attr.type, uint32_t(PERF_TYPE_HARDWARE));
  EXPECT_EQ((*r)[0].attr.attr.exclude_kernel, 1u);
  EXPECT_EQ((*r)[2].name, "sched:sched_switch");
  EXPECT_EQ((*r)[2].attr.attr.config, 316u);
  EXPECT_EQ((*r)[2].leader, 1);
  EXPECT_EQ((*r)[1].leader, 1);
  EXPECT_EQ((*r)[0].leader, 0);
}

}  // namespace
}  // namespace pp::parse

// Format application (perf_pmu__config()): terms through a PMU's format files
// into the attr words, and every way it refuses, with the term it points at.
#include "pmu/config.h"

#include <gtest/gtest.h>

namespace pp::pmu {
namespace {

Pmu fpmu() {
  PmuEntry e = memory_pmu("fpmu", 41,
                          {{"event", "config:0-7"},
                           {"umask", "config:8-15"},
                           {"edge", "config:18"},
                           {"ldlat", "config1:0-15"},
                           {"wide", "config2:0-63"},
                           {"c3", "config3:0-15"},
                           {"w5", "attr5:23"},
                           {"over", "config:4-11"},
                           {"w0", "attr0:0-3"},
                           {"w17", "attr17:1"},
                           {"bad", "garbage"}},
                          {{"param", "event=0x7,umask=?"}});
  return *e.pmu;
}

FormatTerm num(std::string name, uint64_t value, size_t col = 0) {
  FormatTerm t;
  t.name = std::move(name);
  t.num = value;
  t.col = t.val_col = col;
  return t;
}

FormatTerm word(std::string name, std::string value, size_t col = 0) {
  FormatTerm t = num(std::move(name), 0, col);
  t.is_num = false;
  t.str = std::move(value);
  return t;
}

TEST(ApplyFormats, ScattersEachTermIntoItsWord) {
  Pmu pmu = fpmu();
  sys::EventAttr attr;
  bool config3 = false;
  FormatTerm edge = num("edge", 1);
  edge.no_value = true;
  auto error = apply_formats(
      pmu, {num("event", 0x3c), num("umask", 0x01), edge, num("ldlat", 3), num("w5", 1)}, &attr,
      &config3);
  ASSERT_FALSE(error) << error->message;
  EXPECT_EQ(attr.attr.config, 0x3c | 0x0100 | (uint64_t(1) << 18));
  EXPECT_EQ(attr.attr.config1, 3u);
  EXPECT_EQ(attr.words[5], uint64_t(1) << 23);
  EXPECT_FALSE(config3);
}

TEST(ApplyFormats, Config3IsSaid) {
  Pmu pmu = fpmu();
  sys::EventAttr attr;
  bool config3 = false;
  EXPECT_FALSE(apply_formats(pmu, {num("c3", 0xabc)}, &attr, &config3));
  EXPECT_EQ(attr.config3(), 0xabcu);
  EXPECT_TRUE(config3);
}

TEST(ApplyFormats, AParameterTakesTheValueOfItsNamesake) {
  Pmu pmu = fpmu();
  sys::EventAttr attr;
  bool config3 = false;
  EXPECT_FALSE(
      apply_formats(pmu, {num("event", 7), word("umask", "?"), num("umask", 5)}, &attr, &config3));
  EXPECT_EQ(attr.attr.config, 0x0507u);

  auto error = apply_formats(pmu, {num("event", 7), word("umask", "?", 4)}, &attr, &config3);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->col, 4u);
  EXPECT_EQ(error->message, "required parameter 'umask' not specified");
  EXPECT_EQ(error->help, "give it a value: fpmu/...,umask=VALUE/");
}

TEST(ApplyFormats, ANameWithNoFormatIsLeftToTheCaller) {
  Pmu pmu = fpmu();
  sys::EventAttr attr;
  bool config3 = false;
  std::vector<FormatTerm> terms = {num("event", 1), num("umsk", 1, 9)};
  auto error = apply_formats(pmu, terms, &attr, &config3);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->no_format, &terms[1]);
  EXPECT_EQ(error->col, 9u);
  EXPECT_EQ(error->message, "");
}

struct Refusal {
  std::vector<FormatTerm> terms;
  size_t col;
  const char* message;
  const char* help;  // a part of it
};

class Refusals : public ::testing::TestWithParam<Refusal> {};

TEST_P(Refusals, PointAtTheTermAndSayWhy) {
  const Refusal& c = GetParam();
  Pmu pmu = fpmu();
  sys::EventAttr attr;
  bool config3 = false;
  auto error = apply_formats(pmu, c.terms, &attr, &config3);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->no_format, nullptr);
  EXPECT_EQ(error->code, EINVAL);
  EXPECT_EQ(error->col, c.col);
  EXPECT_EQ(error->message, c.message);
  EXPECT_NE(error->help.find(c.help), std::string::npos) << error->help;
}

FormatTerm valued(FormatTerm t, size_t val_col) {
  t.val_col = val_col;
  return t;
}

INSTANTIATE_TEST_SUITE_P(
    Formats, Refusals,
    ::testing::Values(
        Refusal{{valued(num("event", 0x100, 5), 11)},
                11,
                "value 0x100 too big for format, maximum is 255 (0xff): term 'event' of PMU 'fpmu'",
                "format file"},
        Refusal{{valued(word("event", "x", 5), 11)},
                11,
                "term 'event' of PMU 'fpmu' takes a number, not 'x'",
                "says 'config:0-7'"},
        Refusal{{num("event", 1, 5), num("over", 1, 12)},
                12,
                "formats 'event' and 'over' of PMU 'fpmu' both write bits 4-7 of config",
                "'event' and 'over' cannot go together in one event"},
        Refusal{{num("w0", 1, 3)},
                3,
                "term 'w0' of PMU 'fpmu' writes word 0 of perf_event_attr",
                "word 0 (type and size) is for perf-persistent to set"},
        Refusal{{num("w17", 1, 3)},
                3,
                "term 'w17' of PMU 'fpmu' writes past the end of perf_event_attr",
                "word 17 does not exist"}));

TEST(ApplyFormats, AFormatThatDoesNotParseCannotBeUsed) {
  Pmu pmu = fpmu();
  sys::EventAttr attr;
  bool config3 = false;
  auto error = apply_formats(pmu, {num("bad", 1, 2)}, &attr, &config3);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->col, 2u);
  EXPECT_EQ(error->message, "term 'bad' of PMU 'fpmu' cannot be used");
}

TEST(ApplyFormats, ATermFromAnAliasSaysWhichFile) {
  Pmu pmu = fpmu();
  const Alias* alias = pmu.find_alias("param");
  ASSERT_NE(alias, nullptr);
  FormatTerm t = word("umask", "?", 6);
  t.alias = alias;
  sys::EventAttr attr;
  bool config3 = false;
  auto error = apply_formats(pmu, {t}, &attr, &config3);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->message, "required parameter 'umask' not specified" + alias_note(t));
  EXPECT_EQ(alias_note(t), " (from event alias 'param', " + alias->path + ": 'event=0x7,umask=?')");
  EXPECT_EQ(error->help, "give it a value: fpmu/param,umask=VALUE/");
}

}  // namespace
}  // namespace pp::pmu

// Format files: the syntax (config..config3 and the seed patch set's
// attr<index>), every malformed form, and how a value is scattered.
#include "pmu/format.h"

#include <gtest/gtest.h>

namespace pp::pmu {
namespace {

struct GoodFormat {
  const char* text;
  const char* target;
  unsigned word;
  uint64_t bits;
};

class GoodFormats : public ::testing::TestWithParam<GoodFormat> {};

TEST_P(GoodFormats, Parse) {
  const GoodFormat& c = GetParam();
  auto f = parse_format(c.text);
  ASSERT_TRUE(f.ok()) << c.text << ": " << f.error().message();
  EXPECT_EQ(f->target, c.target);
  EXPECT_EQ(f->word, c.word) << c.text;
  EXPECT_EQ(f->bits, c.bits) << c.text << std::hex << " got 0x" << f->bits;
}

INSTANTIATE_TEST_SUITE_P(
    Sysfs, GoodFormats,
    ::testing::Values(
        GoodFormat{"config:0-7\n", "config", 1, 0xff},
        GoodFormat{"config:0-1,62-63", "config", 1, 0xc000000000000003},  // krava01
        GoodFormat{"config:10-17", "config", 1, 0x3fc00},                 // krava02
        GoodFormat{"config:5", "config", 1, 0x20},                        // krava03
        GoodFormat{"config1:0,2,4,6,8,20-28", "config1", 7, 0x1ff00155},  // krava11
        GoodFormat{"config1:63", "config1", 7, 0x8000000000000000},       // krava12
        GoodFormat{"config1:45-47", "config1", 7, 0xe00000000000},        // krava13
        GoodFormat{"config2:0-3,10-13,20-23,30-33,40-43,50-53,60-63", "config2", 8,
                   0xf03c0f03c0f03c0f},                                      // krava21
        GoodFormat{"config2:8,18,48,58", "config2", 8, 0x0401000000040100},  // krava22
        GoodFormat{"config2:28-29,38", "config2", 8, 0x4030000000},          // krava23
        GoodFormat{"config3:0-15", "config3", 16, 0xffff},
        GoodFormat{"config:0-63", "config", 1, ~uint64_t(0)},
        GoodFormat{"attr5:23", "attr5", 5, uint64_t(1) << 23},  // the seed's persistent flag
        GoodFormat{"attr5:15-16", "attr5", 5, uint64_t(3) << 15},
        GoodFormat{"attr7:32-63", "attr7", 7, 0xffffffff00000000},
        GoodFormat{"attr16:1", "attr16", 16, 2},
        GoodFormat{"attr0:0", "attr0", 0, 1},                  // syntax only: using it is refused
        GoodFormat{"attr99:3", "attr99", 99, 8},               // syntax only: past the attr
        GoodFormat{"  config:4,4,3-4 \n", "config", 1, 0x18},  // repeats are harmless
        GoodFormat{"config:7,0", "config", 1, 0x81}));

struct BadFormat {
  const char* text;
  const char* message;  // a part of the error message
};

class BadFormats : public ::testing::TestWithParam<BadFormat> {};

TEST_P(BadFormats, RefusedWithAReason) {
  const BadFormat& c = GetParam();
  auto f = parse_format(c.text);
  ASSERT_FALSE(f.ok()) << c.text;
  EXPECT_EQ(f.error().code(), EINVAL);
  EXPECT_NE(f.error().message().find(c.message), std::string::npos)
      << c.text << ": " << f.error().message();
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, BadFormats,
    ::testing::Values(
        BadFormat{"", "the format is empty"}, BadFormat{"\n", "the format is empty"},
        BadFormat{"config", "no ':' between target and bits"},
        BadFormat{"config4:0", "unknown target 'config4'"},
        BadFormat{"Config:0", "unknown target 'Config'"},
        BadFormat{"attr:1", "unknown target 'attr'"}, BadFormat{"attrx:1", "expected attr index"},
        BadFormat{"attr5x:1", "is not attr<decimal index>"},
        BadFormat{"attr99999:1", "is larger than 9999"},
        BadFormat{"config:", "expected a bit number at column 0, found the end"},
        BadFormat{"config:64", "is larger than 63"}, BadFormat{"config:0-64", "is larger than 63"},
        BadFormat{"config:8-3", "range 8-3 is reversed"}, BadFormat{"config:1,", "found the end"},
        BadFormat{"config:1;2", "unexpected ';' in the bit list"},
        BadFormat{"config:1 2", "unexpected ' ' in the bit list"},
        BadFormat{"config:0-", "expected a bit number"},
        BadFormat{"config:-3", "expected a bit number at column 0, found '-'"},
        BadFormat{"config:0x3", "unexpected 'x'"}, BadFormat{"garbage\x01\xff", "no ':'"}));

TEST(FormatValue, ScattersLowBitFirstIntoAscendingBits) {
  uint64_t word = 0;
  // krava01 config:0-1,62-63 with 15 (0b1111): bits 0,1,62,63.
  format_scatter(0xc000000000000003, 15, &word);
  EXPECT_EQ(word, 0xc000000000000003);
  // The order in the file does not matter: 0b10 into bits {0,7} sets bit 7.
  word = 0;
  format_scatter(0x81, 2, &word);
  EXPECT_EQ(word, 0x80u);
  // ORs into what is there, never clears.
  word = 0xf0;
  format_scatter(0x0f, 0x5, &word);
  EXPECT_EQ(word, 0xf5u);
  // Value bits past the width are ignored.
  word = 0;
  format_scatter(0x3, 0xff, &word);
  EXPECT_EQ(word, 0x3u);
  // A full-width format takes the value as it is.
  word = 0;
  format_scatter(~uint64_t(0), 0x123456789abcdef0, &word);
  EXPECT_EQ(word, 0x123456789abcdef0u);
}

TEST(FormatValue, MaxValue) {
  EXPECT_EQ(format_max_value(0xff), 255u);
  EXPECT_EQ(format_max_value(uint64_t(1) << 23), 1u);
  EXPECT_EQ(format_max_value(0xc000000000000003), 15u);
  EXPECT_EQ(format_max_value(~uint64_t(0)), ~uint64_t(0));
  EXPECT_EQ(format_max_value(~uint64_t(0) >> 1), ~uint64_t(0) >> 1);
}

TEST(FormatValue, BitsBackToText) {
  EXPECT_EQ(format_bits_string(0xc000000000000003), "0-1,62-63");
  EXPECT_EQ(format_bits_string(0x1ff00155), "0,2,4,6,8,20-28");
  EXPECT_EQ(format_bits_string(~uint64_t(0)), "0-63");
  EXPECT_EQ(format_bits_string(uint64_t(1) << 63), "63");
  EXPECT_EQ(format_bits_string(0), "");
  auto f = parse_format("attr5:23");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(format_string(*f), "attr5:23");
}

}  // namespace
}  // namespace pp::pmu

// The attr block against what perf 6.1 printed, and the field table.
#include "sys/perf_abi_attr.h"

#include <gtest/gtest.h>
#include <random>
#include <set>

#include "tests/support/attr_goldens.h"

namespace pp::sys {
namespace {

using testing::breakpoint;
using testing::cpu_clock_u;
using testing::kPerfRecordBranches;
using testing::kPerfRecordDummy;
using testing::kPerfRecordMany;
using testing::kPerfStatBreakpoint;
using testing::kPerfStatCpuClockU;
using testing::record_branches;
using testing::record_dummy;
using testing::record_many;

struct Golden {
  const char* name;
  EventAttr (*make)();
  std::string_view perf_printed;
};

class AttrGolden : public ::testing::TestWithParam<Golden> {};

TEST_P(AttrGolden, PrintsWhatPerfPrints) {
  EXPECT_EQ(attr_block(GetParam().make()), GetParam().perf_printed);
}

// What perf printed reads back into the attr it was printed from.
TEST_P(AttrGolden, ReadsBackWhatPerfPrinted) {
  std::string_view text = GetParam().perf_printed;
  size_t begin = text.find(kAttrBlockHeader);
  ASSERT_NE(begin, std::string_view::npos);
  begin += kAttrBlockHeader.size() + 1;
  size_t end = text.rfind(kAttrBlockRule);
  auto attr = read_attr_fields(text.substr(begin, end - begin));
  ASSERT_TRUE(attr.ok()) << attr.error().message();
  EXPECT_TRUE(*attr == GetParam().make()) << attr_block(*attr);
}

INSTANTIATE_TEST_SUITE_P(
    Perf61, AttrGolden,
    ::testing::Values(Golden{"stat_cpu_clock_u", cpu_clock_u, kPerfStatCpuClockU},
                      Golden{"stat_breakpoint", breakpoint, kPerfStatBreakpoint},
                      Golden{"record_many", record_many, kPerfRecordMany},
                      Golden{"record_dummy", record_dummy, kPerfRecordDummy},
                      Golden{"record_branches", record_branches, kPerfRecordBranches}),
    [](const auto& p) { return std::string(p.param.name); });

TEST(AttrPrinter, ZeroAttrPrintsOnlyTheFrame) {
  EXPECT_EQ(attr_block(EventAttr()),
            "------------------------------------------------------------\n"
            "perf_event_attr:\n"
            "------------------------------------------------------------\n");
}

TEST(AttrPrinter, FlagNamesFollowPerfsOrderNotBitOrder) {
  // perf lists IDENTIFIER (bit 16) before REGS_INTR (18) and DATA_SRC (15).
  EXPECT_EQ(sample_type_names(PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_IDENTIFIER |
                              PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_IP),
            "IP|IDENTIFIER|REGS_INTR|DATA_SRC");
  EXPECT_EQ(read_format_names(PERF_FORMAT_LOST | PERF_FORMAT_TOTAL_TIME_ENABLED),
            "TOTAL_TIME_ENABLED|LOST");
  EXPECT_EQ(branch_sample_type_names(PERF_SAMPLE_BRANCH_HW_INDEX | PERF_SAMPLE_BRANCH_HV),
            "HV|HW_INDEX");
  EXPECT_EQ(sample_type_names(0), "");
}

TEST(AttrPrinter, UnnamedFlagBitsAreAppendedInHex) {
  // PERF_SAMPLE_TRANSACTION is not in perf 6.1's table; bit 40 is nothing yet.
  EXPECT_EQ(sample_type_names(PERF_SAMPLE_IP | PERF_SAMPLE_TRANSACTION | (uint64_t(1) << 40)),
            "IP|0x10000020000");
  EXPECT_EQ(read_format_names(1u << 7), "0x80");
}

TEST(AttrPrinter, ClockidIsSigned) {
  EventAttr a;
  a.attr.use_clockid = 1;
  a.attr.clockid = -1;
  EXPECT_EQ(attr_block(a),
            "------------------------------------------------------------\n"
            "perf_event_attr:\n"
            "  use_clockid                      1\n"
            "  clockid                          -1\n"
            "------------------------------------------------------------\n");
}

TEST(AttrPrinter, Config3AndReservedBitsAreShownAfterTheirNeighbours) {
  EventAttr a;
  a.attr.sigtrap = 1;
  a.words[5] |= uint64_t(1) << 40;  // inside perf 6.1's __reserved_1 (bits 38-63)
  a.attr.sample_max_stack = 127;
  a.words[13] |= uint64_t(0x8001) << 48;  // __reserved_2
  a.attr.aux_sample_size = 4096;
  a.words[14] |= uint64_t(5) << 32;  // __reserved_3
  a.attr.sig_data = 9;
  a.config3() = 0xc000000000000001;
  EXPECT_EQ(attr_block(a),
            "------------------------------------------------------------\n"
            "perf_event_attr:\n"
            "  sigtrap                          1\n"
            "  __reserved_1                     0x4\n"
            "  sample_max_stack                 127\n"
            "  __reserved_2                     0x8001\n"
            "  aux_sample_size                  4096\n"
            "  __reserved_3                     0x5\n"
            "  sig_data                         9\n"
            "  config3                          0xc000000000000001\n"
            "------------------------------------------------------------\n");
}

TEST(AttrPrinter, EveryBitOfEveryWordHasAField) {
  // The table covers the whole struct: setting each field to its maximum
  // sets every bit of the 17 words except word 0's, which type and size fill.
  EventAttr all;
  for (const AttrField& f : attr_fields())
    f.set(all, attr_field_max(f));
  for (unsigned w = 0; w < kAttrWords; w++)
    EXPECT_EQ(all.words[w], ~uint64_t(0)) << "word " << w;
}

TEST(AttrPrinter, FieldsAreUniqueAndFindable) {
  std::set<std::string_view> text, json;
  for (const AttrField& f : attr_fields()) {
    EXPECT_TRUE(text.insert(f.text_name).second) << f.text_name;
    EXPECT_TRUE(json.insert(f.json_name).second) << f.json_name;
    EXPECT_EQ(find_attr_field(f.text_name), &f);
  }
  EXPECT_EQ(find_attr_field("config4"), nullptr);
  EXPECT_EQ(attr_field_max(*find_attr_field("precise_ip")), 3u);
  EXPECT_EQ(attr_field_max(*find_attr_field("bp_type")), 0xffffffffu);
  EXPECT_EQ(attr_field_max(*find_attr_field("clockid")), 0xffffffffu);
  EXPECT_EQ(attr_field_max(*find_attr_field("sample_max_stack")), 0xffffu);
  EXPECT_EQ(attr_field_max(*find_attr_field("__reserved_1")), (uint64_t(1) << 26) - 1);
}

TEST(AttrPrinter, RandomAttrsRoundTripThroughText) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 500; i++) {
    EventAttr a;
    for (uint64_t& w : a.words)
      w = rng() & rng();  // about a quarter of the bits set
    if (i % 7 == 0)
      a.words[5] = 0;  // many fields zero: not printed, read back as zero
    std::string block = attr_block(a);
    size_t begin = block.find('\n', kAttrBlockRule.size() + 1) + 1;
    size_t end = block.rfind(kAttrBlockRule);
    auto back = read_attr_fields(std::string_view(block).substr(begin, end - begin));
    ASSERT_TRUE(back.ok()) << back.error().message() << "\n" << block;
    ASSERT_TRUE(*back == a) << block << "read back as\n" << attr_block(*back);
  }
}

struct BadLine {
  const char* line;
  int code;
  const char* message_part;
};

class AttrBadLine : public ::testing::TestWithParam<BadLine> {};

TEST_P(AttrBadLine, IsRefusedWithAReason) {
  EventAttr a;
  Status s = read_attr_line(GetParam().line, &a);
  ASSERT_FALSE(s.ok()) << GetParam().line;
  EXPECT_EQ(s.error().code(), GetParam().code) << s.error().message();
  EXPECT_NE(s.error().message().find(GetParam().message_part), std::string::npos)
      << s.error().message();
  EXPECT_TRUE(a == EventAttr()) << "a refused line must not change the attr";
}

INSTANTIATE_TEST_SUITE_P(
    Lines, AttrBadLine,
    ::testing::Values(
        BadLine{"  config4                          0x1", EINVAL, "'config4'"},
        BadLine{"  exclude_user", EINVAL, "no value for exclude_user"},
        BadLine{"  exclude_user                     2", ERANGE, "at most 0x1"},
        BadLine{"  precise_ip                       4", ERANGE, "at most 0x3"},
        BadLine{"  bp_type                          4294967296", ERANGE, "at most 0xffffffff"},
        BadLine{"  config                           12", EINVAL, "0x hex"},
        BadLine{"  type                             x1", EINVAL, "not a number"},
        BadLine{"  sample_type                      IP|BOGUS", EINVAL,
                "'BOGUS' is not a sample_type flag"},
        BadLine{"  read_format                      ID||GROUP", EINVAL,
                "'' is not a read_format flag"},
        BadLine{"  clockid                          -2147483649", ERANGE, "does not fit"},
        BadLine{"  { bp_addr, config1 } zz", EINVAL, "0x hex"}));

TEST(AttrPrinter, ReadsPerfsOwnSpacingAndSignedValues) {
  EventAttr a;
  ASSERT_TRUE(read_attr_line("  { wakeup_events, wakeup_watermark } 1", &a).ok());
  EXPECT_EQ(a.attr.wakeup_events, 1u);
  ASSERT_TRUE(read_attr_line("  clockid                          -2147483648", &a).ok());
  EXPECT_EQ(a.attr.clockid, INT32_MIN);
  ASSERT_TRUE(read_attr_line("\tsample_type\tIP|0x20000", &a).ok());
  EXPECT_EQ(a.attr.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TRANSACTION);
}

TEST(AttrFlagNames, OneBitAtATime) {
  EXPECT_EQ(attr_flag_name(AttrFormat::kSampleType, PERF_SAMPLE_IDENTIFIER), "IDENTIFIER");
  EXPECT_EQ(attr_flag_name(AttrFormat::kReadFormat, PERF_FORMAT_LOST), "LOST");
  EXPECT_EQ(attr_flag_name(AttrFormat::kSampleType, PERF_SAMPLE_TRANSACTION), "");
  EXPECT_EQ(attr_flag_name(AttrFormat::kHex, 1), "");
  EXPECT_TRUE(attr_flag_names(AttrFormat::kUnsigned).empty());
  EXPECT_EQ(attr_flag_list(AttrFormat::kReadFormat, PERF_FORMAT_ID | (1u << 9)),
            (std::vector<std::string>{"ID", "0x200"}));
}

TEST(AttrFlagNames, WordFiveFlagsByBitFromTheFieldTable) {
  EXPECT_EQ(attr_word5_flag_name(0), "disabled");
  EXPECT_EQ(attr_word5_flag_name(14), "watermark");
  EXPECT_EQ(attr_word5_flag_name(15), "") << "precise_ip is two bits";
  EXPECT_EQ(attr_word5_flag_name(16), "");
  EXPECT_EQ(attr_word5_flag_name(23), "mmap2");
  EXPECT_EQ(attr_word5_flag_name(37), "sigtrap");
  EXPECT_EQ(attr_word5_flag_name(38), "") << "__reserved_1";
  EXPECT_EQ(attr_word5_flag_name(64), "");
  // Every 1-bit flag of word 5 the block prints has its bit.
  for (unsigned bit = 0; bit < 38; bit++) {
    if (bit == 15 || bit == 16)
      continue;
    std::string_view name = attr_word5_flag_name(bit);
    ASSERT_FALSE(name.empty()) << bit;
    EventAttr a;
    a.words[5] = uint64_t(1) << bit;
    EXPECT_EQ(attr_block(a), std::string(kAttrBlockRule) + "\n" + std::string(kAttrBlockHeader) +
                                 "\n  " + std::string(name) + std::string(33 - name.size(), ' ') +
                                 "1\n" + std::string(kAttrBlockRule) + "\n");
  }
}

}  // namespace
}  // namespace pp::sys

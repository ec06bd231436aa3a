#include "report/attr_printer.h"

#include <gtest/gtest.h>
#include <random>
#include <set>

#include "base/json.h"

namespace pp::report {
namespace {

// What `perf stat -vv -e cpu-clock:u true` (perf 6.1.187) printed here.
constexpr std::string_view kPerfStatCpuClockU =
    "------------------------------------------------------------\n"
    "perf_event_attr:\n"
    "  type                             1\n"
    "  size                             128\n"
    "  sample_type                      IDENTIFIER\n"
    "  read_format                      TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING|ID|GROUP\n"
    "  disabled                         1\n"
    "  inherit                          1\n"
    "  exclude_kernel                   1\n"
    "  exclude_hv                       1\n"
    "  enable_on_exec                   1\n"
    "  exclude_guest                    1\n"
    "------------------------------------------------------------\n";

// `perf stat -vv -e mem:0x1000/4:rw true`.
constexpr std::string_view kPerfStatBreakpoint =
    "------------------------------------------------------------\n"
    "perf_event_attr:\n"
    "  type                             5\n"
    "  size                             128\n"
    "  sample_type                      IDENTIFIER\n"
    "  read_format                      TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING\n"
    "  disabled                         1\n"
    "  inherit                          1\n"
    "  enable_on_exec                   1\n"
    "  exclude_guest                    1\n"
    "  bp_type                          3\n"
    "  { bp_addr, config1 }             0x1000\n"
    "  { bp_len, config2 }              0x4\n"
    "------------------------------------------------------------\n";

// `perf record -vv -e cpu-clock/period=100/ -k mono --call-graph dwarf,4096
// -d --phys-data -W --data-page-size --code-page-size --sample-cpu
// --intr-regs=AX,BX --switch-events --namespaces --all-cgroups true`.
constexpr std::string_view kPerfRecordMany =
    "------------------------------------------------------------\n"
    "perf_event_attr:\n"
    "  type                             1\n"
    "  size                             128\n"
    "  { sample_period, sample_freq }   100\n"
    "  sample_type                      "
    "IP|TID|TIME|ADDR|CALLCHAIN|CPU|REGS_USER|STACK_USER|REGS_INTR|DATA_SRC|PHYS_ADDR|CGROUP|"
    "DATA_PAGE_SIZE|CODE_PAGE_SIZE|WEIGHT_STRUCT\n"
    "  read_format                      ID|LOST\n"
    "  disabled                         1\n"
    "  inherit                          1\n"
    "  mmap                             1\n"
    "  comm                             1\n"
    "  enable_on_exec                   1\n"
    "  task                             1\n"
    "  mmap_data                        1\n"
    "  sample_id_all                    1\n"
    "  exclude_guest                    1\n"
    "  exclude_callchain_user           1\n"
    "  mmap2                            1\n"
    "  comm_exec                        1\n"
    "  use_clockid                      1\n"
    "  context_switch                   1\n"
    "  namespaces                       1\n"
    "  ksymbol                          1\n"
    "  bpf_event                        1\n"
    "  cgroup                           1\n"
    "  sample_regs_user                 0xff0fff\n"
    "  sample_stack_user                4096\n"
    "  clockid                          1\n"
    "  sample_regs_intr                 0x3\n"
    "------------------------------------------------------------\n";

// perf record's tracking event: a name longer than the 32-column pad.
constexpr std::string_view kPerfRecordDummy =
    "------------------------------------------------------------\n"
    "perf_event_attr:\n"
    "  type                             1\n"
    "  size                             128\n"
    "  config                           0x9\n"
    "  watermark                        1\n"
    "  sample_id_all                    1\n"
    "  bpf_event                        1\n"
    "  { wakeup_events, wakeup_watermark } 1\n"
    "------------------------------------------------------------\n";

// `perf record -vv -e cpu-clock:upppG -j any_call,any_ret,u,k,save_type,priv,cond
// -c 12345 --sample-identifier -T -P --overwrite true`.
constexpr std::string_view kPerfRecordBranches =
    "------------------------------------------------------------\n"
    "perf_event_attr:\n"
    "  type                             1\n"
    "  size                             128\n"
    "  { sample_period, sample_freq }   12345\n"
    "  sample_type                      IP|TID|TIME|PERIOD|BRANCH_STACK|IDENTIFIER\n"
    "  read_format                      ID|LOST\n"
    "  disabled                         1\n"
    "  inherit                          1\n"
    "  exclude_kernel                   1\n"
    "  exclude_hv                       1\n"
    "  mmap                             1\n"
    "  comm                             1\n"
    "  enable_on_exec                   1\n"
    "  task                             1\n"
    "  precise_ip                       3\n"
    "  sample_id_all                    1\n"
    "  exclude_host                     1\n"
    "  mmap2                            1\n"
    "  comm_exec                        1\n"
    "  write_backward                   1\n"
    "  ksymbol                          1\n"
    "  bpf_event                        1\n"
    "  branch_sample_type               USER|KERNEL|ANY_CALL|ANY_RETURN|COND|TYPE_SAVE|PRIV_SAVE\n"
    "------------------------------------------------------------\n";

sys::EventAttr cpu_clock_u() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_SOFTWARE;
  a.attr.size = sys::kAttrSizeVer7;
  a.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  a.attr.sample_type = PERF_SAMPLE_IDENTIFIER;
  a.attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
                       PERF_FORMAT_ID | PERF_FORMAT_GROUP;
  a.attr.disabled = 1;
  a.attr.inherit = 1;
  a.attr.exclude_kernel = 1;
  a.attr.exclude_hv = 1;
  a.attr.enable_on_exec = 1;
  a.attr.exclude_guest = 1;
  return a;
}

sys::EventAttr breakpoint() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_BREAKPOINT;
  a.attr.size = sys::kAttrSizeVer7;
  a.attr.sample_type = PERF_SAMPLE_IDENTIFIER;
  a.attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  a.attr.disabled = 1;
  a.attr.inherit = 1;
  a.attr.enable_on_exec = 1;
  a.attr.exclude_guest = 1;
  a.attr.bp_type = 3;
  a.attr.bp_addr = 0x1000;
  a.attr.bp_len = 4;
  return a;
}

sys::EventAttr record_many() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_SOFTWARE;
  a.attr.size = sys::kAttrSizeVer7;
  a.attr.sample_period = 100;
  a.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
                       PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_CPU | PERF_SAMPLE_REGS_USER |
                       PERF_SAMPLE_STACK_USER | PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_DATA_SRC |
                       PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_CGROUP | PERF_SAMPLE_DATA_PAGE_SIZE |
                       PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_WEIGHT_STRUCT;
  a.attr.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
  a.attr.disabled = 1;
  a.attr.inherit = 1;
  a.attr.mmap = 1;
  a.attr.comm = 1;
  a.attr.enable_on_exec = 1;
  a.attr.task = 1;
  a.attr.mmap_data = 1;
  a.attr.sample_id_all = 1;
  a.attr.exclude_guest = 1;
  a.attr.exclude_callchain_user = 1;
  a.attr.mmap2 = 1;
  a.attr.comm_exec = 1;
  a.attr.use_clockid = 1;
  a.attr.context_switch = 1;
  a.attr.namespaces = 1;
  a.attr.ksymbol = 1;
  a.attr.bpf_event = 1;
  a.attr.cgroup = 1;
  a.attr.sample_regs_user = 0xff0fff;
  a.attr.sample_stack_user = 4096;
  a.attr.clockid = 1;
  a.attr.sample_regs_intr = 0x3;
  return a;
}

sys::EventAttr record_dummy() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_SOFTWARE;
  a.attr.size = sys::kAttrSizeVer7;
  a.attr.config = PERF_COUNT_SW_DUMMY;
  a.attr.watermark = 1;
  a.attr.sample_id_all = 1;
  a.attr.bpf_event = 1;
  a.attr.wakeup_watermark = 1;
  return a;
}

sys::EventAttr record_branches() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_SOFTWARE;
  a.attr.size = sys::kAttrSizeVer7;
  a.attr.sample_period = 12345;
  a.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
                       PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_IDENTIFIER;
  a.attr.read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
  a.attr.disabled = 1;
  a.attr.inherit = 1;
  a.attr.exclude_kernel = 1;
  a.attr.exclude_hv = 1;
  a.attr.mmap = 1;
  a.attr.comm = 1;
  a.attr.enable_on_exec = 1;
  a.attr.task = 1;
  a.attr.precise_ip = 3;
  a.attr.sample_id_all = 1;
  a.attr.exclude_host = 1;
  a.attr.mmap2 = 1;
  a.attr.comm_exec = 1;
  a.attr.write_backward = 1;
  a.attr.ksymbol = 1;
  a.attr.bpf_event = 1;
  a.attr.branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_KERNEL |
                              PERF_SAMPLE_BRANCH_ANY_CALL | PERF_SAMPLE_BRANCH_ANY_RETURN |
                              PERF_SAMPLE_BRANCH_COND | PERF_SAMPLE_BRANCH_TYPE_SAVE |
                              PERF_SAMPLE_BRANCH_PRIV_SAVE;
  return a;
}

struct Golden {
  const char* name;
  sys::EventAttr (*make)();
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
  EXPECT_EQ(attr_block(sys::EventAttr()),
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
  sys::EventAttr a;
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
  sys::EventAttr a;
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
  sys::EventAttr all;
  for (const AttrField& f : attr_fields())
    f.set(all, attr_field_max(f));
  for (unsigned w = 0; w < sys::kAttrWords; w++)
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
    sys::EventAttr a;
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
  sys::EventAttr a;
  Status s = read_attr_line(GetParam().line, &a);
  ASSERT_FALSE(s.ok()) << GetParam().line;
  EXPECT_EQ(s.error().code(), GetParam().code) << s.error().message();
  EXPECT_NE(s.error().message().find(GetParam().message_part), std::string::npos)
      << s.error().message();
  EXPECT_TRUE(a == sys::EventAttr()) << "a refused line must not change the attr";
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
  sys::EventAttr a;
  ASSERT_TRUE(read_attr_line("  { wakeup_events, wakeup_watermark } 1", &a).ok());
  EXPECT_EQ(a.attr.wakeup_events, 1u);
  ASSERT_TRUE(read_attr_line("  clockid                          -2147483648", &a).ok());
  EXPECT_EQ(a.attr.clockid, INT32_MIN);
  ASSERT_TRUE(read_attr_line("\tsample_type\tIP|0x20000", &a).ok());
  EXPECT_EQ(a.attr.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TRANSACTION);
}

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

// The machine-check tally: counts per severity, bank, CPU, socket and error
// class, and its two printers, on a known set.
#include "mce/tally.h"

#include <gtest/gtest.h>

#include "base/json.h"

namespace pp::mce {
namespace {

MceDecoded decoded(uint64_t status, std::optional<uint32_t> bank, std::optional<uint32_t> cpu,
                   std::optional<uint32_t> socket) {
  MceRegisters r;
  r.status = status;
  r.mcgcap = 0x100010a;  // SER_P
  r.bank = bank;
  r.cpu = cpu;
  r.socketid = socket;
  return decode_mce(r, CpuVendor::kIntel);
}

// Four machine checks: two corrected cache errors (bank 4, CPUs 0 and 1),
// an SRAO memory-controller scrub (bank 9, CPU 1), a fatal one with no bank
// and no CPU of its own, read from CPU 2's buffer.
MceTally known_set() {
  MceTally t;
  t.add(decoded(0x9000000000000134, 4, 0, 0));
  t.add(decoded(0x9c00000000000135, 4, 1, 0));
  t.add(decoded(0xbd000000000000c2, 9, 1, 1));
  t.add(decoded(0xbe00000000000150, std::nullopt, std::nullopt, 1), 2);
  return t;
}

TEST(MceTally, JsonOfAKnownSet) {
  EXPECT_EQ(dump_json(mce_tally_json(known_set())),
            R"({"records":4,)"
            R"("severities":[{"severity":"corrected","count":2},{"severity":"srao","count":1},)"
            R"({"severity":"fatal","count":1}],)"
            R"("banks":[{"bank":4,"count":2},{"bank":9,"count":1},{"bank":null,"count":1}],)"
            R"("cpus":[{"cpu":0,"count":1},{"cpu":1,"count":2},{"cpu":2,"count":1}],)"
            R"("sockets":[{"socket":0,"count":2},{"socket":1,"count":2}],)"
            R"("error_classes":[{"error_class":"cache","count":3},)"
            R"({"error_class":"memory-controller","count":1}]})");
}

TEST(MceTally, TextBlocksOfAKnownSet) {
  std::string text;
  print_mce_tally_text(known_set(), MceTallyLayout::kBlocks, text);
  EXPECT_EQ(text,
            "#\n# 4 machine checks\n"
            "#\n# machine checks per severity\n#\n#    count  severity\n"
            "         2  corrected\n         1  srao\n         1  fatal\n"
            "#\n# machine checks per bank\n#\n#    count  bank\n"
            "         2  4\n         1  9\n         1  ?\n"
            "#\n# machine checks per CPU\n#\n#    count  cpu\n"
            "         1  0\n         2  1\n         1  2\n"
            "#\n# machine checks per socket\n#\n#    count  socket\n"
            "         2  0\n         2  1\n"
            "#\n# machine checks per error class\n#\n#    count  class\n"
            "         3  cache\n         1  memory-controller\n");
}

TEST(MceTally, TextLinesOfAKnownSet) {
  std::string text;
  print_mce_tally_text(known_set(), MceTallyLayout::kLines, text);
  EXPECT_EQ(text,
            "severity  corrected=2  srao=1  fatal=1\n"
            "bank      4=2  9=1  ?=1\n"
            "cpu       0=1  1=2  2=1\n"
            "socket    0=2  1=2\n"
            "class     cache=3  memory-controller=1\n");
}

TEST(MceTally, EmptyTally) {
  MceTally t = known_set();
  t.clear();
  EXPECT_TRUE(t.empty());
  std::string blocks, lines;
  print_mce_tally_text(t, MceTallyLayout::kBlocks, blocks);
  EXPECT_EQ(blocks, "");
  print_mce_tally_text(t, MceTallyLayout::kLines, lines);
  EXPECT_EQ(lines, "severity  -\nbank      -\ncpu       -\nsocket    -\nclass     -\n");
  EXPECT_EQ(dump_json(mce_tally_json(t)),
            R"({"records":0,"severities":[],"banks":[],"cpus":[],"sockets":[],)"
            R"("error_classes":[]})");
}

// Counts already grouped (a history's GROUP BY) add up with single ones;
// severities sort by how bad they are (uncorrected before fatal), a name
// the decoder does not know after the known ones; numbers numerically.
TEST(MceTally, GroupedCountsAndOrder) {
  MceTally t;
  t.add(MceTallyKey{"fatal", 10, 3, 0, "bus"}, 5);
  t.add(MceTallyKey{"from-the-future", 2, 3, 0, "cache"}, 1);
  t.add(MceTallyKey{"uncorrected", 2, 12, std::nullopt, "bus"}, 2);
  t.add(MceTallyKey{"invalid", 10, 3, 0, "simple"});
  EXPECT_EQ(t.records(), 9u);
  std::string text;
  print_mce_tally_text(t, MceTallyLayout::kLines, text);
  EXPECT_EQ(text,
            "severity  invalid=1  uncorrected=2  fatal=5  from-the-future=1\n"
            "bank      2=3  10=6\n"
            "cpu       3=7  12=2\n"
            "socket    0=7  ?=2\n"
            "class     bus=7  cache=1  simple=1\n");
  std::vector<MceTallyRow> rows = t.rows(MceTallyGrouping::kSocket);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].number, std::nullopt);
  EXPECT_EQ(rows[1].name, std::nullopt);
  EXPECT_EQ(rows[1].count, 2u);
}

// A record's own CPU (mce_record's cpu) wins over the buffer's.
TEST(MceTally, TheRecordsCpuWinsOverTheBuffers) {
  MceTally t;
  t.add(decoded(0x9000000000000134, 1, 7, 0), 3);
  t.add(decoded(0x9000000000000134, 1, std::nullopt, 0), 3);
  t.add(decoded(0x9000000000000134, 1, std::nullopt, 0));
  EXPECT_EQ(dump_json(mce_tally_json(t)["cpus"]),
            R"([{"cpu":3,"count":1},{"cpu":7,"count":1},{"cpu":null,"count":1}])");
  std::string text;
  print_mce_tally_text(t, MceTallyLayout::kBlocks, text);
  EXPECT_EQ(text.rfind("#\n# 3 machine checks\n", 0), 0u) << text;
  MceTally one;
  one.add(decoded(0x9000000000000134, 1, 7, 0));
  text.clear();
  print_mce_tally_text(one, MceTallyLayout::kBlocks, text);
  EXPECT_EQ(text.rfind("#\n# 1 machine check\n", 0), 0u) << text;
}

}  // namespace
}  // namespace pp::mce

// The differential test's reader of perf's output, on outputs perf 6.1.187
// printed on this machine (tests/diff/perf-output/), and its comparison.
#include "tests/support/attr_diff.h"

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "tests/support/test_env.h"

namespace pp::testing {
namespace {

std::string perf_output(const std::string& name) {
  std::ifstream in(source_dir() + "/tests/diff/perf-output/" + name);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << "missing tests/diff/perf-output/" << name;
  return s.str();
}

ShownEvent event(uint32_t type, uint64_t config, const char* name, int leader) {
  ShownEvent e;
  e.attr.attr.type = type;
  e.attr.attr.config = config;
  e.attr.attr.exclude_guest = 1;
  e.name = name;
  e.leader = leader;
  return e;
}

TEST(PerfOutput, GroupWithAnUnsupportedMember) {
  // perf stat -vv -e '{cpu-clock,cycles,task-clock}' true: cycles fails
  // (no hardware PMU here), perf goes on with task-clock in the same group.
  auto shown = read_perf_stat(perf_output("stat-group-member-unsupported.txt"), 0);
  ASSERT_TRUE(shown.ok()) << shown.error().message();
  ASSERT_FALSE(shown->rejected);
  EXPECT_FALSE(shown->stopped_early);
  ASSERT_EQ(shown->events.size(), 3u);
  EXPECT_EQ(shown->events[0].attr.attr.type, PERF_TYPE_SOFTWARE);
  EXPECT_EQ(shown->events[0].attr.attr.config, 0u);
  EXPECT_EQ(shown->events[1].attr.attr.type, PERF_TYPE_HARDWARE);
  EXPECT_EQ(shown->events[2].attr.attr.config, 1u);
  EXPECT_EQ(shown->events[2].attr.attr.exclude_guest, 1u);
  for (const ShownEvent& e : shown->events)
    EXPECT_EQ(e.leader, 0);
  EXPECT_EQ(shown->events[0].name, "cpu-clock");
  EXPECT_EQ(shown->events[1].name, "cycles");
  EXPECT_EQ(shown->events[2].name, "task-clock");
  EXPECT_EQ(shown->guest_bits_cleared_after, -1);
}

TEST(PerfOutput, GroupLeaderUnsupportedStopsPerf) {
  // perf stat -vv -e '{cycles,cpu-clock}',page-faults true: exit 255 after
  // the first event; the rest is unknown.
  auto shown = read_perf_stat(perf_output("stat-group-leader-unsupported.txt"), 255);
  ASSERT_TRUE(shown.ok()) << shown.error().message();
  ASSERT_EQ(shown->events.size(), 1u);
  EXPECT_TRUE(shown->stopped_early);
  EXPECT_FALSE(shown->events[0].name.has_value());
  EXPECT_EQ(shown->events[0].leader, 0);
}

TEST(PerfOutput, RetriesAreOneEventAndClearedGuestBitsAreNoted) {
  // krava/ev1/ (a fake PMU: ENOENT), msr/tsc/ (EINVAL twice: perf switches
  // off cloexec, then exclude_guest for good), cpu-clock:u.
  auto shown = read_perf_stat(perf_output("stat-retries.txt"), 0);
  ASSERT_TRUE(shown.ok()) << shown.error().message();
  ASSERT_EQ(shown->events.size(), 3u);
  EXPECT_EQ(shown->events[0].attr.attr.type, 1001u);
  EXPECT_EQ(shown->events[0].attr.attr.config, 0x1401u);
  EXPECT_EQ(shown->events[1].attr.attr.type, 9u);
  EXPECT_EQ(shown->events[1].attr.attr.exclude_guest, 1u) << "the first attempt is the parser's";
  EXPECT_EQ(shown->events[2].attr.attr.exclude_kernel, 1u);
  EXPECT_EQ(shown->guest_bits_cleared_after, 1);
  EXPECT_EQ(shown->events[0].name, "krava/ev1/");
  EXPECT_EQ(shown->events[1].name, "msr/tsc/");
  EXPECT_EQ(shown->events[2].name, "cpu-clock:u");
  for (int i = 0; i < 3; i++)
    EXPECT_EQ(shown->events[i].leader, i);
}

TEST(PerfOutput, SyntaxErrorIsARejection) {
  auto shown = read_perf_stat(perf_output("stat-rejected.txt"), 129);
  ASSERT_TRUE(shown.ok()) << shown.error().message();
  EXPECT_TRUE(shown->rejected);
  EXPECT_TRUE(shown->events.empty());
  EXPECT_NE(shown->message.find("Bad modifier"), std::string::npos) << shown->message;
  EXPECT_EQ(shown->message.find("Usage"), std::string::npos) << shown->message;
}

TEST(PerfOutput, RecordStopsBeforeItsSideBandEvents) {
  // perf record -vv -e '{cpu-clock/period=1000/,task-clock/freq=99/}': two
  // events opened on each CPU, then perf's own dummy event after "mmap size".
  auto shown = read_perf_record(perf_output("record-group.txt"), 0);
  ASSERT_TRUE(shown.ok()) << shown.error().message();
  ASSERT_EQ(shown->events.size(), 2u);
  EXPECT_EQ(shown->events[0].attr.attr.sample_period, 1000u);
  EXPECT_EQ(shown->events[0].attr.attr.freq, 0u);
  EXPECT_EQ(shown->events[1].attr.attr.sample_freq, 99u);
  EXPECT_EQ(shown->events[1].attr.attr.freq, 1u);
  EXPECT_EQ(shown->events[0].leader, 0);
  EXPECT_EQ(shown->events[1].leader, 0) << "group_fd 5 and 6 are event 0's fds";
  EXPECT_FALSE(shown->events[0].name.has_value());
}

TEST(PerfOutput, WhatItDoesNotUnderstandIsAnError) {
  std::string block = "perf_event_attr:\n  type 1\n";
  EXPECT_FALSE(read_perf_stat(block, 0).ok()) << "a block without its closing line";
  block += "------------------------------------------------------------\n";
  EXPECT_FALSE(read_perf_stat(block, 0).ok()) << "a block without its open line";
  EXPECT_FALSE(read_perf_stat(block + "sys_perf_event_open: pid 1  cpu -1  group_fd -1  flags "
                                      "0x8\nsys_perf_event_open failed, error -22\nswitching "
                                      "off cloexec flag\n",
                              0)
                   .ok())
      << "a retry without its attempt";
  EXPECT_FALSE(read_perf_stat(block + "sys_perf_event_open: pid 1  cpu -1  group_fd -1  flags "
                                      "0x8 = 3\nWeak group for cpu-clock/2 failed\n",
                              0)
                   .ok());
  EXPECT_FALSE(read_perf_stat(block + "sys_perf_event_open: x\n", 0).ok());
  EXPECT_FALSE(read_perf_stat("perf_event_attr:\n  tyype 1\n---", 0).ok());
  EXPECT_FALSE(read_perf_stat("nothing at all\n", 0).ok()) << "success without an attr";
}

TEST(AttrJsonReader, EventsAndErrors) {
  // attr words are "0x..." strings (base/json.h).
  std::string words =
      R"(["0x1","0x1","0x0","0x0","0x0","0x100000","0x0","0x0","0x0","0x0","0x0","0x0","0x0",)"
      R"("0x0","0x0","0x0","0x0"])";
  auto ok = read_attr_json(
      R"({"events":[{"name":"cpu-clock","leader":0,"attr":{"words":)" + words + "}}]}", 0);
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  ASSERT_EQ(ok->events.size(), 1u);
  EXPECT_EQ(ok->events[0].attr.attr.type, 1u);
  EXPECT_EQ(ok->events[0].attr.attr.config, 1u);
  EXPECT_EQ(ok->events[0].attr.attr.exclude_guest, 1u);
  EXPECT_EQ(ok->events[0].name, "cpu-clock");

  auto rejected = read_attr_json(
      R"({"error":{"kind":"usage","exit_status":1,"errno":"EINVAL","message":"bad"}})", 1);
  ASSERT_TRUE(rejected.ok());
  EXPECT_TRUE(rejected->rejected);
  EXPECT_EQ(rejected->message, "bad");

  EXPECT_FALSE(read_attr_json("not json", 0).ok());
  EXPECT_FALSE(read_attr_json(R"({"events":[]})", 1).ok()) << "failure without an error";
  EXPECT_FALSE(
      read_attr_json(R"({"events":[{"name":"x","leader":0,"attr":{"words":[1]}}]})", 0).ok());
}

TEST(Diff, EqualEventsHaveNoDifferences) {
  Shown a;
  a.events = {event(1, 0, "cpu-clock", 0), event(1, 1, "task-clock", 0)};
  EXPECT_TRUE(diff_shown(a, a, DiffMode::kStat).empty());
}

TEST(Diff, FieldsNamesLeadersAndCountsAreReported) {
  Shown perf, ours;
  perf.events = {event(1, 0, "cpu-clock:u", 0), event(1, 1, "task-clock", 0)};
  perf.events[0].attr.attr.exclude_kernel = 1;
  ours.events = {event(1, 0, "cpu-clock", 0), event(1, 1, "task-clock", 1),
                 event(1, 2, "page-faults", 2)};
  std::vector<std::string> d = diff_shown(perf, ours, DiffMode::kStat);
  ASSERT_EQ(d.size(), 4u) << ::testing::PrintToString(d);
  EXPECT_EQ(d[0], "perf built 2 event(s), ours 3");
  EXPECT_EQ(d[1], "event 0 (cpu-clock:u): exclude_kernel: perf 1, ours 0");
  EXPECT_EQ(d[2], "event 0 (cpu-clock:u): name: perf 'cpu-clock:u', ours 'cpu-clock'");
  EXPECT_EQ(d[3], "event 1 (task-clock): group leader: perf event 0, ours event 1");
}

TEST(Diff, HexFieldsAreShownInHex) {
  Shown perf, ours;
  perf.events = {event(1001, 0x1401, "krava/ev1/", 0)};
  ours.events = {event(1001, 0x1400, "krava/ev1/", 0)};
  ours.events[0].attr.attr.config1 = 0x145;
  std::vector<std::string> d = diff_shown(perf, ours, DiffMode::kStat);
  ASSERT_EQ(d.size(), 2u) << ::testing::PrintToString(d);
  EXPECT_EQ(d[0], "event 0 (krava/ev1/): config: perf 0x1401, ours 0x1400");
  EXPECT_EQ(d[1], "event 0 (krava/ev1/): { bp_addr, config1 }: perf 0, ours 0x145");
}

TEST(Diff, RejectionMustBeMutual) {
  Shown perf, ours;
  perf.rejected = true;
  perf.message = "event syntax error: 'x'\n  \\___ parser error\n";
  ours.events = {event(1, 0, "x", 0)};
  std::vector<std::string> d = diff_shown(perf, ours, DiffMode::kStat);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "perf rejects it (event syntax error: 'x'), ours accepts it: 1 event(s)");
  d = diff_shown(ours, perf, DiffMode::kStat);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].find("perf accepts it (1 event(s)), ours rejects it"), std::string::npos);
  ours.rejected = true;
  ours.events.clear();
  EXPECT_TRUE(diff_shown(perf, ours, DiffMode::kStat).empty());
}

TEST(Diff, WhenPerfStoppedOnlyItsEventsAreCompared) {
  Shown perf, ours;
  perf.stopped_early = true;
  perf.events = {event(0, 0, "cycles", 0)};
  perf.events[0].name.reset();
  ours.events = {event(0, 0, "cycles", 0), event(1, 0, "cpu-clock", 0)};
  std::vector<std::string> notes;
  EXPECT_TRUE(diff_shown(perf, ours, DiffMode::kStat, &notes).empty());
  ASSERT_FALSE(notes.empty());
  EXPECT_EQ(notes[0], "perf stopped after a failed open; events 1..1 are not checked");
  ours.events.pop_back();
  ours.events.pop_back();
  EXPECT_EQ(diff_shown(perf, ours, DiffMode::kStat).size(), 1u);
}

TEST(Diff, GuestBitsAreNotComparedAfterPerfClearedThem) {
  Shown perf, ours;
  perf.guest_bits_cleared_after = 0;
  perf.events = {event(9, 0, "msr/tsc/", 0), event(1, 0, "cpu-clock", 1)};
  perf.events[1].attr.attr.exclude_guest = 0;
  ours.events = {event(9, 0, "msr/tsc/", 0), event(1, 0, "cpu-clock", 1)};
  EXPECT_TRUE(diff_shown(perf, ours, DiffMode::kStat).empty());
  ours.events[0].attr.attr.exclude_guest = 0;  // event 0 is still compared
  EXPECT_EQ(diff_shown(perf, ours, DiffMode::kStat).size(), 1u);
}

TEST(Diff, RecordModeComparesPeriodAndFreqStatModeDoesNot) {
  Shown perf, ours;
  perf.events = {event(1, 0, "cpu-clock", 0)};
  ours.events = perf.events;
  perf.events[0].attr.attr.sample_period = 1000;
  EXPECT_TRUE(diff_shown(perf, ours, DiffMode::kStat).empty());
  std::vector<std::string> d = diff_shown(perf, ours, DiffMode::kRecord);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "event 0 (cpu-clock): { sample_period, sample_freq }: perf 1000, ours 0");
}

TEST(Corpus, ReadsModesStringsAndExpectations) {
  auto cases = read_corpus(
      "# comment\n"
      "\n"
      "stat    cpu-clock:u\n"
      "record\t{cpu-clock/period=10/,task-clock}\n"
      "expect  persistent/mce_record/ => type=1003 config=0x6a mmap2=1 name=p leader=0\n"
      "reject  krava/krava01=8/ => does not fit\n"
      "stat:any-order uncore_fake/clockticks/\n");
  ASSERT_TRUE(cases.ok()) << cases.error().message();
  ASSERT_EQ(cases->size(), 5u);
  EXPECT_EQ((*cases)[0].line, 3);
  EXPECT_EQ((*cases)[0].mode, "stat");
  EXPECT_EQ((*cases)[0].text, "cpu-clock:u");
  EXPECT_EQ((*cases)[1].text, "{cpu-clock/period=10/,task-clock}");
  EXPECT_EQ((*cases)[2].text, "persistent/mce_record/");
  EXPECT_EQ((*cases)[2].expectation, "type=1003 config=0x6a mmap2=1 name=p leader=0");
  EXPECT_EQ((*cases)[3].expectation, "does not fit");
  EXPECT_EQ((*cases)[4].mode, "stat:any-order");
  EXPECT_FALSE(read_corpus("bogus:any-order cpu-clock\n").ok());

  EXPECT_FALSE(read_corpus("stat\n").ok());
  EXPECT_FALSE(read_corpus("bogus cpu-clock\n").ok());
  EXPECT_FALSE(read_corpus("expect cpu-clock\n").ok());
  EXPECT_FALSE(read_corpus("stat cpu-clock => type=1\n").ok());
  auto bad = read_corpus("stat a\n\nfoo b\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("line 3"), std::string::npos);
}

TEST(Corpus, ExpectationsBecomeEvents) {
  auto e = read_expectation(
      "type=1003 config=0x6a mmap2=1 exclude_guest=1 name=persistent/mce_record/ leader=0 ; "
      "type=1003 word16=0xff config1=0x5 name=a=b leader=0");
  ASSERT_TRUE(e.ok()) << e.error().message();
  ASSERT_EQ(e->events.size(), 2u);
  const perf_event_attr& a = e->events[0].attr.attr;
  EXPECT_EQ(a.type, 1003u);
  EXPECT_EQ(a.config, 0x6au);
  EXPECT_EQ(a.mmap2, 1u);
  EXPECT_EQ(e->events[0].attr.words[5], (uint64_t(1) << 23) | (uint64_t(1) << 20));
  EXPECT_EQ(e->events[0].name, "persistent/mce_record/");
  EXPECT_EQ(e->events[1].attr.config3(), 0xffu);
  EXPECT_EQ(e->events[1].attr.attr.config1, 5u);
  EXPECT_EQ(e->events[1].name, "a=b");

  EXPECT_FALSE(read_expectation("typo=1").ok());
  EXPECT_FALSE(read_expectation("precise_ip=4").ok());
  EXPECT_FALSE(read_expectation("word17=1").ok());
  EXPECT_FALSE(read_expectation("type").ok());
}

TEST(Corpus, ExpectModeComparesEveryFieldButSize) {
  auto expected = read_expectation("type=1003 config=0x6a mmap2=1 name=p leader=0");
  ASSERT_TRUE(expected.ok());
  Shown ours = *expected;
  ours.events[0].attr.attr.size = 136;
  EXPECT_TRUE(diff_shown(*expected, ours, DiffMode::kExpect).empty());
  ours.events[0].attr.attr.sample_type = PERF_SAMPLE_RAW;
  std::vector<std::string> d = diff_shown(*expected, ours, DiffMode::kExpect);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0], "event 0 (p): sample_type: expected 0, ours RAW");
}

}  // namespace
}  // namespace pp::testing

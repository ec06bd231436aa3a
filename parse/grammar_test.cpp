// The grammar alone: the located tree it builds, what it keeps when it stops
// at a syntax error, and alias-file term lists. No PMU or tracepoint is
// looked up here (parse_events_test.cpp covers resolution).
#include "parse/grammar.h"

#include <gtest/gtest.h>

namespace pp::parse {
namespace {

TEST(Grammar, BuildsALocatedTree) {
  ParsedList p = parse_event_list("cycles:u,g{msr/tsc/,sched:sched_switch}:k", nullptr);
  ASSERT_TRUE(p.errors.empty()) << p.errors[0].message;
  ASSERT_EQ(p.groups.size(), 2u);

  const Group& lone = p.groups[0];
  EXPECT_FALSE(lone.braces);
  ASSERT_EQ(lone.events.size(), 1u);
  const Event& cycles = lone.events[0];
  EXPECT_EQ(cycles.def.kind, EventKind::kSymbol);
  EXPECT_TRUE(cycles.def.hardware);
  EXPECT_EQ(cycles.def.name.text, "cycles");
  EXPECT_EQ(cycles.def.name.col, 0u);
  ASSERT_TRUE(cycles.modifiers);
  EXPECT_EQ(cycles.modifiers->text, "u");
  EXPECT_EQ(cycles.modifiers->col, 7u);
  EXPECT_EQ(cycles.text, "cycles:u");

  const Group& g = p.groups[1];
  EXPECT_TRUE(g.braces);
  EXPECT_EQ(g.name, "g");
  ASSERT_EQ(g.events.size(), 2u);
  const EventDef& msr = g.events[0].def;
  EXPECT_EQ(msr.kind, EventKind::kPmu);
  EXPECT_EQ(msr.name.text, "msr");
  EXPECT_EQ(msr.name.col, 11u);
  ASSERT_EQ(msr.terms.size(), 1u);
  EXPECT_EQ(msr.terms[0].config, "tsc");
  EXPECT_TRUE(msr.terms[0].no_value);
  EXPECT_EQ(msr.terms[0].col, 15u);
  const EventDef& tp = g.events[1].def;
  EXPECT_EQ(tp.kind, EventKind::kTracepoint);
  EXPECT_EQ(tp.name.text, "sched");
  EXPECT_EQ(tp.name.col, 20u);
  EXPECT_EQ(tp.second.text, "sched_switch");
  ASSERT_TRUE(g.modifiers);
  EXPECT_EQ(g.modifiers->text, "k");
  EXPECT_EQ(g.modifiers->col, 40u);
}

TEST(Grammar, EveryEventKind) {
  ParsedList p = parse_event_list(
      "L1-dcache-load-misses,r1a8,4:0x1a8,mem:0x1000/8:rw,cpu-clock/period=10/,sys-x:ev", nullptr);
  ASSERT_TRUE(p.errors.empty()) << p.errors[0].message;
  ASSERT_EQ(p.groups.size(), 6u);
  const EventDef& cache = p.groups[0].events[0].def;
  EXPECT_EQ(cache.kind, EventKind::kCache);
  EXPECT_EQ(cache.name.text, "L1-dcache");
  ASSERT_EQ(cache.parts.size(), 2u);
  EXPECT_EQ(cache.parts[0].text, "load");
  EXPECT_EQ(cache.parts[1].text, "misses");
  EXPECT_EQ(cache.parts[1].col, 15u);
  const EventDef& raw = p.groups[1].events[0].def;
  EXPECT_EQ(raw.kind, EventKind::kRaw);
  EXPECT_EQ(raw.name.num, 0x1a8u);
  const EventDef& numeric = p.groups[2].events[0].def;
  EXPECT_EQ(numeric.kind, EventKind::kNumeric);
  EXPECT_EQ(numeric.name.num, 4u);
  EXPECT_EQ(numeric.second.num, 0x1a8u);
  const EventDef& bp = p.groups[3].events[0].def;
  EXPECT_EQ(bp.kind, EventKind::kBreakpoint);
  EXPECT_EQ(bp.name.num, 0x1000u);
  EXPECT_EQ(bp.bp_len, 8u);
  ASSERT_TRUE(bp.bp_access);
  EXPECT_EQ(bp.bp_access->text, "rw");
  const EventDef& sw = p.groups[4].events[0].def;
  EXPECT_EQ(sw.kind, EventKind::kSymbol);
  EXPECT_FALSE(sw.hardware);
  ASSERT_EQ(sw.terms.size(), 1u);
  EXPECT_EQ(sw.terms[0].type, TermType::kPeriod);
  EXPECT_EQ(sw.terms[0].num, 10u);
  EXPECT_EQ(sw.terms[0].val_col, 68u);
  const EventDef& tp = p.groups[5].events[0].def;
  EXPECT_EQ(tp.kind, EventKind::kTracepoint);
  EXPECT_EQ(tp.name.text, "sys-x");
  EXPECT_EQ(tp.second.text, "ev");
}

TEST(Grammar, KeepsWhatCameBeforeASyntaxError) {
  // cycles is complete; the second event's term list never closes. The tree
  // keeps cycles so that resolution can report an error in it first.
  ParsedList p = parse_event_list("cycles,cpu/event=1", nullptr);
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].col, 10u);
  EXPECT_EQ(p.errors[0].message, "this '/' opens a term list that has no closing '/'");
  ASSERT_EQ(p.groups.size(), 2u);
  ASSERT_EQ(p.groups[0].events.size(), 1u);
  EXPECT_TRUE(p.groups[1].events.empty());
  EXPECT_FALSE(p.stopped_at_unknown);

  // An event whose modifiers are wrong is complete: it is kept too.
  p = parse_event_list("{cycles,instructions:u:x}", nullptr);
  ASSERT_EQ(p.errors.size(), 1u);
  ASSERT_EQ(p.groups.size(), 1u);
  EXPECT_EQ(p.groups[0].events.size(), 2u);
}

TEST(Grammar, StopsAtAWordThatIsNoEvent) {
  ParsedList p = parse_event_list("cycles,cycels,instructions", nullptr);
  EXPECT_TRUE(p.errors.empty());
  EXPECT_TRUE(p.stopped_at_unknown);
  ASSERT_EQ(p.groups.size(), 2u);
  const EventDef& unknown = p.groups[1].events.at(0).def;
  EXPECT_EQ(unknown.kind, EventKind::kUnknown);
  EXPECT_EQ(unknown.name.text, "cycels");
  EXPECT_EQ(unknown.name.col, 7u);
}

TEST(Grammar, AliasFileTerms) {
  auto terms = parse_term_list("event=0x3c,umask=?,edge", nullptr);
  ASSERT_TRUE(terms.ok()) << terms.error().message();
  ASSERT_EQ(terms->size(), 3u);
  EXPECT_EQ((*terms)[0].config, "event");
  EXPECT_EQ((*terms)[0].num, 0x3cu);
  EXPECT_FALSE((*terms)[1].is_num);
  EXPECT_EQ((*terms)[1].str, "?");
  EXPECT_TRUE((*terms)[2].no_value);

  auto bad = parse_term_list("w5=1,,x", nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(), "a term is missing before ','");
}

}  // namespace
}  // namespace pp::parse

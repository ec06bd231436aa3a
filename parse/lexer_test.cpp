// The lexer reproduces perf 6.1's flex scanner: which token each piece of an
// event string becomes depends on the longest match, the order of the rules
// and the start state. Each case here is a behaviour seen in perf itself.
#include "parse/lexer.h"

#include <linux/perf_event.h>

#include <gtest/gtest.h>

#include "pmu/model.h"

namespace pp::parse {
namespace {

std::string kind_name(Tok kind) {
  switch (kind) {
    case Tok::kEnd:
      return "End";
    case Tok::kError:
      return "Error";
    case Tok::kStray:
      return "Stray";
    case Tok::kEventName:
      return "EventName";
    case Tok::kValue:
      return "Value";
    case Tok::kValueSymHw:
      return "SymHw";
    case Tok::kValueSymSw:
      return "SymSw";
    case Tok::kValueSymTool:
      return "SymTool";
    case Tok::kRaw:
      return "Raw";
    case Tok::kTerm:
      return "Term";
    case Tok::kName:
      return "Name";
    case Tok::kModifierEvent:
      return "Mod";
    case Tok::kModifierBp:
      return "ModBp";
    case Tok::kCacheType:
      return "CacheType";
    case Tok::kCacheOpResult:
      return "CacheOp";
    case Tok::kPrefixMem:
      return "Mem";
    case Tok::kKernelPmuEvent:
      return "PmuEvent";
    case Tok::kPmuEventPre:
      return "PmuPre";
    case Tok::kPmuEventSuf:
      return "PmuSuf";
    case Tok::kArrayAll:
      return "ArrayAll";
    case Tok::kArrayRange:
      return "ArrayRange";
    case Tok::kDrvCfgTerm:
      return "DrvCfg";
    case Tok::kSlash:
      return "/";
    case Tok::kComma:
      return ",";
    case Tok::kColon:
      return ":";
    case Tok::kLBrace:
      return "{";
    case Tok::kRBrace:
      return "}";
    case Tok::kEquals:
      return "=";
    case Tok::kDash:
      return "-";
    case Tok::kLBracket:
      return "[";
    case Tok::kRBracket:
      return "]";
  }
  return "?";
}

// "Kind(text)" for every token but the final End, separated by spaces.
std::string tokens(std::string_view input, const pmu::Model* model = nullptr,
                   LexStart start = LexStart::kEvents) {
  std::string out;
  std::vector<Token> toks = lex(input, model, start);
  EXPECT_EQ(toks.back().kind, Tok::kEnd);
  for (size_t i = 0; i + 1 < toks.size(); i++) {
    if (!out.empty())
      out += ' ';
    out += kind_name(toks[i].kind) + "(" + toks[i].text + ")";
  }
  return out;
}

struct LexCase {
  const char* input;
  const char* expected;
};

class LexTable : public ::testing::TestWithParam<LexCase> {};

TEST_P(LexTable, Tokens) {
  EXPECT_EQ(tokens(GetParam().input), GetParam().expected) << GetParam().input;
}

INSTANTIATE_TEST_SUITE_P(
    Perf61, LexTable,
    ::testing::Values(
        // The event state names each event with its whole text, then reads it.
        LexCase{"cycles", "EventName(cycles) SymHw(cycles)"},
        LexCase{"cycles:u,instructions",
                "EventName(cycles:u) SymHw(cycles) :(:) Mod(u) ,(,) "
                "EventName(instructions) SymHw(instructions)"},
        // Leading blanks stay in the name (perf prints " task-clock").
        LexCase{"cpu-clock, task-clock",
                "EventName(cpu-clock) SymSw(cpu-clock) ,(,) EventName( task-clock) "
                "SymSw(task-clock)"},
        // A pmu/terms/ event's name runs to the closing '/' and its modifiers.
        LexCase{"msr/tsc,name=x/u",
                "EventName(msr/tsc,name=x/u) Name(msr) /(/) Name(tsc) ,(,) Term(name) =(=) "
                "Name(x) /(/) Mod(u)"},
        // A breakpoint's name stops at its '/' (perf names it mem:0x1000).
        LexCase{"mem:0x1000/8:rw",
                "EventName(mem:0x1000) Mem(mem:) Value(0x1000) /(/) Value(8) :(:) ModBp(rw)"},
        // mem state: anything but r, w, x, numbers, ':' and '/' goes back to
        // INITIAL, so :u after a breakpoint is an event modifier.
        LexCase{"mem:0x1000:u", "EventName(mem:0x1000:u) Mem(mem:) Value(0x1000) :(:) Mod(u)"},
        // A group is re-read from its start; its events get their own names.
        LexCase{"{cycles,cpu-clock}:u",
                "{({) EventName(cycles) SymHw(cycles) ,(,) EventName(cpu-clock) "
                "SymSw(cpu-clock) }(}) :(:) Mod(u)"},
        LexCase{"g{cycles}", "Name(g) {({) EventName(cycles) SymHw(cycles) }(})"},
        // Longest match: "cycles-t" is a PMU event, "cyclesu" a name, "branches"
        // a symbol (the rule before the cache types), "branch" a cache type.
        LexCase{"cycles-t", "EventName(cycles-t) PmuEvent(cycles-t)"},
        LexCase{"cyclesu", "EventName(cyclesu) Name(cyclesu)"},
        LexCase{"branches", "EventName(branches) SymHw(branches)"},
        LexCase{"branch-loads", "EventName(branch-loads) CacheType(branch) -(-) CacheOp(loads)"},
        LexCase{"l1-d-load-misses",
                "EventName(l1-d-load-misses) CacheType(l1-d) -(-) CacheOp(load) -(-) "
                "CacheOp(misses)"},
        LexCase{"topdown-retiring", "EventName(topdown-retiring) PmuEvent(topdown-retiring)"},
        LexCase{"duration_time", "EventName(duration_time) SymTool(duration_time)"},
        // rNNN is raw in INITIAL; r0xNNN only inside terms (outside, the
        // longer name rule wins and perf rejects it).
        LexCase{"r1a8", "EventName(r1a8) Raw(r1a8)"},
        LexCase{"r0x1a", "EventName(r0x1a) Name(r0x1a)"},
        LexCase{"cpu/r0x1a/", "EventName(cpu/r0x1a/) Name(cpu) /(/) Raw(r0x1a) /(/)"},
        // Inside terms, "read" is rNNN (the term rules come first): 0xead.
        LexCase{"msr/read/", "EventName(msr/read/) Name(msr) /(/) Raw(read) /(/)"},
        // Term names take the longest keyword; config3 is a term (perf 6.3).
        LexCase{"x/config1=1,configx=2,config3=3/",
                "EventName(x/config1=1,configx=2,config3=3/) Name(x) /(/) Term(config1) =(=) "
                "Value(1) ,(,) Name(configx) =(=) Value(2) ,(,) Term(config3) =(=) Value(3) "
                "/(/)"},
        LexCase{"x/name='a,b'/",
                "EventName(x/name='a,b'/) Name(x) /(/) Term(name) =(=) Name(a,b) /(/)"},
        LexCase{"x/call-graph=dwarf,@sink/",
                "EventName(x/call-graph=dwarf,@sink/) Name(x) /(/) Term(call-graph) =(=) "
                "Name(dwarf) ,(,) DrvCfg(sink) /(/)"},
        // perf's array terms hardly ever lex as arrays: the name rule, which
        // takes '[' and ']', is longer; only [all] wins its tie.
        LexCase{"x/a[0,1...3]=1/",
                "EventName(x/a[0,1...3]=1/) Name(x) /(/) Name(a[0) ,(,) Value(1) Stray(.) "
                "Stray(.) Stray(.) Value(3) Name(]) =(=) Value(1) /(/)"},
        LexCase{"x/a,[all]/",
                "EventName(x/a,[all]/) Name(x) /(/) Name(a) ,(,) ArrayAll([all]) /(/)"},
        // Numbers: decimal, 0x hex (never octal), PE_ERROR past 64 bits.
        LexCase{"010:0x1F", "EventName(010:0x1F) Value(010) :(:) Value(0x1F)"},
        LexCase{"18446744073709551616:1",
                "EventName(18446744073709551616:1) Error(18446744073709551616) :(:) Value(1)"},
        // Blanks are skipped; other characters outside the syntax are strays.
        LexCase{"cycles u", "EventName(cycles u) SymHw(cycles) Mod(u)"},
        LexCase{"cycles#u", "EventName(cycles#u) SymHw(cycles) Stray(#) Mod(u)"},
        // An unmatched '{' in the event state (perf echoes it to stdout).
        LexCase{"{cycles", "Stray({) EventName(cycles) SymHw(cycles)"},
        LexCase{",cycles", ",(,) EventName(cycles) SymHw(cycles)"},
        LexCase{"sched:sched_s*", "EventName(sched:sched_s*) Name(sched) :(:) Name(sched_s*)"}));

TEST(Lexer, TokenValuesAndPositions) {
  std::vector<Token> t = lex("r1a:u,4:0x1A8", nullptr, LexStart::kEvents);
  ASSERT_GE(t.size(), 9u);
  EXPECT_EQ(t[1].kind, Tok::kRaw);
  EXPECT_EQ(t[1].num, 0x1au);
  EXPECT_EQ(t[1].begin, 0u);
  EXPECT_EQ(t[3].kind, Tok::kModifierEvent);
  EXPECT_EQ(t[3].begin, 4u);
  EXPECT_EQ(t[6].kind, Tok::kValue);
  EXPECT_EQ(t[6].num, 4u);
  EXPECT_EQ(t[8].num, 0x1a8u);
  EXPECT_EQ(t[8].begin, 8u);
  EXPECT_EQ(t[8].end, 13u);
}

TEST(Lexer, SymbolsCarryTheirConfig) {
  std::vector<Token> t = lex("cache-misses", nullptr, LexStart::kEvents);
  EXPECT_EQ(t[1].kind, Tok::kValueSymHw);
  EXPECT_EQ(t[1].num, uint64_t(PERF_COUNT_HW_CACHE_MISSES));
  t = lex("cs", nullptr, LexStart::kEvents);
  EXPECT_EQ(t[1].kind, Tok::kValueSymSw);
  EXPECT_EQ(t[1].num, uint64_t(PERF_COUNT_SW_CONTEXT_SWITCHES));
  t = lex("x/no-overwrite/", nullptr, LexStart::kEvents);
  EXPECT_EQ(t[3].kind, Tok::kTerm);
  EXPECT_EQ(TermType(t[3].num), TermType::kNoOverwrite);
}

TEST(Lexer, AliasWordsDependOnTheModel) {
  pmu::Model model = pmu::Model::in_memory(
      {pmu::memory_pmu("msr", 9, {}, {{"tsc", "event=0"}, {"mem-ld", "event=1"}, {"rab", "e=2"}})},
      {});
  EXPECT_EQ(tokens("tsc", &model), "EventName(tsc) PmuEvent(tsc)");
  EXPECT_EQ(tokens("TSC", &model), "EventName(TSC) PmuEvent(TSC)");  // case-insensitive
  EXPECT_EQ(tokens("mem-ld", &model), "EventName(mem-ld) PmuPre(mem) -(-) PmuSuf(ld)");
  EXPECT_EQ(tokens("rab", &model), "EventName(rab) Name(rab)");  // an alias, not raw 0xab
  EXPECT_EQ(tokens("rab"), "EventName(rab) Raw(rab)");
  // "cpu" is never an alias word, whatever the PMUs say.
  pmu::Model with_cpu =
      pmu::Model::in_memory({pmu::memory_pmu("msr", 9, {}, {{"cpu", "event=0"}})}, {});
  EXPECT_EQ(tokens("cpu", &with_cpu), "EventName(cpu) Name(cpu)");
}

TEST(Lexer, TermListsStartInTheConfigState) {
  EXPECT_EQ(tokens("persistent,config=106", nullptr, LexStart::kTerms),
            "Name(persistent) ,(,) Term(config) =(=) Value(106)");
  EXPECT_EQ(tokens("event=0x3c,umask=?", nullptr, LexStart::kTerms),
            "Name(event) =(=) Value(0x3c) ,(,) Name(umask) =(=) Name(?)");
}

TEST(Lexer, TermNames) {
  EXPECT_EQ(term_name(TermType::kConfig3), "config3");
  EXPECT_EQ(term_name(TermType::kMaxEvents), "nr");
  EXPECT_EQ(term_name(TermType::kDrvCfg), "driver-config");
  EXPECT_EQ(term_name(TermType::kUser), "<sysfs term>");
}

TEST(Lexer, NeverLoopsOnAnyByte) {
  // Every single byte, alone and after a '/', lexes to a finite token list.
  for (int c = 0; c < 256; c++) {
    std::string one(1, char(c));
    EXPECT_EQ(lex(one, nullptr, LexStart::kEvents).back().kind, Tok::kEnd);
    EXPECT_EQ(lex("x/" + one, nullptr, LexStart::kEvents).back().kind, Tok::kEnd);
    EXPECT_EQ(lex("mem:" + one, nullptr, LexStart::kEvents).back().kind, Tok::kEnd);
    EXPECT_EQ(lex("x/a[" + one, nullptr, LexStart::kEvents).back().kind, Tok::kEnd);
  }
}

}  // namespace
}  // namespace pp::parse

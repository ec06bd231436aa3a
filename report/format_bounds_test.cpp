#include "report/format_bounds.h"

#include <gtest/gtest.h>
#include <string>

#include "report/trace_decoder.h"
#include "report/tracing_data.h"
#include "sys/tree.h"
#include "tests/support/test_env.h"

namespace pp::report {
namespace {

constexpr char kHead[] =
    "name: x\nID: 9\nformat:\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\n";

TEST(FormatBounds, RealFormatsPass) {
  // Every format of the tracefs fixtures (Linux 6.18).
  sys::Tree events(pp::testing::fixtures_dir() + "/tracefs-6.18/events");
  for (const char* name : {"sched/sched_switch/format", "writeback/writeback_dirty_folio/format",
                           "kmem/kmalloc/format", "signal/signal_generate/format"}) {
    auto text = events.read(name);
    ASSERT_TRUE(text.ok()) << text.error().message();
    Status s = check_format_bounds(*text);
    EXPECT_TRUE(s.ok()) << name << ": " << s.error().message();
  }
}

TEST(FormatBounds, DeepNestingLongChainsAndHugeFormatsAreRefused) {
  std::string deep = std::string(kHead) + "print fmt: \"%d\", " + std::string(5000, '(') +
                     "REC->a" + std::string(5000, ')');
  Status s = check_format_bounds(deep);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), EINVAL);
  EXPECT_EQ(s.error().message(), "its print fmt nests 5000 levels deep, more than 64");

  std::string chain = std::string(kHead) + "print fmt: \"%d\", REC->a";
  for (int i = 0; i < 2000; i++)
    chain += "+REC->a";
  s = check_format_bounds(chain);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("2000 operators"), std::string::npos) << s.error().message();

  std::string huge = std::string(kHead) + "print fmt: \"" + std::string(70000, 'x') + "\"";
  EXPECT_FALSE(check_format_bounds(huge).ok());
}

// A perf.data whose tracing data nests a print format 200,000 levels deep
// (400 KB: refused for its length first): libtraceevent would recurse once
// per level; the decoder refuses the event with a warning and keeps the
// others.
TEST(FormatBounds, TheDecoderRefusesADeepFormatAndKeepsTheRest) {
  TracingData data;
  data.long_size = 8;
  data.page_size = 4096;
  std::string fields =
      "format:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
      "\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\n";
  data.systems.push_back(
      {"fuzz",
       {"name: deep\nID: 100\n" + fields + "print fmt: \"%d\", " + std::string(200000, '(') +
            "REC->a" + std::string(200000, ')') + "\n",
        "name: fine\nID: 101\n" + fields + "print fmt: \"a=%d\", REC->a\n"}});
  auto decoder = TraceDecoder::create(data, /*plugins=*/false);
  ASSERT_TRUE(decoder.ok()) << decoder.error().message();
  EXPECT_EQ((*decoder)->event(100), nullptr);
  EXPECT_NE((*decoder)->event(101), nullptr);
  bool warned = false;
  for (const std::string& w : (*decoder)->warnings())
    warned |= w.find("the format of fuzz (name: deep) is not parsed: its print fmt is") !=
              std::string::npos;
  EXPECT_TRUE(warned);
}

TEST(FormatBounds, WhatIsQuotedIsText) {
  std::string quoted = std::string(kHead) + "print fmt: \"" + std::string(200, '(') +
                       std::string(2000, '+') + "\\\"" + "\", REC->a";
  Status s = check_format_bounds(quoted);
  EXPECT_TRUE(s.ok()) << s.error().message();
}

// Every format of both tracefs fixtures names only its own fields; a print
// format naming one the format lacks never reaches libtraceevent's parser,
// which crashed on it (a block_rq format without its fields, from the
// trace_decoder_fuzzer seeds).
TEST(FormatBounds, PrintFormatsNameOnlyTheirFields) {
  size_t checked = 0;
  for (const char* fixture : {"/tracefs-6.18/events", "/tracefs-debian-6.1/events"}) {
    sys::Tree events(pp::testing::fixtures_dir() + fixture);
    auto systems = events.list("");
    ASSERT_TRUE(systems.ok());
    for (const std::string& system : *systems) {
      auto names = events.list(system);
      if (!names.ok())
        continue;
      for (const std::string& name : *names) {
        auto text = events.read(system + "/" + name + "/format");
        if (!text.ok())
          continue;
        Status s = check_format_fields(*text);
        EXPECT_TRUE(s.ok()) << system << "/" << name << ": " << s.error().message();
        checked++;
      }
    }
  }
  EXPECT_GT(checked, 20u);  // the fixtures hold 24
  Status missing = check_format_fields(std::string(kHead) +
                                       "print fmt: \"%s\", __print_symbolic(REC->ioprio, { 0, "
                                       "\"none\" }), REC->a\n");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(),
            "its print fmt names REC->ioprio, which is no field of the format");
  EXPECT_TRUE(check_format_fields(std::string(kHead) + "print fmt: \"REC->zz\", REC->a\n").ok())
      << "what is quoted is text";
}

// libtraceevent's tokenizer skips spaces and newlines between REC, -> and
// the name, and reads a character literal ('"') as one: a crafted format
// spelled either way names a missing field all the same.
TEST(FormatBounds, AMissingFieldIsFoundHoweverItIsSpelled) {
  for (const char* print :
       {"print fmt: \"%d\", REC -> ioprio\n", "print fmt: \"%d\", REC->\n\tioprio\n",
        "print fmt: \"%c%d%c\", '\"', REC->ioprio, '\"'\n",
        "print fmt: \"%c%d\", '\\'', REC->ioprio\n"}) {
    Status s = check_format_fields(std::string(kHead) + print);
    ASSERT_FALSE(s.ok()) << print;
    EXPECT_EQ(s.error().message(),
              "its print fmt names REC->ioprio, which is no field of the format")
        << print;
  }
  EXPECT_TRUE(check_format_fields(std::string(kHead) + "print fmt: \"%c\", 'R', PREC->x\n").ok())
      << "a character literal is text, and PREC is no REC";
  Status s = check_format_bounds(std::string(kHead) + "print fmt: \"%c\", '(', REC->a\n");
  EXPECT_TRUE(s.ok()) << s.error().message();
}

}  // namespace
}  // namespace pp::report

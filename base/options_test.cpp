#include "base/options.h"

#include <gtest/gtest.h>

namespace pp {
namespace {

struct Fixture {
  bool json = false;
  int verbose = 0;
  std::string output;
  std::vector<std::string> events;
  uint64_t pages = 0;
  OptionParser parser;

  explicit Fixture(OptionParser::Positionals p = OptionParser::Positionals::kInterleaved)
      : parser({"perf persistent test [<options>]"}, p) {
    parser.flag('j', "json", &json, "print JSON")
        .counter('v', "verbose", &verbose, "be more verbose")
        .value('o', "output", "file", &output, "output file name")
        .values('e', "event", "event", &events, "event selector")
        .number('m', "mmap-pages", "pages", &pages, 1, 1024, "buffer size in pages");
  }

  Result<OptionParser::Parsed> parse(std::vector<const char*> args) {
    args.insert(args.begin(), "test");
    return parser.parse(int(args.size()), args.data());
  }
};

TEST(Options, AllSpellings) {
  Fixture f;
  auto r = f.parse({"-jvv", "-e", "a", "-eb", "--event", "c", "--event=d", "-ofile",
                    "--mmap-pages=0x10", "pos1", "--verbose", "pos2"});
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_TRUE(f.json);
  EXPECT_EQ(f.verbose, 3);
  EXPECT_EQ(f.events, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(f.output, "file");
  EXPECT_EQ(f.pages, 16u);
  EXPECT_EQ(r->args, (std::vector<std::string>{"pos1", "pos2"}));
  EXPECT_FALSE(r->help);
}

TEST(Options, NegationAndDoubleDash) {
  Fixture f;
  auto r = f.parse({"--json", "--no-json", "--", "-j", "--x"});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(f.json);
  EXPECT_EQ(r->args, (std::vector<std::string>{"-j", "--x"}));
}

TEST(Options, StopAtFirstPositionalLeavesTheCommandAlone) {
  Fixture f(OptionParser::Positionals::kStopAtFirst);
  auto r = f.parse({"-j", "sleep", "-v", "10"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(f.json);
  EXPECT_EQ(f.verbose, 0);
  EXPECT_EQ(r->args, (std::vector<std::string>{"sleep", "-v", "10"}));
}

// A usage error before --json still comes out as JSON: salvage() finds the
// flag parse() never reached, and nothing past "--".
TEST(Options, SalvageFindsTheFlagAfterAnError) {
  Fixture f;
  std::vector<const char*> args = {"test", "--bogus", "-m", "99999", "--json"};
  ASSERT_FALSE(f.parser.parse(int(args.size()), args.data()).ok());
  EXPECT_FALSE(f.json);
  f.parser.salvage(int(args.size()), args.data(), "json");
  EXPECT_TRUE(f.json);
  Fixture g;
  std::vector<const char*> after_dashes = {"test", "--bogus", "--", "cmd", "--json", "-j"};
  ASSERT_FALSE(g.parser.parse(int(after_dashes.size()), after_dashes.data()).ok());
  g.parser.salvage(int(after_dashes.size()), after_dashes.data(), "json");
  EXPECT_FALSE(g.json) << "COMMAND's own --json";
  Fixture h;
  std::vector<const char*> short_form = {"test", "-x", "-j"};
  h.parser.salvage(int(short_form.size()), short_form.data(), "json");
  EXPECT_TRUE(h.json);
  h.parser.salvage(int(short_form.size()), short_form.data(), "output");
  EXPECT_TRUE(h.output.empty()) << "only flags and optional values are salvaged";
}

TEST(Options, Help) {
  Fixture f;
  EXPECT_TRUE(f.parse({"-h"})->help);
  EXPECT_TRUE(f.parse({"--help"})->help);
  std::string usage = f.parser.usage();
  EXPECT_NE(usage.find(" Usage: perf persistent test [<options>]\n"), std::string::npos);
  EXPECT_NE(usage.find("    -e, --event <event>       event selector\n"), std::string::npos)
      << usage;
}

struct ErrorCase {
  std::vector<const char*> args;
  const char* message;
};

TEST(Options, ErrorsSayWhatWasWrong) {
  const ErrorCase cases[] = {
      {{"--jsno"}, "unknown option '--jsno'; did you mean '--json'?"},
      {{"-x"}, "unknown option '-x'"},
      {{"--json=1"}, "option '--json' takes no value"},
      {{"-o"}, "option '-o' requires a value (file)"},
      {{"--output"}, "option '--output' requires a value (file)"},
      {{"-m", "0"}, "option '--mmap-pages' wants a number from 1 to 1024, not '0'"},
      {{"-m", "ten"}, "option '--mmap-pages' wants a number from 1 to 1024, not 'ten'"},
      {{"--no-output"}, "option '--output' cannot be negated"},
      {{"--no-such"}, "unknown option '--no-such'"},
      {{"--even"}, "unknown option '--even'; did you mean '--event'?"},
  };
  for (const ErrorCase& c : cases) {
    Fixture f;
    auto r = f.parse(c.args);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.error().code(), EINVAL);
    EXPECT_EQ(r.error().message(), c.message);
  }
  Fixture none(OptionParser::Positionals::kNone);
  EXPECT_EQ(none.parse({"extra"}).error().message(), "unexpected argument 'extra'");
}

}  // namespace
}  // namespace pp

// The event strings create takes, through the real parser over fake trees;
// and the broker's published registry, read back by the same parser as
// `persistent/NAME/` (what record will do).
#include "persistent/parser_resolver.h"

#include <gtest/gtest.h>

#include "parse/parse_events.h"
#include "persistent/run_dir.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"

namespace pp::persistent {
namespace {

class ParserResolverTest : public ::testing::Test {
 protected:
  ParserResolverTest() : fake_(dir_) {
    fake_.standard_pmus();
    fake_.tracepoint("syscalls", "sys_enter_getppid", 316);
    fake_.tracepoint("sched", "sched_switch", 305);
    resolver_ = make_parser_resolver(fake_.roots().sysfs, fake_.roots().tracefs);
  }

  testing::TempDir dir_;
  testing::FakeSysfs fake_;
  std::unique_ptr<EventResolver> resolver_;
};

TEST_F(ParserResolverTest, ResolvesOneEvent) {
  auto tp = resolver_->resolve("syscalls:sys_enter_getppid");
  ASSERT_TRUE(tp.ok()) << tp.error().message();
  EXPECT_EQ(tp->attr.attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
  EXPECT_EQ(tp->attr.attr.config, 316u);
  EXPECT_EQ(tp->tracepoint, "syscalls:sys_enter_getppid");

  auto sw = resolver_->resolve("cpu-clock");
  ASSERT_TRUE(sw.ok()) << sw.error().message();
  EXPECT_EQ(sw->attr.attr.type, uint32_t(PERF_TYPE_SOFTWARE));
  EXPECT_EQ(sw->tracepoint, "");

  auto period = resolver_->resolve("cpu-clock/period=10007/");
  ASSERT_TRUE(period.ok()) << period.error().message();
  EXPECT_EQ(sampling_attr(*period, Layout::kBackward).attr.sample_period, 10007u)
      << "the event string's period is kept";
}

TEST_F(ParserResolverTest, RefusesWhatIsNotOneOrdinaryEvent) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"syscalls:sys_enter_getppid,cpu-clock", "is 2 events"},
      {"{cpu-clock,task-clock}", "is 2 events"},
      {"persistent/x/", "is already a persistent event"},
      {"syscalls:nonesuch", "event syntax error"},
      {"cpu-clock/umsk=1/", "event syntax error"},
  };
  for (const Case& c : cases) {
    auto r = resolver_->resolve(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().kind(), ErrorKind::kUsage) << c.text << ": a parse error is a usage error";
    EXPECT_NE(r.error().message().find(c.expect), std::string::npos)
        << c.text << ": " << r.error().message();
  }
}

// A persistent event named after its tracepoint does not change how the
// tracepoint's own string parses.
TEST_F(ParserResolverTest, PublishedNamesDoNotShadowTracepoints) {
  RunDir run(fake_.roots().broker_run_dir);
  ASSERT_TRUE(run.prepare().ok());
  ASSERT_TRUE(run.publish_pmu().ok());
  ASSERT_TRUE(run.publish_event("sys_enter_getppid", 1).ok());
  auto tp = resolver_->resolve("syscalls:sys_enter_getppid");
  ASSERT_TRUE(tp.ok()) << tp.error().message();
  EXPECT_EQ(tp->attr.attr.config, 316u);
}

// What the broker publishes is what the parser reads: `persistent/NAME/`
// gives the broker's type and the event's id, bit 23 of word 5 from
// format/persistent (seed 07/12 and 08/12).
TEST_F(ParserResolverTest, TheBrokersRegistryParsesAsAPersistentPmu) {
  RunDir run(fake_.roots().broker_run_dir);
  ASSERT_TRUE(run.prepare().ok());
  ASSERT_TRUE(run.publish_pmu().ok());
  ASSERT_TRUE(run.publish_event("ctxsw", 7).ok());
  auto model = pmu::Model::load(fake_.roots());
  ASSERT_TRUE(model.ok()) << model.error().message();
  auto specs = parse::parse_events("persistent/ctxsw/", *model);
  ASSERT_TRUE(specs.ok()) << specs.error().message();
  ASSERT_EQ(specs->size(), 1u);
  const sys::EventAttr& attr = (*specs)[0].attr;
  EXPECT_EQ(attr.attr.type, kBrokerPmuType);
  EXPECT_EQ(attr.attr.config, 7u);
  EXPECT_TRUE(attr.words[5] & (1ull << 23));
}

// persistent/ID/ always finds the event with that id, whatever its name; a
// bare term of the event syntax (persistent/period/) is no event at all.
TEST_F(ParserResolverTest, IdsAlwaysResolveAndTermsAreNoEvents) {
  RunDir run(fake_.roots().broker_run_dir);
  ASSERT_TRUE(run.prepare().ok());
  ASSERT_TRUE(run.publish_pmu().ok());
  ASSERT_TRUE(run.publish_event("ctxsw", 3).ok());
  ASSERT_TRUE(run.publish_event("other", 1).ok());
  auto model = pmu::Model::load(fake_.roots());
  ASSERT_TRUE(model.ok()) << model.error().message();
  for (const char* text : {"persistent/3/", "persistent/ctxsw/"}) {
    auto specs = parse::parse_events(text, *model);
    ASSERT_TRUE(specs.ok()) << text << ": " << specs.error().message();
    EXPECT_EQ((*specs)[0].attr.attr.config, 3u) << text;
  }
  for (const char* term : {"period", "config", "freq", "inherit"}) {
    std::string text = "persistent/" + std::string(term) + "/";
    auto specs = parse::parse_events(text, *model);
    ASSERT_FALSE(specs.ok()) << text << " resolved to config " << (*specs)[0].attr.attr.config;
    EXPECT_NE(specs.error().message().find("is a term of the event syntax, not a persistent event"),
              std::string::npos)
        << specs.error().message();
  }
  auto missing = parse::parse_events("persistent/8/", *model);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("no persistent event with id 8"), std::string::npos)
      << missing.error().message();
}

// Terms perf applies when it opens the event itself never reach a
// persistent event's attr: refused, saying why.
TEST_F(ParserResolverTest, TermsThatWouldNeverReachTheAttrAreRefused) {
  struct Case {
    const char* text;
    const char* term;
  } cases[] = {
      {"cpu-clock/call-graph=dwarf/", "'call-graph'"},
      {"cpu-clock/call-graph=fp/", "'call-graph'"},
      {"cpu-clock/stack-size=8192/", "'stack-size'"},
      {"cpu-clock/max-stack=8/", "'max-stack'"},
      {"cpu-clock/time=0/", "'time'"},
      {"cpu-clock/branch_type=any/", "'branch_type'"},
      {"cpu-clock/inherit/", "'inherit'"},
      {"cpu-clock/no-inherit/", "'no-inherit'"},
      {"cpu-clock/overwrite/", "'overwrite'"},
      {"cpu-clock/nr=5/", "'nr'"},
  };
  for (const Case& c : cases) {
    auto r = resolver_->resolve(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().kind(), ErrorKind::kUsage) << c.text;
    EXPECT_NE(r.error().message().find(std::string("the term ") + c.term +
                                       " cannot be used on a persistent event"),
              std::string::npos)
        << r.error().message();
  }
  EXPECT_TRUE(resolver_->resolve("cpu-clock/period=1000/").ok()) << "period reaches the attr";
}

}  // namespace
}  // namespace pp::persistent

#include "broker/config_file.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace pp::broker {
namespace {

TEST(ConfigFile, SectionsBecomeCreateRequests) {
  auto r = parse_config(
      "# RAS\n"
      "[mce_record]\n"
      "event = mce:mce_record\n"
      "\n"
      "[ctxsw]   \n"
      "  event=sched:sched_switch   # every switch\n"
      "pages = 64\n"
      "cpus = 0-1\n"
      "filter = prev_pid != 0\n",
      "/etc/perf-persistent.conf");
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].request.name, "mce_record");
  EXPECT_EQ((*r)[0].request.event, "mce:mce_record");
  EXPECT_EQ((*r)[0].request.pages, 0u) << "the default";
  EXPECT_EQ((*r)[1].request.name, "ctxsw");
  EXPECT_EQ((*r)[1].request.event, "sched:sched_switch");
  EXPECT_EQ((*r)[1].request.pages, 64u);
  EXPECT_EQ((*r)[1].request.cpus, "0-1");
  EXPECT_EQ((*r)[1].request.filter, "prev_pid != 0");
}

TEST(ConfigFile, BackendChoosesWhoseRingKeepsTheRecords) {
  auto r = parse_config("[gp]\nevent = syscalls:sys_enter_getppid\nbackend = ftrace\n", "c.conf");
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].request.backend, "ftrace");
  auto plain = parse_config("[gp]\nevent = syscalls:sys_enter_getppid\n", "c.conf");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)[0].request.backend, "perf");
  auto bad = parse_config("[gp]\nevent = x:y\nbackend = bpf\n", "c.conf");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("'backend' is 'perf' or 'ftrace', not 'bpf'"),
            std::string::npos)
      << bad.error().message();
}

TEST(ConfigFile, EmptyFileIsNoEvents) {
  auto r = parse_config("# nothing yet\n\n", "f");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST(ConfigFile, ErrorsNameFileAndLine) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"[a]\nevent = x\n[a]\nevent = y\n", "f:3: a second section [a]"},
      {"event = x\n", "f:1: 'event = x' comes before any [NAME] section"},
      {"[a b]\nevent = x\n", "f:1: invalid name 'a b'"},
      {"[a]\n", "f:1: section [a] has no 'event = ...' line"},
      {"[a]\n[b]\nevent = x\n", "f:1: section [a] has no 'event = ...' line"},
      {"[a]\nevent = x\npages = 3\n", "f:3: -m 3: the buffer size in pages must be a power of two"},
      {"[a]\nevent = x\npages = lots\n", "f:3:"},
      {"[a]\nevent = x\ncolour = red\n", "f:3: unknown key 'colour'"},
      {"[a]\nevent =\n", "f:2: 'event' needs an event string"},
      {"[a\n", "f:1: a section header is '[NAME]'"},
      {"[a]\njust words\n", "f:2: expected 'key = value' or '[NAME]'"},
  };
  for (const Case& c : cases) {
    auto r = parse_config(c.text, "f");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().code(), EINVAL);
    EXPECT_NE(r.error().message().find(c.expect), std::string::npos)
        << c.text << "-> " << r.error().message();
  }
}

}  // namespace
}  // namespace pp::broker

namespace pp::broker {
namespace {

// A repeated key would silently win; it is an error naming both lines.
TEST(ConfigFile, RepeatedKeyIsAnErrorNamingTheLine) {
  auto r = parse_config(
      "[a]\n"
      "event = sched:sched_switch\n"
      "pages = 8\n"
      "event = sched:sched_wakeup\n",
      "/etc/pp.conf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(),
            "/etc/pp.conf:4: a second 'event' in section [a] (the first is on line 2); each key "
            "may appear once");
  // The same key in another section is another event's.
  auto two = parse_config("[a]\nevent = x:y\n[b]\nevent = x:z\n", "f");
  ASSERT_TRUE(two.ok()) << two.error().message();
  EXPECT_EQ(two->size(), 2u);
}

TEST(ConfigFile, OverlongFilterIsAnErrorNamingTheLine) {
  auto r = parse_config("[a]\nevent = x:y\nfilter = " + std::string(5000, 'a') + "\n", "f");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("f:3: the filter is 5000 bytes, over the limit of 4095"),
            std::string::npos)
      << r.error().message();
}

}  // namespace
}  // namespace pp::broker

namespace pp::broker {
namespace {

// `optional = yes` marks an event this host may lack; a bad value, and any
// other error, is a config error (its own exit status, 9).
TEST(ConfigFile, OptionalKeyAndTheConfigKind) {
  auto r = parse_config("[mce]\nevent = mce:mce_record\noptional = yes\n[b]\nevent = x:y\n", "f");
  ASSERT_TRUE(r.ok()) << r.error().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_TRUE((*r)[0].optional);
  EXPECT_EQ((*r)[0].line, 1);
  EXPECT_FALSE((*r)[1].optional);
  EXPECT_EQ((*r)[1].line, 4);
  auto bad = parse_config("[mce]\nevent = mce:mce_record\noptional = maybe\n", "f");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kConfig);
  EXPECT_EQ(exit_status_of(bad.error().kind()), 9);
  EXPECT_NE(bad.error().message().find("f:3: 'optional' is 'yes' or 'no', not 'maybe'"),
            std::string::npos)
      << bad.error().message();
}

TEST(ConfigFile, ReadConfigFileGivesTheTextOrTheReadError) {
  pp::testing::TempDir dir;
  dir.write("perf-persistent.conf", "[previous boot]\nkeep = 2\n");
  auto text = read_config_file(dir.path("perf-persistent.conf"));
  ASSERT_TRUE(text.ok()) << text.error().message();
  EXPECT_EQ(*text, "[previous boot]\nkeep = 2\n");
  auto none = read_config_file(dir.path("absent.conf"));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ENOENT);
}

}  // namespace
}  // namespace pp::broker

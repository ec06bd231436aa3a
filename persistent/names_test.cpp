#include "persistent/names.h"

#include <gtest/gtest.h>

namespace pp::persistent {
namespace {

TEST(Names, ValidNames) {
  for (const std::string& name :
       {std::string("ctxsw"), std::string("mce_record"), std::string("a"), std::string("A-b_c.d"),
        std::string("v1.2"), std::string("_x"), std::string("configure"), std::string("period2"),
        std::string("Config"), std::string(64, 'x')})
    EXPECT_TRUE(validate_name(name).ok()) << name << ": " << validate_name(name).error().message();
}

TEST(Names, InvalidNamesExplainTheRule) {
  struct Case {
    std::string name;
    const char* why;
  } cases[] = {
      {"", "it is empty"},
      {std::string(65, 'x'), "65 characters long"},
      {"a b", "' ' is not allowed"},
      {"a/b", "'/' is not allowed"},
      {"caf\xc3\xa9", "'\\xc3' is not allowed"},
      {"a\nb", "'\\x0a' is not allowed"},
      {".", "directory name"},
      {"..", "directory name"},
      {"7", "it is a number"},
      {"0042", "it is a number"},
      {"-", "starts with '-'"},
      {"-x", "starts with '-'"},
      {".x", "starts with '.'"},
      {"...", "starts with '.'"},
      {"0x10", "starts with a digit"},
      {"1a", "starts with a digit"},
      {"config", "would read it as the term 'config'"},
      {"config1", "would read it as the term 'config1'"},
      {"period", "would read it as the term 'period'"},
      {"name", "would read it as the term 'name'"},
      {"freq", "would read it as the term 'freq'"},
      {"call-graph", "would read it as the term 'call-graph'"},
      {"inherit", "would read it as the term 'inherit'"},
      {"no-inherit", "would read it as the term 'no-inherit'"},
      {"persistent", "format term"},
  };
  for (const Case& c : cases) {
    Status s = validate_name(c.name);
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.error().code(), EINVAL);
    EXPECT_NE(s.error().message().find(c.why), std::string::npos) << s.error().message();
    EXPECT_NE(s.error().message().find("1 to 64 letters, digits, '_', '-' and '.', starts with a "
                                       "letter or '_'"),
              std::string::npos)
        << s.error().message();
  }
}

TEST(Names, DefaultNameIsTheTracepointsElseTheId) {
  EXPECT_EQ(default_name("syscalls:sys_enter_getppid", 3), "sys_enter_getppid");
  EXPECT_EQ(default_name("mce:mce_record", 1), "mce_record");
  EXPECT_EQ(default_name("", 12), "12");
  EXPECT_EQ(default_name("sys:", 5), "5");
}

std::vector<EventInfo> sample_events() {
  std::vector<EventInfo> events(3);
  events[0].id = 1;
  events[0].name = "ctxsw";
  events[1].id = 7;
  events[1].name = "7";  // a default name: its own id
  events[2].id = 12;
  events[2].name = "split";
  events[2].cpu_ids = {{0, 12}, {1, 13}};  // a kernel-backend event on two CPUs
  return events;
}

TEST(Names, ReferenceOfDigitsIsAnIdAnythingElseAName) {
  auto events = sample_events();
  auto by_name = find_event(events, "ctxsw");
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ((*by_name)->id, 1u);
  auto by_id = find_event(events, "1");
  ASSERT_TRUE(by_id.ok());
  EXPECT_EQ((*by_id)->name, "ctxsw");
  auto seven = find_event(events, "7");
  ASSERT_TRUE(seven.ok());
  EXPECT_EQ((*seven)->id, 7u);
  auto second_cpu = find_event(events, "13");
  ASSERT_TRUE(second_cpu.ok()) << "a per-CPU id finds its event";
  EXPECT_EQ((*second_cpu)->name, "split");
}

TEST(Names, UnknownReferenceIsNotFoundWithAHint) {
  auto events = sample_events();
  for (const char* ref : {"nosuch", "99", "99999999999999999999999", ""}) {
    auto r = find_event(events, ref);
    ASSERT_FALSE(r.ok()) << ref;
    EXPECT_EQ(r.error().code(), ENOENT);
    EXPECT_EQ(r.error().message(),
              "no persistent event '" + std::string(ref) + "'; see 'perf persistent list'");
  }
}

}  // namespace
}  // namespace pp::persistent

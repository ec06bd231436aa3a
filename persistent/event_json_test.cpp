#include "persistent/event_json.h"

#include <gtest/gtest.h>

namespace pp::persistent {
namespace {

EventInfo full_event() {
  EventInfo e;
  e.id = 3;
  e.name = "ctxsw";
  e.event = "sched:sched_switch";
  e.backend = "broker";
  e.attr.attr.type = PERF_TYPE_TRACEPOINT;
  e.attr.attr.config = 316;
  e.attr.words[16] = ~uint64_t(0);  // config3, all bits: u64 must survive
  e.cpus = {0, 1};
  e.pages = 64;
  e.page_size = 4096;
  e.layout = Layout::kBackward;
  e.filter = "prev_pid != 0";
  e.created = 1700000000;
  e.buffer_start = 1700000100;
  e.creator_uid = 0;
  e.creator_pid = 4242;
  return e;
}

TEST(EventJson, EveryFieldRoundTrips) {
  EventInfo e = full_event();
  e.cpu_ids = {{0, 12}, {1, 13}};
  e.counts = std::vector<CpuCount>{{0, 1000}, {1, 3}};
  e.readers = 2;
  json j = event_to_json(e);
  EXPECT_EQ(j["buffer_bytes"], 64u * 4096u);
  EXPECT_EQ(j["restarted"], true);
  EXPECT_EQ(j["attr"].size(), sys::kAttrWords);
  auto back = event_from_json(j, "test");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->id, e.id);
  EXPECT_EQ(back->name, e.name);
  EXPECT_EQ(back->event, e.event);
  EXPECT_TRUE(back->attr == e.attr);
  EXPECT_EQ(back->cpus, e.cpus);
  EXPECT_EQ(back->pages, e.pages);
  EXPECT_EQ(back->layout, e.layout);
  EXPECT_EQ(back->filter, e.filter);
  EXPECT_EQ(back->created, e.created);
  EXPECT_EQ(back->buffer_start, e.buffer_start);
  EXPECT_EQ(back->creator_pid, e.creator_pid);
  ASSERT_EQ(back->cpu_ids.size(), 2u);
  EXPECT_EQ(back->cpu_ids[1].id, 13u);
  ASSERT_TRUE(back->counts.has_value());
  EXPECT_EQ((*back->counts)[0].count, 1000u);
  EXPECT_EQ(back->readers, 2);
}

TEST(EventJson, AnFtraceBackendEventSaysWhoseRingAndWhichInstance) {
  EventInfo e = full_event();
  json plain = event_to_json(e);
  EXPECT_EQ(plain["ring"], "perf");
  EXPECT_TRUE(plain["instance"].is_null());
  e.ring = kRingFtrace;
  e.instance = "perf-persistent.gp";
  json j = event_to_json(e);
  EXPECT_EQ(j["ring"], "ftrace");
  EXPECT_EQ(j["instance"], "perf-persistent.gp");
  EXPECT_EQ(j["backend"], e.backend) << "backend keeps saying who holds it";
  auto back = event_from_json(j, "test");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->ring, "ftrace");
  EXPECT_EQ(back->instance, "perf-persistent.gp");
  j["ring"] = "bpf";
  EXPECT_FALSE(event_from_json(j, "test").ok());
  // A registry saved before rings is all perf.
  plain.erase("ring");
  plain.erase("instance");
  auto old = event_from_json(plain, "test");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->ring, "perf");
}

// The attr words are "0x..." strings; a state file written when they were
// numbers still loads.
TEST(EventJson, AttrWordsAreHexStringsAndNumbersStillRead) {
  EventInfo e = full_event();
  json j = event_to_json(e);
  EXPECT_EQ(j["attr"][1], "0x13c");
  EXPECT_EQ(j["attr"][16], "0xffffffffffffffff");
  json old = j;
  for (size_t i = 0; i < old["attr"].size(); i++)
    old["attr"][i] = e.attr.words[i];
  auto back = event_from_json(old, "an old state file");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_TRUE(back->attr == e.attr);
}

TEST(EventJson, StableKeysForScripts) {
  json j = event_to_json(full_event());
  for (const char* key :
       {"id", "name", "event", "backend", "state", "cpus", "pages", "page_size", "buffer_bytes",
        "layout", "filter", "clock", "created", "buffer_start", "restarted", "creator", "attr"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_FALSE(j.contains("counts")) << "only a verbose list has counts";
  EXPECT_FALSE(j.contains("error")) << "only a failed event has an error";
  EXPECT_FALSE(j.contains("cpu_ids")) << "only the kernel backend has per-CPU ids";
  EXPECT_TRUE(j["id"].is_number_unsigned());
  EXPECT_TRUE(j["cpus"][0].is_number());
}

TEST(EventJson, TheClockByPerfsNameOrNull) {
  EventInfo e = full_event();
  e.attr = {};
  EXPECT_TRUE(event_to_json(e)["clock"].is_null()) << "no clock known";
  e.attr.attr.use_clockid = 1;
  e.attr.attr.clockid = 7;
  EXPECT_EQ(event_to_json(e)["clock"], "boottime");
}

TEST(EventJson, VerboseWithoutReaderCountSaysNull) {
  EventInfo e = full_event();
  e.counts = std::vector<CpuCount>{};
  json j = event_to_json(e);
  EXPECT_TRUE(j["readers"].is_null());
}

TEST(EventJson, MistypedFieldsAreNamed) {
  json base = event_to_json(full_event());
  struct Case {
    const char* key;
    json value;
    const char* expect;
  } cases[] = {
      {"id", "3", "\"id\" must be a non-negative integer"},
      {"name", 5, "\"name\" must be a string"},
      {"cpus", json::array({-1}), "a CPU number"},
      {"cpus", json::array({"0"}), "a CPU number"},
      {"layout", "sideways", "\"layout\" must be"},
      {"attr", json::array({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}),
       "18 words"},
      {"attr", json::array({-1}), "word 0 is not a u64"},
      {"created", "yesterday", "\"created\" must be an integer"},
  };
  for (const Case& c : cases) {
    json j = base;
    j[c.key] = c.value;
    auto r = event_from_json(j, "state.json");
    ASSERT_FALSE(r.ok()) << c.key;
    EXPECT_NE(r.error().message().find(c.expect), std::string::npos)
        << c.key << ": " << r.error().message();
    EXPECT_NE(r.error().message().find("state.json"), std::string::npos);
  }
  json missing = base;
  missing.erase("name");
  auto r = event_from_json(missing, "x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("has no \"name\""), std::string::npos);
}

}  // namespace
}  // namespace pp::persistent

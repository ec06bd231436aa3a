// perf persistent attr as a user and a script meet it, on fake sysfs,
// tracefs and broker trees: its text (perf stat -vv's attr layout, then a
// line per event), its JSON schema, its errors in both forms.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/json.h"
#include "report/attr_printer.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace pp::testing {
namespace {

using json = nlohmann::ordered_json;

// A sysfs with a persistent PMU (the seed patch set's layout), a tracefs with
// one tracepoint, and an empty broker run directory.
class AttrCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("sys/bus/event_source/devices/persistent/type", "42\n");
    dir_.write("sys/bus/event_source/devices/persistent/format/persistent", "attr5:23\n");
    dir_.write("sys/bus/event_source/devices/persistent/events/mce_record",
               "persistent,config=106\n");
    dir_.write("tracing/events/sched/sched_switch/id", "372\n");
    dir_.mkdir("run");
  }

  CommandResult attr(std::vector<std::string> args) {
    std::vector<std::string> full = {"attr",           "--sysfs-root",       dir_.path("sys"),
                                     "--tracefs-root", dir_.path("tracing"), "--run-dir",
                                     dir_.path("run")};
    full.insert(full.end(), args.begin(), args.end());
    return run_pp(full);
  }

  json attr_json(std::vector<std::string> args, int expected_status = 0) {
    args.insert(args.begin(), "--json");
    CommandResult r = attr(args);
    EXPECT_EQ(r.status, expected_status) << r.out << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out;
    return j;
  }

  TempDir dir_;
};

TEST_F(AttrCommand, PrintsPerfsBlockThenTheEventLine) {
  CommandResult r = attr({"-e", "cpu-clock:u"});
  ASSERT_EQ(r.status, 0) << r.err;
  // perf stat -vv -e cpu-clock:u prints these fields too, among the ones
  // perf stat adds itself (sample_type, read_format, disabled, ...).
  EXPECT_EQ(r.out,
            "------------------------------------------------------------\n"
            "perf_event_attr:\n"
            "  type                             1\n"
            "  size                             128\n"
            "  exclude_kernel                   1\n"
            "  exclude_hv                       1\n"
            "  exclude_guest                    1\n"
            "------------------------------------------------------------\n"
            "event 0: cpu-clock:u, group leader 0 (itself), pmu software\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(AttrCommand, GroupsNameTheirLeaderAndGroup) {
  CommandResult r = attr({"-e", "g{cpu-clock,task-clock}:k"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("event 0: cpu-clock, group leader 0 (itself), group g, pmu software\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("event 1: task-clock, group leader 0 (cpu-clock), group g, pmu software\n"),
            std::string::npos)
      << r.out;
}

TEST_F(AttrCommand, EachEventOptionKeepsItsGroups) {
  json j =
      attr_json({"-e", "{cpu-clock,task-clock}", "-e", "{page-faults,faults}", "--event", "cs"});
  ASSERT_EQ(j["events"].size(), 5u) << j.dump(2);
  std::vector<int> leaders;
  for (const json& e : j["events"])
    leaders.push_back(e["leader"].get<int>());
  EXPECT_EQ(leaders, (std::vector<int>{0, 0, 2, 2, 4}));
  for (size_t i = 0; i < j["events"].size(); i++)
    EXPECT_EQ(j["events"][i]["index"], i);
}

TEST_F(AttrCommand, PersistentEventsResolveThroughAttrFormats) {
  CommandResult r = attr({"-e", "persistent/mce_record/"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("  type                             42\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  config                           0x6a\n"), std::string::npos) << r.out;
  // attr5:23 is bit 23 of word 5, which perf calls mmap2.
  EXPECT_NE(r.out.find("  mmap2                            1\n"), std::string::npos) << r.out;

  json j = attr_json({"-e", "persistent/mce_record/"});
  const json& attr = j["events"][0]["attr"];
  EXPECT_EQ(attr["type"], 42);
  EXPECT_EQ(attr["config"], "0x6a");  // registers are "0x..." strings (base/json.h)
  EXPECT_EQ(*u64_from_hex_json(attr["words"][5]) & (uint64_t(1) << 23), uint64_t(1) << 23);
  EXPECT_EQ(j["events"][0]["pmu"], "persistent");
}

TEST_F(AttrCommand, TheBrokersRunDirectoryServesPersistentEventsToo) {
  TempDir other;
  other.mkdir("sys/bus/event_source/devices");
  other.write("run/devices/persistent/type", "77\n");
  other.write("run/devices/persistent/format/persistent", "attr5:23\n");
  other.write("run/devices/persistent/events/ctxsw", "persistent,config=3\n");
  CommandResult r =
      run_pp({"attr", "--json", "--sysfs-root", other.path("sys"), "--tracefs-root",
              dir_.path("tracing"), "--run-dir", other.path("run"), "-e", "persistent/ctxsw/"});
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  json j = json::parse(r.out);
  EXPECT_EQ(j["events"][0]["attr"]["type"], 77);
  EXPECT_EQ(j["events"][0]["attr"]["config"], "0x3");
}

TEST_F(AttrCommand, TracepointsReadTheirIdFromTracefs) {
  CommandResult r = attr({"-e", "sched:sched_switch"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("  type                             2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  config                           0x174\n"), std::string::npos) << r.out;
  // perf's tracepoint defaults.
  EXPECT_NE(r.out.find("  { sample_period, sample_freq }   1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  sample_type                      TIME|CPU|PERIOD|RAW\n"),
            std::string::npos)
      << r.out;
  json j = attr_json({"-e", "sched:sched_switch"});
  EXPECT_EQ(j["events"][0]["tracepoint"], "sched:sched_switch");
}

TEST_F(AttrCommand, JsonHasEveryDocumentedKey) {
  json j = attr_json({"-e", "cpu-clock/period=1000,call-graph=fp/u"});
  ASSERT_TRUE(j.contains("events")) << j.dump(2);
  ASSERT_EQ(j.size(), 1u);
  const json& e = j["events"][0];
  for (const char* key : {"index", "name", "leader", "group", "pmu", "tracepoint", "cpus", "text",
                          "unit", "scale", "per_pkg", "snapshot", "uncore", "sample_read",
                          "precise_max", "weak_group", "terms", "attr"})
    EXPECT_TRUE(e.contains(key)) << key << " missing: " << e.dump(2);
  EXPECT_EQ(e.size(), 18u) << "undocumented keys: " << e.dump(2);
  EXPECT_TRUE(e["group"].is_null());
  EXPECT_TRUE(e["tracepoint"].is_null());
  EXPECT_EQ(e["name"], "cpu-clock/period=1000,call-graph=fp/u");
  EXPECT_EQ(e["terms"]["period"], 1000);
  EXPECT_EQ(e["terms"]["call-graph"], "fp");
  EXPECT_EQ(e["attr"]["sample_period"], 1000);
  EXPECT_EQ(e["attr"]["exclude_kernel"], 1);
  // The attr object is report::attr_json(): the same keys for every event.
  json all_fields = report::attr_json(sys::EventAttr());
  for (const auto& [key, value] : all_fields.items())
    EXPECT_TRUE(e["attr"].contains(key)) << key;
}

TEST_F(AttrCommand, SyntaxErrorsUsePerfsCaretFormAndExitOne) {
  CommandResult r = attr({"-e", "cpu-clock:x"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("event syntax error: 'cpu-clock:x'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\\___ "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("perf persistent help attr"), std::string::npos) << r.err;
}

TEST_F(AttrCommand, UnderJsonErrorsAreJsonAndTheStatusSaysFailure) {
  CommandResult r = attr({"--json", "-e", "cpu-clock:x"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "");
  json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_TRUE(j.contains("error")) << r.out;
  // The one error shape (base/json.h): "code" and a numeric "errno" became
  // "errno" (the name), with "kind" and "exit_status".
  EXPECT_EQ(j["error"]["errno"], "EINVAL");
  EXPECT_EQ(j["error"]["kind"], "usage");
  EXPECT_EQ(j["error"]["exit_status"], 1);
  EXPECT_NE(j["error"]["message"].get<std::string>().find("cpu-clock:x"), std::string::npos);

  r = run_pp({"attr", "--json"});
  EXPECT_EQ(r.status, 1);
  j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_NE(j["error"]["message"].get<std::string>().find("-e"), std::string::npos) << r.out;

  r = run_pp({"attr", "--json", "--bogus"});
  EXPECT_EQ(r.status, 1);
  EXPECT_FALSE(json::parse(r.out, nullptr, false).is_discarded()) << r.out;
}

TEST_F(AttrCommand, MissingEventsAndUnknownOptionsAreUsageErrors) {
  CommandResult r = run_pp({"attr"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("-e <event>"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Usage: perf persistent attr"), std::string::npos) << r.err;
  r = run_pp({"attr", "-e", "cpu-clock", "stray"});
  EXPECT_EQ(r.status, 1);
}

TEST_F(AttrCommand, AnUnusableSysfsRootIsNamed) {
  CommandResult r = run_pp({"attr", "--sysfs-root", dir_.path("nowhere"), "--run-dir",
                            dir_.path("run"), "-e", "cpu-clock"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(dir_.path("nowhere")), std::string::npos) << r.err;
}

TEST_F(AttrCommand, TextBlocksAreTheJsonAttrs) {
  for (const char* text : {"cpu-clock:u", "{cpu-clock,task-clock}:k,sched:sched_switch",
                           "mem:0x1000/4:rw", "persistent/mce_record/k", "r1a2:pp"}) {
    CommandResult r = attr({"-e", text});
    ASSERT_EQ(r.status, 0) << text << ": " << r.err;
    json j = attr_json({"-e", text});
    std::string expected;
    for (const json& e : j["events"]) {
      sys::EventAttr a;
      for (unsigned w = 0; w < sys::kAttrWords; w++)
        a.words[w] = *u64_from_hex_json(e["attr"]["words"][w]);
      expected += sys::attr_block(a);
    }
    std::string blocks;
    size_t pos = 0;
    while ((pos = r.out.find(sys::kAttrBlockRule, pos)) != std::string::npos) {
      size_t end = r.out.find(sys::kAttrBlockRule, pos + 1);
      ASSERT_NE(end, std::string::npos) << r.out;
      end += sys::kAttrBlockRule.size() + 1;
      blocks += r.out.substr(pos, end - pos);
      pos = end;
    }
    EXPECT_EQ(blocks, expected) << text;
  }
}

}  // namespace
}  // namespace pp::testing

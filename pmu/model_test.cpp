// The model over fake sysfs, tracefs and broker trees: what it reads, and
// that every malformed or unreadable file ends up as an Error naming the file
// (never a crash, never a silent zero).
#include "pmu/model.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"

namespace pp::pmu {
namespace {

using testing::FakeSysfs;
using testing::TempDir;

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

class ModelTest : public ::testing::Test {
 protected:
  ModelTest() : fake_(dir_) {}

  Model load() {
    auto m = Model::load(fake_.roots());
    EXPECT_TRUE(m.ok()) << m.error().message();
    return std::move(m).value();
  }

  TempDir dir_;
  FakeSysfs fake_;
};

TEST_F(ModelTest, ReadsTypeFormatsAliasesAndCpus) {
  fake_.pmu("uncore_imc_0", 17)
      .format("event", "config:0-7")
      .format("umask", "config:8-15")
      .alias("cas_count_read", "event=0x04,umask=0x03")
      .file("events/cas_count_read.scale", "6.103515625e-5\n")
      .file("events/cas_count_read.unit", "MiB\n")
      .alias("clockticks", "event=0x00")
      .file("events/clockticks.per-pkg", "1\n")
      .file("events/clockticks.snapshot", "1\n")
      .cpumask("0,2");
  Model m = load();
  const PmuEntry* entry = m.find_pmu("uncore_imc_0");
  ASSERT_NE(entry, nullptr);
  ASSERT_TRUE(entry->pmu) << entry->problem->message();
  const Pmu& p = *entry->pmu;
  EXPECT_EQ(p.type, 17u);
  EXPECT_TRUE(p.is_uncore);
  EXPECT_EQ(p.cpus, (std::vector<int>{0, 2}));
  ASSERT_EQ(p.formats.size(), 2u);
  EXPECT_EQ(p.find_format("umask")->format.bits, 0xff00u);
  EXPECT_EQ(p.find_format("umask")->path,
            dir_.path("sys/bus/event_source/devices/uncore_imc_0/format/umask"));
  ASSERT_EQ(p.aliases.size(), 2u);  // the .scale, .unit, ... files are not aliases
  const Alias* cas = p.find_alias("CAS_COUNT_READ");  // case-insensitive
  ASSERT_NE(cas, nullptr);
  EXPECT_EQ(cas->terms, "event=0x04,umask=0x03");
  EXPECT_EQ(cas->unit, "MiB");
  EXPECT_DOUBLE_EQ(cas->scale, 6.103515625e-5);
  EXPECT_FALSE(cas->per_pkg);
  const Alias* ticks = p.find_alias("clockticks");
  EXPECT_TRUE(ticks->per_pkg);
  EXPECT_TRUE(ticks->snapshot);
  EXPECT_DOUBLE_EQ(ticks->scale, 1.0);
  EXPECT_EQ(m.find_pmu_by_type(17), &p);
  EXPECT_EQ(m.find_pmu_by_type(18), nullptr);
}

TEST_F(ModelTest, CpusFileWhenNoCpumask) {
  fake_.pmu("armv8_pmuv3_0", 8).file("cpus", "0-3\n");
  Model m = load();
  const Pmu& p = *m.find_pmu("armv8_pmuv3_0")->pmu;
  EXPECT_FALSE(p.is_uncore);
  EXPECT_EQ(p.cpus, (std::vector<int>{0, 1, 2, 3}));
}

struct BrokenPmu {
  const char* file;      // relative to the PMU's directory ("type")
  const char* contents;  // nullptr: remove the file
  const char* message;   // a part of the problem's message
};

class BrokenPmus : public ModelTest, public ::testing::WithParamInterface<BrokenPmu> {};

TEST_P(BrokenPmus, TheProblemNamesTheFile) {
  const BrokenPmu& c = GetParam();
  fake_.pmu("bad", 30).format("event", "config:0-7");
  std::string path = dir_.path(std::string("sys/bus/event_source/devices/bad/") + c.file);
  if (c.contents)
    dir_.write(std::string("sys/bus/event_source/devices/bad/") + c.file, c.contents);
  else
    ::unlink(path.c_str());
  Model m = load();
  const PmuEntry* entry = m.find_pmu("bad");
  ASSERT_NE(entry, nullptr);
  EXPECT_FALSE(entry->pmu);
  ASSERT_TRUE(entry->problem);
  EXPECT_TRUE(contains(entry->problem->message(), path)) << entry->problem->message();
  EXPECT_TRUE(contains(entry->problem->message(), c.message)) << entry->problem->message();
}

INSTANTIATE_TEST_SUITE_P(
    Sysfs, BrokenPmus,
    ::testing::Values(BrokenPmu{"type", nullptr, "No such file or directory"},
                      BrokenPmu{"type", "", "is empty"}, BrokenPmu{"type", "\n", "is empty"},
                      BrokenPmu{"type", "six\n", "holds 'six', which is not a PMU type"},
                      BrokenPmu{"type", "-1\n", "holds '-1'"},
                      BrokenPmu{"type", "4294967296\n", "holds '4294967296'"},
                      BrokenPmu{"type", "6 7\n", "holds '6 7'"},
                      BrokenPmu{"cpumask", "0-x\n", "'x' is not a CPU number"},
                      BrokenPmu{"cpumask", "\n", ""}));

TEST_F(ModelTest, BrokenFormatsAndAliasesKeepTheirProblem) {
  fake_.pmu("p", 31)
      .format("good", "config:0-3")
      .format("garbage", "this is not a format")
      .format("wide", "config:0-64")
      .alias("empty", "")
      .alias("scaled", "good=1")
      .file("events/scaled.scale", "fast\n")
      .alias("fine", "good=2");
  Model m = load();
  const Pmu& p = *m.find_pmu("p")->pmu;
  EXPECT_FALSE(p.find_format("good")->problem);
  const FormatFile* garbage = p.find_format("garbage");
  ASSERT_TRUE(garbage->problem);
  EXPECT_TRUE(contains(garbage->problem->message(), garbage->path));
  EXPECT_TRUE(contains(garbage->problem->message(), "no ':' between target and bits"));
  EXPECT_TRUE(contains(p.find_format("wide")->problem->message(), "is larger than 63"));
  ASSERT_TRUE(p.find_alias("empty")->problem);
  EXPECT_TRUE(contains(p.find_alias("empty")->problem->message(), "is empty"));
  ASSERT_TRUE(p.find_alias("scaled")->problem);
  EXPECT_TRUE(contains(p.find_alias("scaled")->problem->message(), "scaled.scale holds 'fast'"));
  EXPECT_FALSE(p.find_alias("fine")->problem);
}

TEST_F(ModelTest, UnreadableFilesAreProblemsNotCrashes) {
  // A directory where a file should be cannot be read, even by root.
  fake_.pmu("p", 31).format("good", "config:0-3");
  dir_.mkdir("sys/bus/event_source/devices/p/format/event");
  dir_.mkdir("sys/bus/event_source/devices/p/events/a");
  dir_.mkdir("sys/bus/event_source/devices/p/events/b.unit");
  dir_.write("sys/bus/event_source/devices/p/events/b", "good=1\n");
  Model m = load();
  const Pmu& p = *m.find_pmu("p")->pmu;
  ASSERT_TRUE(p.find_format("event")->problem);
  EXPECT_EQ(p.find_format("event")->problem->code(), EISDIR);
  EXPECT_TRUE(contains(p.find_format("event")->problem->message(),
                       dir_.path("sys/bus/event_source/devices/p/format/event")));
  ASSERT_TRUE(p.find_alias("a")->problem);
  EXPECT_EQ(p.find_alias("a")->problem->code(), EISDIR);
  ASSERT_TRUE(p.find_alias("b")->problem);
  EXPECT_TRUE(contains(p.find_alias("b")->problem->message(), "b.unit"));
  EXPECT_FALSE(p.find_format("good")->problem);
}

TEST_F(ModelTest, PersistentFromTheKernelWinsOverTheBroker) {
  fake_.pmu("persistent", 6)
      .format("persistent", "attr5:23")
      .alias("mce_record", "persistent,config=106");
  fake_.broker_pmu(99).format("persistent", "attr5:23").alias("ctxsw", "persistent,config=1");
  Model m = load();
  const Pmu& p = *m.find_pmu("persistent")->pmu;
  EXPECT_EQ(p.type, 6u);
  EXPECT_FALSE(p.from_broker);
  EXPECT_NE(p.find_alias("mce_record"), nullptr);
  EXPECT_EQ(p.find_alias("ctxsw"), nullptr);
  int count = 0;
  for (const PmuEntry& e : m.pmus())
    count += e.name == "persistent";
  EXPECT_EQ(count, 1);
}

TEST_F(ModelTest, PersistentFromTheBrokerWhenTheKernelHasNone) {
  fake_.pmu("software", 1);
  fake_.broker_pmu(7).format("persistent", "attr5:23").alias("mce_record", "persistent,config=106");
  Model m = load();
  const PmuEntry* entry = m.find_pmu("persistent");
  ASSERT_NE(entry, nullptr);
  ASSERT_TRUE(entry->pmu);
  EXPECT_EQ(entry->pmu->type, 7u);  // read from the file, never assumed
  EXPECT_TRUE(entry->pmu->from_broker);
  EXPECT_EQ(entry->pmu->path, dir_.path("run/devices/persistent"));
  EXPECT_EQ(m.alias_symbol("mce_record"), AliasSymbol::kEvent);
}

// The broker publishes through hidden temporaries (sys/atomic_file.h): a
// listing that meets one takes it for no format and no event.
TEST_F(ModelTest, HiddenTemporariesOfTheBrokersRegistryAreNoEvents) {
  fake_.broker_pmu(7)
      .format("persistent", "attr5:23")
      .format(".persistent.tmp.41", "attr5:2")
      .alias("mce_record", "persistent,config=106")
      .alias(".ctxsw.tmp.41", "persistent,conf");
  Model m = load();
  const PmuEntry* entry = m.find_pmu("persistent");
  ASSERT_NE(entry, nullptr);
  ASSERT_TRUE(entry->pmu) << (entry->problem ? entry->problem->message() : "");
  ASSERT_EQ(entry->pmu->formats.size(), 1u);
  EXPECT_EQ(entry->pmu->formats[0].name, "persistent");
  ASSERT_EQ(entry->pmu->aliases.size(), 1u);
  EXPECT_EQ(entry->pmu->aliases[0].name, "mce_record");
}

TEST_F(ModelTest, NoBrokerDirectoryIsNoBrokerPmu) {
  fake_.pmu("software", 1);
  Roots roots = fake_.roots();
  roots.broker_run_dir = dir_.path("nowhere");
  auto m = Model::load(roots);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(m->find_pmu("persistent"), nullptr);
  roots.broker_run_dir = "";
  m = Model::load(roots);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->find_pmu("persistent"), nullptr);
}

TEST_F(ModelTest, BrokenBrokerPmuIsAProblem) {
  dir_.write("run/devices/persistent/type", "sixty\n");
  Model m = load();
  const PmuEntry* entry = m.find_pmu("persistent");
  ASSERT_NE(entry, nullptr);
  ASSERT_TRUE(entry->problem);
  EXPECT_TRUE(contains(entry->problem->message(), dir_.path("run/devices/persistent/type")));
}

TEST_F(ModelTest, AliasSymbolsAsPerfSeesWords) {
  fake_.pmu("cpu", 4).alias("mem-loads", "event=0xcd").alias("cycles-t", "event=0x3c");
  fake_.pmu("msr", 9).alias("tsc", "event=0");
  Model m = load();
  EXPECT_EQ(m.alias_symbol("tsc"), AliasSymbol::kEvent);
  EXPECT_EQ(m.alias_symbol("TSC"), AliasSymbol::kEvent);
  EXPECT_EQ(m.alias_symbol("mem"), AliasSymbol::kPrefix);
  EXPECT_EQ(m.alias_symbol("loads"), AliasSymbol::kSuffix);
  EXPECT_EQ(m.alias_symbol("mem-loads"), AliasSymbol::kNone);  // never whole, as in perf
  EXPECT_EQ(m.alias_symbol("cpu"), AliasSymbol::kNone);
  EXPECT_EQ(m.alias_symbol("aperf"), AliasSymbol::kNone);
}

TEST_F(ModelTest, Tracepoints) {
  fake_.tracepoint("sched", "sched_switch", 316);
  fake_.tracepoint("sched", "sched_wakeup", 318);
  dir_.write("tracing/events/sched/enable", "0\n");
  dir_.write("tracing/events/sched/filter", "none\n");
  dir_.write("tracing/events/enable", "0\n");
  dir_.write("tracing/events/header_page", "...\n");
  dir_.write("tracing/events/bad/garbage/id", "x\n");
  dir_.mkdir("tracing/events/bad/noid");
  Model m = load();
  auto id = m.tracepoint_id("sched", "sched_switch");
  ASSERT_TRUE(id.ok()) << id.error().message();
  EXPECT_EQ(*id, 316u);

  auto missing = m.tracepoint_id("sched", "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ENOENT);
  EXPECT_TRUE(contains(missing.error().message(), dir_.path("tracing/events/sched/nope")));
  auto noid = m.tracepoint_id("bad", "noid");
  ASSERT_FALSE(noid.ok());
  EXPECT_TRUE(contains(noid.error().message(), dir_.path("tracing/events/bad/noid/id")));
  auto garbage = m.tracepoint_id("bad", "garbage");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.error().code(), EINVAL);
  EXPECT_TRUE(contains(garbage.error().message(), "holds 'x', which is not a tracepoint id"));
  // Names never leave the tree.
  EXPECT_FALSE(m.tracepoint_id("..", "sched").ok());
  EXPECT_FALSE(m.tracepoint_id("sched", "../sched/sched_switch").ok());

  auto systems = m.tracepoint_systems();
  ASSERT_TRUE(systems.ok());
  std::vector<std::string> sorted = *systems;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"bad", "sched"}));
  auto events = m.tracepoint_events("sched");
  ASSERT_TRUE(events.ok());
  sorted = *events;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"sched_switch", "sched_wakeup"}));
  EXPECT_EQ(m.tracepoint_events("nope").error().code(), ENOENT);
}

TEST_F(ModelTest, RootsThatMustExist) {
  Roots roots = fake_.roots();
  roots.sysfs = dir_.path("no-sysfs");
  auto m = Model::load(roots);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(contains(m.error().message(), "sysfs root"));
  roots = fake_.roots();
  roots.tracefs = dir_.path("no-tracefs");
  m = Model::load(roots);
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(contains(m.error().message(), "tracefs root"));
  // A sysfs with no event sources at all is just a machine with no PMUs.
  roots = fake_.roots();
  roots.sysfs = dir_.path("empty-sysfs");
  dir_.mkdir("empty-sysfs");
  m = Model::load(roots);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->pmus().empty());
}

TEST(MemoryModel, PmusAndTracepointsWithoutFiles) {
  Model m = Model::in_memory(
      {memory_pmu("krava", 40, {{"krava01", "config:0-1,62-63"}, {"bad", "nonsense"}},
                  {{"k1", "krava01=1"}})},
      {{"sched", "sched_switch", 316},
       {"sched", "sched_wakeup", 318},
       {"irq", "softirq_entry", 9}});
  const Pmu& p = *m.find_pmu("krava")->pmu;
  EXPECT_EQ(p.find_format("krava01")->format.bits, 0xc000000000000003u);
  EXPECT_TRUE(p.find_format("bad")->problem);
  EXPECT_EQ(m.alias_symbol("k1"), AliasSymbol::kEvent);
  EXPECT_EQ(*m.tracepoint_id("sched", "sched_wakeup"), 318u);
  EXPECT_EQ(m.tracepoint_id("sched", "nope").error().code(), ENOENT);
  EXPECT_EQ(*m.tracepoint_systems(), (std::vector<std::string>{"sched", "irq"}));
  EXPECT_EQ(*m.tracepoint_events("sched"),
            (std::vector<std::string>{"sched_switch", "sched_wakeup"}));
}

}  // namespace
}  // namespace pp::pmu

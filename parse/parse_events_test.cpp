// parse_events() over fake sysfs and tracefs trees: the attr, name and group
// of every syntax element, and every error with its column.
//
// The expected values are what perf 6.1 builds for the same string: checked
// with `perf stat -vv -e STRING true` (and `perf record -vv` for the terms
// perf stat refuses) on this kind of machine, with the same fake PMUs
// bind-mounted over /sys/bus/event_source/devices in a private mount
// namespace. Where perf-persistent differs on purpose, the case says so.
#include "parse/parse_events.h"

#include <dirent.h>
#include <linux/hw_breakpoint.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <gtest/gtest.h>

#include "base/strings.h"
#include "tests/support/fake_sysfs.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::parse {
namespace {

using testing::FakeSysfs;
using testing::TempDir;

constexpr uint64_t kTpSampleType =
    PERF_SAMPLE_RAW | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;

// The PMUs and tracepoints every case here can name.
void lay_out(FakeSysfs& fake, const TempDir& dir) {
  fake.standard_pmus();
  fake.pmu("fpmu", 41)
      .format("event", "config:0-7")
      .format("umask", "config:8-15")
      .format("edge", "config:18")
      .format("inv", "config:23")
      .format("cmask", "config:24-31")
      .format("ldlat", "config1:0-15")
      .format("frontend", "config1:0-23")
      .format("wide", "config2:0-63")
      .alias("ev1", "event=0x3c")
      .alias("ev2", "event=0x3c,umask=0x01")
      .alias("ev-dash", "event=0x10,umask=0x2")
      .alias("joules", "event=0x02")
      .file("events/joules.scale", "2.3283064365386962890625e-10\n")
      .file("events/joules.unit", "Joules\n")
      .alias("pkg", "event=0x03")
      .file("events/pkg.per-pkg", "1\n")
      .file("events/pkg.snapshot", "1\n")
      .alias("withp", "event=0x5,period=1000")
      .alias("param", "event=0x7,umask=?")
      .alias("named", "event=0x9,name=fromalias");
  fake.pmu("uncore_cbox_0", 42)
      .format("event", "config:0-7")
      .alias("clockticks", "event=0xff")
      .cpumask("0");
  fake.pmu("uncore_cbox_1", 43)
      .format("event", "config:0-7")
      .alias("clockticks", "event=0xff")
      .cpumask("1");
  // The seed patch set's PMU, with a type that is not 6: it is read.
  fake.pmu("persistent", 23)
      .format("persistent", "attr5:23")
      .alias("mce_record", "persistent,config=106")
      .alias("ctxsw", "persistent,config=2")
      .alias("7", "persistent,config=7")
      .alias("12a-b.c", "persistent,config=12");
  fake.pmu("weird", 44)
      .format("w0", "attr0:0-3")
      .format("w5", "attr5:23")
      .format("w5b", "attr5:40-41")
      .format("f8", "attr8:0-7")
      .format("c2", "config2:0-3")
      .format("c3", "config3:0-15")
      .format("a16", "attr16:8-15")
      .format("w17", "attr17:1")
      .format("bad", "garbage")
      .alias("ua", "w5=1,nope=3")
      .alias("ub", "w5=1,,x")
      .alias("uc", "c2=0xa");
  fake.pmu("broken", 45).type("x\n");
  fake.tracepoint("sched", "sched_switch", 316);
  fake.tracepoint("sched", "sched_waking", 317);
  fake.tracepoint("sched", "sched_wakeup", 318);
  fake.tracepoint("syscalls", "sys_enter_getppid", 555);
  // The real mce and ras formats of a Debian 6.1 kernel.
  std::filesystem::copy(
      testing::fixtures_dir() + "/tracefs-debian-6.1/events", dir.path("tracing/events"),
      std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
}

// One tree and model for the whole suite: laying out the tree is most of
// the cost of a case.
struct Shared {
  Shared() : fake(dir) {
    lay_out(fake, dir);
    auto m = pmu::Model::load(fake.roots());
    EXPECT_TRUE(m.ok()) << m.error().message();
    model = std::make_unique<pmu::Model>(std::move(m).value());
  }
  TempDir dir;
  FakeSysfs fake;
  std::unique_ptr<pmu::Model> model;
};

Shared& shared() {
  static Shared s;
  return s;
}

class ParseEventsTest : public ::testing::Test {
 protected:
  ParseEventsTest() : dir_(shared().dir), model_(*shared().model) {}

  std::vector<EventSpec> parse_ok(std::string_view text) {
    auto r = parse_events(text, model_);
    EXPECT_TRUE(r.ok()) << text << ":\n" << r.error().message();
    return r.ok() ? std::move(r).value() : std::vector<EventSpec>{};
  }

  const TempDir& dir_;
  const pmu::Model& model_;
};

// --- attrs: one table row per syntax element ---------------------------------

// One expected event. exclude lists the exclude_* bits that are set: u k h
// (user, kernel, hv), I (idle), H (host), G (guest); perf 6.1 sets
// exclude_guest unless a modifier says otherwise.
struct Want {
  const char* name = "";
  uint32_t type = 0;
  uint64_t config = 0;
  uint64_t config1 = 0;
  uint64_t config2 = 0;
  uint64_t config3 = 0;
  uint32_t bp_type = 0;
  const char* exclude = "G";
  unsigned precise = 0;
  bool pinned = false;
  bool exclusive = false;
  uint64_t period = 0;  // sample_period or sample_freq
  bool freq = false;
  int leader = -1;  // -1: its own index
  const char* group = "";
  const char* pmu = nullptr;  // checked when given
  uint32_t size = 128;
  uint64_t sample_type = 0;
  uint64_t flags = 0;  // bits of u64 word 5 besides the modifiers' (attrN formats)
};

struct AttrCase {
  const char* input;
  std::vector<Want> events;
};

std::string excludes(const perf_event_attr& a) {
  std::string out;
  if (a.exclude_user)
    out += 'u';
  if (a.exclude_kernel)
    out += 'k';
  if (a.exclude_hv)
    out += 'h';
  if (a.exclude_idle)
    out += 'I';
  if (a.exclude_host)
    out += 'H';
  if (a.exclude_guest)
    out += 'G';
  return out;
}

// Word 5 without the bits the modifiers and terms set through named fields.
uint64_t other_flags(const sys::EventAttr& attr) {
  sys::EventAttr named;
  named.attr.exclude_user = named.attr.exclude_kernel = named.attr.exclude_hv = 1;
  named.attr.exclude_idle = named.attr.exclude_host = named.attr.exclude_guest = 1;
  named.attr.precise_ip = 3;
  named.attr.pinned = named.attr.exclusive = named.attr.freq = 1;
  return attr.words[5] & ~named.words[5];
}

class AttrTable : public ParseEventsTest, public ::testing::WithParamInterface<AttrCase> {};

TEST_P(AttrTable, BuildsWhatPerfBuilds) {
  const AttrCase& c = GetParam();
  std::vector<EventSpec> got = parse_ok(c.input);
  ASSERT_EQ(got.size(), c.events.size()) << c.input;
  for (size_t i = 0; i < got.size(); i++) {
    const Want& w = c.events[i];
    const EventSpec& e = got[i];
    const perf_event_attr& a = e.attr.attr;
    SCOPED_TRACE(std::string(c.input) + " event " + std::to_string(i));
    EXPECT_EQ(e.name, w.name);
    EXPECT_EQ(a.type, w.type);
    EXPECT_EQ(a.size, w.size);
    EXPECT_EQ(a.config, w.config);
    EXPECT_EQ(a.config1, w.config1);
    EXPECT_EQ(a.config2, w.config2);
    EXPECT_EQ(e.attr.config3(), w.config3);
    EXPECT_EQ(a.bp_type, w.bp_type);
    EXPECT_EQ(excludes(a), w.exclude);
    EXPECT_EQ(a.precise_ip, w.precise);
    EXPECT_EQ(bool(a.pinned), w.pinned);
    EXPECT_EQ(bool(a.exclusive), w.exclusive);
    EXPECT_EQ(a.sample_period, w.period);
    EXPECT_EQ(bool(a.freq), w.freq);
    EXPECT_EQ(a.sample_type, w.sample_type);
    EXPECT_EQ(other_flags(e.attr), w.flags);
    EXPECT_EQ(e.leader, w.leader < 0 ? int(i) : w.leader);
    EXPECT_EQ(e.group_name, w.group);
    if (w.pmu) {
      EXPECT_EQ(e.pmu, w.pmu);
    }
  }
}

constexpr uint32_t kHw = PERF_TYPE_HARDWARE, kSw = PERF_TYPE_SOFTWARE, kTp = PERF_TYPE_TRACEPOINT,
                   kCache = PERF_TYPE_HW_CACHE, kRaw = PERF_TYPE_RAW, kBp = PERF_TYPE_BREAKPOINT;
constexpr uint32_t kRW = HW_BREAKPOINT_R | HW_BREAKPOINT_W;

INSTANTIATE_TEST_SUITE_P(
    Symbols, AttrTable,
    ::testing::Values(
        AttrCase{"cycles", {{.name = "cycles", .type = kHw, .config = 0, .pmu = "hardware"}}},
        AttrCase{"cpu-cycles", {{.name = "cpu-cycles", .type = kHw, .config = 0}}},
        AttrCase{"instructions", {{.name = "instructions", .type = kHw, .config = 1}}},
        AttrCase{"cache-references", {{.name = "cache-references", .type = kHw, .config = 2}}},
        AttrCase{"cache-misses", {{.name = "cache-misses", .type = kHw, .config = 3}}},
        AttrCase{"branches", {{.name = "branches", .type = kHw, .config = 4}}},
        AttrCase{"branch-instructions",
                 {{.name = "branch-instructions", .type = kHw, .config = 4}}},
        AttrCase{"branch-misses", {{.name = "branch-misses", .type = kHw, .config = 5}}},
        AttrCase{"bus-cycles", {{.name = "bus-cycles", .type = kHw, .config = 6}}},
        AttrCase{"stalled-cycles-frontend",
                 {{.name = "stalled-cycles-frontend", .type = kHw, .config = 7}}},
        AttrCase{"idle-cycles-frontend",
                 {{.name = "idle-cycles-frontend", .type = kHw, .config = 7}}},
        AttrCase{"stalled-cycles-backend",
                 {{.name = "stalled-cycles-backend", .type = kHw, .config = 8}}},
        AttrCase{"idle-cycles-backend",
                 {{.name = "idle-cycles-backend", .type = kHw, .config = 8}}},
        AttrCase{"ref-cycles", {{.name = "ref-cycles", .type = kHw, .config = 9}}},
        AttrCase{"cpu-clock", {{.name = "cpu-clock", .type = kSw, .config = 0, .pmu = "software"}}},
        AttrCase{"task-clock", {{.name = "task-clock", .type = kSw, .config = 1}}},
        AttrCase{"page-faults", {{.name = "page-faults", .type = kSw, .config = 2}}},
        AttrCase{"faults", {{.name = "faults", .type = kSw, .config = 2}}},
        AttrCase{"context-switches", {{.name = "context-switches", .type = kSw, .config = 3}}},
        AttrCase{"cs", {{.name = "cs", .type = kSw, .config = 3}}},
        AttrCase{"cpu-migrations", {{.name = "cpu-migrations", .type = kSw, .config = 4}}},
        AttrCase{"migrations", {{.name = "migrations", .type = kSw, .config = 4}}},
        AttrCase{"minor-faults", {{.name = "minor-faults", .type = kSw, .config = 5}}},
        AttrCase{"major-faults", {{.name = "major-faults", .type = kSw, .config = 6}}},
        AttrCase{"alignment-faults", {{.name = "alignment-faults", .type = kSw, .config = 7}}},
        AttrCase{"emulation-faults", {{.name = "emulation-faults", .type = kSw, .config = 8}}},
        AttrCase{"dummy", {{.name = "dummy", .type = kSw, .config = 9}}},
        AttrCase{"bpf-output", {{.name = "bpf-output", .type = kSw, .config = 10}}},
        AttrCase{"cgroup-switches", {{.name = "cgroup-switches", .type = kSw, .config = 11}}},
        AttrCase{"cycles//", {{.name = "cycles//", .type = kHw}}},
        AttrCase{"cycles:", {{.name = "cycles:", .type = kHw}}},
        AttrCase{"cycles/config=5/", {{.name = "cycles/config=5/", .type = kHw, .config = 5}}},
        AttrCase{"cpu-clock/name=foo/", {{.name = "foo", .type = kSw}}},
        AttrCase{"cpu-clock/name='a,b:c'/", {{.name = "a,b:c", .type = kSw}}},
        AttrCase{
            "cpu-clock/config1=1,config2=2/",
            {{.name = "cpu-clock/config1=1,config2=2/", .type = kSw, .config1 = 1, .config2 = 2}}},
        // config3 is perf 6.3's; it makes the attr 136 bytes.
        AttrCase{"cpu-clock/config3=5/",
                 {{.name = "cpu-clock/config3=5/", .type = kSw, .config3 = 5, .size = 136}}}));

INSTANTIATE_TEST_SUITE_P(
    Modifiers, AttrTable,
    ::testing::Values(
        AttrCase{"cycles:u", {{.name = "cycles:u", .type = kHw, .exclude = "khG"}}},
        AttrCase{"cycles:k", {{.name = "cycles:k", .type = kHw, .exclude = "uh"}}},
        AttrCase{"cycles:h", {{.name = "cycles:h", .type = kHw, .exclude = "uk"}}},
        AttrCase{"cycles:uk", {{.name = "cycles:uk", .type = kHw, .exclude = "hG"}}},
        AttrCase{"cycles:hk", {{.name = "cycles:hk", .type = kHw, .exclude = "u"}}},
        AttrCase{"cycles:G", {{.name = "cycles:G", .type = kHw, .exclude = "H"}}},
        AttrCase{"cycles:H", {{.name = "cycles:H", .type = kHw, .exclude = "G"}}},
        AttrCase{"cycles:GH", {{.name = "cycles:GH", .type = kHw, .exclude = ""}}},
        AttrCase{"cycles:uG", {{.name = "cycles:uG", .type = kHw, .exclude = "khH"}}},
        AttrCase{"cycles:I", {{.name = "cycles:I", .type = kHw, .exclude = "I"}}},
        AttrCase{"cycles:p", {{.name = "cycles:p", .type = kHw, .precise = 1}}},
        AttrCase{"cycles:pp", {{.name = "cycles:pp", .type = kHw, .precise = 2}}},
        AttrCase{"cycles:ppp", {{.name = "cycles:ppp", .type = kHw, .precise = 3}}},
        AttrCase{"cycles:Gp", {{.name = "cycles:Gp", .type = kHw, .exclude = "H", .precise = 1}}},
        // A modifier without u or p leaves exclude_guest clear, as perf 6.1.
        AttrCase{"cycles:D", {{.name = "cycles:D", .type = kHw, .exclude = "", .pinned = true}}},
        AttrCase{"cycles:e", {{.name = "cycles:e", .type = kHw, .exclude = "", .exclusive = true}}},
        AttrCase{"cycles:S", {{.name = "cycles:S", .type = kHw, .exclude = ""}}},
        AttrCase{"cycles:P", {{.name = "cycles:P", .type = kHw, .exclude = ""}}},
        AttrCase{"cycles:W", {{.name = "cycles:W", .type = kHw, .exclude = ""}}},
        AttrCase{"cycles:b", {{.name = "cycles:b", .type = kHw, .exclude = ""}}},
        AttrCase{"cycles:ukhGHpppPSDIWeb",
                 {{.name = "cycles:ukhGHpppPSDIWeb",
                   .type = kHw,
                   .exclude = "I",
                   .precise = 3,
                   .pinned = true,
                   .exclusive = true}}},
        AttrCase{"cycles u", {{.name = "cycles u", .type = kHw, .exclude = "khG"}}},
        AttrCase{"cycles//u", {{.name = "cycles//u", .type = kHw, .exclude = "khG"}}},
        AttrCase{"cycles/config=5/u",
                 {{.name = "cycles/config=5/u", .type = kHw, .config = 5, .exclude = "khG"}}}));

INSTANTIATE_TEST_SUITE_P(
    Cache, AttrTable,
    ::testing::Values(
        AttrCase{"L1-dcache-loads",
                 {{.name = "L1-dcache-loads", .type = kCache, .config = 0x0, .pmu = "hw_cache"}}},
        AttrCase{"L1-dcache-load-misses",
                 {{.name = "L1-dcache-load-misses", .type = kCache, .config = 0x10000}}},
        AttrCase{"L1-dcache-stores",
                 {{.name = "L1-dcache-stores", .type = kCache, .config = 0x100}}},
        AttrCase{"L1-dcache-prefetch-misses",
                 {{.name = "L1-dcache-prefetch-misses", .type = kCache, .config = 0x10200}}},
        AttrCase{"L1-icache-load-misses",
                 {{.name = "L1-icache-load-misses", .type = kCache, .config = 0x10001}}},
        AttrCase{"L1-icache-prefetches",
                 {{.name = "L1-icache-prefetches", .type = kCache, .config = 0x201}}},
        AttrCase{"LLC-loads", {{.name = "LLC-loads", .type = kCache, .config = 0x2}}},
        AttrCase{"LLC-store-misses",
                 {{.name = "LLC-store-misses", .type = kCache, .config = 0x10102}}},
        AttrCase{"LLC-prefetches", {{.name = "LLC-prefetches", .type = kCache, .config = 0x202}}},
        AttrCase{"dTLB-load-misses",
                 {{.name = "dTLB-load-misses", .type = kCache, .config = 0x10003}}},
        AttrCase{"iTLB-loads", {{.name = "iTLB-loads", .type = kCache, .config = 0x4}}},
        AttrCase{"branch-loads", {{.name = "branch-loads", .type = kCache, .config = 0x5}}},
        AttrCase{"bpu-load-misses",
                 {{.name = "bpu-load-misses", .type = kCache, .config = 0x10005}}},
        AttrCase{"node-stores", {{.name = "node-stores", .type = kCache, .config = 0x106}}},
        AttrCase{"node-prefetch-misses",
                 {{.name = "node-prefetch-misses", .type = kCache, .config = 0x10206}}},
        // Every spelling perf accepts; the name keeps the spelling.
        AttrCase{"l1d", {{.name = "l1d", .type = kCache, .config = 0x0}}},
        AttrCase{"l1-d-load-misses",
                 {{.name = "l1-d-load-misses", .type = kCache, .config = 0x10000}}},
        AttrCase{"L1-data-read", {{.name = "L1-data-read", .type = kCache, .config = 0x0}}},
        AttrCase{"l1i-load-miss", {{.name = "l1i-load-miss", .type = kCache, .config = 0x10001}}},
        AttrCase{"L1-instruction-prefetch",
                 {{.name = "L1-instruction-prefetch", .type = kCache, .config = 0x201}}},
        AttrCase{"L2-write", {{.name = "L2-write", .type = kCache, .config = 0x102}}},
        AttrCase{"d-tlb-stores-misses",
                 {{.name = "d-tlb-stores-misses", .type = kCache, .config = 0x10103}}},
        AttrCase{"Data-TLB-speculative-read",
                 {{.name = "Data-TLB-speculative-read", .type = kCache, .config = 0x203}}},
        AttrCase{"dTLB-speculative-load-miss",
                 {{.name = "dTLB-speculative-load-miss", .type = kCache, .config = 0x10203}}},
        AttrCase{"i-tlb-loads", {{.name = "i-tlb-loads", .type = kCache, .config = 0x4}}},
        AttrCase{"Instruction-TLB-load-access",
                 {{.name = "Instruction-TLB-load-access", .type = kCache, .config = 0x4}}},
        AttrCase{"btb-load-misses",
                 {{.name = "btb-load-misses", .type = kCache, .config = 0x10005}}},
        AttrCase{"bpc-misses", {{.name = "bpc-misses", .type = kCache, .config = 0x10005}}},
        AttrCase{"L1-dcache-misses",
                 {{.name = "L1-dcache-misses", .type = kCache, .config = 0x10000}}},
        AttrCase{"L1-dcache-refs", {{.name = "L1-dcache-refs", .type = kCache, .config = 0x0}}},
        AttrCase{"L1-dcache-Reference",
                 {{.name = "L1-dcache-Reference", .type = kCache, .config = 0x0}}},
        AttrCase{"L1-dcache-load-ops",
                 {{.name = "L1-dcache-load-ops", .type = kCache, .config = 0x0}}},
        AttrCase{"L1-dcache-misses-loads",
                 {{.name = "L1-dcache-misses-loads", .type = kCache, .config = 0x10000}}},
        AttrCase{"LLC", {{.name = "LLC", .type = kCache, .config = 0x2}}},
        // Modifiers and terms do not change a cache event's name.
        AttrCase{"L1-dcache-load-misses:u",
                 {{.name = "L1-dcache-load-misses",
                   .type = kCache,
                   .config = 0x10000,
                   .exclude = "khG"}}},
        AttrCase{"L1-dcache/name=x/", {{.name = "x", .type = kCache, .config = 0x0}}},
        AttrCase{"LLC-loads/config=3/", {{.name = "LLC-loads", .type = kCache, .config = 0x3}}}));

INSTANTIATE_TEST_SUITE_P(
    RawAndNumeric, AttrTable,
    ::testing::Values(
        AttrCase{"r1a8", {{.name = "r1a8", .type = kRaw, .config = 0x1a8, .pmu = "raw"}}},
        AttrCase{"r1A8", {{.name = "r1A8", .type = kRaw, .config = 0x1a8}}},
        AttrCase{"rdeadbeef", {{.name = "rdeadbeef", .type = kRaw, .config = 0xdeadbeef}}},
        AttrCase{"rffffffffffffffff",
                 {{.name = "rffffffffffffffff", .type = kRaw, .config = ~0ull}}},
        AttrCase{"r1a:u", {{.name = "r1a:u", .type = kRaw, .config = 0x1a, .exclude = "khG"}}},
        AttrCase{"r1a/config=2/", {{.name = "r1a/config=2/", .type = kRaw, .config = 2}}},
        AttrCase{"r1a/name=raw1/k",
                 {{.name = "raw1", .type = kRaw, .config = 0x1a, .exclude = "uh"}}},
        AttrCase{"4:0x1a8", {{.name = "4:0x1a8", .type = kRaw, .config = 0x1a8}}},
        AttrCase{"1:5", {{.name = "1:5", .type = kSw, .config = 5, .pmu = "software"}}},
        AttrCase{"0:0", {{.name = "0:0", .type = kHw, .config = 0}}},
        AttrCase{"01:010", {{.name = "01:010", .type = kSw, .config = 10}}},  // never octal
        AttrCase{"1:5:u", {{.name = "1:5:u", .type = kSw, .config = 5, .exclude = "khG"}}},
        AttrCase{"1:5/name=n/", {{.name = "n", .type = kSw, .config = 5}}},
        AttrCase{"40:0x3", {{.name = "40:0x3", .type = 40, .config = 3, .pmu = "krava"}}},
        AttrCase{"99:1", {{.name = "99:1", .type = 99, .config = 1, .pmu = "99"}}}));

INSTANTIATE_TEST_SUITE_P(Tracepoints, AttrTable,
                         ::testing::Values(AttrCase{"sched:sched_switch",
                                                    {{.name = "sched:sched_switch",
                                                      .type = kTp,
                                                      .config = 316,
                                                      .period = 1,
                                                      .pmu = "tracepoint",
                                                      .sample_type = kTpSampleType}}},
                                           AttrCase{"sched:sched_switch:u",
                                                    {{.name = "sched:sched_switch",
                                                      .type = kTp,
                                                      .config = 316,
                                                      .exclude = "khG",
                                                      .period = 1,
                                                      .sample_type = kTpSampleType}}},
                                           AttrCase{"sched:sched_switch:",
                                                    {{.name = "sched:sched_switch",
                                                      .type = kTp,
                                                      .config = 316,
                                                      .period = 1,
                                                      .sample_type = kTpSampleType}}},
                                           AttrCase{"sched:sched_switch//",
                                                    {{.name = "sched:sched_switch",
                                                      .type = kTp,
                                                      .config = 316,
                                                      .period = 1,
                                                      .sample_type = kTpSampleType}}},
                                           AttrCase{"mce:mce_record",
                                                    {{.name = "mce:mce_record",
                                                      .type = kTp,
                                                      .config = 113,
                                                      .period = 1,
                                                      .sample_type = kTpSampleType}}},
                                           AttrCase{"syscalls:sys_enter_getppid",
                                                    {{.name = "syscalls:sys_enter_getppid",
                                                      .type = kTp,
                                                      .config = 555,
                                                      .period = 1,
                                                      .sample_type = kTpSampleType}}},
                                           AttrCase{"sched:sched_switch/call-graph=fp,overwrite/",
                                                    {{.name = "sched:sched_switch",
                                                      .type = kTp,
                                                      .config = 316,
                                                      .period = 1,
                                                      .sample_type = kTpSampleType}}},
                                           AttrCase{"sche?:sched_switch",
                                                    {{.name = "sched:sched_switch",
                                                      .type = kTp,
                                                      .config = 316,
                                                      .period = 1,
                                                      .sample_type = kTpSampleType}}},
                                           AttrCase{"sched:sched_wak[!e]*",
                                                    {{.name = "sched:sched_waking",
                                                      .type = kTp,
                                                      .config = 317,
                                                      .period = 1,
                                                      .sample_type = kTpSampleType}}},
                                           AttrCase{"sched:sched_swit[cx]*",
                                                    {{.name = "sched:sched_switch",
                                                      .type = kTp,
                                                      .config = 316,
                                                      .period = 1,
                                                      .sample_type = kTpSampleType}}}));

INSTANTIATE_TEST_SUITE_P(Breakpoints, AttrTable,
                         ::testing::Values(AttrCase{"mem:0x1000",
                                                    {{.name = "mem:0x1000",
                                                      .type = kBp,
                                                      .config1 = 0x1000,
                                                      .config2 = 4,
                                                      .bp_type = kRW,
                                                      .period = 1,
                                                      .pmu = "breakpoint"}}},
                                           AttrCase{"mem:4096:r",
                                                    {{.name = "mem:4096:r",
                                                      .type = kBp,
                                                      .config1 = 4096,
                                                      .config2 = 4,
                                                      .bp_type = HW_BREAKPOINT_R,
                                                      .period = 1}}},
                                           AttrCase{"mem:0x1000:w",
                                                    {{.name = "mem:0x1000:w",
                                                      .type = kBp,
                                                      .config1 = 0x1000,
                                                      .config2 = 4,
                                                      .bp_type = HW_BREAKPOINT_W,
                                                      .period = 1}}},
                                           // An execute breakpoint defaults to sizeof(long).
                                           AttrCase{"mem:0x1000:x",
                                                    {{.name = "mem:0x1000:x",
                                                      .type = kBp,
                                                      .config1 = 0x1000,
                                                      .config2 = 8,
                                                      .bp_type = HW_BREAKPOINT_X,
                                                      .period = 1}}},
                                           AttrCase{"mem:0x1000:rwx",
                                                    {{.name = "mem:0x1000:rwx",
                                                      .type = kBp,
                                                      .config1 = 0x1000,
                                                      .config2 = 4,
                                                      .bp_type = 7,
                                                      .period = 1}}},
                                           AttrCase{"mem:0x1000/8",
                                                    {{.name = "mem:0x1000",
                                                      .type = kBp,
                                                      .config1 = 0x1000,
                                                      .config2 = 8,
                                                      .bp_type = kRW,
                                                      .period = 1}}},
                                           AttrCase{"mem:0x1000/2:w",
                                                    {{.name = "mem:0x1000",
                                                      .type = kBp,
                                                      .config1 = 0x1000,
                                                      .config2 = 2,
                                                      .bp_type = HW_BREAKPOINT_W,
                                                      .period = 1}}},
                                           AttrCase{"mem:0x1000/0:x",
                                                    {{.name = "mem:0x1000",
                                                      .type = kBp,
                                                      .config1 = 0x1000,
                                                      .config2 = 8,
                                                      .bp_type = HW_BREAKPOINT_X,
                                                      .period = 1}}},
                                           AttrCase{"mem:0x1000:u",
                                                    {{.name = "mem:0x1000:u",
                                                      .type = kBp,
                                                      .config1 = 0x1000,
                                                      .config2 = 4,
                                                      .bp_type = kRW,
                                                      .exclude = "khG",
                                                      .period = 1}}},
                                           AttrCase{"mem:0x1000:rw:k",
                                                    {{.name = "mem:0x1000:rw:k",
                                                      .type = kBp,
                                                      .config1 = 0x1000,
                                                      .config2 = 4,
                                                      .bp_type = kRW,
                                                      .exclude = "uh",
                                                      .period = 1}}}));

INSTANTIATE_TEST_SUITE_P(
    PmuTerms, AttrTable,
    ::testing::Values(
        AttrCase{
            "krava/krava01=15,krava02=170,krava03=1,krava11=27,krava12=1,krava13=2,krava21=119,"
            "krava22=11,krava23=2/",
            {{.name = "krava/krava01=15,krava02=170,krava03=1,krava11=27,krava12=1,krava13=2,"
                      "krava21=119,krava22=11,krava23=2/",
              .type = 40,
              .config = 0xc00000000002a823,
              .config1 = 0x8000400000000145,
              .config2 = 0x0400000020041d07,
              .pmu = "krava"}}},
        AttrCase{"msr/event=0x5/", {{.name = "msr/event=0x5/", .type = 9, .config = 5}}},
        AttrCase{"msr//", {{.name = "msr//", .type = 9}}},
        AttrCase{"msr/tsc/", {{.name = "msr/tsc/", .type = 9, .config = 0, .pmu = "msr"}}},
        AttrCase{"msr/tsc/u", {{.name = "msr/tsc/u", .type = 9, .exclude = "khG"}}},
        AttrCase{"msr/tsc,name=x/", {{.name = "x", .type = 9}}},
        // Inside terms, "read" is the raw config 0xead (the term rules win).
        AttrCase{"msr/read/", {{.name = "msr/read/", .type = 9, .config = 0xead}}},
        AttrCase{"msr/r5,config1=1/",
                 {{.name = "msr/r5,config1=1/", .type = 9, .config = 5, .config1 = 1}}},
        // config= first, the formats ORed in after, as perf.
        AttrCase{"fpmu/event=1,config=0x100/",
                 {{.name = "fpmu/event=1,config=0x100/", .type = 41, .config = 0x101}}},
        AttrCase{"fpmu/event=1,event=2/",
                 {{.name = "fpmu/event=1,event=2/", .type = 41, .config = 3}}},
        AttrCase{"fpmu/event=0x3c,umask=1,edge,inv,cmask=2/u",
                 {{.name = "fpmu/event=0x3c,umask=1,edge,inv,cmask=2/u",
                   .type = 41,
                   .config = 0x284013c,
                   .exclude = "khG"}}},
        // A bare term is 1 whatever its width, as in perf 6.1.
        AttrCase{"fpmu/event/", {{.name = "fpmu/event/", .type = 41, .config = 1}}},
        AttrCase{"fpmu/ldlat=3/", {{.name = "fpmu/ldlat=3/", .type = 41, .config1 = 3}}},
        AttrCase{"fpmu/wide=0xffffffffffffffff/",
                 {{.name = "fpmu/wide=0xffffffffffffffff/", .type = 41, .config2 = ~0ull}}}));

INSTANTIATE_TEST_SUITE_P(
    Aliases, AttrTable,
    ::testing::Values(
        AttrCase{"fpmu/ev1/", {{.name = "fpmu/ev1/", .type = 41, .config = 0x3c}}},
        AttrCase{"fpmu/EV1/", {{.name = "fpmu/EV1/", .type = 41, .config = 0x3c}}},
        AttrCase{"fpmu/ev1=1/", {{.name = "fpmu/ev1=1/", .type = 41, .config = 0x3c}}},
        AttrCase{"fpmu/event=ev2/", {{.name = "fpmu/event=ev2/", .type = 41, .config = 0x13c}}},
        AttrCase{"fpmu/ev1,umask=3/", {{.name = "fpmu/ev1,umask=3/", .type = 41, .config = 0x33c}}},
        AttrCase{"fpmu/ev-dash/", {{.name = "fpmu/ev-dash/", .type = 41, .config = 0x210}}},
        AttrCase{"fpmu/param,umask=5/",
                 {{.name = "fpmu/param,umask=5/", .type = 41, .config = 0x507}}},
        AttrCase{"fpmu/umask=5,param/",
                 {{.name = "fpmu/umask=5,param/", .type = 41, .config = 0x507}}},
        AttrCase{"fpmu/named/", {{.name = "fromalias", .type = 41, .config = 0x9}}},
        // An alias's period is weak but lands in the attr as perf record's does.
        AttrCase{"fpmu/withp/",
                 {{.name = "fpmu/withp/", .type = 41, .config = 0x5, .period = 1000}}},
        // Bare aliases, on every PMU that has them.
        AttrCase{"ev1", {{.name = "ev1", .type = 41, .config = 0x3c, .pmu = "fpmu"}}},
        AttrCase{"EV1:u", {{.name = "EV1:u", .type = 41, .config = 0x3c, .exclude = "khG"}}},
        AttrCase{"ev1/name=n/", {{.name = "n", .type = 41, .config = 0x3c}}},
        AttrCase{"ev-dash", {{.name = "ev-dash", .type = 41, .config = 0x210}}},
        AttrCase{"tsc", {{.name = "tsc", .type = 9}}},
        AttrCase{"clockticks",
                 {{.name = "clockticks", .type = 42, .config = 0xff},
                  {.name = "clockticks", .type = 43, .config = 0xff}}},
        // pmu/.../ also stands for pmu_0, pmu_1 (uncore_ optional), as in perf.
        AttrCase{"cbox/event=1/",
                 {{.name = "cbox/event=1/", .type = 42, .config = 1, .pmu = "uncore_cbox_0"},
                  {.name = "cbox/event=1/", .type = 43, .config = 1, .pmu = "uncore_cbox_1"}}},
        AttrCase{"uncore_cbox/event=1/",
                 {{.name = "uncore_cbox/event=1/", .type = 42, .config = 1},
                  {.name = "uncore_cbox/event=1/", .type = 43, .config = 1}}},
        AttrCase{"cbox_1/event=1/", {{.name = "cbox_1/event=1/", .type = 43, .config = 1}}}));

INSTANTIATE_TEST_SUITE_P(
    Persistent, AttrTable,
    ::testing::Values(
        // events/mce_record = persistent,config=106; format/persistent = attr5:23.
        AttrCase{"persistent/mce_record/",
                 {{.name = "persistent/mce_record/",
                   .type = 23,
                   .config = 106,
                   .pmu = "persistent",
                   .flags = uint64_t(1) << 23}}},
        AttrCase{"mce_record",
                 {{.name = "mce_record", .type = 23, .config = 106, .flags = uint64_t(1) << 23}}},
        // Named by its id (the broker's default name): perf 6.1 cannot parse it.
        AttrCase{"persistent/7/,persistent/12a-b.c/k",
                 {{.name = "persistent/7/", .type = 23, .config = 7, .flags = uint64_t(1) << 23},
                  {.name = "persistent/12a-b.c/k",
                   .type = 23,
                   .config = 12,
                   .exclude = "uh",
                   .flags = uint64_t(1) << 23}}},
        AttrCase{"persistent/ctxsw/u,persistent/mce_record/",
                 {{.name = "persistent/ctxsw/u",
                   .type = 23,
                   .config = 2,
                   .exclude = "khG",
                   .flags = uint64_t(1) << 23},
                  {.name = "persistent/mce_record/",
                   .type = 23,
                   .config = 106,
                   .flags = uint64_t(1) << 23}}},
        AttrCase{"weird/w5/", {{.name = "weird/w5/", .type = 44, .flags = uint64_t(1) << 23}}},
        AttrCase{"weird/w5b=3/",
                 {{.name = "weird/w5b=3/", .type = 44, .flags = uint64_t(3) << 40}}},
        AttrCase{"weird/f8=0x81/", {{.name = "weird/f8=0x81/", .type = 44, .config2 = 0x81}}},
        AttrCase{"weird/uc/", {{.name = "weird/uc/", .type = 44, .config2 = 0xa}}},
        AttrCase{"weird/c3=0xffff/",
                 {{.name = "weird/c3=0xffff/", .type = 44, .config3 = 0xffff, .size = 136}}},
        AttrCase{"weird/a16=2/",
                 {{.name = "weird/a16=2/", .type = 44, .config3 = 0x200, .size = 136}}}));

INSTANTIATE_TEST_SUITE_P(
    GroupsAndLists, AttrTable,
    ::testing::Values(
        AttrCase{
            "cpu-clock,task-clock",
            {{.name = "cpu-clock", .type = kSw}, {.name = "task-clock", .type = kSw, .config = 1}}},
        // perf keeps the blank in the second name.
        AttrCase{"cpu-clock, task-clock",
                 {{.name = "cpu-clock", .type = kSw},
                  {.name = " task-clock", .type = kSw, .config = 1}}},
        AttrCase{"{cpu-clock,task-clock}",
                 {{.name = "cpu-clock", .type = kSw, .leader = 0},
                  {.name = "task-clock", .type = kSw, .config = 1, .leader = 0}}},
        AttrCase{"{cpu-clock,task-clock}:u",
                 {{.name = "cpu-clock", .type = kSw, .exclude = "khG", .leader = 0},
                  {.name = "task-clock", .type = kSw, .config = 1, .exclude = "khG", .leader = 0}}},
        // Group modifiers start from what each event has.
        AttrCase{"{cpu-clock:u,task-clock}:k",
                 {{.name = "cpu-clock:u", .type = kSw, .exclude = "hG", .leader = 0},
                  {.name = "task-clock", .type = kSw, .config = 1, .exclude = "uhG", .leader = 0}}},
        // D pins the leader only; an event's own D pinned it before the group.
        AttrCase{"{cpu-clock,task-clock,page-faults:D}:uD",
                 {{.name = "cpu-clock", .type = kSw, .exclude = "khG", .pinned = true, .leader = 0},
                  {.name = "task-clock", .type = kSw, .config = 1, .exclude = "khG", .leader = 0},
                  {.name = "page-faults:D",
                   .type = kSw,
                   .config = 2,
                   .exclude = "khG",
                   .pinned = true,
                   .leader = 0}}},
        AttrCase{"g1{cpu-clock,task-clock}",
                 {{.name = "cpu-clock", .type = kSw, .leader = 0, .group = "g1"},
                  {.name = "task-clock", .type = kSw, .config = 1, .leader = 0, .group = "g1"}}},
        AttrCase{"cycles,{cpu-clock}:u,g{task-clock,sched:sched_wakeup}:k,cs",
                 {{.name = "cycles", .type = kHw},
                  {.name = "cpu-clock", .type = kSw, .exclude = "khG"},
                  {.name = "task-clock",
                   .type = kSw,
                   .config = 1,
                   .exclude = "uhG",
                   .leader = 2,
                   .group = "g"},
                  {.name = "sched:sched_wakeup",
                   .type = kTp,
                   .config = 318,
                   .exclude = "uhG",
                   .period = 1,
                   .leader = 2,
                   .group = "g",
                   .sample_type = kTpSampleType},
                  {.name = "cs", .type = kSw, .config = 3}}},
        AttrCase{"{ev1,persistent/mce_record/}",
                 {{.name = "ev1", .type = 41, .config = 0x3c, .leader = 0},
                  {.name = "persistent/mce_record/",
                   .type = 23,
                   .config = 106,
                   .leader = 0,
                   .flags = uint64_t(1) << 23}}}));

// --- terms perf keeps for when it opens the event ---------------------------

TEST_F(ParseEventsTest, PeriodAndFreqLandInTheAttr) {
  auto e = parse_ok(
      "cpu-clock/period=1000/,cpu-clock/freq=99/,cpu-clock/period=5,freq=7/,"
      "cpu-clock/freq=7,period=5/,sched:sched_switch");
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].attr.attr.sample_period, 1000u);
  EXPECT_EQ(e[0].attr.attr.freq, 0u);
  EXPECT_EQ(e[0].terms.period, 1000u);
  EXPECT_EQ(e[1].attr.attr.sample_freq, 99u);
  EXPECT_EQ(e[1].attr.attr.freq, 1u);
  EXPECT_EQ(e[1].attr.attr.sample_type, uint64_t(PERF_SAMPLE_PERIOD));
  // The later one wins, as in perf record.
  EXPECT_EQ(e[2].attr.attr.sample_freq, 7u);
  EXPECT_EQ(e[2].attr.attr.freq, 1u);
  EXPECT_FALSE(e[2].terms.period);
  EXPECT_EQ(e[3].attr.attr.sample_period, 5u);
  EXPECT_EQ(e[3].attr.attr.freq, 0u);
  EXPECT_FALSE(e[3].terms.freq);
  EXPECT_FALSE(e[4].terms.period);
}

TEST_F(ParseEventsTest, EveryStaticTerm) {
  auto e = parse_ok(
      "cpu-clock/time=0,call-graph=dwarf,stack-size=8192,max-stack=32,nr=5,no-inherit,"
      "overwrite,branch_type=any_call,percore=1,aux-output,aux-sample-size=4096,"
      "metric-id=m1/");
  ASSERT_EQ(e.size(), 1u);
  const ConfigTerms& t = e[0].terms;
  EXPECT_EQ(t.time, false);
  EXPECT_EQ(t.call_graph, "dwarf");
  EXPECT_EQ(t.stack_size, 8192u);
  EXPECT_EQ(t.max_stack, 32u);
  EXPECT_EQ(t.max_events, 5u);
  EXPECT_EQ(t.inherit, false);
  EXPECT_EQ(t.overwrite, true);
  EXPECT_EQ(t.branch_type, "any_call");
  EXPECT_EQ(t.percore, true);
  EXPECT_EQ(t.aux_output, true);
  EXPECT_EQ(t.aux_sample_size, 4096u);
  EXPECT_EQ(t.metric_id, "m1");
  // Driver terms (@...) are for PMU events only, as in perf.
  EXPECT_EQ(parse_ok("msr/tsc,@sink,@key=v.1/")[0].terms.driver_config,
            (std::vector<std::string>{"sink", "key=v.1"}));
  // branch_type goes into the attr at parse time, as perf does.
  EXPECT_EQ(e[0].attr.attr.branch_sample_type, uint64_t(PERF_SAMPLE_BRANCH_ANY_CALL));
  // The rest waits for apply_config_terms().
  EXPECT_EQ(e[0].attr.attr.write_backward, 0u);

  e = parse_ok("cpu-clock/branch_type=u,inherit,no-overwrite,call-graph=fp/");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].attr.attr.branch_sample_type,
            uint64_t(PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY));
  EXPECT_EQ(e[0].terms.inherit, true);
  EXPECT_EQ(e[0].terms.overwrite, false);
}

TEST_F(ParseEventsTest, ApplyConfigTerms) {
  auto e = parse_ok(
      "cpu-clock/time=0,branch_type=any,inherit,overwrite,aux-output,freq=50/,"
      "cpu-clock/no-inherit,branch_type=no,time=1/");
  ASSERT_EQ(e.size(), 2u);
  sys::EventAttr attr;
  attr.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TIME;
  apply_config_terms(e[0].terms, &attr);
  EXPECT_EQ(attr.attr.sample_type,
            uint64_t(PERF_SAMPLE_IP | PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_PERIOD));
  EXPECT_EQ(attr.attr.branch_sample_type, uint64_t(PERF_SAMPLE_BRANCH_ANY));
  EXPECT_EQ(attr.attr.inherit, 1u);
  EXPECT_EQ(attr.attr.write_backward, 1u);
  EXPECT_EQ(attr.attr.aux_output, 1u);
  EXPECT_EQ(attr.attr.freq, 1u);
  EXPECT_EQ(attr.attr.sample_freq, 50u);

  sys::EventAttr other;
  other.attr.inherit = 1;
  other.attr.sample_type = PERF_SAMPLE_BRANCH_STACK;
  apply_config_terms(e[1].terms, &other);
  EXPECT_EQ(other.attr.inherit, 0u);
  EXPECT_EQ(other.attr.sample_type, uint64_t(PERF_SAMPLE_TIME));
}

TEST_F(ParseEventsTest, AliasUnitScaleAndFlags) {
  auto e = parse_ok("fpmu/joules/,pkg,uncore_cbox_0/event=1/,tsc");
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].unit, "Joules");
  EXPECT_DOUBLE_EQ(e[0].scale, 2.3283064365386962890625e-10);
  EXPECT_FALSE(e[0].per_pkg);
  EXPECT_TRUE(e[1].per_pkg);
  EXPECT_TRUE(e[1].snapshot);
  EXPECT_DOUBLE_EQ(e[1].scale, 1.0);
  EXPECT_EQ(e[2].cpus, std::vector<int>{0});
  EXPECT_TRUE(e[2].uncore);
  EXPECT_TRUE(e[3].cpus.empty());
  EXPECT_FALSE(e[3].uncore);
  // The alias's terms are weak: perf record's -c beats them.
  e = parse_ok("fpmu/withp/,fpmu/event=5,period=9/");
  EXPECT_TRUE(e[0].terms.period_weak);
  EXPECT_FALSE(e[1].terms.period_weak);
}

TEST_F(ParseEventsTest, ModifierFlagsBeyondTheAttr) {
  auto e = parse_ok("cpu-clock:SPWb,{cpu-clock:S,task-clock}:u");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_TRUE(e[0].sample_read);
  EXPECT_TRUE(e[0].precise_max);
  EXPECT_TRUE(e[0].weak_group);
  EXPECT_TRUE(e[0].bpf_counter);
  // A group modifier sets them afresh (perf's get_event_modifier()).
  EXPECT_FALSE(e[1].sample_read);
}

TEST_F(ParseEventsTest, TextAndTracepointFields) {
  auto e = parse_ok(" cycles:u , {sched:sched_switch/call-graph=no/:k}");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].text, "cycles:u");
  EXPECT_EQ(e[0].tracepoint, "");
  EXPECT_EQ(e[1].text, "sched:sched_switch/call-graph=no/:k");
  EXPECT_EQ(e[1].tracepoint, "sched:sched_switch");
}

// Tracepoint globs enumerate in the order the kernel lists the directory,
// as perf does (not sorted).
std::vector<std::string> readdir_order(const std::string& dir, std::string_view skip_prefix = "") {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  EXPECT_NE(d, nullptr) << dir;
  while (struct dirent* e = d ? ::readdir(d) : nullptr) {
    std::string name = e->d_name;
    if (name != "." && name != ".." && starts_with(name, skip_prefix))
      out.push_back(name);
  }
  if (d)
    ::closedir(d);
  return out;
}

TEST_F(ParseEventsTest, GlobsFollowDirectoryOrder) {
  auto e = parse_ok("ras:*");
  std::vector<std::string> want;
  for (const std::string& name : readdir_order(dir_.path("tracing/events/ras")))
    want.push_back("ras:" + name);
  std::vector<std::string> got;
  got.reserve(e.size());
  for (const EventSpec& s : e)
    got.push_back(s.name);
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.size(), 6u);

  e = parse_ok("sched:sched_wak*:u");
  ASSERT_EQ(e.size(), 2u);
  for (const EventSpec& s : e) {
    EXPECT_EQ(excludes(s.attr.attr), "khG");
    EXPECT_EQ(s.text, "sched:sched_wak*:u");
  }

  // A system glob: every matching system must have the event, as in perf.
  TempDir dir;
  FakeSysfs fake(dir);
  fake.tracepoint("sched", "sched_switch", 316);
  fake.tracepoint("sched2", "sched_switch", 900);
  auto m = pmu::Model::load(fake.roots());
  ASSERT_TRUE(m.ok());
  auto r = parse_events("sched*:sched_switch", *m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  std::vector<uint64_t> configs;
  for (const EventSpec& s : *r)
    configs.push_back(s.attr.attr.config);
  std::sort(configs.begin(), configs.end());
  EXPECT_EQ(configs, (std::vector<uint64_t>{316, 900}));
}

// --- errors: the message, its column, and the code ----------------------------

struct ErrorCase {
  const char* input;
  size_t column;        // where the caret points
  const char* message;  // a part of the line after the caret
  int code = EINVAL;
  const char* help = "";  // a part of the lines after it
};

class ErrorTable : public ParseEventsTest, public ::testing::WithParamInterface<ErrorCase> {};

// The first block of a message in perf's caret form, taken apart.
struct Caret {
  std::string text;  // between the quotes of line 1
  size_t column = std::string::npos;
  std::string message, help;
};

Caret read_caret(const std::string& message) {
  Caret c;
  size_t nl = message.find('\n');
  std::string first = message.substr(0, nl);
  const std::string prefix = "event syntax error: '";
  EXPECT_TRUE(starts_with(first, prefix)) << message;
  c.text = first.substr(prefix.size(), first.size() - prefix.size() - 1);
  size_t nl2 = message.find('\n', nl + 1);
  std::string second = message.substr(nl + 1, nl2 == std::string::npos ? nl2 : nl2 - nl - 1);
  size_t caret = second.find("\\___ ");
  EXPECT_NE(caret, std::string::npos) << message;
  if (caret != std::string::npos) {
    EXPECT_EQ(second.find_first_not_of(' '), caret) << message;
    c.column = caret - prefix.size();
    c.message = second.substr(caret + 5);
  }
  if (nl2 != std::string::npos)
    c.help = message.substr(nl2 + 1);
  return c;
}

TEST_P(ErrorTable, LocatedAndSpecific) {
  const ErrorCase& c = GetParam();
  auto r = parse_events(c.input, model_);
  ASSERT_FALSE(r.ok()) << c.input << " was accepted";
  EXPECT_EQ(r.error().code(), c.code) << c.input << "\n" << r.error().message();
  Caret caret = read_caret(r.error().message());
  EXPECT_EQ(caret.text, c.input);
  EXPECT_EQ(caret.column, c.column) << r.error().message();
  EXPECT_NE(caret.message.find(c.message), std::string::npos) << "want '" << c.message << "' in:\n"
                                                              << r.error().message();
  EXPECT_NE(caret.help.find(c.help), std::string::npos) << "want '" << c.help << "' in:\n"
                                                        << r.error().message();
}

INSTANTIATE_TEST_SUITE_P(
    Syntax, ErrorTable,
    ::testing::Values(
        ErrorCase{"", 0, "no event given"}, ErrorCase{"   ", 0, "no event given"},
        ErrorCase{"foo", 0, "unknown event 'foo'", EINVAL, "an event is a symbolic name"},
        ErrorCase{"cyclse", 0, "unknown event 'cyclse'", EINVAL, "did you mean 'cycles'?"},
        ErrorCase{"msr", 0, "unknown event 'msr'", EINVAL, "'msr' is a PMU: write msr/EVENT/"},
        ErrorCase{"r0x1a", 0, "unknown event 'r0x1a'"},
        ErrorCase{"5", 0, "a number alone is not an event", EINVAL, "TYPE:CONFIG"},
        ErrorCase{"1:", 2, "unexpected end of the event list, expected the config number"},
        ErrorCase{"18446744073709551616:1", 0, "number 18446744073709551616 is out of range"},
        ErrorCase{"r10000000000000000", 0, "number r10000000000000000 is out of range"},
        ErrorCase{"cpu-clock/period=18446744073709551616/", 17, "is out of range"},
        ErrorCase{"4294967296:1", 0, "type 4294967296 does not fit in 32 bits"},
        ErrorCase{"cycles#u", 6, "unexpected character '#'"},
        ErrorCase{"cycles task-clock", 7, "unexpected 'task-clock'"},
        ErrorCase{"cycles,,cpu-clock", 7, "an event is missing before ','"},
        ErrorCase{",cycles", 0, "an event is missing before ','"},
        ErrorCase{"cycles,", 7, "an event is missing at the end of the list"},
        ErrorCase{"u", 0, "modifiers 'u' with no event before them"},
        ErrorCase{"duration_time", 0, "'duration_time' is a perf stat tool event"},
        ErrorCase{"cycles-t", 0, "no PMU here has an event called 'cycles-t'", ENOENT}));

INSTANTIATE_TEST_SUITE_P(
    Modifiers, ErrorTable,
    ::testing::Values(
        ErrorCase{"cycles:z", 7, "'z' is not a modifier", EINVAL, "p pp ppp P (precise)"},
        ErrorCase{"cycles:uuz", 7, "'uuz' is not a modifier"},
        ErrorCase{"cycles:uu", 8, "bad modifier 'uu': 'u' is given twice"},
        ErrorCase{"cycles:kuk", 9, "bad modifier 'kuk': 'k' is given twice"},
        ErrorCase{"cycles:pppp", 7, "bad modifier 'pppp': precise level 4 is more than 3"},
        ErrorCase{"cycles:ukhGHpppPSDIWebu", 7, "too many letters"},
        ErrorCase{"cycles:u:k", 8, "unexpected ':'"},
        ErrorCase{"cycles//:u", 8, "modifiers follow the closing '/' directly"},
        ErrorCase{"cycles/period=1/:u", 16, "modifiers follow the closing '/' directly"},
        ErrorCase{"msr/tsc/:u", 8, "modifiers follow a PMU event's closing '/' directly", EINVAL,
                  ""},
        ErrorCase{"{cpu-clock}:uu", 13, "'u' is given twice"},
        ErrorCase{"{cpu-clock}:", 12, "expected modifiers after ':'"},
        ErrorCase{"{cpu-clock}:z", 12, "'z' is not a modifier"}));

INSTANTIATE_TEST_SUITE_P(
    Groups, ErrorTable,
    ::testing::Values(ErrorCase{"{cycles", 0, "unbalanced group: this '{' has no matching '}'"},
                      ErrorCase{"{cycles,cs", 0, "unbalanced group: this '{' has no matching '}'"},
                      ErrorCase{"cycles}", 6, "unbalanced group: '}' without a '{' before it"},
                      ErrorCase{"{cycles}}", 8, "unbalanced group: '}' without a '{' before it"},
                      ErrorCase{"{cycles,{cs}}", 8, "groups cannot be nested"},
                      ErrorCase{"{{cycles}}", 1, "groups cannot be nested"},
                      ErrorCase{"{}", 1, "empty group: a group needs at least one event"},
                      ErrorCase{"{cycles,}", 8, "an event is missing before '}'"},
                      ErrorCase{"cycles{cs}", 6, "unexpected '{'"},
                      ErrorCase{"u{cs}", 0, "modifiers 'u' with no event before them"}));

INSTANTIATE_TEST_SUITE_P(
    Terms, ErrorTable,
    ::testing::Values(
        ErrorCase{"cycles/foo=1/", 7, "unknown term 'foo' for event 'cycles'", EINVAL,
                  "valid terms: config,config1,config2,config3,name,period,freq"},
        ErrorCase{"r1a/event=1/", 4, "unknown term 'event' for raw event 'r1a'"},
        ErrorCase{"L1-dcache/@cfg/", 10, "unknown term 'cfg' for cache event 'L1-dcache'"},
        ErrorCase{"cpu-clock/period=abc/", 17, "'period' takes a number, not 'abc'"},
        ErrorCase{"cpu-clock/name=1/", 15, "'name' takes a name, not the number 1"},
        ErrorCase{"cpu-clock/time=2/", 15, "'time' takes 0 or 1, not 2"},
        ErrorCase{"cpu-clock/percore=2/", 18, "'percore' takes 0 or 1, not 2"},
        ErrorCase{"cpu-clock/aux-sample-size=5000000000/", 26, "'aux-sample-size' is too big"},
        ErrorCase{"cpu-clock/branch_type=bogus/", 22, "invalid branch sample type 'bogus'", EINVAL,
                  "any_call"},
        ErrorCase{"cpu-clock/branch_type=hw_index/", 22, "invalid branch sample type"},
        ErrorCase{"cpu-clock/call-graph=bogus/", 21, "unknown call-graph mode 'bogus'"},
        ErrorCase{"cpu-clock/name=x", 9, "this '/' opens a term list that has no closing '/'"},
        ErrorCase{"cpu-clock/,/", 10, "a term is missing before ','"},
        ErrorCase{"cpu-clock/name=x,/", 17, "a term is missing before '/'"},
        ErrorCase{"cpu-clock/name=/", 15, "expected a value (a number or a name) after '='"},
        ErrorCase{"cpu-clock/=1/", 10, "unexpected '=', expected a term"},
        ErrorCase{"cpu-clock/a,[all]/", 12, "unexpected '[all]', expected a term"},
        ErrorCase{"cpu-clock/a-b[all]/", 13, "array terms (for perf's BPF maps) are not supported"},
        ErrorCase{"cpu-clock//name=x/", 11, "unexpected 'name'"}));

INSTANTIATE_TEST_SUITE_P(
    Cache, ErrorTable,
    ::testing::Values(ErrorCase{"L1-icache-stores", 10, "'L1-icache' has no 'stores' operation",
                                EINVAL, "its operations are: load, prefetch"},
                      ErrorCase{"iTLB-prefetches", 5, "'iTLB' has no 'prefetches' operation"},
                      ErrorCase{"branch-stores", 7, "'branch' has no 'stores' operation"},
                      // perf 6.1 ignores the second operation or result; perf-persistent
                      // refuses it (listed in the man page).
                      ErrorCase{"L1-dcache-load-store", 15, "a second cache operation 'store'"},
                      ErrorCase{"LLC-refs-misses", 9, "a second cache result 'misses'"},
                      ErrorCase{"L1-dcache-load-misses-refs", 21,
                                "at most an operation and a result"},
                      ErrorCase{"L1-dcache-foo", 10, "'foo' is not a cache operation or result"},
                      ErrorCase{"L1-DCACHE-LOADS", 0, "unknown event 'L1-DCACHE'"}));

INSTANTIATE_TEST_SUITE_P(
    Breakpoints, ErrorTable,
    ::testing::Values(ErrorCase{"mem:0x1000:rr", 11,
                                "'r' is given twice in breakpoint access 'rr'"},
                      ErrorCase{"mem:", 4, "expected an address after 'mem:'"},
                      ErrorCase{"mem:0x1000/", 11, "expected a length after '/'"},
                      ErrorCase{"mem:0x1000:x/8", 12, "unexpected '/'"}));

INSTANTIATE_TEST_SUITE_P(
    Tracepoints, ErrorTable,
    ::testing::Values(ErrorCase{"sched:nope", 0, "unknown tracepoint 'sched:nope'", ENOENT,
                                "tracing/events/sched/nope does not exist"},
                      ErrorCase{"nope:nope", 0, "unknown tracepoint 'nope:nope'", ENOENT},
                      ErrorCase{"cycles,sched:sched_zz*", 7, "unknown tracepoint 'sched:sched_zz*'",
                                ENOENT, "no event of"},
                      ErrorCase{"zz*:foo", 0, "no tracepoint system matches 'zz*'", ENOENT},
                      // As perf: every system the glob matches must have the event.
                      ErrorCase{"*:sched_switch", 0, "unknown tracepoint", ENOENT},
                      ErrorCase{"sched:", 6, "expected a tracepoint event name after 'sched:'"},
                      ErrorCase{"sched:load", 6, "expected a tracepoint event name"},
                      ErrorCase{"sched:sched_switch/period=1/", 19,
                                "unknown term 'period' for tracepoint 'sched:sched_switch'", EINVAL,
                                "valid terms: call-graph,stack-size"},
                      ErrorCase{"sched:sched_switch/name=x/", 19,
                                "unknown term 'name' for tracepoint"}));

INSTANTIATE_TEST_SUITE_P(
    Pmus, ErrorTable,
    ::testing::Values(
        ErrorCase{"foo/bar/", 0, "unknown PMU 'foo' (missing kernel support?)", ENOENT,
                  "the PMUs here are:"},
        ErrorCase{"krav/krava01=1/", 0, "unknown PMU 'krav'", ENOENT, "did you mean 'krava'?"},
        ErrorCase{"msr/foo/", 4, "unknown term 'foo' for PMU 'msr'", EINVAL,
                  "valid terms: event,config,config1"},
        ErrorCase{"fpmu/event=0x100/", 11, "value 0x100 too big for format, maximum is 255", EINVAL,
                  "fpmu/format/event says 'config:0-7'"},
        ErrorCase{"krava/krava01=16/", 14, "maximum is 15"},
        ErrorCase{"fpmu/event=abc/", 11, "term 'event' of PMU 'fpmu' takes a number, not 'abc'"},
        ErrorCase{"fpmu/ev1,ev2/", 9, "'ev1' and 'ev2' are both event aliases"},
        ErrorCase{"fpmu/param/", 5, "required parameter 'umask' not specified", EINVAL,
                  "fpmu/param,umask=VALUE/"},
        ErrorCase{"ev1,fpmu/param,umask=0x100/", 9, "value 0x100 too big"},
        ErrorCase{"broken/config=1/", 0, "PMU 'broken' cannot be used", EINVAL,
                  "broken/type holds 'x'"},
        ErrorCase{"x-y", 0, "unknown event 'x-y'"}));

INSTANTIATE_TEST_SUITE_P(
    FormatsAndAttrN, ErrorTable,
    ::testing::Values(
        ErrorCase{"fpmu/ldlat=3,frontend=5/", 13,
                  "formats 'ldlat' and 'frontend' of PMU 'fpmu' both write bits 0-15 of config1",
                  EINVAL, "'ldlat' and 'frontend' cannot go together"},
        ErrorCase{"weird/f8=1,c2=1/", 11,
                  "formats 'f8' and 'c2' of PMU 'weird' both write bits 0-3 of config2"},
        ErrorCase{"weird/uc,f8=1/", 9, "formats 'c2' and 'f8'"},
        ErrorCase{"weird/w0=1/", 6, "term 'w0' of PMU 'weird' writes word 0 of perf_event_attr",
                  EINVAL, "format file"},
        ErrorCase{"weird/w17/", 6,
                  "term 'w17' of PMU 'weird' writes past the end of perf_event_attr", EINVAL,
                  "weird/format/w17 says 'attr17:1'"},
        ErrorCase{"weird/w5=2/", 9, "value 0x2 too big for format, maximum is 1", EINVAL,
                  "weird/format/w5 says 'attr5:23'"},
        ErrorCase{"weird/bad=1/", 6, "term 'bad' of PMU 'weird' cannot be used", EINVAL,
                  "weird/format/bad: 'garbage': no ':'"},
        ErrorCase{"weird/ua/", 6,
                  "event alias 'ua' uses term 'nope', which PMU 'weird' has no format file for",
                  EINVAL, "weird/events/ua holds 'w5=1,nope=3'"},
        ErrorCase{"weird/ub/", 6, "event alias 'ub' of PMU 'weird' is malformed", EINVAL,
                  "weird/events/ub holds 'w5=1,,x'"}));

INSTANTIATE_TEST_SUITE_P(
    Persistent, ErrorTable,
    ::testing::Values(
        ErrorCase{
            "persistent/mce_recrd/", 11, "no persistent event 'mce_recrd'", ENOENT,
            "did you mean 'mce_record'? the persistent events are: 12a-b.c, ctxsw, mce_record"},
        ErrorCase{"persistent/nope/u", 11, "no persistent event 'nope'", ENOENT,
                  "perf persistent create -e EVENT --name nope"},
        ErrorCase{"persistent/nope=2/", 11, "unknown term 'nope' for PMU 'persistent'"},
        ErrorCase{"persistent/8/", 11, "no persistent event with id 8", ENOENT},
        ErrorCase{"persistent/7 a/", 13, "unexpected 'a', expected ',' or '/' after a term"},
        ErrorCase{"persistent/7=1/", 12, "a term name cannot start with a digit: '7'"},
        ErrorCase{"msr/7/", 4, "unknown term '7' for PMU 'msr'"}));

TEST(ParseEventsNoPersistent, SaysHowToGetOne) {
  TempDir dir;
  FakeSysfs fake(dir);
  fake.standard_pmus();
  auto m = pmu::Model::load(fake.roots());
  ASSERT_TRUE(m.ok());
  auto r = parse_events("cycles,persistent/mce_record/", *m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ENOENT);
  Caret c = read_caret(r.error().message());
  EXPECT_EQ(c.column, 7u);
  EXPECT_EQ(c.message, "no persistent events on this machine");
  EXPECT_NE(c.help.find(dir.path("run") + "/devices/persistent"), std::string::npos) << c.help;
  EXPECT_NE(c.help.find("perf persistent create"), std::string::npos);
  EXPECT_NE(c.help.find("perf persistent list"), std::string::npos);
}

TEST(ParseEventsBroker, PersistentEventsFromTheRunDirectory) {
  TempDir dir;
  FakeSysfs fake(dir);
  fake.standard_pmus();
  fake.broker_pmu(123).format("persistent", "attr5:23").alias("ctxsw", "persistent,config=7");
  auto m = pmu::Model::load(fake.roots());
  ASSERT_TRUE(m.ok());
  auto r = parse_events("persistent/ctxsw/", *m);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)[0].attr.attr.type, 123u);
  EXPECT_EQ((*r)[0].attr.attr.config, 7u);
  EXPECT_EQ((*r)[0].attr.words[5] & (uint64_t(1) << 23), uint64_t(1) << 23);
}

TEST_F(ParseEventsTest, SeveralErrorsInOrder) {
  // The alias fails on both PMUs that have it: both say why, in order.
  TempDir dir;
  FakeSysfs fake(dir);
  fake.pmu("uncore_a_0", 50).format("event", "config:0-3").alias("tick", "event=0xff");
  fake.pmu("uncore_a_1", 51).format("event", "config:0-7").alias("tick", "event=0x1ff");
  auto m = pmu::Model::load(fake.roots());
  ASSERT_TRUE(m.ok());
  auto r = parse_events("tick", *m);
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.error().message();
  size_t first = msg.find("maximum is 15");
  size_t second = msg.find("maximum is 255");
  EXPECT_NE(first, std::string::npos) << msg;
  EXPECT_NE(second, std::string::npos) << msg;
  EXPECT_LT(first, second) << msg;
  EXPECT_NE(msg.find("\n\nevent syntax error: 'tick'\n"), std::string::npos) << msg;
}

TEST_F(ParseEventsTest, CaretFormMatchesPerf) {
  auto r = parse_events("msr/umsk=1/", model_);
  ASSERT_FALSE(r.ok());
  std::string want =
      "event syntax error: 'msr/umsk=1/'\n"
      "                         \\___ unknown term 'umsk' for PMU 'msr'\n"
      "valid terms: event,";
  EXPECT_EQ(r.error().message().substr(0, want.size()), want);
}

}  // namespace
}  // namespace pp::parse

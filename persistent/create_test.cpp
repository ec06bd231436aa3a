#include "persistent/create.h"

#include <time.h>

#include <gtest/gtest.h>

#include "persistent/sample_layout.h"
#include "persistent/testing/test_doubles.h"
#include "tests/support/temp_dir.h"

namespace pp::persistent {
namespace {

ResolvedEvent tracepoint() {
  ResolvedEvent e;
  e.attr.attr.type = PERF_TYPE_TRACEPOINT;
  e.attr.attr.size = sys::kAttrSizeVer7;
  e.attr.attr.config = 316;
  e.tracepoint = "syscalls:sys_enter_getppid";
  e.pmu = "tracepoint";
  return e;
}

ResolvedEvent software() {
  ResolvedEvent e;
  e.attr.attr.type = PERF_TYPE_SOFTWARE;
  e.attr.attr.size = sys::kAttrSizeVer7;
  e.attr.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  e.attr.attr.exclude_guest = 1;
  e.pmu = "software";
  return e;
}

constexpr uint64_t kBaseSampleType = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_IDENTIFIER;

// Lean (issue 16): the kernel writes TID, TIME and RAW; the readers supply
// IP, CPU, PERIOD and IDENTIFIER (persistent/sample_layout.h).
TEST(Sampling, TracepointSamplesEveryEventLean) {
  sys::EventAttr a = sampling_attr(tracepoint(), Layout::kBackward);
  EXPECT_EQ(a.attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
  EXPECT_EQ(a.attr.config, 316u);
  EXPECT_EQ(a.attr.sample_period, 1u);
  EXPECT_EQ(a.attr.freq, 0u);
  EXPECT_EQ(a.attr.sample_type,
            PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_RAW);
  EXPECT_TRUE(is_lean(a));
  EXPECT_EQ(completed_attr(a).attr.sample_type, kBaseSampleType | PERF_SAMPLE_RAW);
  EXPECT_EQ(a.attr.sample_id_all, 1u);
  EXPECT_EQ(a.attr.disabled, 0u);
  EXPECT_EQ(a.attr.inherit, 0u);
  EXPECT_EQ(a.attr.write_backward, 1u);
  EXPECT_EQ(a.attr.size, sys::kAttrSizeVer7);
}

TEST(Sampling, TracepointByFrequencyKeepsItsPeriod) {
  ResolvedEvent e = tracepoint();
  e.attr.attr.freq = 1;
  e.attr.attr.sample_freq = 100;
  sys::EventAttr a = sampling_attr(e, Layout::kBackward);
  EXPECT_EQ(a.attr.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                    PERF_SAMPLE_RAW | PERF_SAMPLE_PERIOD);
  EXPECT_TRUE(is_lean(a));
}

TEST(Sampling, EventsCreatedBeforeStayAsTheyAre) {
  // A tracepoint event made with the full sample_type, and the seed
  // kernel's boot events (RAW only): nothing for a reader to add.
  sys::EventAttr full = sampling_attr(tracepoint(), Layout::kBackward);
  full.attr.sample_type = kBaseSampleType | PERF_SAMPLE_RAW;
  EXPECT_FALSE(is_lean(full));
  EXPECT_EQ(completed_attr(full), full);
  sys::EventAttr boot = full;
  boot.attr.sample_type = PERF_SAMPLE_RAW;
  boot.attr.sample_id_all = 0;
  EXPECT_FALSE(is_lean(boot));
  EXPECT_EQ(completed_attr(boot), boot);
}

TEST(Sampling, FillIsTheBuffersCpuIdAndPeriod) {
  sys::EventAttr a = sampling_attr(tracepoint(), Layout::kBackward);
  sys::SampleFill fill = sys::sample_fill(a.attr, 3, 77);
  EXPECT_EQ(fill.cpu, 3u);
  EXPECT_EQ(fill.id, 77u);
  EXPECT_EQ(fill.period, 1u);
}

TEST(Sampling, OtherEventsSampleAt4000HzUnlessTheStringChose) {
  sys::EventAttr a = sampling_attr(software(), Layout::kForward);
  EXPECT_EQ(a.attr.freq, 1u);
  EXPECT_EQ(a.attr.sample_freq, 4000u);
  EXPECT_EQ(a.attr.sample_type, kBaseSampleType);
  EXPECT_EQ(a.attr.write_backward, 0u);
  EXPECT_EQ(a.attr.exclude_guest, 1u) << "the parser's bits stay";

  EXPECT_FALSE(is_lean(a)) << "IP matters outside tracepoints (top's symbols)";

  ResolvedEvent period = software();
  period.attr.attr.sample_period = 10007;
  EXPECT_EQ(sampling_attr(period, Layout::kBackward).attr.sample_period, 10007u);
  EXPECT_EQ(sampling_attr(period, Layout::kBackward).attr.freq, 0u);

  ResolvedEvent freq = software();
  freq.attr.attr.freq = 1;
  freq.attr.attr.sample_freq = 99;
  EXPECT_EQ(sampling_attr(freq, Layout::kBackward).attr.sample_freq, 99u);

  ResolvedEvent config3 = software();
  config3.attr.attr.size = sys::kAttrSizeVer8;
  EXPECT_EQ(sampling_attr(config3, Layout::kBackward).attr.size, sys::kAttrSizeVer8);
}

TEST(Sampling, EnabledAndNotInheritedWhateverTheParserSaid) {
  ResolvedEvent e = tracepoint();
  e.attr.attr.disabled = 1;
  e.attr.attr.inherit = 1;
  sys::EventAttr a = sampling_attr(e, Layout::kBackward);
  EXPECT_EQ(a.attr.disabled, 0u);
  EXPECT_EQ(a.attr.inherit, 0u);
}

TEST(Sampling, ChooseCpus) {
  std::vector<int> online = {0, 1, 2, 3};
  EXPECT_EQ(*choose_cpus("", online, {}), online);
  EXPECT_EQ(*choose_cpus("", online, {1, 3, 5}), (std::vector<int>{1, 3}));
  EXPECT_EQ(*choose_cpus("2,0", online, {}), (std::vector<int>{0, 2}));
  auto offline = choose_cpus("0-4", online, {});
  ASSERT_FALSE(offline.ok());
  EXPECT_EQ(offline.error().code(), EINVAL);
  EXPECT_NE(offline.error().message().find("CPU 4 is not online (online: 0-3)"), std::string::npos);
  auto mask = choose_cpus("0", online, {1});
  ASSERT_FALSE(mask.ok());
  EXPECT_NE(mask.error().message().find("cpumask (1)"), std::string::npos);
  auto none = choose_cpus("", {0, 1}, {4});
  ASSERT_FALSE(none.ok());
  auto junk = choose_cpus("x", online, {});
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.error().code(), EINVAL);
}

TEST(Sampling, OnlineCpusFromSysfs) {
  ::pp::testing::TempDir sysfs;
  sysfs.write("devices/system/cpu/online", "0-1,4\n");
  auto cpus = online_cpus(sys::Tree(sysfs.path()));
  ASSERT_TRUE(cpus.ok());
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 4}));
  sysfs.write("devices/system/cpu/online", "garbage\n");
  auto bad = online_cpus(sys::Tree(sysfs.path()));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("devices/system/cpu/online"), std::string::npos);
  EXPECT_EQ(bad.error().kind(), ErrorKind::kRefused) << "the system's file, not a usage error";
}

TEST(Sampling, PagesArePowersOfTwo) {
  for (uint64_t ok : {1, 2, 64, 128, 65536})
    EXPECT_TRUE(validate_pages(ok).ok()) << ok;
  for (uint64_t bad : {0, 3, 100, 131072}) {
    Status s = validate_pages(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code(), EINVAL);
    EXPECT_NE(s.error().message().find("power of two"), std::string::npos);
  }
}

// The create path on its own: plan_create() over a temp-dir sysfs with two
// online CPUs and the test resolver, as either backend calls it.
class PlanCreateTest : public ::testing::Test {
 protected:
  PlanCreateTest() {
    sysfs_dir_.write("devices/system/cpu/online", "0-1\n");
    context_.resolver = &resolver_;
    context_.sysfs = &sysfs_;
    context_.existing = [this]() -> Result<std::vector<EventInfo>> {
      asked_++;
      return existing_;
    };
  }

  static CreateRequest request(std::string event, std::string name = "", uint64_t pages = 0,
                               std::string cpus = "", std::string filter = "") {
    return {std::move(event), std::move(name), pages, std::move(cpus), std::move(filter)};
  }

  // The error plan_create() gives `r`, which must fail.
  Error refusal(const CreateRequest& r) {
    auto plan = plan_create(r, context_);
    EXPECT_FALSE(plan.ok()) << r.event << " '" << r.name << "'";
    return plan.ok() ? Error(0, "planned") : plan.error();
  }

  ::pp::testing::TempDir sysfs_dir_;
  sys::Tree sysfs_{sysfs_dir_.path()};
  testing::TestResolver resolver_;
  std::vector<EventInfo> existing_;
  int asked_ = 0;
  CreateContext context_;
};

TEST_F(PlanCreateTest, ATracepointIsPlannedOnEveryOnlineCpuUnderItsOwnName) {
  auto plan = plan_create(request("syscalls:sys_enter_getppid"), context_);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->event, "syscalls:sys_enter_getppid");
  EXPECT_EQ(plan->name, "sys_enter_getppid");
  EXPECT_EQ(plan->cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(plan->pages, kDefaultPages);
  EXPECT_EQ(plan->filter, "");
  EXPECT_EQ(plan->attr.attr.config, testing::kGetppidId);
  EXPECT_EQ(plan->attr.attr.sample_period, 1u) << "sampling_attr() applied";
  EXPECT_EQ(plan->attr.attr.write_backward, 1u) << "the context's layout";
  EXPECT_EQ(plan->attr.attr.use_clockid, 1u) << "records carry the default clock's time";
  EXPECT_EQ(plan->attr.attr.clockid, CLOCK_MONOTONIC);
  EXPECT_EQ(asked_, 1) << "the names taken are looked up once";
}

TEST_F(PlanCreateTest, WhatTheRequestChoosesIsKept) {
  context_.layout = Layout::kForward;
  auto plan = plan_create(request("cpu-clock", "clock", 8, "1", "common_pid != 0"), context_);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->name, "clock");
  EXPECT_EQ(plan->pages, 8u);
  EXPECT_EQ(plan->cpus, std::vector<int>{1});
  EXPECT_EQ(plan->filter, "common_pid != 0");
  EXPECT_EQ(plan->attr.attr.freq, 1u);
  EXPECT_EQ(plan->attr.attr.write_backward, 0u);
}

TEST_F(PlanCreateTest, DashKChoosesTheClock) {
  CreateRequest r = request("cpu-clock");
  r.clockid = CLOCK_BOOTTIME;
  auto plan = plan_create(r, context_);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->attr.attr.use_clockid, 1u);
  EXPECT_EQ(plan->attr.attr.clockid, CLOCK_BOOTTIME);
}

TEST_F(PlanCreateTest, AnEventThatIsNoTracepointIsNamedAfterItsIdLater) {
  auto plan = plan_create(request("cpu-clock"), context_);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->name, "") << "the backend names it after the id it gets";
  EXPECT_EQ(asked_, 0) << "an id is never taken: no need to look";
  std::string long_name(70, 'x');
  auto too_long = plan_create(request("sys:" + long_name), context_);
  ASSERT_TRUE(too_long.ok());
  EXPECT_EQ(too_long->name, "") << "a tracepoint name that is no valid name: the id";
}

// Each rule, its code and its message, in the order they are checked.
TEST_F(PlanCreateTest, EachRuleSaysWhatIsWrong) {
  struct Case {
    CreateRequest request;
    int code;
    const char* message;
  } cases[] = {
      {request("a:b", "bad name"), EINVAL,
       "invalid name 'bad name': ' ' is not allowed; a name is 1 to 64 letters, digits, '_', '-' "
       "and '.', starts with a letter or '_'"},
      {request("a:b", "12"), EINVAL, "invalid name '12': it is a number"},
      {request("a:b", "..", 0), EINVAL, "invalid name '..': it is a directory name"},
      {request("a:b", "", 3), EINVAL,
       "-m 3: the buffer size in pages must be a power of two from 1 to 65536 (the default is "
       "128)"},
      {request("a:b", "", 131072), EINVAL, "-m 131072: the buffer size in pages must be"},
      {request(""), EINVAL, "no event given: create needs -e EVENT"},
      {request("nocolon"), EINVAL, "event syntax error: 'nocolon'"},
      {request("a:b", "", 0, "0-7"), EINVAL,
       "CPU 2 is not online (online: 0-1); choose CPUs with -C from those"},
      {request("a:b", "", 0, "x"), EINVAL, ""},
      // The first rule broken is the one reported.
      {request("", "bad name", 3, "9"), EINVAL, "invalid name 'bad name'"},
      {request("", "", 3, "9"), EINVAL, "-m 3:"},
      {request("nocolon", "", 0, "9"), EINVAL, "event syntax error"},
  };
  for (const Case& c : cases) {
    Error e = refusal(c.request);
    EXPECT_EQ(e.code(), c.code) << e.message();
    EXPECT_EQ(e.kind(), ErrorKind::kUsage) << e.message();  // exit status 1
    EXPECT_EQ(e.message().substr(0, std::string(c.message).size()), c.message);
  }
  EXPECT_EQ(asked_, 0) << "an invalid request never looks at the existing events";
}

TEST_F(PlanCreateTest, ANameTakenIsRefusedWithTheEventThatHasIt) {
  EventInfo other;
  other.id = 7;
  other.name = "ctxsw";
  existing_.push_back(other);
  other.id = 9;
  other.name = "sys_enter_getppid";
  existing_.push_back(other);
  Error given = refusal(request("a:b", "ctxsw"));
  EXPECT_EQ(given.code(), EEXIST);
  EXPECT_EQ(given.kind(), ErrorKind::kNameTaken);  // exit status 3
  EXPECT_EQ(given.message(),
            "the name 'ctxsw' is taken by persistent event 7; choose another with --name, or kill "
            "that one first ('perf persistent kill ctxsw')");
  Error by_default = refusal(request("syscalls:sys_enter_getppid"));
  EXPECT_EQ(by_default.code(), EEXIST);
  EXPECT_EQ(by_default.message(),
            "the name 'sys_enter_getppid' (this event's default name) is taken by persistent "
            "event 9; choose another with --name, or kill that one first ('perf persistent kill "
            "sys_enter_getppid')");
  EXPECT_TRUE(plan_create(request("syscalls:sys_enter_getppid", "other"), context_).ok());
}

TEST_F(PlanCreateTest, TheExistingEventsCannotBeListed) {
  context_.existing = []() -> Result<std::vector<EventInfo>> {
    return Error(EACCES, "cannot list");
  };
  Error e = refusal(request("a:b"));
  EXPECT_EQ(e.code(), EACCES);
  EXPECT_EQ(e.message(), "cannot list");
  context_.existing = nullptr;
  EXPECT_TRUE(plan_create(request("a:b"), context_).ok()) << "no lookup: nothing is taken";
}

// The seed kernel allocates 512 KiB itself: -m may only repeat that.
TEST_F(PlanCreateTest, ABackendWithOneBufferSizeTakesOnlyThatSize) {
  context_.fixed_pages = 128;
  auto plan = plan_create(request("a:b"), context_);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->pages, 128u);
  EXPECT_TRUE(plan_create(request("a:b", "", 128), context_).ok());
  Error e = refusal(request("a:b", "", 64));
  EXPECT_EQ(e.code(), EINVAL);
  EXPECT_EQ(e.message(),
            "-m 64: this kernel's persistent events always have 128 pages per CPU "
            "(PERF_EVENT_IOC_DETACH allocates " +
                std::to_string(128 * sys::page_size() / 1024) + " KiB); leave -m out");
}

class MaskedResolver final : public EventResolver {
 public:
  Result<ResolvedEvent> resolve(std::string_view) override {
    ResolvedEvent e;
    e.attr.attr.type = PERF_TYPE_RAW;
    e.pmu = "uncore";
    e.pmu_cpus = {1};
    return e;
  }
};

TEST_F(PlanCreateTest, ThePmuCpumaskLimitsTheCpus) {
  MaskedResolver masked;
  context_.resolver = &masked;
  auto plan = plan_create(request("uncore/x/"), context_);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->cpus, std::vector<int>{1});
  Error e = refusal(request("uncore/x/", "", 0, "0"));
  EXPECT_EQ(e.message(), "CPU 0 is not in the event's PMU cpumask (1)");
  sysfs_dir_.write("devices/system/cpu/online", "0\n");
  Error none = refusal(request("uncore/x/"));
  EXPECT_EQ(none.message(), "none of the online CPUs (0) is in the event's PMU cpumask (1)");
}

TEST_F(PlanCreateTest, WithoutAParserOrOnlineCpusNothingIsPlanned) {
  context_.resolver = nullptr;
  EXPECT_EQ(refusal(request("a:b")).message(), "no event parser to create with");
  context_.resolver = &resolver_;
  sysfs_dir_.write("devices/system/cpu/online", "garbage\n");
  EXPECT_NE(refusal(request("a:b")).message().find("devices/system/cpu/online"), std::string::npos);
}

// A broker restart makes its saved events again: their names (an id's digits
// too) and pages stand, their event and CPUs are checked again.
TEST_F(PlanCreateTest, ASavedEventIsPlannedAgainAsItWas) {
  EventInfo saved;
  saved.id = 3;
  saved.name = "3";
  saved.event = "cpu-clock";
  saved.cpus = {1};
  saved.pages = 16;
  saved.filter = "f";
  auto plan = plan_recreate(saved, context_);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->name, "3");
  EXPECT_EQ(plan->pages, 16u);
  EXPECT_EQ(plan->cpus, std::vector<int>{1});
  EXPECT_EQ(plan->filter, "f");
  saved.cpus = {0, 5};
  EXPECT_FALSE(plan_recreate(saved, context_).ok()) << "CPU 5 is offline now";
  saved.cpus = {};
  EXPECT_EQ(plan_recreate(saved, context_)->cpus, (std::vector<int>{0, 1}));
  saved.event = "nolongerparses";
  EXPECT_FALSE(plan_recreate(saved, context_).ok());
  EXPECT_EQ(asked_, 0);
}

// The clock an event was made with is made again; an event saved before
// events had clocks keeps none; one whose attr was never known gets the
// default.
TEST_F(PlanCreateTest, ASavedEventKeepsItsClock) {
  EventInfo saved;
  saved.id = 3;
  saved.name = "3";
  saved.event = "cpu-clock";
  saved.pages = 16;
  saved.attr.attr.size = sys::kAttrSizeVer7;
  saved.attr.attr.use_clockid = 1;
  saved.attr.attr.clockid = CLOCK_TAI;
  auto plan = plan_recreate(saved, context_);
  ASSERT_TRUE(plan.ok()) << plan.error().message();
  EXPECT_EQ(plan->attr.attr.use_clockid, 1u);
  EXPECT_EQ(plan->attr.attr.clockid, CLOCK_TAI);
  saved.attr.attr.use_clockid = 0;
  saved.attr.attr.clockid = 0;
  EXPECT_EQ(plan_recreate(saved, context_)->attr.attr.use_clockid, 0u);
  saved.attr = {};
  plan = plan_recreate(saved, context_);
  EXPECT_EQ(plan->attr.attr.use_clockid, 1u);
  EXPECT_EQ(plan->attr.attr.clockid, CLOCK_MONOTONIC);
}

}  // namespace
}  // namespace pp::persistent

namespace pp::persistent {
namespace {

TEST(CheckPrintable, ControlCharactersAndNulAreRefusedSpacesOnlyInFilters) {
  EXPECT_TRUE(check_printable("the filter", "common_pid == 5 && prev_comm != \"x\"", true).ok());
  EXPECT_TRUE(check_printable("the event string", "cpu/event=0x3c,umask=1/u", false).ok());
  struct Case {
    std::string text;
    bool spaces;
    const char* says;
  } cases[] = {
      {std::string("common_pid == 1\0 || 1", 22), true, "\\x00 at offset 15 (a NUL byte"},
      {"common_pid == 1\n", true, "\\x0a at offset 15"},
      {"common_pid\t== 1", true, "\\x09 at offset 10"},
      {"a\x1b[31m", true, "\\x1b at offset 1"},
      {"cpu-clock\x7f", false, "\\x7f at offset 9"},
      {"cpu-clock ", false, "' ' at offset 9 (an event string has no spaces)"},
      {"cpu-clock\n", false, "\\x0a at offset 9"},
  };
  for (const Case& c : cases) {
    Status s = check_printable(c.spaces ? "the filter" : "the event string", c.text, c.spaces);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.error().kind(), ErrorKind::kUsage);
    EXPECT_NE(s.error().message().find(c.says), std::string::npos) << s.error().message();
  }
}

}  // namespace
}  // namespace pp::persistent

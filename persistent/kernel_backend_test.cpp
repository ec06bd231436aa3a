// The kernel backend against the fake kernel, the executable specification of
// the seed patch set's ABI (shared/seed/persistent-events-v3.txt). Each test
// names the patch whose behaviour it relies on.
#include "persistent/kernel_backend.h"

#include <sys/mman.h>

#include <gtest/gtest.h>

#include "persistent/names.h"
#include "persistent/testing/test_doubles.h"
#include "sys/testing/fake_kernel.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::persistent {
namespace {

constexpr uint64_t kGetppid = testing::kGetppidId;
constexpr const char* kEvents = "bus/event_source/devices/persistent/events";

class KernelBackendTest : public ::testing::Test {
 protected:
  explicit KernelBackendTest(sys::testing::FakeKernelOptions options = {}) {
    sysfs_.write("devices/system/cpu/online", "0-1\n");
    options.cpus = 2;
    options.sysfs_root = sysfs_.path();
    kernel_ = std::make_unique<sys::testing::FakeKernel>(options);
    backend_ = std::make_unique<KernelBackend>(
        *kernel_, sys::Tree(sysfs_.path()), RunDir(run_.path("run")), &resolver_, tracefs_.path());
  }

  // Debian 6.1's tracefs, where mce:mce_record has id 113.
  void use_debian_tracefs() {
    backend_ = std::make_unique<KernelBackend>(
        *kernel_, sys::Tree(sysfs_.path()), RunDir(run_.path("run")), &resolver_,
        ::pp::testing::fixtures_dir() + "/tracefs-debian-6.1");
  }

  CreateRequest getppid(std::string name = "") {
    CreateRequest r;
    r.event = "syscalls:sys_enter_getppid";
    r.name = std::move(name);
    return r;
  }

  std::vector<EventInfo> list(bool verbose = false) {
    auto events = backend_->list(verbose, nullptr);
    EXPECT_TRUE(events.ok()) << events.error().message();
    return events.ok() ? *events : std::vector<EventInfo>{};
  }

  ::pp::testing::TempDir sysfs_, run_, tracefs_;  // tracefs_: empty, no tracepoints
  testing::TestResolver resolver_;
  std::unique_ptr<sys::testing::FakeKernel> kernel_;
  std::unique_ptr<KernelBackend> backend_;
};

TEST(KernelBackendEntry, ParsesTheSysfsEventFile) {
  // 08/12: "persistent,config=106" (pevent_sysfs_show prints no newline).
  EXPECT_EQ(*parse_persistent_entry("persistent,config=106", "f"), 106u);
  EXPECT_EQ(*parse_persistent_entry("config=0x6a,persistent\n", "f"), 106u);
  for (const char* bad : {"persistent", "persistent,config=x", "persistent,event=1,config=2", ""}) {
    auto r = parse_persistent_entry(bad, "/sys/x/events/e");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message().find("/sys/x/events/e"), std::string::npos);
  }
}

// 06/12 + 08/12: the kernel's boot event, one id on every CPU, named in sysfs.
TEST_F(KernelBackendTest, ListsABootEventOnEveryCpu) {
  EXPECT_TRUE(list().empty()) << "11/12: no events group, no events";
  sys::EventAttr attr;
  attr.attr.type = PERF_TYPE_TRACEPOINT;
  attr.attr.size = sys::kAttrSizeVer7;
  attr.attr.config = 106;
  auto id = kernel_->add_boot_event("mce_record", attr);
  ASSERT_TRUE(id.ok());
  auto events = list();
  ASSERT_EQ(events.size(), 1u);
  const EventInfo& e = events[0];
  EXPECT_EQ(e.id, *id);
  EXPECT_EQ(e.name, "mce_record");
  EXPECT_EQ(e.event, "");
  EXPECT_EQ(e.backend, "kernel");
  EXPECT_EQ(e.cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(e.layout, Layout::kForward) << "05/12: the kernel's buffer is forward-written";
  EXPECT_EQ(e.buffer_bytes(), kSeedBufferBytes) << "05/12: CPU_BUFFER_NR_PAGES";
}

// 05/12 + 06/12: a boot event has no record of ours; its name is its
// tracepoint's, so tracefs gives the event string and the attr
// perf_add_persistent_tp opens it with, which record needs to decode it.
TEST_F(KernelBackendTest, ABootEventIsKnownByItsTracepoint) {
  use_debian_tracefs();
  auto id = kernel_->add_boot_event("mce_record", boot_tracepoint_attr(113));
  ASSERT_TRUE(id.ok());
  auto events = list();
  ASSERT_EQ(events.size(), 1u);
  const EventInfo& e = events[0];
  EXPECT_EQ(e.event, "mce:mce_record");
  EXPECT_EQ(e.attr.attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
  EXPECT_EQ(e.attr.attr.config, 113u) << "tracefs events/mce/mce_record/id";
  EXPECT_EQ(e.attr.attr.sample_type, uint64_t(PERF_SAMPLE_RAW));
  EXPECT_EQ(e.attr.attr.sample_period, 1u);
  EXPECT_EQ(e.attr.attr.wakeup_events, 1u);
}

// A sysfs name that is no tracepoint stays what the kernel says: a name.
TEST_F(KernelBackendTest, ABootEventThatIsNoTracepointKeepsOnlyItsName) {
  use_debian_tracefs();
  ASSERT_TRUE(kernel_->add_boot_event("not_a_tracepoint", boot_tracepoint_attr(5)).ok());
  auto events = list();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "");
  EXPECT_EQ(events[0].attr.attr.type, 0u);
}

// 12/12: DETACH makes the event behind each CPU's fd persistent and returns
// a new id, one per (event, CPU); the sysfs entry is named after the id.
TEST_F(KernelBackendTest, CreateDetachesOnEachCpuAndKeepsTheName) {
  auto created = backend_->create(getppid(), nullptr);
  ASSERT_TRUE(created.ok()) << created.error().message();
  EXPECT_EQ(created->name, "sys_enter_getppid");
  ASSERT_EQ(created->cpu_ids.size(), 2u);
  std::vector<uint64_t> ids = kernel_->persistent_ids();
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(created->cpu_ids[0].id, ids[0]);
  EXPECT_EQ(created->cpu_ids[1].id, ids[1]);
  EXPECT_EQ(kernel_->persistent_cpus(ids[0]), std::vector<int>{0});
  EXPECT_EQ(kernel_->persistent_cpus(ids[1]), std::vector<int>{1});
  auto entries = sys::Tree(sysfs_.path()).list(kEvents);
  ASSERT_TRUE(entries.ok());
  EXPECT_EQ(*entries, (std::vector<std::string>{std::to_string(ids[0]), std::to_string(ids[1])}));
  EXPECT_EQ(kernel_->open_fds(), 0u) << "each fd is closed after DETACH; the events run on";
  EXPECT_EQ(kernel_->live_events(), 2u);

  auto events = list();
  ASSERT_EQ(events.size(), 1u) << "one event, not one per sysfs entry";
  EXPECT_EQ(events[0].id, ids[0]);
  EXPECT_EQ(events[0].name, "sys_enter_getppid");
  EXPECT_EQ(events[0].event, "syscalls:sys_enter_getppid");
  EXPECT_EQ(events[0].cpus, (std::vector<int>{0, 1}));
  EXPECT_TRUE(sys::Tree(run_.path("run")).exists("kernel-events/sys_enter_getppid.json"));
}

// What reaches the kernel for a create: per CPU, perf record's sampling
// attr, lean for a tracepoint as with the broker (IP|TID|TIME|RAW:
// persistent/sample_layout.h), forward (the kernel allocates the buffer), on the default clock,
// DETACH, close. No mmap:
// 12/12 refuses DETACH with EBUSY once the event has a buffer.
TEST_F(KernelBackendTest, CreateCallsGolden) {
  ASSERT_TRUE(backend_->create(getppid("g"), nullptr).ok());
  std::string attr =
      "{type=tracepoint, config=0x13c, sample_period=1, "
      "sample_type=IP|TID|TIME|RAW, flags=sample_id_all|use_clockid, "
      "clockid=1}";
  EXPECT_EQ(kernel_->render_calls(), "perf_event_open(" + attr +
                                         ", pid=-1, cpu=0, group_fd=-1, flags=0) = fd#1\n" +
                                         "ioctl(fd#1, PERF_EVENT_IOC_DETACH, 0) = 1\n"
                                         "close(fd#1)\n"
                                         "perf_event_open(" +
                                         attr + ", pid=-1, cpu=1, group_fd=-1, flags=0) = fd#2\n" +
                                         "ioctl(fd#2, PERF_EVENT_IOC_DETACH, 0) = 2\n"
                                         "close(fd#2)\n");
}

// 12/12: ATTACH makes each CPU's event non-persistent; with no fd left it
// dies (10/12) and its sysfs entry goes (11/12).
TEST_F(KernelBackendTest, KillAttachesEveryCpuAndForgetsTheName) {
  ASSERT_TRUE(backend_->create(getppid("g"), nullptr).ok());
  auto killed = backend_->kill("g");
  ASSERT_TRUE(killed.ok()) << killed.error().message();
  EXPECT_EQ(killed->name, "g");
  EXPECT_TRUE(kernel_->persistent_ids().empty());
  EXPECT_EQ(kernel_->live_events(), 0u);
  EXPECT_FALSE(sys::Tree(sysfs_.path()).exists(kEvents));
  EXPECT_FALSE(sys::Tree(run_.path("run")).exists("kernel-events/g.json"));
  EXPECT_TRUE(list().empty());
  auto again = backend_->kill("g");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), ENOENT);
}

TEST_F(KernelBackendTest, AnyCpusIdNamesTheWholeEvent) {
  auto created = backend_->create(getppid("g"), nullptr);
  ASSERT_TRUE(created.ok());
  uint64_t second = created->cpu_ids[1].id;
  auto killed = backend_->kill(std::to_string(second));
  ASSERT_TRUE(killed.ok()) << killed.error().message();
  EXPECT_TRUE(kernel_->persistent_ids().empty()) << "both CPUs' events are gone";
}

// 05/12: perf_event_open(type=persistent, config=id, pid -1, cpu) gives an fd
// whose buffer maps read-only (PROT_WRITE: EACCES); the id is per CPU.
TEST_F(KernelBackendTest, OpenGivesAReadOnlyBufferOnEachCpu) {
  auto created = backend_->create(getppid("g"), nullptr);
  ASSERT_TRUE(created.ok());
  for (int cpu : {0, 1}) {
    auto buffer = backend_->open(created->id, cpu);
    ASSERT_TRUE(buffer.ok()) << buffer.error().message();
    EXPECT_EQ(buffer->layout, Layout::kForward);
    EXPECT_EQ(buffer->cpu, cpu);
    EXPECT_EQ(buffer->mmap_length, kSeedBufferBytes + sys::page_size());
    EXPECT_TRUE(kernel_->is_persistent_fd(buffer->fd.get()));
    auto ro = kernel_->mmap(buffer->fd.get(), buffer->mmap_length, PROT_READ);
    EXPECT_TRUE(ro.ok()) << ro.error().message();
    auto rw = kernel_->mmap(buffer->fd.get(), buffer->mmap_length, PROT_READ | PROT_WRITE);
    ASSERT_FALSE(rw.ok());
    EXPECT_EQ(rw.error().code(), EACCES);
  }
}

// 05/12: ENOENT for an id that is not on that CPU.
TEST_F(KernelBackendTest, OpenOfAnUnknownIdOrCpuIsNotFound) {
  auto unknown = backend_->open(99, 0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), ENOENT);
  EXPECT_NE(unknown.error().message().find("no persistent event 99 on CPU 0"), std::string::npos);
  CreateRequest one = getppid("g");
  one.cpus = "1";
  auto created = backend_->create(one, nullptr);
  ASSERT_TRUE(created.ok());
  auto elsewhere = backend_->open(created->id, 0);
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_EQ(elsewhere.error().code(), ENOENT);
  EXPECT_NE(elsewhere.error().message().find("has no buffer on CPU 0 (its CPUs: 1)"),
            std::string::npos)
      << elsewhere.error().message();
}

// 05/12 ("Must be root for persistent events") and perf_event_paranoid for
// CPU-wide events: an unprivileged process may neither create nor open.
TEST_F(KernelBackendTest, UnprivilegedIsRefusedAndChangesNothing) {
  auto created = backend_->create(getppid("g"), nullptr);
  ASSERT_TRUE(created.ok());
  kernel_->set_privileged(false);
  auto open = backend_->open(created->id, 0);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().code(), EACCES);
  EXPECT_NE(open.error().message().find("Permission denied"), std::string::npos)
      << open.error().message();
  auto create = backend_->create(getppid("h"), nullptr);
  ASSERT_FALSE(create.ok());
  EXPECT_EQ(create.error().code(), EACCES);
  EXPECT_EQ(create.error().kind(), ErrorKind::kRefused);
  auto kill = backend_->kill("g");
  ASSERT_FALSE(kill.ok());
  EXPECT_EQ(kill.error().code(), EACCES);
  EXPECT_EQ(kernel_->persistent_ids().size(), 2u) << "nothing changed";
}

// 12/12 is an RFC: a kernel may have the PMU (07/12) and not the ioctls.
TEST_F(KernelBackendTest, DetachUnknownToTheKernelIsExplained) {
  kernel_->inject_error(sys::testing::KernelCall::Kind::kIoctl, ENOTTY, 1, sys::kIocDetach);
  auto created = backend_->create(getppid("g"), nullptr);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.error().code(), ENOTTY);
  EXPECT_NE(created.error().message().find("PERF_EVENT_IOC_DETACH (ENOTTY)"), std::string::npos);
  EXPECT_TRUE(kernel_->persistent_ids().empty());
}

// A failure on a later CPU attaches the earlier CPUs' events again (12/12),
// so a failed create leaves nothing behind.
TEST_F(KernelBackendTest, FailedCreateRollsBack) {
  kernel_->inject_error(sys::testing::KernelCall::Kind::kIoctl, ENOMEM, 1, sys::kIocDetach);
  auto first = backend_->create(getppid("g"), nullptr);
  ASSERT_FALSE(first.ok()) << "CPU 0's DETACH fails: nothing to roll back";
  EXPECT_EQ(first.error().code(), ENOMEM);
  EXPECT_TRUE(kernel_->persistent_ids().empty());

  // sysfs says CPU 2 is online, the kernel has only 0 and 1: CPUs 0 and 1
  // are detached, CPU 2's open fails (EINVAL, a bad CPU), both are undone.
  sysfs_.write("devices/system/cpu/online", "0-2\n");
  auto third = backend_->create(getppid("g"), nullptr);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().kind(), ErrorKind::kRefused) << third.error().message();
  EXPECT_EQ(third.error().code(), EINVAL) << "the kernel's errno, not remapped";
  EXPECT_NE(third.error().message().find("CPU 2"), std::string::npos) << third.error().message();
  EXPECT_TRUE(kernel_->persistent_ids().empty()) << "CPUs 0 and 1 were not attached again";
  EXPECT_EQ(kernel_->live_events(), 0u);
  EXPECT_FALSE(sys::Tree(run_.path("run")).exists("kernel-events/g.json"));
  EXPECT_NE(kernel_->render_calls().find("PERF_EVENT_IOC_ATTACH"), std::string::npos);
}

TEST_F(KernelBackendTest, NamesAndPagesFollowTheRules) {
  sys::EventAttr attr;
  attr.attr.type = PERF_TYPE_TRACEPOINT;
  attr.attr.size = sys::kAttrSizeVer7;
  ASSERT_TRUE(kernel_->add_boot_event("mce_record", attr).ok());
  auto taken = backend_->create(getppid("mce_record"), nullptr);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().code(), EEXIST);
  EXPECT_NE(taken.error().message().find("taken by persistent event"), std::string::npos);
  ASSERT_TRUE(backend_->create(getppid(), nullptr).ok());
  auto twice = backend_->create(getppid(), nullptr);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code(), EEXIST) << "the default name is taken too";

  CreateRequest pages = getppid("p");
  pages.pages = 64;
  auto refused = backend_->create(pages, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), EINVAL);
  EXPECT_NE(refused.error().message().find("leave -m out"), std::string::npos);
  pages.pages = kSeedBufferBytes / sys::page_size();
  EXPECT_TRUE(backend_->create(pages, nullptr).ok()) << "-m equal to the kernel's is fine";

  auto bad = backend_->create(getppid("a/b"), nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), EINVAL);
  auto unparsable = backend_->create({"nonsense", "", 0, "", ""}, nullptr);
  ASSERT_FALSE(unparsable.ok());
  EXPECT_EQ(unparsable.error().code(), EINVAL);
}

// read(2) on a persistent event gives its count (05/12: it is the event).
TEST_F(KernelBackendTest, VerboseListCountsPerCpu) {
  ASSERT_TRUE(backend_->create(getppid("g"), nullptr).ok());
  for (int i = 0; i < 5; i++)
    kernel_->emit(0, {PERF_TYPE_TRACEPOINT, kGetppid});
  kernel_->emit(1, {PERF_TYPE_TRACEPOINT, kGetppid});
  auto events = list(true);
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(events[0].counts.has_value());
  ASSERT_EQ(events[0].counts->size(), 2u);
  EXPECT_EQ((*events[0].counts)[0].cpu, 0);
  EXPECT_EQ((*events[0].counts)[0].count, 5u);
  EXPECT_EQ((*events[0].counts)[1].count, 1u);
  EXPECT_FALSE(events[0].readers.has_value()) << "the kernel backend cannot count readers";
}

TEST_F(KernelBackendTest, FilterIsSetBeforeDetach) {
  CreateRequest r = getppid("f");
  r.filter = "common_pid != 0";
  ASSERT_TRUE(backend_->create(r, nullptr).ok());
  std::string calls = kernel_->render_calls();
  size_t filter = calls.find("PERF_EVENT_IOC_SET_FILTER");
  size_t detach = calls.find("PERF_EVENT_IOC_DETACH");
  ASSERT_NE(filter, std::string::npos) << calls;
  EXPECT_LT(filter, detach) << calls;
  EXPECT_NE(calls.find("common_pid != 0"), std::string::npos) << calls;
}

// A kernel without the ABI (mainline): no persistent PMU in sysfs, so the
// broker backend is chosen.
TEST(KernelBackendSelection, MainlineKernelMeansTheBroker) {
  ::pp::testing::TempDir sysfs;
  sys::testing::FakeKernel mainline(
      {.cpus = 2, .sysfs_root = sysfs.path(), .persistent_abi = false});
  EXPECT_FALSE(kernel_has_persistent_pmu(sys::Tree(sysfs.path())));
  sys::testing::FakeKernel seed({.cpus = 2, .sysfs_root = sysfs.path()});
  EXPECT_TRUE(kernel_has_persistent_pmu(sys::Tree(sysfs.path())));
}

}  // namespace
}  // namespace pp::persistent

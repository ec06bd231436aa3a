// The fake kernel is the executable specification of the seed patch set's
// ABI (shared/seed/persistent-events-v3.txt). Each test names the patch and
// what it says.
#include "sys/testing/fake_kernel.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <gtest/gtest.h>
#include <thread>

#include "sys/tree.h"
#include "tests/support/temp_dir.h"

namespace pp::sys::testing {
namespace {

constexpr uint64_t kTracepoint = 305;  // any id: the fake accepts every tracepoint by default
constexpr const char* kPmu = "bus/event_source/devices/persistent";

EventAttr tracepoint_attr(uint64_t sample_type = PERF_SAMPLE_RAW, bool backward = false) {
  EventAttr attr;
  attr.attr.type = PERF_TYPE_TRACEPOINT;
  attr.attr.size = kAttrSizeVer7;
  attr.attr.config = kTracepoint;
  attr.attr.sample_period = 1;
  attr.attr.sample_type = sample_type;
  attr.attr.wakeup_events = 1;
  attr.attr.write_backward = backward;
  return attr;
}

EventAttr persistent_attr(const FakeKernel& kernel, uint64_t id) {
  EventAttr attr;
  attr.attr.type = kernel.persistent_type();
  attr.attr.size = kAttrSizeVer7;
  attr.attr.config = id;
  attr.words[5] |= 1ull << 23;  // attr5:23, as pmu/ sets it from format/persistent
  return attr;
}

struct Sysfs {
  pp::testing::TempDir dir;
  Tree tree{dir.path()};
};

// 07/12: perf_pmu_register(&persistent_pmu, "persistent", ...) with the
// format group PMU_FORMAT_ATTR(persistent, "attr5:23").
TEST(FakeKernel, PublishesThePersistentPmu) {
  Sysfs sysfs;
  FakeKernel kernel({.sysfs_root = sysfs.dir.path()});
  EXPECT_EQ(*sysfs.tree.read(std::string(kPmu) + "/type"),
            std::to_string(kFakePersistentType) + "\n");
  EXPECT_EQ(*sysfs.tree.read(std::string(kPmu) + "/format/persistent"), "attr5:23\n");
  // 11/12: the events group exists only while an entry does.
  EXPECT_FALSE(sysfs.tree.exists(std::string(kPmu) + "/events"));
}

// The type is read from sysfs, never assumed to be the seed's 6.
TEST(FakeKernel, PersistentTypeIsWhatSysfsSays) {
  Sysfs sysfs;
  FakeKernel kernel({.sysfs_root = sysfs.dir.path(), .persistent_type = 42});
  EXPECT_EQ(*sysfs.tree.read(std::string(kPmu) + "/type"), "42\n");
  auto id = kernel.add_boot_event("mce_record", tracepoint_attr());
  ASSERT_TRUE(id.ok());
  EventAttr six = persistent_attr(kernel, *id);
  six.attr.type = 6;
  six.words[5] = 0;
  auto wrong = kernel.perf_event_open(six, -1, 0, -1, 0);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code(), ENOENT) << "type 6 is not the persistent PMU here";
  EXPECT_TRUE(kernel.perf_event_open(persistent_attr(kernel, *id), -1, 0, -1, 0).ok());
}

// 06/12 mcheck_init_tp(): perf_add_persistent_tp(&event_mce_record) opens
// the tracepoint on every possible CPU under one pevent; 08/12 shows it as
// events/mce_record = "persistent,config=<id>"; 09/12 gives ids from 1.
TEST(FakeKernel, BootEventHasOneIdOnEveryCpu) {
  Sysfs sysfs;
  FakeKernel kernel({.cpus = 3, .sysfs_root = sysfs.dir.path()});
  auto id = kernel.add_boot_event("mce_record", tracepoint_attr());
  ASSERT_TRUE(id.ok()) << id.error().message();
  EXPECT_EQ(*id, 1u);
  EXPECT_EQ(*sysfs.tree.read(std::string(kPmu) + "/events/mce_record"), "persistent,config=1");
  EXPECT_EQ(kernel.persistent_cpus(*id), (std::vector<int>{0, 1, 2}));
  for (int cpu = 0; cpu < 3; ++cpu) {
    auto fd = kernel.perf_event_open(persistent_attr(kernel, *id), -1, cpu, -1, 0);
    ASSERT_TRUE(fd.ok()) << "CPU " << cpu << ": " << fd.error().message();
    EXPECT_TRUE(kernel.is_persistent_fd(fd->get()));
    EXPECT_EQ(kernel.event_attr(fd->get())->attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
  }
  auto again = kernel.add_boot_event("mce_record", tracepoint_attr());
  EXPECT_FALSE(again.ok());
}

// 05/12 perf_get_persistent_event_fd(): EINVAL for a CPU >= nr_cpu_ids,
// EACCES without privilege, ENOENT when no event has the id on that CPU.
// Only per-CPU events exist ("Currently there is only support for per-cpu
// events"), so the fake refuses a pid too (the seed would ignore it).
TEST(FakeKernel, OpeningAPersistentEventChecksCpuPidPrivilegeAndId) {
  FakeKernel kernel({.cpus = 2});
  auto id = kernel.add_boot_event("mce_record", tracepoint_attr(), {0});
  ASSERT_TRUE(id.ok());
  struct Case {
    int cpu;
    pid_t pid;
    uint64_t id;
    bool privileged;
    int error;
  } cases[] = {
      {2, -1, *id, true, EINVAL}, {-1, -1, *id, true, EINVAL},
      {0, 0, *id, true, EINVAL},  {0, -1, *id, false, EACCES},
      {0, -1, 99, true, ENOENT},  {1, -1, *id, true, ENOENT},  // the event exists on CPU 0 only
  };
  for (const Case& c : cases) {
    kernel.set_privileged(c.privileged);
    auto fd = kernel.perf_event_open(persistent_attr(kernel, c.id), c.pid, c.cpu, -1, 0);
    ASSERT_FALSE(fd.ok()) << "cpu " << c.cpu << " pid " << c.pid << " id " << c.id;
    EXPECT_EQ(fd.error().code(), c.error) << fd.error().message();
  }
  kernel.set_privileged(true);
  EXPECT_TRUE(kernel.perf_event_open(persistent_attr(kernel, *id), -1, 0, -1, 0).ok());
}

// 12/12 perf_event_detach(): "makes an event persistent ... An unique
// identifier for the persistent event is returned"; pevent_alloc(NULL) names
// it after its id; one pevent per call, so one id per (event, CPU).
TEST(FakeKernel, DetachMakesAnEventPersistentWithAnIdPerCpu) {
  Sysfs sysfs;
  FakeKernel kernel({.cpus = 2, .sysfs_root = sysfs.dir.path()});
  std::vector<uint64_t> ids;
  for (int cpu = 0; cpu < 2; ++cpu) {
    auto fd = kernel.perf_event_open(tracepoint_attr(), -1, cpu, -1, 0);
    ASSERT_TRUE(fd.ok()) << fd.error().message();
    auto id = kernel.ioctl(fd->get(), kIocDetach, 0);
    ASSERT_TRUE(id.ok()) << id.error().message();
    ids.push_back(uint64_t(*id));
    // The fd closes here; the event lives on (10/12).
  }
  EXPECT_EQ(ids, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(kernel.persistent_ids(), ids);
  EXPECT_EQ(kernel.open_fds(), 0u);
  EXPECT_EQ(kernel.live_events(), 2u);
  EXPECT_EQ(*sysfs.tree.read(std::string(kPmu) + "/events/1"), "persistent,config=1");
  EXPECT_EQ(*sysfs.tree.read(std::string(kPmu) + "/events/2"), "persistent,config=2");
  // "The event must be reopened on the same cpu."
  EXPECT_TRUE(kernel.perf_event_open(persistent_attr(kernel, 1), -1, 0, -1, 0).ok());
  auto other_cpu = kernel.perf_event_open(persistent_attr(kernel, 1), -1, 1, -1, 0);
  ASSERT_FALSE(other_cpu.ok());
  EXPECT_EQ(other_cpu.error().code(), ENOENT);
  // It keeps counting with nobody holding it.
  EXPECT_EQ(kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint}), 1u);
  EXPECT_EQ(*kernel.persistent_count(1, 0), 1u);
}

// 12/12: EBUSY when the event already has a buffer ("make event persistent
// with already open (mmap'ed) buffers" is listed as unsupported in 00/12),
// EEXIST when already persistent, EINVAL for a per-task event ("task events
// not yet supported").
TEST(FakeKernel, DetachRefusesMappedPersistentAndPerTaskEvents) {
  FakeKernel kernel;
  auto mapped = kernel.perf_event_open(tracepoint_attr(), -1, 0, -1, 0);
  ASSERT_TRUE(mapped.ok());
  auto map = kernel.mmap(mapped->get(), 3 * page_size(), PROT_READ);
  ASSERT_TRUE(map.ok()) << map.error().message();
  auto busy = kernel.ioctl(mapped->get(), kIocDetach, 0);
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().code(), EBUSY);

  auto fd = kernel.perf_event_open(tracepoint_attr(), -1, 1, -1, 0);
  ASSERT_TRUE(fd.ok());
  ASSERT_TRUE(kernel.ioctl(fd->get(), kIocDetach, 0).ok());
  auto twice = kernel.ioctl(fd->get(), kIocDetach, 0);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code(), EEXIST);

  auto task = kernel.perf_event_open(tracepoint_attr(), getpid(), -1, -1, 0);
  ASSERT_TRUE(task.ok()) << task.error().message();
  auto per_task = kernel.ioctl(task->get(), kIocDetach, 0);
  ASSERT_FALSE(per_task.ok());
  EXPECT_EQ(per_task.error().code(), EINVAL);
}

// 05/12 persistent.c: CPU_BUFFER_NR_PAGES = 512 KiB; perf_mmap(): a
// persistent buffer maps read-only (PROT_WRITE: EACCES) and, being already
// allocated, only at its own size (EINVAL otherwise, as mainline's
// "data_page_nr(event->rb) != nr_pages").
TEST(FakeKernel, PersistentBufferMapsReadOnlyAtItsSize) {
  FakeKernel kernel;
  auto fd = kernel.perf_event_open(tracepoint_attr(), -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok());
  ASSERT_TRUE(kernel.ioctl(fd->get(), kIocDetach, 0).ok());
  size_t pages = kPersistentBufferBytes / page_size();
  EXPECT_EQ(kernel.buffer_pages(fd->get()), pages);

  auto writable = kernel.mmap(fd->get(), (1 + pages) * page_size(), PROT_READ | PROT_WRITE);
  ASSERT_FALSE(writable.ok());
  EXPECT_EQ(writable.error().code(), EACCES);
  for (size_t wrong : {pages / 2, pages * 2}) {
    auto map = kernel.mmap(fd->get(), (1 + wrong) * page_size(), PROT_READ);
    ASSERT_FALSE(map.ok()) << wrong << " pages";
    EXPECT_EQ(map.error().code(), EINVAL);
  }
  auto map = kernel.mmap(fd->get(), (1 + pages) * page_size(), PROT_READ);
  ASSERT_TRUE(map.ok()) << map.error().message();
  const auto* page = reinterpret_cast<const perf_event_mmap_page*>(map->data());
  EXPECT_EQ(page->data_size, pages * page_size());
  EXPECT_EQ(page->data_offset, page_size());
}

// 12/12 perf_event_attach(): "The event is no longer persistent in the
// system and will be removed after all users disconnected"; 11/12
// pevent_sysfs_unregister() removes the entry (and the group with the last
// one) when the pevent's last CPU goes; 09/12 put_event_id() frees the id,
// and idr_alloc() hands out the lowest free one again.
TEST(FakeKernel, AttachUnpublishesWithTheLastCpuAndFreesTheId) {
  Sysfs sysfs;
  FakeKernel kernel({.cpus = 2, .sysfs_root = sysfs.dir.path()});
  auto id = kernel.add_boot_event("mce_record", tracepoint_attr());
  ASSERT_TRUE(id.ok());
  std::string entry = std::string(kPmu) + "/events/mce_record";
  {
    auto fd0 = kernel.perf_event_open(persistent_attr(kernel, *id), -1, 0, -1, 0);
    ASSERT_TRUE(fd0.ok());
    ASSERT_TRUE(kernel.ioctl(fd0->get(), kIocAttach, 0).ok());
    EXPECT_FALSE(kernel.is_persistent_fd(fd0->get()));
    EXPECT_TRUE(sysfs.tree.exists(entry)) << "CPU 1 still holds the pevent";
    EXPECT_EQ(kernel.persistent_cpus(*id), (std::vector<int>{1}));
  }
  EXPECT_EQ(kernel.live_events(), 1u) << "CPU 0's event dies with its last fd";
  auto fd1 = kernel.perf_event_open(persistent_attr(kernel, *id), -1, 1, -1, 0);
  ASSERT_TRUE(fd1.ok());
  ASSERT_TRUE(kernel.ioctl(fd1->get(), kIocAttach, 0).ok());
  EXPECT_FALSE(sysfs.tree.exists(entry));
  EXPECT_FALSE(sysfs.tree.exists(std::string(kPmu) + "/events"));
  EXPECT_TRUE(kernel.persistent_ids().empty());
  auto reopen = kernel.perf_event_open(persistent_attr(kernel, *id), -1, 1, -1, 0);
  ASSERT_FALSE(reopen.ok());
  EXPECT_EQ(reopen.error().code(), ENOENT);

  auto fresh = kernel.perf_event_open(tracepoint_attr(), -1, 0, -1, 0);
  ASSERT_TRUE(fresh.ok());
  auto next = kernel.ioctl(fresh->get(), kIocDetach, 0);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, long(*id)) << "the lowest free id is reused";
}

// 12/12 perf_event_attach(): "pevent = find_event(event->pevent_id); if
// (!pevent) return -EINVAL".
TEST(FakeKernel, AttachOfAnOrdinaryEventIsInvalid) {
  FakeKernel kernel;
  auto fd = kernel.perf_event_open(tracepoint_attr(), -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok());
  auto attach = kernel.ioctl(fd->get(), kIocAttach, 0);
  ASSERT_FALSE(attach.ok());
  EXPECT_EQ(attach.error().code(), EINVAL);
}

// 10/12: an attached event lives while any fd or mapping holds it.
TEST(FakeKernel, AttachedEventDiesWithItsLastFdAndMapping) {
  FakeKernel kernel;
  auto fd = kernel.perf_event_open(tracepoint_attr(), -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok());
  auto id = kernel.ioctl(fd->get(), kIocDetach, 0);
  ASSERT_TRUE(id.ok());
  fd->reset();
  auto reader = kernel.perf_event_open(persistent_attr(kernel, uint64_t(*id)), -1, 0, -1, 0);
  ASSERT_TRUE(reader.ok());
  auto map =
      kernel.mmap(reader->get(), (1 + kernel.persistent_buffer_pages()) * page_size(), PROT_READ);
  ASSERT_TRUE(map.ok());
  ASSERT_TRUE(kernel.ioctl(reader->get(), kIocAttach, 0).ok());
  reader->reset();
  EXPECT_EQ(kernel.live_events(), 1u) << "the mapping still holds it";
  EXPECT_EQ(kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint}), 1u);
  map->reset();
  EXPECT_EQ(kernel.live_events(), 0u);
  EXPECT_EQ(kernel.mappings(), 0u);
  EXPECT_EQ(kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint}), 0u);
}

// 05/12 perf_event_set_output(): "Don't redirect read-only (persistent)
// events" - EACCES either way round.
TEST(FakeKernel, SetOutputToOrFromAPersistentEventIsRefused) {
  FakeKernel kernel;
  auto persistent = kernel.perf_event_open(tracepoint_attr(), -1, 0, -1, 0);
  ASSERT_TRUE(persistent.ok());
  ASSERT_TRUE(kernel.ioctl(persistent->get(), kIocDetach, 0).ok());
  auto plain = kernel.perf_event_open(tracepoint_attr(), -1, 0, -1, 0);
  ASSERT_TRUE(plain.ok());
  auto map = kernel.mmap(plain->get(), 2 * page_size(), PROT_READ);
  ASSERT_TRUE(map.ok());

  auto to = kernel.ioctl(plain->get(), PERF_EVENT_IOC_SET_OUTPUT, persistent->get());
  ASSERT_FALSE(to.ok());
  EXPECT_EQ(to.error().code(), EACCES);
  auto from = kernel.ioctl(persistent->get(), PERF_EVENT_IOC_SET_OUTPUT, plain->get());
  ASSERT_FALSE(from.ok());
  EXPECT_EQ(from.error().code(), EACCES);

  // Between two ordinary events it works: the second writes into the first's buffer.
  auto second = kernel.perf_event_open(tracepoint_attr(), -1, 0, -1, 0);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(kernel.ioctl(second->get(), PERF_EVENT_IOC_SET_OUTPUT, plain->get()).ok());
  EXPECT_EQ(kernel.buffer_pages(second->get()), 1u);
}

// 05/12: "put event into persistent state (not yet supported)" - a new
// event with attr.persistent set gives EOPNOTSUPP.
TEST(FakeKernel, PersistentFlagOnANewEventIsNotSupported) {
  FakeKernel kernel;
  EventAttr attr = tracepoint_attr();
  attr.words[5] |= 1ull << 23;
  auto fd = kernel.perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code(), EOPNOTSUPP);
}

// A mainline kernel has no persistent PMU and answers the
// seed's _IO('$', 8/9) with ENOTTY; bit 23 is mmap2 there.
TEST(FakeKernel, MainlineKernelHasNoPersistentAbi) {
  Sysfs sysfs;
  FakeKernel kernel({.sysfs_root = sysfs.dir.path(), .persistent_abi = false});
  EXPECT_FALSE(sysfs.tree.exists(kPmu));
  EventAttr attr = tracepoint_attr();
  attr.words[5] |= 1ull << 23;  // mmap2
  auto fd = kernel.perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  for (unsigned long request : {kIocDetach, kIocAttach}) {
    auto result = kernel.ioctl(fd->get(), request, 0);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code(), ENOTTY);
  }
  auto open = kernel.perf_event_open(persistent_attr(kernel, 1), -1, 0, -1, 0);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().code(), ENOENT);
  EXPECT_FALSE(kernel.add_boot_event("mce_record", tracepoint_attr()).ok());
}

TEST(FakeKernel, OrdinaryOpenChecks) {
  struct Case {
    const char* what;
    int cpu;
    pid_t pid;
    uint32_t type;
    uint64_t config;
    bool privileged;
    bool backward;
    int error;
  } cases[] = {
      {"cpu past the last", 2, -1, PERF_TYPE_TRACEPOINT, kTracepoint, true, false, EINVAL},
      {"no task and no cpu", -1, -1, PERF_TYPE_TRACEPOINT, kTracepoint, true, false, EINVAL},
      {"unprivileged CPU-wide", 0, -1, PERF_TYPE_TRACEPOINT, kTracepoint, false, false, EACCES},
      {"no hardware PMU", 0, -1, PERF_TYPE_HARDWARE, 0, true, false, ENOENT},
      {"unknown software event", 0, -1, PERF_TYPE_SOFTWARE, 99, true, false, ENOENT},
      {"unknown tracepoint", 0, -1, PERF_TYPE_TRACEPOINT, 7, true, false, EINVAL},
      {"write_backward before 4.7", 0, -1, PERF_TYPE_TRACEPOINT, kTracepoint, true, true, EINVAL},
  };
  for (const Case& c : cases) {
    FakeKernel kernel(
        {.privileged = c.privileged, .write_backward = false, .tracepoints = {kTracepoint}});
    EventAttr attr = tracepoint_attr(PERF_SAMPLE_RAW, c.backward);
    attr.attr.type = c.type;
    attr.attr.config = c.config;
    auto fd = kernel.perf_event_open(attr, c.pid, c.cpu, -1, 0);
    ASSERT_FALSE(fd.ok()) << c.what;
    EXPECT_EQ(fd.error().code(), c.error) << c.what << ": " << fd.error().message();
    EXPECT_NE(fd.error().message().find("perf_event_open"), std::string::npos);
  }
  FakeKernel unprivileged({.privileged = false});
  EXPECT_TRUE(unprivileged.perf_event_open(tracepoint_attr(), getpid(), -1, -1, 0).ok())
      << "a task may watch itself without privilege";
}

// perf_copy_attr() copies attr.size bytes: a field past the size the tool
// sent never reaches the kernel.
TEST(FakeKernel, KernelSeesOnlyAttrSizeBytes) {
  FakeKernel kernel;
  EventAttr attr = tracepoint_attr();
  attr.config3() = 0x77;  // word 16, past the 128 bytes of PERF_ATTR_SIZE_VER7
  auto fd = kernel.perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(kernel.event_attr(fd->get())->config3(), 0u);
  attr.attr.size = kAttrSizeVer8;
  auto fd8 = kernel.perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_TRUE(fd8.ok());
  EXPECT_EQ(kernel.event_attr(fd8->get())->config3(), 0x77u);
  attr.attr.size = 32;
  auto small = kernel.perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.error().code(), E2BIG);
}

TEST(FakeKernel, ReadGivesTheCountInReadFormatLayout) {
  FakeKernel kernel;
  EventAttr attr = tracepoint_attr();
  attr.attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_ID;
  auto fd = kernel.perf_event_open(attr, -1, 1, -1, 0);
  ASSERT_TRUE(fd.ok());
  for (int i = 0; i < 5; ++i)
    kernel.emit(1, {PERF_TYPE_TRACEPOINT, kTracepoint});
  kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint});  // another CPU: not counted
  uint64_t values[3] = {};
  auto n = kernel.read(fd->get(), values, sizeof(values));
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(*n, sizeof(values));
  EXPECT_EQ(values[0], 5u);
  EXPECT_GT(values[1], 0u) << "time_enabled: real time since the open";
  EXPECT_EQ(values[2], *event_id(kernel, fd->get()));
  // Disabled, time_enabled stops: how the broker sees a holder's DISABLE.
  ASSERT_TRUE(disable_event(kernel, fd->get()).ok());
  auto first = read_event(kernel, fd->get(), attr.attr.read_format);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto second = read_event(kernel, fd->get(), attr.attr.read_format);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->time_enabled, second->time_enabled);
  ASSERT_TRUE(enable_event(kernel, fd->get()).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  auto third = read_event(kernel, fd->get(), attr.attr.read_format);
  ASSERT_TRUE(third.ok());
  EXPECT_GT(*third->time_enabled, *second->time_enabled);
  uint64_t one = 0;
  auto small = kernel.read(fd->get(), &one, sizeof(one));
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.error().code(), ENOSPC);
}

TEST(FakeKernel, DisabledEventsAndFiltersDoNotCount) {
  FakeKernel kernel;
  EventAttr attr = tracepoint_attr();
  attr.attr.disabled = 1;
  auto fd = kernel.perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok());
  EXPECT_EQ(kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint}), 0u);
  ASSERT_TRUE(kernel.ioctl(fd->get(), PERF_EVENT_IOC_ENABLE, 0).ok());
  ASSERT_TRUE(set_filter(kernel, fd->get(), "common_pid == 42").ok());
  EXPECT_EQ(kernel.filter(fd->get()), "common_pid == 42");
  EXPECT_EQ(kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint}, {.passes_filter = false}), 0u);
  EXPECT_EQ(kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint}, {.pid = 42}), 1u);
  EXPECT_EQ(kernel.count(fd->get()), 1u);

  EventAttr software;
  software.attr.type = PERF_TYPE_SOFTWARE;
  software.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  software.attr.size = kAttrSizeVer7;
  auto sw = kernel.perf_event_open(software, -1, 0, -1, 0);
  ASSERT_TRUE(sw.ok());
  auto filter = set_filter(kernel, sw->get(), "x");
  ASSERT_FALSE(filter.ok());
  EXPECT_EQ(filter.error().code(), EINVAL);
}

// A sample as perf_output_sample() lays it out, found where the writer put it.
TEST(FakeKernel, SamplesFollowSampleTypeInTheMappedRing) {
  for (bool backward : {false, true}) {
    FakeKernel kernel;
    EventAttr attr = tracepoint_attr(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                         PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW,
                                     backward);
    auto fd = kernel.perf_event_open(attr, -1, 1, -1, 0);
    ASSERT_TRUE(fd.ok());
    auto map = kernel.mmap(fd->get(), 2 * page_size(), PROT_READ);
    ASSERT_TRUE(map.ok());
    std::vector<uint8_t> raw = {1, 2, 3, 4, 5};
    kernel.emit(1, {PERF_TYPE_TRACEPOINT, kTracepoint},
                {.pid = 7, .tid = 8, .time = 123456, .raw = raw});
    const auto* page = reinterpret_cast<const perf_event_mmap_page*>(map->data());
    uint64_t head = page->data_head;
    // 8 header + 8 id + 8 pid/tid + 8 time + 8 cpu + 8 period + 4 size + 5 raw, padded: 64
    EXPECT_EQ(head, backward ? uint64_t(-64) : 64u) << (backward ? "backward" : "forward");
    uint64_t start = backward ? head : 0;
    const uint8_t* record = map->data() + page->data_offset + (start & (page->data_size - 1));
    perf_event_header header;
    std::memcpy(&header, record, sizeof(header));
    EXPECT_EQ(header.type, uint32_t(PERF_RECORD_SAMPLE));
    EXPECT_EQ(header.misc, PERF_RECORD_MISC_KERNEL);
    EXPECT_EQ(header.size, 64u);
    uint64_t words[6];
    std::memcpy(words, record + 8, sizeof(words));
    EXPECT_EQ(words[0], *event_id(kernel, fd->get()));
    EXPECT_EQ(words[1], 7u | (8ull << 32));
    EXPECT_EQ(words[2], 123456u);
    EXPECT_EQ(words[3], 1u);  // cpu 1, res 0
    EXPECT_EQ(words[4], 1u);  // period
    uint32_t raw_size;
    std::memcpy(&raw_size, record + 48, sizeof(raw_size));
    EXPECT_EQ(raw_size, 12u) << "5 bytes padded to 12, so that 4 + 12 is a u64 multiple";
    EXPECT_EQ(std::memcmp(record + 52, raw.data(), raw.size()), 0);
  }
}

// A writable mapping is not in overwrite mode: the writer stops at data_tail
// and reports the drops with PERF_RECORD_LOST once there is room again.
TEST(FakeKernel, WritableBufferStopsAtTheTailAndReportsLoss) {
  FakeKernel kernel;
  EventAttr attr = tracepoint_attr(PERF_SAMPLE_IDENTIFIER);
  auto fd = kernel.perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok());
  auto map = kernel.mmap(fd->get(), 2 * page_size(), PROT_READ | PROT_WRITE);
  ASSERT_TRUE(map.ok());
  auto* page = reinterpret_cast<perf_event_mmap_page*>(const_cast<uint8_t*>(map->data()));
  size_t fit = page_size() / 16;  // 16-byte samples
  for (size_t i = 0; i < fit + 3; ++i)
    kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint});
  EXPECT_EQ(page->data_head, page_size());
  page->data_tail = page->data_head;  // the reader consumed everything
  kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint});
  const uint8_t* lost = map->data() + page_size();  // wrapped to the start
  perf_event_header header;
  std::memcpy(&header, lost, sizeof(header));
  EXPECT_EQ(header.type, uint32_t(PERF_RECORD_LOST));
  uint64_t body[2];
  std::memcpy(body, lost + 8, sizeof(body));
  EXPECT_EQ(body[0], *event_id(kernel, fd->get()));
  EXPECT_EQ(body[1], 3u);
  EXPECT_EQ(page->data_head, page_size() + 24 + 16);
}

// A read-only mapping is in overwrite mode: the writer never stops.
TEST(FakeKernel, ReadOnlyBufferOverwrites) {
  FakeKernel kernel;
  auto fd = kernel.perf_event_open(tracepoint_attr(PERF_SAMPLE_IDENTIFIER), -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok());
  auto map = kernel.mmap(fd->get(), 2 * page_size(), PROT_READ);
  ASSERT_TRUE(map.ok());
  size_t n = 3 * page_size() / 16;
  for (size_t i = 0; i < n; ++i)
    kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint});
  const auto* page = reinterpret_cast<const perf_event_mmap_page*>(map->data());
  EXPECT_EQ(page->data_head, n * 16);
}

TEST(FakeKernel, InjectedLossRecordsCarryTheSampleIdTrailer) {
  FakeKernel kernel;
  EventAttr attr = tracepoint_attr(PERF_SAMPLE_TID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER);
  attr.attr.sample_id_all = 1;
  auto fd = kernel.perf_event_open(attr, -1, 1, -1, 0);
  ASSERT_TRUE(fd.ok());
  auto map = kernel.mmap(fd->get(), 2 * page_size(), PROT_READ);
  ASSERT_TRUE(map.ok());
  EXPECT_EQ(kernel.emit_lost(1, {PERF_TYPE_TRACEPOINT, kTracepoint}, 5), 1u);
  EXPECT_EQ(kernel.emit_lost_samples(1, {PERF_TYPE_TRACEPOINT, kTracepoint}, 6), 1u);
  const uint8_t* data = map->data() + page_size();
  perf_event_header header;
  std::memcpy(&header, data, sizeof(header));
  EXPECT_EQ(header.type, uint32_t(PERF_RECORD_LOST));
  EXPECT_EQ(header.size, 8u + 16 + 24);  // id, lost; tid, cpu, identifier
  uint64_t words[5];
  std::memcpy(words, data + 8, sizeof(words));
  EXPECT_EQ(words[1], 5u);
  EXPECT_EQ(words[3], 1u) << "cpu 1 in the trailer";
  EXPECT_EQ(words[4], *event_id(kernel, fd->get()));
  std::memcpy(&header, data + 48, sizeof(header));
  EXPECT_EQ(header.type, uint32_t(PERF_RECORD_LOST_SAMPLES));
  EXPECT_EQ(header.size, 8u + 8 + 24);
  uint64_t lost;
  std::memcpy(&lost, data + 56, sizeof(lost));
  EXPECT_EQ(lost, 6u);
}

TEST(FakeKernel, PausedOutputLosesSamples) {
  FakeKernel kernel;
  EventAttr attr = tracepoint_attr(PERF_SAMPLE_IDENTIFIER);
  attr.attr.read_format = PERF_FORMAT_LOST;
  auto fd = kernel.perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok());
  auto map = kernel.mmap(fd->get(), 2 * page_size(), PROT_READ);
  ASSERT_TRUE(map.ok());
  ASSERT_TRUE(kernel.ioctl(fd->get(), PERF_EVENT_IOC_PAUSE_OUTPUT, 1).ok());
  kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint});
  kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint});
  uint64_t values[2];
  ASSERT_TRUE(kernel.read(fd->get(), values, sizeof(values)).ok());
  EXPECT_EQ(values[0], 2u);
  EXPECT_EQ(values[1], 2u) << "PERF_FORMAT_LOST";
  ASSERT_TRUE(kernel.ioctl(fd->get(), PERF_EVENT_IOC_PAUSE_OUTPUT, 0).ok());
  kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint});
  const auto* page = reinterpret_cast<const perf_event_mmap_page*>(map->data());
  EXPECT_EQ(page->data_head, 24u + 16) << "a LOST record, then the sample";
}

// Fds are real and pollable; a wakeup is taken by the first poll that sees
// it, as perf_poll()'s atomic_xchg(&rb->poll, 0) does for every fd sharing
// the buffer.
TEST(FakeKernel, PollWakesOnceForEveryFdOfABuffer) {
  FakeKernel kernel;
  auto id = kernel.add_boot_event("mce_record", tracepoint_attr(), {0}, 1);
  ASSERT_TRUE(id.ok());
  auto a = kernel.perf_event_open(persistent_attr(kernel, *id), -1, 0, -1, 0);
  auto b = kernel.perf_event_open(persistent_attr(kernel, *id), -1, 0, -1, 0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_GE(::fcntl(a->get(), F_GETFD), 0) << "a real fd";
  EXPECT_TRUE(::fcntl(a->get(), F_GETFD) & FD_CLOEXEC);

  pollfd both[2] = {{a->get(), POLLIN, 0}, {b->get(), POLLIN, 0}};
  EXPECT_EQ(*kernel.poll(both, 0), 0);
  kernel.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint});  // wakeup_events = 1
  EXPECT_EQ(*kernel.poll(both, 1000), 1);
  EXPECT_EQ(both[0].revents, POLLIN | POLLRDNORM);
  EXPECT_EQ(both[1].revents, 0);
  EXPECT_EQ(*kernel.poll(both, 0), 0) << "the wakeup was consumed";

  auto unmapped = kernel.perf_event_open(tracepoint_attr(), -1, 1, -1, 0);
  ASSERT_TRUE(unmapped.ok());
  pollfd hup = {unmapped->get(), POLLIN, 0};
  EXPECT_EQ(*kernel.poll({&hup, 1}, 1000), 1);
  EXPECT_EQ(hup.revents, POLLHUP) << "perf_poll() without a buffer";
}

TEST(FakeKernel, InjectedErrorsComeFirst) {
  FakeKernel kernel;
  kernel.inject_error(KernelCall::Kind::kOpen, EMFILE);
  auto fd = kernel.perf_event_open(tracepoint_attr(), -1, 0, -1, 0);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code(), EMFILE);
  fd = kernel.perf_event_open(tracepoint_attr(), -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok());
  kernel.inject_error(KernelCall::Kind::kIoctl, ENOMEM, 1, kIocDetach);
  EXPECT_TRUE(kernel.ioctl(fd->get(), PERF_EVENT_IOC_ENABLE, 0).ok());
  auto detach = kernel.ioctl(fd->get(), kIocDetach, 0);
  ASSERT_FALSE(detach.ok());
  EXPECT_EQ(detach.error().code(), ENOMEM);
  EXPECT_TRUE(kernel.ioctl(fd->get(), kIocDetach, 0).ok());
}

TEST(FakeKernel, EverythingIsReleased) {
  FakeKernel kernel;
  {
    auto fd = kernel.perf_event_open(tracepoint_attr(), -1, 0, -1, 0);
    ASSERT_TRUE(fd.ok());
    auto map = kernel.mmap(fd->get(), 2 * page_size(), PROT_READ);
    ASSERT_TRUE(map.ok());
    EXPECT_EQ(kernel.open_fds(), 1u);
    EXPECT_EQ(kernel.mappings(), 1u);
  }
  EXPECT_EQ(kernel.open_fds(), 0u);
  EXPECT_EQ(kernel.mappings(), 0u);
  EXPECT_EQ(kernel.live_events(), 0u);
}

// STYLE.md 11: the log is what a golden test compares.
TEST(FakeKernel, RendersTheCallLog) {
  FakeKernel kernel({.cpus = 1});
  {
    EventAttr attr = tracepoint_attr(PERF_SAMPLE_TID | PERF_SAMPLE_RAW, true);
    attr.attr.disabled = 1;
    auto fd = kernel.perf_event_open(attr, -1, 0, -1, 0);
    ASSERT_TRUE(fd.ok());
    ASSERT_TRUE(set_filter(kernel, fd->get(), "common_pid != 0").ok());
    ASSERT_TRUE(event_id(kernel, fd->get()).ok());
    ASSERT_TRUE(kernel.ioctl(fd->get(), kIocDetach, 0).ok());
    ASSERT_TRUE(kernel.ioctl(fd->get(), PERF_EVENT_IOC_ENABLE, 0).ok());
  }
  auto reader = kernel.perf_event_open(persistent_attr(kernel, 1), -1, 0, -1, 0);
  ASSERT_TRUE(reader.ok());
  ASSERT_FALSE(kernel.mmap(reader->get(), 2 * page_size(), PROT_READ | PROT_WRITE).ok());
  ASSERT_FALSE(kernel.perf_event_open(persistent_attr(kernel, 9), -1, 0, -1, 0).ok());
  ASSERT_TRUE(kernel.ioctl(reader->get(), kIocAttach, 0).ok());
  reader->reset();
  std::string pages = std::to_string(2 * page_size());
  EXPECT_EQ(kernel.render_calls(),
            "perf_event_open({type=tracepoint, config=0x131, sample_period=1, "
            "sample_type=TID|RAW, flags=disabled|write_backward, wakeup_events=1}, pid=-1, "
            "cpu=0, group_fd=-1, flags=0) = fd#1\n"
            "ioctl(fd#1, PERF_EVENT_IOC_SET_FILTER, \"common_pid != 0\") = 0\n"
            "ioctl(fd#1, PERF_EVENT_IOC_ID, &id) = 0 (id 1)\n"
            "ioctl(fd#1, PERF_EVENT_IOC_DETACH, 0) = 1\n"
            "ioctl(fd#1, PERF_EVENT_IOC_ENABLE, 0) = 0\n"
            "close(fd#1)\n"
            "perf_event_open({type=persistent, config=0x1, flags=persistent}, pid=-1, cpu=0, "
            "group_fd=-1, flags=0) = fd#2\n"
            "mmap(fd#2, " +
                pages +
                ", PROT_READ|PROT_WRITE) = -1 EACCES\n"
                "perf_event_open({type=persistent, config=0x9, flags=persistent}, pid=-1, cpu=0, "
                "group_fd=-1, flags=0) = -1 ENOENT\n"
                "ioctl(fd#2, PERF_EVENT_IOC_ATTACH, 0) = 0\n"
                "close(fd#2)\n");
  kernel.clear_calls();
  EXPECT_EQ(kernel.render_calls(), "");
}

}  // namespace
}  // namespace pp::sys::testing

// The real kernel through sys::real_kernel(): the seam works on this machine.
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "sys/kernel.h"
#include "tests/kernel/kernel_env.h"

namespace pp::sys {
namespace {

TEST(RealKernel, PerCpuSoftwareEventCounts) {
  std::string why;
  PP_SKIP_UNLESS(testing::perf_allowed(&why), why);
  EventAttr attr;
  attr.attr.type = PERF_TYPE_SOFTWARE;
  attr.attr.size = kAttrSizeVer7;
  attr.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  auto fd = real_kernel().perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  usleep(20000);
  uint64_t count = 0;
  auto n = real_kernel().read(fd->get(), &count, sizeof(count));
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(*n, sizeof(count));
  EXPECT_GT(count, 0u) << "cpu-clock on CPU 0 counted nothing in 20 ms";
}

TEST(RealKernel, UnknownEventTypeIsRefused) {
  std::string why;
  PP_SKIP_UNLESS(testing::perf_allowed(&why), why);
  EventAttr attr;
  attr.attr.type = 0x7fffffff;
  attr.attr.size = kAttrSizeVer7;
  auto fd = real_kernel().perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code(), ENOENT);
}

TEST(RealKernel, TracepointBufferMapsReadOnly) {
  std::string why;
  PP_SKIP_UNLESS(testing::perf_allowed(&why), why);
  long id = testing::tracepoint_id("syscalls", "sys_enter_getppid");
  PP_SKIP_UNLESS(id >= 0, "no syscalls:sys_enter_getppid in tracefs");
  EventAttr attr;
  attr.attr.type = PERF_TYPE_TRACEPOINT;
  attr.attr.size = kAttrSizeVer7;
  attr.attr.config = uint64_t(id);
  attr.attr.sample_period = 1;
  attr.attr.sample_type = PERF_SAMPLE_RAW;
  attr.attr.write_backward = 1;
  auto fd = real_kernel().perf_event_open(attr, -1, 0, -1, 0);
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  auto map = real_kernel().mmap(fd->get(), 9 * page_size(), PROT_READ);
  ASSERT_TRUE(map.ok()) << map.error().message();
  EXPECT_EQ(map->size(), 9 * page_size());
}

}  // namespace
}  // namespace pp::sys

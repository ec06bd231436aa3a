// sys/page_offline.h on this machine's kernel, reading only: a page frame's
// HWPOISON bit in the real /proc/kpageflags and vm.enable_soft_offline
// where the kernel has it, and a write the kernel refuses. Nothing here
// offlines a page of the CI machine: a successful write is proven in the
// QEMU guest (tests/qemu/mce-test).
#include "sys/page_offline.h"

#include <unistd.h>

#include <gtest/gtest.h>
#include <string>

namespace pp::sys {
namespace {

TEST(RealPageOffline, ReadsTheRealKpageflagsAndSysctl) {
  if (::access("/proc/kpageflags", R_OK) != 0)
    GTEST_SKIP() << "no readable /proc/kpageflags (a kernel without CONFIG_PROC_PAGE_MONITOR)";
  auto kernel = real_page_offline("/sys", "/proc");
  // Page frame 0x100 (1 MiB) exists on every x86 machine; a live
  // machine's kernel has not poisoned it.
  auto poisoned = kernel->hwpoisoned(0x100);
  ASSERT_TRUE(poisoned.ok()) << poisoned.error().message();
  EXPECT_FALSE(*poisoned);
  // Far past any machine's memory: refused, naming the file.
  auto past = kernel->hwpoisoned(uint64_t{1} << 52);
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message().find("/proc/kpageflags"), std::string::npos);
  auto enabled = kernel->soft_offline_enabled();
  ASSERT_TRUE(enabled.ok()) << enabled.error().message();
  EXPECT_EQ(enabled->has_value(), ::access("/proc/sys/vm/enable_soft_offline", F_OK) == 0);
}

// The write path against the real file, with a page no machine has: the
// kernel refuses it (ENXIO, or EINVAL) and offlines nothing; a kernel
// without CONFIG_MEMORY_FAILURE has no file (ENOENT).
TEST(RealPageOffline, TheKernelRefusesAPageItDoesNotHave) {
  bool has_file = ::access("/sys/devices/system/memory/soft_offline_page", F_OK) == 0;
  auto kernel = real_page_offline("/sys", "/proc");
  Status s = kernel->offline(uint64_t{1} << 60, PageOfflineKind::kSoft);
  ASSERT_FALSE(s.ok());
  if (has_file)
    EXPECT_TRUE(s.error().code() == ENXIO || s.error().code() == EINVAL) << s.error().message();
  else
    EXPECT_EQ(s.error().code(), ENOENT) << s.error().message();
  EXPECT_NE(s.error().message().find("soft_offline_page"), std::string::npos);
}

}  // namespace
}  // namespace pp::sys

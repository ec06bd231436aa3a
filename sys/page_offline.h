// Taking a physical page of memory out of use: the kernel's side of watch's
// page offlining (watch/offline.h), behind one narrow interface so that the
// policy and its actions are tested against a fake
// (sys/testing/fake_page_offline.h).
//
// The files, under the roots it is given (Documentation/ABI/testing/
// sysfs-memory-page-offline and admin-guide/mm/pagemap.rst in the kernel's
// tree; mm/memory-failure.c):
//
//   <sysfs>/devices/system/memory/soft_offline_page   write "0x12345000\n": the page's
//   <sysfs>/devices/system/memory/hard_offline_page   physical address; soft migrates
//                                                    its contents, hard poisons it
//                                                    (and kills its users)
//   <proc>/kpageflags                                one u64 of flags per page frame,
//                                                    at offset pfn * 8; bit 19 HWPOISON
//   <proc>/sys/vm/enable_soft_offline                "1\n" or "0\n" (Linux 6.11 and later;
//                                                    absent before: soft offlining is on)
//
// A write that the kernel refuses fails with its errno: EBUSY or EAGAIN (the
// page could not be isolated now: try again later), EIO (the migration
// failed), EINVAL (no such page, or not a page the kernel offlines), EPERM
// (vm.enable_soft_offline is 0, or no CAP_SYS_ADMIN), ENOENT (a kernel
// without CONFIG_MEMORY_FAILURE).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace pp::sys {

enum class PageOfflineKind { kSoft, kHard };

// "soft_offline_page", "hard_offline_page".
std::string_view page_offline_file(PageOfflineKind kind);

// kpageflags' bit for a page the kernel has poisoned (include/uapi/linux/kernel-page-flags.h).
inline constexpr int kKpfHwpoison = 19;

class PageOfflineKernel {
 public:
  virtual ~PageOfflineKernel();
  // Whether the kernel has poisoned page frame `pfn` already (kpageflags
  // bit 19). An error when kpageflags cannot be read (no CONFIG_PROC_PAGE_MONITOR,
  // not root, a pfn past its end: EINVAL).
  virtual Result<bool> hwpoisoned(uint64_t pfn) = 0;
  // vm.enable_soft_offline: nullopt where the kernel has no such sysctl
  // (soft offlining is then always allowed).
  virtual Result<std::optional<bool>> soft_offline_enabled() = 0;
  // Writes `address` (physical) to the soft or hard offline file. The
  // kernel's refusal comes back with its errno as the Error's code.
  virtual Status offline(uint64_t address, PageOfflineKind kind) = 0;
};

// The real kernel under `sysfs_root` and `proc_root` ("/sys", "/proc").
std::unique_ptr<PageOfflineKernel> real_page_offline(std::string sysfs_root, std::string proc_root);

}  // namespace pp::sys

#include "sys/page_offline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/strings.h"
#include "sys/fd.h"
#include "sys/tree.h"

namespace pp::sys {

std::string_view page_offline_file(PageOfflineKind kind) {
  return kind == PageOfflineKind::kSoft ? "soft_offline_page" : "hard_offline_page";
}

PageOfflineKernel::~PageOfflineKernel() = default;

namespace {

class RealPageOffline final : public PageOfflineKernel {
 public:
  RealPageOffline(std::string sysfs_root, std::string proc_root)
      : sysfs_(std::move(sysfs_root)), proc_(std::move(proc_root)) {}

  Result<bool> hwpoisoned(uint64_t pfn) override {
    std::string file = proc_.path("kpageflags");
    if (pfn > (UINT64_MAX >> 3))
      return Error(EINVAL, "page frame " + hex(pfn) + " is past the end of " + file);
    Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
      return error_from_errno(errno, "cannot open " + file);
    uint64_t flags = 0;
    ssize_t n;
    do {
      n = ::pread(fd.get(), &flags, sizeof(flags), off_t(pfn * sizeof(flags)));
    } while (n < 0 && errno == EINTR);
    if (n < 0)
      return error_from_errno(errno, "cannot read page frame " + hex(pfn) + "'s flags in " + file);
    if (n != sizeof(flags))
      return Error(EINVAL, "page frame " + hex(pfn) + " is past the end of " + file);
    return (flags >> kKpfHwpoison & 1) != 0;
  }

  Result<std::optional<bool>> soft_offline_enabled() override {
    constexpr const char* kSysctl = "sys/vm/enable_soft_offline";
    if (!proc_.exists(kSysctl))
      return std::optional<bool>();
    PP_ASSIGN_OR_RETURN(std::string text, proc_.read(kSysctl, 64));
    std::string_view v = trim(text);
    if (v != "0" && v != "1")
      return Error(EINVAL, proc_.path(kSysctl) + " holds '" + std::string(v) + "', not 0 or 1");
    return std::optional<bool>(v == "1");
  }

  Status offline(uint64_t address, PageOfflineKind kind) override {
    std::string file = sysfs_.path("devices/system/memory/" + std::string(page_offline_file(kind)));
    Fd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd)
      return error_from_errno(errno, "cannot open " + file);
    char text[32];
    int len =
        std::snprintf(text, sizeof(text), "%#llx\n", static_cast<unsigned long long>(address));
    ssize_t n;
    do {
      n = ::write(fd.get(), text, size_t(len));
    } while (n < 0 && errno == EINTR);
    if (n < 0)
      return error_from_errno(errno, "writing " + hex(address) + " to " + file);
    if (n != len)
      return Error(EIO, "writing " + hex(address) + " to " + file + ": a short write");
    return ok_status();
  }

 private:
  static std::string hex(uint64_t v) {
    char text[24];
    std::snprintf(text, sizeof(text), "%#llx", static_cast<unsigned long long>(v));
    return text;
  }
  Tree sysfs_, proc_;
};

}  // namespace

std::unique_ptr<PageOfflineKernel> real_page_offline(std::string sysfs_root,
                                                     std::string proc_root) {
  return std::make_unique<RealPageOffline>(std::move(sysfs_root), std::move(proc_root));
}

}  // namespace pp::sys

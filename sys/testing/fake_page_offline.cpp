#include "sys/testing/fake_page_offline.h"

#include <string>

namespace pp::sys::testing {

Result<bool> FakePageOffline::hwpoisoned(uint64_t pfn) {
  if (kpageflags_error_)
    return error_from_errno(kpageflags_error_, "cannot open /proc/kpageflags");
  return poisoned_.count(pfn) != 0;
}

Result<std::optional<bool>> FakePageOffline::soft_offline_enabled() {
  return enabled_;
}

Status FakePageOffline::offline(uint64_t address, PageOfflineKind kind) {
  int error = 0;
  if (!answers_.empty()) {
    error = answers_.front();
    answers_.pop_front();
  }
  writes_.push_back({address, kind, error});
  if (error)
    return error_from_errno(
        error, "writing to /sys/devices/system/memory/" + std::string(page_offline_file(kind)));
  poisoned_.insert(address >> 12);
  return ok_status();
}

}  // namespace pp::sys::testing

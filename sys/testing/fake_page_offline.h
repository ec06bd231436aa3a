// A fake of sys/page_offline.h for tests: poisoned pages in a set, the
// sysctl as a value, and the answers of the next writes scripted as errno
// values (0: success). Every write is logged. A successful write poisons
// the page, as the kernel does.
//
//   sys::testing::FakePageOffline kernel;
//   kernel.refuse({EBUSY});                 // the next write fails with EBUSY, then succeed
//   ... offline through it ...
//   EXPECT_EQ(kernel.writes().size(), 2u);
//   EXPECT_TRUE(kernel.poisoned().count(0x1234));
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <vector>

#include "sys/page_offline.h"

namespace pp::sys::testing {

class FakePageOffline final : public PageOfflineKernel {
 public:
  struct Write {
    uint64_t address = 0;
    PageOfflineKind kind = PageOfflineKind::kSoft;
    int error = 0;  // what it was answered
  };

  Result<bool> hwpoisoned(uint64_t pfn) override;
  Result<std::optional<bool>> soft_offline_enabled() override;
  Status offline(uint64_t address, PageOfflineKind kind) override;

  // The next writes' answers, in order (0: success); after them, success.
  void refuse(std::vector<int> errors) {
    answers_.insert(answers_.end(), errors.begin(), errors.end());
  }
  void poison(uint64_t pfn) { poisoned_.insert(pfn); }
  void set_soft_offline_enabled(std::optional<bool> enabled) { enabled_ = enabled; }
  // kpageflags cannot be read (errno), or 0: it can.
  void set_kpageflags_error(int error) { kpageflags_error_ = error; }

  const std::vector<Write>& writes() const { return writes_; }
  const std::set<uint64_t>& poisoned() const { return poisoned_; }

 private:
  std::deque<int> answers_;
  std::set<uint64_t> poisoned_;
  std::optional<bool> enabled_;
  int kpageflags_error_ = 0;
  std::vector<Write> writes_;
};

}  // namespace pp::sys::testing

// Test doubles for persistent/'s unit tests (header only; no library code
// uses it): a kernel that refuses every perf_event_open, and a resolver that
// knows a few event strings without tracefs (and lacks those in `absent`).
#pragma once

#include <linux/perf_event.h>

#include <set>
#include <string>
#include <string_view>

#include "persistent/create.h"
#include "sys/kernel.h"

namespace pp::persistent::testing {

// Refuses every perf_event_open with `err`; counts the attempts.
class RefusingKernel final : public sys::Kernel {
 public:
  explicit RefusingKernel(int err) : err_(err) {}
  Result<sys::Fd> perf_event_open(const sys::EventAttr&, pid_t, int, int, unsigned long) override {
    opens++;
    return error_from_errno(err_, "perf_event_open");
  }
  Result<long> ioctl(int, unsigned long, unsigned long) override { return Error(ENOTTY, "ioctl"); }
  Result<sys::Mapping> mmap(int, size_t, int) override { return Error(ENODEV, "mmap"); }
  Result<size_t> read(int, void*, size_t) override { return Error(EBADF, "read"); }
  Result<int> poll(std::span<pollfd>, int) override { return 0; }
  void close(int) override {}
  void munmap(void*, size_t) override {}
  int opens = 0;

 private:
  int err_;
};

// The tracepoint id it gives syscalls:sys_enter_getppid.
inline constexpr uint64_t kGetppidId = 316;

// "cpu-clock" is the software event; "SYS:EVENT" a tracepoint (id kGetppidId
// for syscalls:sys_enter_getppid, else 1000); anything else does not parse.
class TestResolver final : public EventResolver {
 public:
  Result<ResolvedEvent> resolve(std::string_view text) override {
    ResolvedEvent e;
    e.attr.attr.size = sys::kAttrSizeVer7;
    if (text == "cpu-clock") {
      e.attr.attr.type = PERF_TYPE_SOFTWARE;
      e.attr.attr.config = PERF_COUNT_SW_CPU_CLOCK;
      e.pmu = "software";
      return e;
    }
    size_t colon = text.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size())
      return usage_error("event syntax error: '" + std::string(text) + "'");
    if (absent.count(std::string(text)))
      return Error(ENOENT, "unknown tracepoint '" + std::string(text) + "'");
    e.attr.attr.type = PERF_TYPE_TRACEPOINT;
    e.attr.attr.config = text == "syscalls:sys_enter_getppid" ? kGetppidId : 1000;
    e.tracepoint = std::string(text);
    e.pmu = "tracepoint";
    return e;
  }
  // Tracepoints this host lacks (ENOENT, as tracefs without them answers).
  std::set<std::string> absent;
};

}  // namespace pp::persistent::testing

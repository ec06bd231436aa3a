// Real kernel records for the perf.data tests: one event opened on every
// online CPU (pid -1, system-wide) through sys::real_kernel(), each with its
// own buffer mapped read-only, and the few lines of ring reading the tests
// need (the real ring reader lives in sys/). The buffers must be big enough
// for what a test makes: drain() refuses a ring the kernel wrapped.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "report/bytes.h"
#include "sys/kernel.h"
#include "sys/perf_attr.h"

namespace pp::testing {

class PerCpuCapture {
 public:
  // Opens `attr` (disabled) on every online CPU with 1 + `data_pages` pages
  // of buffer each (a power of two), sets the tracepoint `filter` when not
  // empty, then enables it.
  static Result<PerCpuCapture> open(const sys::EventAttr& attr, size_t data_pages,
                                    const std::string& filter = "");

  PerCpuCapture(PerCpuCapture&&) = default;
  PerCpuCapture& operator=(PerCpuCapture&&) = default;

  const std::vector<int>& cpus() const { return cpus_; }
  // The kernel's sample id of each CPU's event (PERF_EVENT_IOC_ID).
  const std::vector<uint64_t>& ids() const { return ids_; }

  // Disables the events and returns every record the rings hold, CPU by
  // CPU, whole, in the order the kernel wrote them.
  Result<report::Bytes> drain();

 private:
  PerCpuCapture() = default;

  std::vector<int> cpus_;
  std::vector<uint64_t> ids_;
  std::vector<sys::Fd> fds_;
  std::vector<sys::Mapping> maps_;
};

// Runs `fn` with the calling thread pinned to `cpu`, then restores the
// thread's CPU mask.
Status run_on_cpu(int cpu, const std::function<void()>& fn);

// The tracepoint attr the tests record: sample_type IP, TID, TIME, CPU,
// PERIOD, RAW and IDENTIFIER with sample_id_all, a sample per hit.
sys::EventAttr tracepoint_attr(uint64_t id);

}  // namespace pp::testing

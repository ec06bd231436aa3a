// The kernel backend: persistent events of a kernel with the seed patch
// set's ABI (sys/perf_attr.h), used where
// <sysfs>/bus/event_source/devices/persistent exists.
//
//   list    <sysfs>/bus/event_source/devices/persistent/events/<entry>, each
//           "persistent,config=<id>\n"; the PMU type from .../persistent/type
//   open    perf_event_open(attr{type, config=id}, pid -1, cpu), mapped
//           read-only: 1 + 128 data pages (the seed's 512 KiB, CPU_BUFFER_NR_PAGES),
//           forward-written
//   create  the event opened on each CPU, then PERF_EVENT_IOC_DETACH, which
//           makes it persistent and returns its id, then closed (12/12)
//   kill    for each CPU: open by id, PERF_EVENT_IOC_ATTACH, close (12/12)
//
// DETACH gives one id per (event, CPU), and the kernel names each sysfs
// entry after its id, so the name given to create lives in a record beside
// it: <run-dir>/kernel-events/<name>.json (event_to_json() with "cpu_ids").
// list shows a recorded event once, under its name and the id of its first
// CPU; an entry without a record (the kernel's own boot events, such as
// mce_record with one id for all CPUs, or an event detached by another tool)
// is listed as the kernel names it, on the CPUs where it opens.
#pragma once

#include "persistent/backend.h"
#include "persistent/run_dir.h"
#include "sys/explain.h"

namespace pp::persistent {

// The buffer the seed kernel allocates per CPU at DETACH and at boot: 512 KiB.
inline constexpr uint64_t kSeedBufferBytes = uint64_t{512} * 1024;

class KernelBackend final : public Backend {
 public:
  // `tracefs` names the boot events' tracepoints (mce_record is
  // mce:mce_record); "" means sys::default_tracefs_root().
  KernelBackend(sys::Kernel& kernel, const sys::Tree& sysfs, RunDir run_dir,
                EventResolver* resolver, std::string tracefs = "");

  std::string_view name() const override { return "kernel"; }
  Result<std::vector<EventInfo>> list(bool verbose, std::string* note) override;
  Result<EventInfo> create(const CreateRequest& request, std::string* note) override;
  Result<EventInfo> kill(std::string_view reference) override;
  Result<Buffer> open(uint64_t id, int cpu) override;

 private:
  struct Entry {
    std::string name;
    uint64_t id = 0;
  };
  Result<uint32_t> pmu_type() const;
  Result<std::vector<Entry>> entries() const;
  std::vector<EventInfo> records() const;
  Result<sys::Fd> open_persistent(uint32_t type, uint64_t id, int cpu);
  Status attach(uint32_t type, uint64_t id, int cpu, std::string_view what);
  uint64_t seed_pages() const;
  void infer_boot_event(EventInfo& event) const;

  sys::Kernel& kernel_;
  sys::Tree sysfs_;
  sys::Tree tracefs_;
  RunDir run_dir_;
  EventResolver* resolver_;
  sys::ExplainEnv env_;
};

// The attr the seed kernel gives a tracepoint it makes persistent at boot
// (05/12, perf_add_persistent_tp): every hit sampled, raw data only.
sys::EventAttr boot_tracepoint_attr(uint64_t tracepoint_id);

// Parses a persistent events/ entry: "persistent,config=106\n" -> 106. The
// terms may come in any order; config is required. EINVAL names `path`.
Result<uint64_t> parse_persistent_entry(std::string_view text, std::string_view path);

}  // namespace pp::persistent

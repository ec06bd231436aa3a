// The harvest's previous-boot source (watch/harvest.h): the RAS records of
// the trace buffers the broker kept across a reset.
#include <map>
#include <set>

#include "base/strings.h"
#include "mce/ras_events.h"
#include "persistent/previous_boot.h"
#include "record/instance_record.h"
#include "report/trace_decoder.h"
#include "report/trace_report.h"
#include "report/tracing_data.h"
#include "sys/ftrace_instance.h"
#include "sys/perf_abi_sample.h"
#include "watch/harvest.h"

namespace pp::watch {
namespace {

constexpr const char* kMceTracepoint = "mce:mce_record";
constexpr size_t kMaxBytesPerCpu = size_t(256) << 20;

bool is_ras(const report::Tracepoint& tp) {
  std::string name = tp.system + ":" + tp.name;
  return name == kMceTracepoint || mce::is_ras_event(name);
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// One copy's records; notes say what was read or why not.
void read_copy(const persistent::KeptBoot& copy, std::vector<WatchRecord>& out,
               std::vector<std::string>& notes) {
  const std::string where = "previous-boot: " + copy.path;
  auto instance = sys::FtraceInstance::open(sys::Tree(copy.path), copy.instance);
  if (!instance.ok()) {
    notes.push_back(where + ": " + instance.error().message() + "; skipped");
    return;
  }
  auto in = record::read_instance(*instance, kMaxBytesPerCpu);
  if (!in.ok()) {
    notes.push_back(where + ": " + in.error().message() + "; skipped");
    return;
  }
  if (in->bad_page)
    notes.push_back(where + ": " + in->bad_page->message() + " (the records before it are read)");
  // The RAS tracepoints among the records' ids, by the copy's formats.
  std::map<uint16_t, bool> looked_up;
  std::vector<report::Tracepoint> tracepoints;
  for (const ftrace::RingRecord& r : in->read.records) {
    if (!looked_up.emplace(r.event_id, false).second)
      continue;
    auto tp = report::find_tracepoint(instance->tree(), r.event_id, "");
    if (tp.ok() && is_ras(*tp)) {
      looked_up[r.event_id] = true;
      tracepoints.push_back(std::move(*tp));
    }
  }
  size_t machine_checks = 0, others = 0;
  if (!tracepoints.empty()) {
    auto built = report::build_tracing_data(instance->tree(), tracepoints, in->layout.page_size());
    auto tracing = built.ok() ? report::parse_tracing_data(*built)
                              : Result<report::TracingData>(built.error());
    auto decoder = tracing.ok() ? report::TraceDecoder::create(*tracing)
                                : Result<std::unique_ptr<report::TraceDecoder>>(tracing.error());
    if (!decoder.ok()) {
      notes.push_back(where + ": the formats kept with it cannot be read: " +
                      decoder.error().message() + "; skipped");
      return;
    }
    const std::string copy_name = base_name(copy.path);
    for (const ftrace::RingRecord& r : in->read.records) {
      if (!looked_up[r.event_id])
        continue;
      std::vector<uint8_t> raw = sys::pad_raw(r.payload);
      const report::TraceEvent* te = (*decoder)->event_of(raw);
      if (!te || !(*decoder)->check(*te, raw).ok()) {
        notes.push_back(where + ": a record of CPU " + std::to_string(r.cpu) +
                        " does not match its format; skipped");
        continue;
      }
      WatchRecord w;
      w.origin = Origin::kPreviousBoot;
      w.tracepoint = te->name;
      w.time = r.timestamp;
      w.cpu = int32_t(r.cpu);
      w.wall_ns = in->clock.wall_ns(r.timestamp).value_or(0);
      w.fields = report::fields_json(*te, raw);
      if (auto pid = w.fields.find("common_pid"); pid != w.fields.end() && pid->is_number())
        w.pid = w.tid = pid->get<int32_t>();
      w.fields["kept_copy"] = copy_name;
      if (te->name == kMceTracepoint) {
        mce::MceRegisters regs = report::mce_registers(*te, raw);
        w.mce = mce::decode_mce(regs, mce::CpuVendor::kUnknown, mce::MceOrigin::kTracepoint);
        if (regs.walltime && *regs.walltime)
          w.wall_ns = *regs.walltime * 1000000000ULL;
        w.key = mce_key(regs);
        machine_checks++;
      } else {
        w.ras = mce::decode_ras_event(te->name, report::ras_fields(*te, raw));
        w.key = "previous-boot:" + copy.boot_id + ":" + te->name + ":" + std::to_string(r.cpu) +
                ":" + std::to_string(r.timestamp);
        others++;
      }
      out.push_back(std::move(w));
    }
  }
  notes.push_back(where + ": " + std::to_string(in->read.records.size()) + " record(s) of " +
                  std::to_string(in->cpus.size()) + " CPU(s), " + std::to_string(machine_checks) +
                  " machine check(s), " + std::to_string(others) + " other RAS record(s)" +
                  (in->clock.size() ? "" : "; no clock marker: other records have no wall time"));
}

}  // namespace

std::vector<WatchRecord> previous_boot_records(const std::string& kept_dir,
                                               std::vector<std::string>& notes) {
  std::vector<WatchRecord> out;
  auto copies = persistent::list_kept_boots(kept_dir);
  if (!copies.ok()) {
    notes.push_back("previous-boot: " + copies.error().message());
    return out;
  }
  if (copies->empty()) {
    notes.push_back("previous-boot: no previous boot's trace buffer kept in " + kept_dir +
                    " (the broker keeps one when the kernel command line has a boot-mapped "
                    "ftrace instance, e.g. '" +
                    persistent::kBootMappedCmdline + "')");
    return out;
  }
  for (const persistent::KeptBoot& copy : *copies)
    read_copy(copy, out, notes);
  return out;
}

}  // namespace pp::watch

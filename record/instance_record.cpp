#include "record/instance_record.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "base/strings.h"
#include "base/wall_time.h"
#include "ftrace/boot_param.h"
#include "ftrace/common_fields.h"
#include "ftrace/ring_page.h"
#include "report/perf_data_writer.h"
#include "report/tracing_data.h"
#include "sys/ftrace_instance.h"
#include "sys/perf_attr.h"
#include "sys/tracepoint_sample.h"

namespace pp::record {
namespace {

constexpr size_t kBatchBytes = size_t(1) << 20;

// Where ftrace/print's format puts the marker's text:
//   "\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;"
uint32_t buf_offset(std::string_view format) {
  auto buf = ftrace::find_field(format, "buf[]");
  return buf && buf->offset <= 4096 ? buf->offset : 16;
}

struct Event {
  std::string name;  // "sched:sched_switch"
  uint64_t id = 0;
  ftrace::PidField pid;
  std::map<uint32_t, uint64_t> sample_ids;  // CPU to sample id
};

// --previous-boot: the boot-mapped instance of the kernel command line.
Result<std::string> previous_boot_instance(const InstanceRequest& request) {
  sys::Tree proc(request.proc_root);
  std::string cmdline;
  if (request.kernel_cmdline) {
    cmdline = *request.kernel_cmdline;
  } else {
    PP_ASSIGN_OR_RETURN(cmdline, proc.read("cmdline"));
  }
  const std::vector<std::string> names = ftrace::boot_mapped_names(cmdline);
  if (names.empty())
    return not_found_error("the kernel command line (" + proc.path("cmdline") +
                           ") names no boot-mapped ftrace instance, so no previous boot's "
                           "buffer was kept; a boot-mapped instance is given on the kernel "
                           "command line, e.g. '" +
                           persistent::kBootMappedCmdline +
                           "' (see BOOT-MAPPED INSTANCES in perf-persistent-record(1))");
  if (!request.instance.empty()) {
    if (std::find(names.begin(), names.end(), request.instance) == names.end())
      return not_found_error("'" + request.instance +
                             "' is no boot-mapped instance of the kernel command line (it has: " +
                             join(names, ", ") + ")");
    return request.instance;
  }
  if (names.size() > 1)
    return usage_error("the kernel command line has several boot-mapped instances (" +
                       join(names, ", ") + "); choose one with --instance NAME");
  return names.front();
}

}  // namespace

Result<InstanceRead> read_instance(const sys::FtraceInstance& instance, size_t max_bytes_per_cpu) {
  auto context = [&](Error e) {
    return std::move(e).with_context("ftrace instance '" + instance.name() + "'");
  };
  auto header_page = instance.header_page();
  auto header_event = instance.header_event();
  if (!header_page.ok())
    return context(std::move(header_page).error());
  if (!header_event.ok())
    return context(std::move(header_event).error());
  InstanceRead in;
  auto layout = ftrace::parse_ring_layout(*header_page, *header_event);
  if (!layout.ok())
    return context(std::move(layout).error());
  in.layout = *layout;
  auto cpus = instance.cpus();
  if (!cpus.ok())
    return context(std::move(cpus).error());
  in.cpus = std::move(*cpus);
  // Every CPU's pages first: they own the records' payloads.
  in.pages.resize(in.cpus.size());
  for (size_t i = 0; i < in.cpus.size(); i++) {
    const uint32_t cpu = in.cpus[i];
    auto bytes = instance.read_pages(cpu, in.layout.page_size(), max_bytes_per_cpu);
    if (!bytes.ok())
      return context(std::move(bytes).error());
    in.pages[i] = std::move(*bytes);
    uint64_t missed_before = in.read.missed_events;
    Status s = ftrace::read_ring_pages(in.pages[i], in.layout, cpu, in.read);
    in.missed_by_cpu[cpu] = in.read.missed_events - missed_before;
    if (!s.ok() && !in.bad_page)
      in.bad_page = context(std::move(s).error());
  }
  // The kernel's counters, after the pages (what the reads saw included).
  for (uint32_t cpu : in.cpus) {
    auto stats = instance.cpu_stats(cpu);
    if (!stats.ok())
      continue;
    if (!in.stats)
      in.stats.emplace();
    in.stats->entries += stats->entries;
    in.stats->overrun += stats->overrun;
    in.stats->commit_overrun += stats->commit_overrun;
    in.stats->dropped_events += stats->dropped_events;
  }
  // The clock markers: ftrace/print records the broker wrote.
  if (auto print_id = instance.tree().read("events/ftrace/print/id", 64); print_id.ok()) {
    auto id = parse_u64(trim(*print_id), "id");
    uint32_t buf = buf_offset(instance.tree().read("events/ftrace/print/format").value_or(""));
    for (const ftrace::RingRecord& r : in.read.records) {
      if (!id.ok() || r.event_id != *id || r.payload.size() <= buf)
        continue;
      std::string_view text(reinterpret_cast<const char*>(r.payload.data()) + buf,
                            r.payload.size() - buf);
      if (auto m = persistent::parse_clock_marker(text))
        in.clock.add(r.timestamp, std::move(*m));
    }
  }
  return in;
}

Result<InstanceResult> record_instance(const InstanceRequest& request) {
  sys::Tree tracefs(request.tracefs_root.empty() ? sys::default_tracefs_root()
                                                 : request.tracefs_root);
  std::string name = request.instance;
  std::string kept;
  if (request.previous_boot) {
    // The broker's copy, when it kept one: the instance itself is this
    // boot's by then.
    auto copies = persistent::list_kept_boots(request.kept_dir);
    if (copies.ok())
      for (auto it = copies->rbegin(); it != copies->rend() && kept.empty(); ++it)
        if (request.instance.empty() || it->instance == request.instance) {
          kept = it->path;
          name = it->instance;
          tracefs = sys::Tree(kept);
        }
    if (kept.empty()) {
      PP_ASSIGN_OR_RETURN(name, previous_boot_instance(request));
    }
  }
  PP_ASSIGN_OR_RETURN(sys::FtraceInstance instance, sys::FtraceInstance::open(tracefs, name));
  // A boot-mapped instance says whose data it holds (last_boot_info): the
  // previous boot's until a setting changes, and that boot's tasks are not
  // this boot's /proc. "# Current": the previous buffer was invalid, absent,
  // or already reset.
  const std::optional<std::string> boot = instance.last_boot_info();
  const bool previous_boot = boot && ftrace::holds_previous_boot(*boot);
  if (request.previous_boot) {
    if (!previous_boot)
      return not_found_error(
          "ftrace instance '" + name + "' holds no previous boot's buffer, and the broker kept " +
          "none in " + request.kept_dir + " (" +
          (boot ? "its last_boot_info says '# Current'" : "it has no last_boot_info") +
          "): the kernel found none it could validate at boot, or a setting of the instance "
          "changed since; 'perf persistent record --instance " +
          name + "' reads what it holds now");
  }
  auto context = [&](Error e) {
    return std::move(e).with_context("ftrace instance '" + name + "'");
  };
  auto enabled = instance.enabled_events();
  if (!enabled.ok())
    return context(std::move(enabled).error());
  PP_ASSIGN_OR_RETURN(InstanceRead in, read_instance(instance, request.max_bytes_per_cpu));
  const std::vector<uint32_t>* cpus = &in.cpus;
  const ftrace::RingRead& read = in.read;

  InstanceResult result;
  result.instance = name;
  result.kept = kept;
  result.output = request.output == "-" ? "standard output" : request.output;
  result.clock = instance.trace_clock().value_or("unknown");
  result.cpus = uint32_t(cpus->size());
  result.previous_boot = previous_boot;
  result.pages = read.pages;
  result.missed_events = read.missed_events;
  result.pages_after_loss = read.pages_after_loss;
  if (in.stats) {
    result.overrun = in.stats->overrun + in.stats->commit_overrun;
    result.dropped_events = in.stats->dropped_events;
  }

  // The events: every enabled one, then any other id the records carry
  // whose format the instance has (an event disabled since, ftrace's own).
  std::vector<Event> events;
  std::map<uint64_t, size_t> by_id;
  for (const sys::InstanceEvent& e : *enabled) {
    if (by_id.count(e.id))
      continue;
    by_id[e.id] = events.size();
    events.push_back({e.system + ":" + e.name, e.id, ftrace::common_pid_field(e.format), {}});
  }
  std::set<uint64_t> looked_up;  // each id once: a lookup reads every events/*/*/id
  for (const ftrace::RingRecord& r : read.records) {
    if (by_id.count(r.event_id) || !looked_up.insert(r.event_id).second)
      continue;
    auto tp = report::find_tracepoint(instance.tree(), r.event_id, "");
    if (!tp.ok())
      continue;
    auto format = instance.tree().read("events/" + tp->system + "/" + tp->name + "/format");
    by_id[r.event_id] = events.size();
    events.push_back({tp->system + ":" + tp->name,
                      r.event_id,
                      ftrace::common_pid_field(format.ok() ? *format : std::string()),
                      {}});
  }
  // An instance whose events were disabled after tracing (a boot-mapped
  // one keeps none enabled at boot) still names them by id in its records.
  if (events.empty())
    return usage_error("ftrace instance '" + name +
                       "' has no enabled event (its set_event is empty) and its buffer holds no "
                       "record of a known event: nothing to record; enable events with 'echo "
                       "SYSTEM:EVENT >> " +
                       instance.tree().path("set_event") + "'");
  const persistent::MarkerClock& markers = in.clock;
  result.markers = markers.size();
  if (markers.last())
    result.marked_boot_id = markers.last()->boot_id;
  uint64_t next_id = 1;
  for (Event& e : events)
    for (uint32_t cpu : *cpus)
      e.sample_ids[cpu] = next_id++;

  report::WriterConfig config;
  config.cmdline = request.cmdline;
  config.tracefs_root = instance.tree().root();
  config.proc_root = request.proc_root;
  config.sysfs_root = request.sysfs_root;
  config.page_size = in.layout.page_size();
  if (result.previous_boot)
    config.side_band = report::SideBand::kNever;
  // perf script -F +tod: the file's clock data pairs the newest marker's
  // trace-clock time with its CLOCK_REALTIME (perf converts a whole file
  // by one pair). perf has no clock id for ftrace's clocks: the attrs say
  // CLOCK_MONOTONIC, and the man page says so.
  const bool with_clock = markers.size() > 0;
  if (with_clock) {
    report::ClockData clock;
    clock.pair.clockid = CLOCK_MONOTONIC;
    clock.pair.wall_ns = markers.last()->realtime_ns;
    clock.pair.clock_ns = markers.last_time();
    config.clock = clock;
  }
  for (const Event& e : events) {
    std::vector<uint64_t> ids;
    for (const auto& [cpu, id] : e.sample_ids)
      ids.push_back(id);
    sys::EventAttr attr = sys::tracepoint_sample_attr(e.id);
    if (with_clock) {
      attr.attr.use_clockid = 1;
      attr.attr.clockid = CLOCK_MONOTONIC;
    }
    config.events.push_back({attr, e.name, std::move(ids)});
  }
  result.events = uint32_t(events.size());
  auto writer = request.output == "-"
                    ? report::PerfDataWriter::create_pipe(1, std::move(config))
                    : report::PerfDataWriter::create_file(request.output, std::move(config));
  if (!writer.ok())
    return std::move(writer).error();

  // perf orders by time across CPUs; so does the file.
  std::vector<const ftrace::RingRecord*> order;
  order.reserve(read.records.size());
  for (const ftrace::RingRecord& r : read.records)
    order.push_back(&r);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->timestamp < b->timestamp; });
  std::vector<uint8_t> batch;
  for (const ftrace::RingRecord* r : order) {
    auto it = by_id.find(r->event_id);
    if (it == by_id.end()) {
      result.unknown_records++;
      continue;
    }
    const Event& e = events[it->second];
    if (auto wall = markers.wall_ns(r->timestamp)) {
      if (!result.first_wall_ns)
        result.first_wall_ns = *wall;
      result.last_wall_ns = *wall;
    } else {
      result.unmarked_records++;
    }
    int32_t pid = ftrace::record_pid(r->payload, e.pid);
    if (!sys::append_tracepoint_sample({.identifier = e.sample_ids.at(r->cpu),
                                        .pid = pid >= 0 ? uint32_t(pid) : 0,
                                        .time = r->timestamp,
                                        .cpu = r->cpu,
                                        .record = r->payload},
                                       batch)) {
      result.unknown_records++;  // over a u16 record size (a sub-buffer over 64 KiB)
      continue;
    }
    result.samples++;
    if (batch.size() >= kBatchBytes) {
      PP_RETURN_IF_ERROR((*writer)->append(batch));
      batch.clear();
    }
  }
  PP_RETURN_IF_ERROR((*writer)->append(batch));
  for (uint32_t cpu : *cpus)
    if (in.missed_by_cpu[cpu] && !events.empty())
      PP_RETURN_IF_ERROR((*writer)->append_lost(
          {.id = events.front().sample_ids.at(cpu), .lost = in.missed_by_cpu[cpu], .cpu = cpu}));
  PP_RETURN_IF_ERROR((*writer)->finished_round());
  PP_RETURN_IF_ERROR((*writer)->finish());
  result.bytes = (*writer)->stats().file_bytes;
  if (in.bad_page)
    return *in.bad_page;
  return result;
}

std::string instance_summary(const InstanceResult& r) {
  char mb[32];
  std::snprintf(mb, sizeof(mb), "%.3f", double(r.bytes) / (1024.0 * 1024.0));
  std::string out = "[ perf persistent record: Captured and wrote " + std::string(mb) + " MB " +
                    r.output + " (" + std::to_string(r.samples) +
                    " samples) from ftrace instance '" + r.instance + "', " +
                    std::to_string(r.cpus) + " CPUs, " + std::to_string(r.pages) +
                    " pages, times of trace clock '" + r.clock + "' ]\n";
  if (!r.kept.empty())
    out += "[ perf persistent record: read the copy the broker kept in " + r.kept + " ]\n";
  if (r.first_wall_ns)
    out += "[ perf persistent record: wall-clock time from " + std::to_string(r.markers) +
           " clock markers: records from " + format_wall_time(*r.first_wall_ns) + " to " +
           format_wall_time(*r.last_wall_ns) +
           (r.unmarked_records
                ? " (" + std::to_string(r.unmarked_records) + " earlier records have none)"
                : std::string()) +
           "; perf script -F +tod shows it ]\n";
  else if (r.previous_boot)
    out +=
        "[ perf persistent record: no clock marker in the buffer, so no wall-clock time; "
        "the broker writes them into the instance it arms ]\n";
  if (r.overrun.value_or(0) || r.dropped_events.value_or(0))
    out +=
        "[ perf persistent record: the instance's counters (per_cpu/cpuN/stats, since its "
        "buffer was last reset): " +
        std::to_string(r.overrun.value_or(0)) + " records overwritten before a read, " +
        std::to_string(r.dropped_events.value_or(0)) + " not written ]\n";
  if (r.missed_events || r.pages_after_loss)
    out += "[ perf persistent record: the kernel lost " + std::to_string(r.missed_events) +
           " events before they were read (" + std::to_string(r.pages_after_loss) +
           " pages follow a loss); a larger buffer_size_kb keeps more ]\n";
  if (r.unknown_records)
    out += "[ perf persistent record: " + std::to_string(r.unknown_records) +
           " records of events whose format the instance lacks were left out ]\n";
  return out;
}

json instance_summary_json(const InstanceResult& r) {
  json wall_clock = nullptr;
  if (r.markers)
    wall_clock =
        json{{"markers", r.markers},
             {"boot_id", r.marked_boot_id},
             {"first", r.first_wall_ns ? json(format_wall_time(*r.first_wall_ns)) : json(nullptr)},
             {"last", r.last_wall_ns ? json(format_wall_time(*r.last_wall_ns)) : json(nullptr)},
             {"unmarked_records", r.unmarked_records}};
  return json{{"output", r.output},
              {"instance", r.instance},
              {"clock", r.clock},
              {"previous_boot", r.previous_boot},
              {"kept", r.kept.empty() ? json(nullptr) : json(r.kept)},
              {"wall_clock", wall_clock},
              {"cpus", r.cpus},
              {"events", r.events},
              {"pages", r.pages},
              {"samples", r.samples},
              {"bytes", r.bytes},
              {"lost",
               {{"missed_events", r.missed_events},
                {"pages_after_loss", r.pages_after_loss},
                {"unknown_records", r.unknown_records},
                {"overrun", r.overrun ? json(*r.overrun) : json(nullptr)},
                {"dropped_events", r.dropped_events ? json(*r.dropped_events) : json(nullptr)}}},
              {"error", nullptr},
              {"exit_status", 0}};
}

}  // namespace pp::record

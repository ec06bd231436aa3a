#include "record/attach.h"

#include <linux/perf_event.h>
#include <sys/mman.h>

#include <algorithm>

#include "persistent/event_open.h"

namespace pp::record {
namespace {

// Data pages per CPU for the tracking event: COMM, FORK, EXIT and MMAP2
// records are rare next to samples.
constexpr size_t kTrackingPages = 64;

sys::RingLayout ring_layout(persistent::Layout layout) {
  return layout == persistent::Layout::kBackward ? sys::RingLayout::kBackward
                                                 : sys::RingLayout::kForward;
}

sys::Kernel& kernel_of(const AttachOptions& options) {
  return options.kernel ? *options.kernel : sys::real_kernel();
}

// Maps `stream.fd` read-only and puts a reader on it.
Result<Stream> map_stream(Stream stream, size_t mmap_length, sys::RingLayout layout,
                          const sys::EventAttr& attr, std::string_view what,
                          const AttachOptions& options) {
  sys::Kernel& kernel = kernel_of(options);
  auto mapping = kernel.mmap(stream.fd.get(), mmap_length, PROT_READ);
  if (!mapping.ok()) {
    sys::FailedCall call;
    call.call = sys::PerfCall::kMmap;
    call.event = std::string(what);
    call.cpu = stream.cpu;
    call.length = mmap_length;
    call.prot = PROT_READ;
    return sys::explain(mapping.error(), call, options.explain);
  }
  stream.mapping = std::move(mapping).value();
  sys::RingReaderOptions reader_options;
  reader_options.start = options.start;
  reader_options.layout = layout;
  reader_options.attr = attr;
  PP_ASSIGN_OR_RETURN(
      sys::RingReader reader,
      sys::RingReader::create({stream.mapping.data(), stream.mapping.size()}, reader_options));
  stream.reader.emplace(std::move(reader));
  if (has_sample_id(attr) && stream.id == 0) {  // a shared ring's id came with it
    auto id = sys::event_id(kernel, stream.fd.get());
    if (!id.ok())
      return id.error().with_context("reading the sample id of '" + std::string(what) +
                                     "' on CPU " + std::to_string(stream.cpu));
    stream.id = *id;
  }
  return stream;
}

}  // namespace

Result<std::vector<Stream>> attach_events(persistent::Backend& backend,
                                          const std::vector<ResolvedEvent>& events,
                                          const AttachOptions& options) {
  std::vector<Stream> streams;
  for (size_t e = 0; e < events.size(); e++) {
    const ResolvedEvent& r = events[e];
    for (int cpu : r.cpus) {
      PP_ASSIGN_OR_RETURN(persistent::Buffer buffer, backend.open(r.info.id, cpu));
      Stream s;
      s.event = e;
      s.cpu = cpu;
      s.fd = std::move(buffer.fd);
      s.id = buffer.sample_id;
      s.pollable = buffer.pollable;
      s.hangup = std::move(buffer.hangup);
      PP_ASSIGN_OR_RETURN(Stream mapped,
                          map_stream(std::move(s), buffer.mmap_length, ring_layout(buffer.layout),
                                     r.info.attr, r.text, options));
      streams.push_back(std::move(mapped));
    }
  }
  return streams;
}

// perf record's tracking event: a dummy software event per CPU whose buffer
// gets the COMM, FORK and EXIT records (and MMAP2 for events that sample
// instruction pointers) of tasks that start while recording, so perf names
// COMMAND and the processes it starts.
std::optional<Tracking> attach_tracking(const std::vector<ResolvedEvent>& events,
                                        const AttachOptions& options, std::ostream& notes) {
  const size_t event = events.size();
  bool ids = true, ip = false;
  std::vector<int> cpus;
  for (const ResolvedEvent& r : events) {
    ids &= has_sample_id(r.info.attr) && r.info.attr.attr.sample_id_all;
    ip |= (r.info.attr.attr.sample_type & PERF_SAMPLE_IP) &&
          r.info.attr.attr.type != PERF_TYPE_TRACEPOINT;
    for (int cpu : r.cpus)
      if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end())
        cpus.push_back(cpu);
  }
  if (!ids)
    return std::nullopt;
  sys::EventAttr attr;
  attr.attr.type = PERF_TYPE_SOFTWARE;
  attr.attr.config = PERF_COUNT_SW_DUMMY;
  attr.attr.size = sys::kAttrSizeVer7;
  attr.attr.sample_period = 1;
  attr.attr.sample_type =
      PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
  attr.attr.sample_id_all = 1;
  attr.attr.comm = 1;
  attr.attr.comm_exec = 1;
  attr.attr.task = 1;
  attr.attr.mmap = ip;
  attr.attr.mmap2 = ip;
  attr.attr.write_backward = 1;
  attr.attr.exclude_guest = 1;
  // The events' clock, so the tracking records sort with their samples.
  if (!events.empty() && events.front().info.attr.attr.use_clockid) {
    attr.attr.use_clockid = 1;
    attr.attr.clockid = events.front().info.attr.attr.clockid;
  }
  // Woken at a quarter of the buffer, as the broker's buffers are.
  attr = persistent::wakeup_watermark(attr, kTrackingPages);
  Tracking tracking;
  tracking.attr = attr;
  for (int cpu : cpus) {
    auto fd = kernel_of(options).perf_event_open(attr, -1, cpu, -1, 0);
    if (!fd.ok()) {
      notes << "perf persistent record: no tracking event on CPU " << cpu << " ("
            << fd.error().message() << "): tasks started while recording may show no name\n";
      return std::nullopt;
    }
    Stream s;
    s.event = event;
    s.cpu = cpu;
    s.fd = std::move(fd).value();
    auto mapped = map_stream(std::move(s), (1 + kTrackingPages) * sys::page_size(),
                             sys::RingLayout::kBackward, attr, kTrackingName, options);
    if (!mapped.ok()) {
      notes << "perf persistent record: no tracking event on CPU " << cpu << " ("
            << mapped.error().message() << "): tasks started while recording may show no name\n";
      return std::nullopt;
    }
    tracking.streams.push_back(std::move(mapped).value());
  }
  return tracking;
}

}  // namespace pp::record

#include "report/recorder.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "base/cpu_list.h"
#include "parse/parse_events.h"
#include "report/perf_data_writer.h"
#include "sys/child.h"
#include "sys/explain.h"
#include "sys/process.h"
#include "sys/ring_reader.h"

namespace pp::report {
namespace {

using Clock = std::chrono::steady_clock;

// Data pages per CPU for the tracking event: COMM, FORK, EXIT and MMAP2
// records are rare next to samples.
constexpr size_t kTrackingPages = 64;

// One persistent event being recorded.
struct Recorded {
  persistent::EventInfo info;
  std::string text;           // as the user named it: "persistent/mce_record/"
  std::string name;           // what perf shows: "mce:mce_record"
  std::vector<int> cpus;      // the CPUs read
  std::vector<uint64_t> ids;  // the sample id of each CPU's instance, in `cpus` order
};

// One CPU's buffer of one event (or of the tracking event).
struct Stream {
  size_t event = 0;
  int cpu = 0;
  uint64_t id = 0;  // the sample id, for PERF_RECORD_LOST
  sys::Fd fd;
  sys::Mapping mapping;
  std::optional<sys::RingReader> reader;
  bool read_once = false;
};

bool has_sample_id(const sys::EventAttr& attr) {
  return attr.attr.sample_type & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID);
}

sys::RingLayout ring_layout(persistent::Layout layout) {
  return layout == persistent::Layout::kBackward ? sys::RingLayout::kBackward
                                                 : sys::RingLayout::kForward;
}

class Session {
 public:
  Session(const RecordRequest& request, std::ostream& notes)
      : request_(request),
        notes_(notes),
        kernel_(request.backend.kernel ? *request.backend.kernel : sys::real_kernel()) {}

  Result<RecordResult> run();

 private:
  Status resolve_events(const pmu::Model& model);
  Status add_stream(Stream stream, size_t mmap_length, sys::RingLayout layout,
                    const sys::EventAttr& attr, std::string_view what);
  Status attach();
  void attach_tracking();
  Status open_writer();
  Status drain_all();
  Status drain(Stream& stream);
  Status follow();
  void stop_command();

  const RecordRequest& request_;
  std::ostream& notes_;
  sys::Kernel& kernel_;
  std::unique_ptr<persistent::Backend> backend_;
  std::vector<Recorded> events_;
  std::vector<Stream> streams_;  // the events' buffers, then the tracking event's
  struct Tracking {
    sys::EventAttr attr;
    std::vector<uint64_t> ids;
  };
  std::optional<Tracking> tracking_;
  std::unique_ptr<PerfDataWriter> writer_;
  std::optional<sys::SignalFd> signals_;
  std::optional<sys::Child> child_;
  RecordResult result_;
  bool appended_since_flush_ = false;
};

Status Session::resolve_events(const pmu::Model& model) {
  if (request_.events.empty())
    return usage_error(
        "no event given: name the persistent events to record with "
        "-e persistent/NAME/ (see 'perf persistent list')");
  PP_ASSIGN_OR_RETURN(auto listed, backend_->list(false, nullptr));
  for (const std::string& text : request_.events) {
    PP_ASSIGN_OR_RETURN(auto specs, parse::parse_events(text, model));
    for (const parse::EventSpec& spec : specs) {
      if (spec.pmu != "persistent")
        return errorf(ErrorKind::kUsage, EINVAL,
                      "'%s' is not a persistent event: record reads events that are already "
                      "running. Create one with 'perf persistent create -e %s --name NAME', "
                      "then record it with -e persistent/NAME/",
                      spec.text.c_str(), spec.text.c_str());
      uint64_t id = spec.attr.attr.config;
      const persistent::EventInfo* found = nullptr;
      for (const persistent::EventInfo& info : listed)
        if (info.id == id)
          found = &info;
      if (!found)
        return errorf(ErrorKind::kNotFound, ENOENT,
                      "no persistent event with id %llu ('%s'); see 'perf persistent list'",
                      (unsigned long long)id, spec.text.c_str());
      if (found->state != "running")
        return errorf(ErrorKind::kNotFound, ENOENT,
                      "persistent event '%s' (id %llu) is not running: %s", found->name.c_str(),
                      (unsigned long long)id, found->error.c_str());
      if (found->attr.attr.size == 0)  // a boot event that names no tracepoint
        return errorf(ENOTSUP,
                      "persistent event '%s' (id %llu) has no known attr: the kernel made it, "
                      "and no tracepoint in tracefs is named '%s', so its records could not be "
                      "decoded; is tracefs mounted (/sys/kernel/tracing)?",
                      found->name.c_str(), (unsigned long long)id, found->name.c_str());
      for (const Recorded& r : events_)
        if (r.info.id == id)
          return errorf(ErrorKind::kUsage, EINVAL, "persistent event '%s' (id %llu) is named twice",
                        found->name.c_str(), (unsigned long long)id);
      Recorded r;
      r.info = *found;
      r.text = spec.text;
      // The name perf shows is the underlying event's: parse the string it
      // was created from ("syscalls:sys_enter_getppid").
      r.name = found->event.empty() ? found->name : found->event;
      if (!found->event.empty()) {
        if (auto inner = parse::parse_events(found->event, model); inner.ok() && inner->size() == 1)
          r.name = (*inner)[0].name;
      }
      if (found->restarted())
        notes_ << "perf persistent record: the buffers of '" << found->name
               << "' restarted when the broker restarted; samples from before are gone\n";
      events_.push_back(std::move(r));
    }
  }
  bool all_ids = true;
  for (const Recorded& r : events_)
    all_ids &= has_sample_id(r.info.attr);
  if (events_.size() > 1 && !all_ids)
    return usage_error(
        "the events do not put sample ids in their records (PERF_SAMPLE_IDENTIFIER), "
        "so one file cannot tell them apart: record them one per file");

  std::optional<std::vector<int>> requested;
  if (!request_.cpus.empty()) {
    PP_ASSIGN_OR_RETURN(requested, parse_cpu_list(request_.cpus));
  }
  for (Recorded& r : events_) {
    if (!requested) {
      r.cpus = r.info.cpus;
      continue;
    }
    for (int cpu : *requested) {
      bool covered = false;
      for (int c : r.info.cpus)
        covered |= c == cpu;
      if (!covered)
        return errorf(ErrorKind::kUsage, EINVAL,
                      "persistent event '%s' has no buffer on CPU %d (it covers %s); "
                      "choose CPUs with -C from those",
                      r.info.name.c_str(), cpu, format_cpu_list(r.info.cpus).c_str());
    }
    r.cpus = *requested;
  }
  return ok_status();
}

// Maps `fd` read-only and puts a reader on it.
Status Session::add_stream(Stream stream, size_t mmap_length, sys::RingLayout layout,
                           const sys::EventAttr& attr, std::string_view what) {
  auto mapping = kernel_.mmap(stream.fd.get(), mmap_length, PROT_READ);
  if (!mapping.ok()) {
    sys::FailedCall call;
    call.call = sys::PerfCall::kMmap;
    call.event = std::string(what);
    call.cpu = stream.cpu;
    call.length = mmap_length;
    call.prot = PROT_READ;
    return sys::explain(mapping.error(), call, {request_.backend.proc_root, request_.roots.sysfs});
  }
  stream.mapping = std::move(mapping).value();
  sys::RingReaderOptions options;
  options.start = request_.snapshot ? sys::RingStart::kOldest : sys::RingStart::kNow;
  options.layout = layout;
  options.attr = attr;
  PP_ASSIGN_OR_RETURN(
      sys::RingReader reader,
      sys::RingReader::create({stream.mapping.data(), stream.mapping.size()}, options));
  stream.reader.emplace(std::move(reader));
  if (has_sample_id(attr)) {
    auto id = sys::event_id(kernel_, stream.fd.get());
    if (!id.ok())
      return id.error().with_context("reading the sample id of '" + std::string(what) +
                                     "' on CPU " + std::to_string(stream.cpu));
    stream.id = *id;
  }
  streams_.push_back(std::move(stream));
  return ok_status();
}

Status Session::attach() {
  for (size_t e = 0; e < events_.size(); e++) {
    Recorded& r = events_[e];
    for (int cpu : r.cpus) {
      PP_ASSIGN_OR_RETURN(persistent::Buffer buffer, backend_->open(r.info.id, cpu));
      Stream s;
      s.event = e;
      s.cpu = cpu;
      s.fd = std::move(buffer.fd);
      PP_RETURN_IF_ERROR(add_stream(std::move(s), buffer.mmap_length, ring_layout(buffer.layout),
                                    r.info.attr, r.text));
      r.ids.push_back(streams_.back().id);
    }
  }
  result_.buffers = int(streams_.size());
  return ok_status();
}

// The tracking event perf record adds: a dummy software event per CPU whose
// buffer gets the COMM, FORK and EXIT records (and MMAP2 for events that
// sample instruction pointers) of tasks that start while recording, so perf
// names COMMAND and the processes it starts. Best effort: without it the
// file holds the same samples, with fewer names.
void Session::attach_tracking() {
  bool ids = true, ip = false;
  std::vector<int> cpus;
  for (const Recorded& r : events_) {
    ids &= has_sample_id(r.info.attr) && r.info.attr.attr.sample_id_all;
    ip |= (r.info.attr.attr.sample_type & PERF_SAMPLE_IP) &&
          r.info.attr.attr.type != PERF_TYPE_TRACEPOINT;
    for (int cpu : r.cpus)
      if (std::find(cpus.begin(), cpus.end(), cpu) == cpus.end())
        cpus.push_back(cpu);
  }
  if (!ids || !request_.follow)
    return;
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
  Tracking tracking;
  tracking.attr = attr;
  size_t first = streams_.size();
  for (int cpu : cpus) {
    auto fd = kernel_.perf_event_open(attr, -1, cpu, -1, 0);
    if (!fd.ok()) {
      notes_ << "perf persistent record: no tracking event on CPU " << cpu << " ("
             << fd.error().message() << "): tasks started while recording may show no name\n";
      streams_.resize(first);
      return;
    }
    Stream s;
    s.event = events_.size();
    s.cpu = cpu;
    s.fd = std::move(fd).value();
    Status added = add_stream(std::move(s), (1 + kTrackingPages) * sys::page_size(),
                              sys::RingLayout::kBackward, attr, "dummy:HG");
    if (!added.ok()) {
      notes_ << "perf persistent record: no tracking event on CPU " << cpu << " ("
             << added.error().message() << "): tasks started while recording may show no name\n";
      streams_.resize(first);
      return;
    }
    tracking.ids.push_back(streams_.back().id);
  }
  tracking_ = std::move(tracking);
}

Status Session::open_writer() {
  WriterConfig config;
  for (const Recorded& r : events_) {
    EventDesc desc{r.info.attr, r.name,
                   has_sample_id(r.info.attr) ? r.ids : std::vector<uint64_t>{}};
    config.events.push_back(std::move(desc));
  }
  if (tracking_)
    config.events.push_back({tracking_->attr, "dummy:HG", tracking_->ids});
  config.cmdline = request_.cmdline;
  config.tracefs_root = request_.roots.tracefs;
  config.sysfs_root = request_.roots.sysfs;
  config.proc_root = request_.backend.proc_root;
  if (request_.output == "-") {
    PP_ASSIGN_OR_RETURN(writer_, PerfDataWriter::create_pipe(STDOUT_FILENO, std::move(config)));
  } else {
    PP_ASSIGN_OR_RETURN(writer_, PerfDataWriter::create_file(request_.output, std::move(config)));
  }
  result_.output = writer_->output_name();
  return ok_status();
}

// Writes what one buffer holds beyond what was read. Spans that lie back to
// back in the reader's copy go to the writer as one append.
Status Session::drain(Stream& stream) {
  if (stream.read_once && !stream.reader->has_new_data())
    return ok_status();
  stream.read_once = true;
  const sys::RingBatch& batch = stream.reader->read();
  if (batch.lost.records) {
    result_.overwritten += batch.lost.records;
    result_.overwritten_bytes += batch.lost.bytes;
    LostReport lost;
    lost.id = stream.id;
    lost.lost = batch.lost.records;
    lost.cpu = uint32_t(stream.cpu);
    PP_RETURN_IF_ERROR(writer_->append_lost(lost));
    appended_since_flush_ = true;
  }
  const uint8_t* run = nullptr;
  size_t run_size = 0;
  for (std::span<const uint8_t> record : batch) {
    if (run && run + run_size == record.data()) {
      run_size += record.size();
      continue;
    }
    if (run)
      PP_RETURN_IF_ERROR(writer_->append({run, run_size}));
    run = record.data();
    run_size = record.size();
  }
  if (run) {
    PP_RETURN_IF_ERROR(writer_->append({run, run_size}));
    appended_since_flush_ = true;
  }
  return ok_status();
}

Status Session::drain_all() {
  bool any = false;
  for (Stream& s : streams_) {
    bool before = appended_since_flush_;
    appended_since_flush_ = false;
    PP_RETURN_IF_ERROR(drain(s));
    any |= appended_since_flush_;
    appended_since_flush_ |= before;
  }
  if (any)
    PP_RETURN_IF_ERROR(writer_->finished_round());
  return ok_status();
}

void Session::stop_command() {
  if (!child_ || child_->reaped())
    return;
  (void)child_->kill(SIGTERM);
  if (auto status = child_->wait(); status.ok())
    result_.command_status = *status;
}

// Polls the buffers, the command and the signals until one says stop.
Status Session::follow() {
  enum { kSignals, kChild, kFirstBuffer };
  std::vector<pollfd> fds(kFirstBuffer + streams_.size());
  fds[kSignals] = {signals_->fd(), POLLIN, 0};
  fds[kChild] = {child_ ? child_->pidfd() : -1, POLLIN, 0};
  for (size_t i = 0; i < streams_.size(); i++)
    fds[kFirstBuffer + i] = {streams_[i].fd.get(), POLLIN, 0};
  auto last_flush = Clock::now();
  const auto interval = std::chrono::milliseconds(request_.flush_interval_ms);
  for (;;) {
    auto ready = kernel_.poll(fds, request_.flush_interval_ms);
    if (!ready.ok() && ready.error().code() != EINTR)
      return ready.error().with_context("waiting for the buffers");
    PP_RETURN_IF_ERROR(drain_all());
    if (appended_since_flush_ && Clock::now() - last_flush >= interval) {
      PP_RETURN_IF_ERROR(writer_->flush());
      appended_since_flush_ = false;
      last_flush = Clock::now();
    }
    if (fds[kSignals].revents & POLLIN) {
      if (auto sig = signals_->read(); sig.ok()) {
        result_.signal = *sig;
        stop_command();
        return drain_all();
      }
    }
    if (child_ && (fds[kChild].revents & POLLIN)) {
      PP_ASSIGN_OR_RETURN(int status, child_->wait());
      result_.command_status = status;
      // What the command caused is in the buffers by now: take it.
      return drain_all();
    }
    // A buffer whose event went away (POLLHUP) no longer wakes anyone.
    for (size_t i = kFirstBuffer; i < fds.size(); i++)
      if (fds[i].revents & (POLLHUP | POLLERR))
        fds[i].fd = -1;
  }
}

Result<RecordResult> Session::run() {
  if (!request_.follow && !request_.command.empty())
    return usage_error("--no-follow writes what the buffers hold and exits: it runs no command");
  PP_ASSIGN_OR_RETURN(sys::SignalFd signals, sys::SignalFd::open({SIGINT, SIGTERM, SIGHUP}));
  signals_.emplace(std::move(signals));
  PP_ASSIGN_OR_RETURN(pmu::Model model, pmu::Model::load(request_.roots));
  backend_ = persistent::make_backend(request_.backend);
  PP_RETURN_IF_ERROR(resolve_events(model));
  PP_RETURN_IF_ERROR(attach());
  attach_tracking();
  PP_RETURN_IF_ERROR(open_writer());

  Status status = ok_status();
  if (request_.snapshot)
    status = drain_all();
  // From here on the file is a valid perf.data, even if the recorder is
  // killed before its first flush in the loop.
  if (status.ok())
    status = writer_->flush();
  if (status.ok() && request_.follow) {
    if (!request_.command.empty()) {
      auto child =
          sys::Child::spawn(request_.command, {.stdout_to_stderr = request_.output == "-"});
      if (child.ok())
        child_.emplace(std::move(child).value());
      else
        result_.command_error = std::move(child).error();
    }
    if (!result_.command_error)
      status = follow();
  }
  stop_command();
  Status finished = writer_->finish();
  if (!status.ok())
    result_.output_error = status.error();
  else if (!finished.ok())
    result_.output_error = finished.error();

  const WriterStats& written = writer_->stats();
  result_.samples = written.samples;
  result_.records = written.records;
  result_.bytes = written.file_bytes;
  result_.dropped = written.dropped_records;
  for (const Stream& s : streams_) {
    result_.kernel_lost += s.reader->stats().kernel_lost;
    result_.kernel_lost_samples += s.reader->stats().kernel_lost_samples;
  }
  return result_;
}

std::string format_mb(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", double(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

Result<RecordResult> record(const RecordRequest& request, std::ostream& notes) {
  Session session(request, notes);
  return session.run();
}

std::string record_summary(const RecordResult& r) {
  std::string out = "[ perf persistent record: Captured and wrote " + format_mb(r.bytes) + " MB " +
                    r.output + " (" + std::to_string(r.samples) + " samples) ]\n";
  uint64_t lost = r.kernel_lost + r.kernel_lost_samples + r.overwritten;
  if (lost) {
    out += "[ perf persistent record: lost " + std::to_string(lost) + " samples:";
    if (r.overwritten)
      out += " " + std::to_string(r.overwritten) + " overwritten (" +
             std::to_string(r.overwritten_bytes) +
             " bytes) before they were read, the buffer is too small for the rate "
             "(create the event with a larger -m);";
    if (r.kernel_lost)
      out += " " + std::to_string(r.kernel_lost) + " dropped by the kernel (PERF_RECORD_LOST);";
    if (r.kernel_lost_samples)
      out += " " + std::to_string(r.kernel_lost_samples) +
             " not sampled by the kernel (PERF_RECORD_LOST_SAMPLES);";
    out.back() = ' ';
    out += "]\n";
  }
  if (r.dropped)
    out += "[ perf persistent record: " + std::to_string(r.dropped) +
           " records read but not written: the output failed ]\n";
  return out;
}

}  // namespace pp::report

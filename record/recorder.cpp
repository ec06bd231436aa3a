#include "record/recorder.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "record/attach.h"
#include "record/drain.h"
#include "record/events.h"
#include "record/tracking.h"
#include "report/perf_data_writer.h"
#include "sys/child.h"
#include "sys/process.h"
#include "sys/ring_reader.h"

namespace pp::record {
namespace {

using Clock = std::chrono::steady_clock;

// The drained records go into perf.data.
class WriterSink final : public RecordSink {
 public:
  explicit WriterSink(report::PerfDataWriter& writer) : writer_(writer) {}

  Status lost(const Stream& stream, uint64_t records) override {
    report::LostReport lost;
    lost.id = stream.id;
    lost.lost = records;
    lost.cpu = uint32_t(stream.cpu);
    return writer_.append_lost(lost);
  }
  Status append(std::span<const uint8_t> records) override { return writer_.append(records); }
  Status end_round() override { return writer_.finished_round(); }

 private:
  report::PerfDataWriter& writer_;
};

class Session {
 public:
  Session(const RecordRequest& request, std::ostream& notes)
      : request_(request),
        notes_(notes),
        kernel_(request.backend.kernel ? *request.backend.kernel : sys::real_kernel()) {}

  Result<RecordResult> run();

 private:
  Status attach();
  Status open_writer();
  Status drain_all();
  Status follow();
  void stop_command();
  static Error reader_gone() {
    return Error(ErrorKind::kOutput, EPIPE, "the reader of the output pipe closed it");
  }

  const RecordRequest& request_;
  std::ostream& notes_;
  sys::Kernel& kernel_;
  std::unique_ptr<persistent::Backend> backend_;
  std::vector<ResolvedEvent> events_;
  std::vector<Stream> streams_;  // the events' buffers, then the tracking event's
  std::optional<sys::EventAttr> tracking_;
  std::unique_ptr<report::PerfDataWriter> writer_;
  std::optional<WriterSink> sink_;  // into writer_
  DrainTotals drained_;
  std::optional<sys::SignalFd> signals_;
  std::optional<sys::Child> child_;
  RecordResult result_;
  bool appended_since_flush_ = false;
};

// Attaches to every event's buffers, then (when following: a snapshot
// starts no task) to the tracking event's.
Status Session::attach() {
  AttachOptions options;
  options.kernel = &kernel_;
  options.start = request_.snapshot ? sys::RingStart::kOldest : sys::RingStart::kNow;
  options.explain = {request_.backend.proc_root, request_.roots.sysfs};
  // The events' context streams are read as events of their own, after them.
  PP_ASSIGN_OR_RETURN(auto contexts, context_events(events_, *backend_, notes_));
  bool covered = contexts_cover(events_, contexts);
  for (ResolvedEvent& c : contexts)
    events_.push_back(std::move(c));
  PP_ASSIGN_OR_RETURN(streams_, attach_events(*backend_, events_, options));
  result_.buffers = int(streams_.size());
  if (!request_.follow || covered)
    return ok_status();
  if (auto tracking = attach_tracking(events_, options, notes_)) {
    tracking_ = tracking->attr;
    for (Stream& s : tracking->streams)
      streams_.push_back(std::move(s));
  }
  return ok_status();
}

// The sample ids of event `event`'s buffers, in the order they were attached.
std::vector<uint64_t> ids_of(const std::vector<Stream>& streams, size_t event) {
  std::vector<uint64_t> ids;
  for (const Stream& s : streams)
    if (s.event == event)
      ids.push_back(s.id);
  return ids;
}

Status Session::open_writer() {
  report::WriterConfig config;
  for (size_t e = 0; e < events_.size(); e++) {
    const ResolvedEvent& r = events_[e];
    report::EventDesc desc{
        r.info.attr, r.name,
        has_sample_id(r.info.attr) ? ids_of(streams_, e) : std::vector<uint64_t>{}};
    config.events.push_back(std::move(desc));
  }
  if (tracking_)
    config.events.push_back(
        {*tracking_, std::string(kTrackingName), ids_of(streams_, events_.size())});
  config.cmdline = request_.cmdline;
  config.tracefs_root = request_.roots.tracefs;
  config.sysfs_root = request_.roots.sysfs;
  config.proc_root = request_.backend.proc_root;
  if (request_.output == "-") {
    PP_ASSIGN_OR_RETURN(writer_,
                        report::PerfDataWriter::create_pipe(STDOUT_FILENO, std::move(config)));
  } else {
    PP_ASSIGN_OR_RETURN(writer_,
                        report::PerfDataWriter::create_file(request_.output, std::move(config)));
  }
  result_.output = writer_->output_name();
  sink_.emplace(*writer_);
  return ok_status();
}

Status Session::drain_all() {
  PP_ASSIGN_OR_RETURN(bool any, record::drain_all(streams_, *sink_, drained_));
  appended_since_flush_ |= any;
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
  enum { kSignals, kChild, kOutput, kFirstBuffer };
  std::vector<pollfd> fds(kFirstBuffer + streams_.size());
  fds[kSignals] = {signals_->fd(), POLLIN, 0};
  fds[kChild] = {child_ ? child_->pidfd() : -1, POLLIN, 0};
  // A pipe on standard output polls POLLERR once its reader has gone (`|
  // head`): then stop at once, not at the next write, which may never come.
  fds[kOutput] = {request_.output == "-" ? STDOUT_FILENO : -1, 0, 0};
  for (size_t i = 0; i < streams_.size(); i++)
    fds[kFirstBuffer + i] = {streams_[i].fd.get(), POLLIN, 0};
  auto last_flush = Clock::now();
  const auto interval = std::chrono::milliseconds(request_.flush_interval_ms);
  for (;;) {
    auto ready = kernel_.poll(fds, request_.flush_interval_ms);
    if (!ready.ok() && ready.error().code() != EINTR)
      return ready.error().with_context("waiting for the buffers");
    if (fds[kOutput].revents & POLLERR)
      return reader_gone();
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
  // A closed output pipe is an EPIPE to handle (stop COMMAND, say so), not a
  // death that leaves COMMAND running. COMMAND gets the default back.
  ::signal(SIGPIPE, SIG_IGN);
  signals_.emplace(std::move(signals));
  PP_ASSIGN_OR_RETURN(pmu::Model model, pmu::Model::load(request_.roots));
  backend_ = persistent::make_backend(request_.backend);
  PP_ASSIGN_OR_RETURN(events_,
                      resolve_events(request_.events, request_.cpus, model, *backend_, notes_));
  PP_RETURN_IF_ERROR(attach());
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
        result_.command_error = std::move(child).error().with_kind(ErrorKind::kCommand);
    }
    if (!result_.command_error)
      status = follow();
  }
  stop_command();
  Status finished = writer_->finish();
  if (!status.ok())
    result_.stopped_error = status.error();
  else if (!finished.ok())
    result_.stopped_error = finished.error();

  const report::WriterStats& written = writer_->stats();
  result_.samples = written.samples;
  result_.records = written.records;
  result_.bytes = written.file_bytes;
  result_.dropped = written.dropped_records;
  result_.overwritten = drained_.overwritten;
  result_.overwritten_bytes = drained_.overwritten_bytes;
  for (const Stream& s : streams_) {
    result_.kernel_lost += s.reader->stats().kernel_lost;
    result_.kernel_lost_samples += s.reader->stats().kernel_lost_samples;
    result_.corrupt_heads += s.reader->stats().corrupt_heads;
    result_.corrupt_bytes += s.reader->stats().corrupt_bytes;
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

std::optional<Error> final_error(const RecordResult& result) {
  if (result.command_error)
    return result.command_error;
  if (result.stopped_error) {
    const Error& stopped = *result.stopped_error;
    if (stopped.code() == EPIPE)
      return Error(ErrorKind::kOutput, EPIPE,
                   std::string("output pipe closed by reader; stopping") +
                       (result.command_status == 128 + SIGTERM ? " (COMMAND was stopped)" : "") +
                       ": the records written before are all it got");
    if (stopped.kind() != ErrorKind::kOutput)
      return stopped;
    return Error(ErrorKind::kOutput, stopped.code(),
                 stopped.message() + "; " + result.output +
                     " is complete up to the last record written: free space or record to "
                     "another file system (-o)");
  }
  if (result.command_status == 127)
    return Error(ErrorKind::kCommand, ENOENT,
                 "COMMAND exited with status 127 (its shell found no such command?); record "
                 "exits 6 instead, since perf takes a 127 to mean that perf-persistent itself "
                 "is missing");
  return std::nullopt;
}

int exit_status(const RecordResult& result) {
  if (std::optional<Error> error = final_error(result))
    return exit_status_of(error->kind());
  return result.command_status.value_or(0);
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
  if (r.corrupt_heads || r.corrupt_bytes)
    out += "[ perf persistent record: the buffer's control page or data was corrupted (" +
           std::to_string(r.corrupt_heads) + " impossible data_head values, " +
           std::to_string(r.corrupt_bytes) +
           " bytes skipped): another holder of the event wrote to it; see 'perf persistent "
           "list' ]\n";
  if (r.dropped)
    out += "[ perf persistent record: " + std::to_string(r.dropped) +
           " records read but not written: the output failed ]\n";
  return out;
}

}  // namespace pp::record

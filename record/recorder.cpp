#include "record/recorder.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "persistent/sample_layout.h"
#include "record/attach.h"
#include "record/drain.h"
#include "record/events.h"
#include "record/pace.h"
#include "record/tracking.h"
#include "report/perf_data_writer.h"
#include "sys/child.h"
#include "sys/clock.h"
#include "sys/kernel.h"
#include "sys/perf_abi_records.h"
#include "sys/perf_abi_sample.h"
#include "sys/process.h"
#include "sys/ring_reader.h"

namespace pp::record {
namespace {

using Clock = std::chrono::steady_clock;

// The drained records go into perf.data, a lean event's completed to the
// layout its attr has in the file (persistent/sample_layout.h). A record
// that does not decode with its own attr cannot be laid out anew: it is left
// out and counted, by event index.
class WriterSink final : public RecordSink {
 public:
  WriterSink(report::PerfDataWriter& writer, const std::vector<ResolvedEvent>& events)
      : writer_(writer), left_out_(events.size()) {
    for (size_t e = 0; e < events.size(); e++)
      left_out_[e].event = events[e].text;
    for (const ResolvedEvent& r : events) {
      if (persistent::is_lean(r.info.attr))
        lean_.push_back(Relayout{r.info.attr, persistent::completed_attr(r.info.attr)});
      else
        lean_.push_back(std::nullopt);
    }
  }

  Status lost(const Stream& stream, uint64_t records) override {
    report::LostReport lost;
    lost.id = stream.id;
    lost.lost = records;
    lost.cpu = uint32_t(stream.cpu);
    return writer_.append_lost(lost);
  }
  Status append(const Stream& stream, std::span<const uint8_t> records) override {
    if (stream.event >= lean_.size() || !lean_[stream.event])
      return writer_.append(records);
    const Relayout& relayout = *lean_[stream.event];
    sys::SampleFill fill = sys::sample_fill(relayout.from.attr, stream.cpu, stream.id);
    scratch_.clear();
    sys::walk_records(records, [&](const perf_event_header& h, size_t offset) {
      Status done = sys::relayout_record(relayout.from.attr, relayout.to.attr, fill,
                                         records.subspan(offset, h.size), scratch_);
      if (!done.ok()) {
        RecordResult::LeftOut& left = left_out_[stream.event];
        if (left.records++ == 0)
          left.reason = done.error().message();
      }
      return true;
    });
    return writer_.append(scratch_);
  }
  Status end_round() override { return writer_.finished_round(); }
  // By event index.
  const std::vector<RecordResult::LeftOut>& left_out() const { return left_out_; }

 private:
  struct Relayout {
    sys::EventAttr from;  // the event's: how the buffer lays records out
    sys::EventAttr to;    // the file's
  };
  report::PerfDataWriter& writer_;
  std::vector<RecordResult::LeftOut> left_out_;
  std::vector<std::optional<Relayout>> lean_;  // by event index
  std::vector<uint8_t> scratch_;
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
  // After stream `s`'s hangup pipe closed: whether its broker still serves
  // the same kernel event (a `daemon --replace` handover, a restart that
  // kept the event's fds), asked through `rejoined`, a new connection made
  // once per wakeup (the old broker's is gone), which the new broker counts
  // as a reader. Then the new pipe stands in for the old one; otherwise
  // (killed, replaced by a reload, no broker) the event is gone.
  bool still_served(Stream& s, std::unique_ptr<persistent::Backend>& rejoined);
  void stop_command();
  static Error reader_gone() {
    return Error(ErrorKind::kOutput, EPIPE, "the reader of the output pipe closed it");
  }
  Status switch_file(bool at_exit);
  bool over_max_size();
  uint64_t output_bytes() const { return writer_->stats().file_bytes + writer_->buffered_bytes(); }
  void add_stats(const report::WriterStats& stats);

  const RecordRequest& request_;
  std::ostream& notes_;
  sys::Kernel& kernel_;
  std::unique_ptr<persistent::Backend> backend_;
  std::unique_ptr<persistent::Backend> rejoined_;  // see still_served()
  std::vector<ResolvedEvent> events_;
  std::vector<Stream> streams_;  // the events' buffers, then the tracking event's
  size_t named_events_ = 0;      // events_ named by -e; their context streams follow
  std::optional<sys::EventAttr> tracking_;
  std::unique_ptr<report::PerfDataWriter> writer_;
  std::optional<WriterSink> sink_;  // into writer_
  DrainTotals drained_;
  std::optional<sys::SignalFd> signals_;
  std::optional<sys::Child> child_;
  RecordResult result_;
  bool appended_since_flush_ = false;
  report::WriterStats totals_;  // of the files already switched away from
  std::string last_stamp_;
  std::vector<std::string> kept_;  // switched files, oldest first, still on disk
  Clock::time_point file_started_;
};

// Every byte the writer of a buffer wrote that this reader saw go by: read,
// lapped, or dropped as overrun.
uint64_t writer_bytes(const sys::RingStats& st) {
  return st.bytes + st.lapped_bytes + st.overrun_bytes;
}

// The most the writer keeps before it writes: half the smallest buffer,
// between kMinWriteBatch and the perf.data writer's default (4 MiB). A write
// blocks the one thread that also reads: 4 MiB at once took 1 to 13 ms on a
// 2-CPU machine, while a 512 KiB buffer lasts about 5 ms at a million
// tracepoint samples a second; half a buffer is written long before the
// kernel writes half a buffer again.
constexpr size_t kMinWriteBatch = 256 << 10;
size_t write_batch(const std::vector<Stream>& streams) {
  size_t largest = report::WriterConfig{}.buffer_size;
  size_t batch = largest;
  for (const Stream& s : streams)
    batch = std::min(batch, s.reader->data_size() / 2);
  return std::clamp(batch, kMinWriteBatch, largest);
}

bool switching(const RecordRequest& r) {
  return r.switch_output.mode != SwitchOutput::Mode::kNone;
}

// Attaches to every event's buffers, then (when following: a snapshot
// starts no task) to the tracking event's.
Status Session::attach() {
  AttachOptions options;
  options.kernel = &kernel_;
  options.start = request_.snapshot ? sys::RingStart::kOldest : sys::RingStart::kNow;
  options.explain = {request_.backend.proc_root, request_.roots.sysfs};
  // The events' context streams are read as events of their own, after them.
  PP_ASSIGN_OR_RETURN(auto contexts, context_events(events_, *backend_, notes_));
  named_events_ = events_.size();
  bool covered = contexts_cover(events_, contexts);
  for (ResolvedEvent& c : contexts)
    events_.push_back(std::move(c));
  PP_ASSIGN_OR_RETURN(streams_, attach_events(*backend_, events_, options));
  result_.buffers = int(streams_.size());
  if (request_.verbose)
    for (const Stream& s : streams_) {
      const ResolvedEvent& r = events_[s.event];
      notes_ << "perf persistent record: attached to '" << r.text << "' (" << r.name << ", id "
             << r.info.id << ", " << r.info.backend << ") on CPU " << s.cpu << ": "
             << s.mapping.size() << " bytes mapped read-only, "
             << persistent::layout_name(r.info.layout) << " layout, sample id " << s.id
             << ", clock " << (r.info.clock().empty() ? "perf's default" : r.info.clock())
             << (request_.snapshot ? ", reading from the oldest record" : ", reading new records")
             << "\n";
    }
  if (!request_.follow || covered)
    return ok_status();
  if (auto tracking = attach_tracking(events_, options, notes_)) {
    tracking_ = tracking->attr;
    if (request_.verbose)
      notes_ << "perf persistent record: tracking event " << kTrackingName << " on "
             << tracking->streams.size() << " CPUs (COMM, FORK, EXIT of tasks started while "
             << "recording)\n";
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
  config.buffer_size = write_batch(streams_);
  for (size_t e = 0; e < events_.size(); e++) {
    const ResolvedEvent& r = events_[e];
    // A lean event's attr as its records are once completed (WriterSink).
    sys::EventAttr attr = persistent::completed_attr(r.info.attr);
    report::EventDesc desc{attr, r.name,
                           has_sample_id(attr) ? ids_of(streams_, e) : std::vector<uint64_t>{}};
    config.events.push_back(std::move(desc));
  }
  if (tracking_)
    config.events.push_back(
        {*tracking_, std::string(kTrackingName), ids_of(streams_, events_.size())});
  config.cmdline = request_.cmdline;
  config.tracefs_root = request_.roots.tracefs;
  config.sysfs_root = request_.roots.sysfs;
  config.proc_root = request_.backend.proc_root;
  const perf_event_attr& first = events_.front().info.attr.attr;
  if (first.use_clockid) {
    // HEADER_CLOCK_DATA: the events' clock and the wall clock read together.
    PP_ASSIGN_OR_RETURN(uint64_t resolution, sys::clock_resolution_ns(first.clockid));
    PP_ASSIGN_OR_RETURN(sys::ClockPair pair, sys::read_clock_pair(first.clockid));
    config.clock = report::ClockData{resolution, pair};
    if (request_.verbose)
      notes_ << "perf persistent record: clock " << sys::clock_name(first.clockid) << " "
             << pair.clock_ns << " ns = wall clock " << pair.wall_ns << " ns (read within "
             << pair.window_ns << " ns), resolution " << resolution << " ns\n";
  }
  file_started_ = Clock::now();
  if (request_.output == "-") {
    PP_ASSIGN_OR_RETURN(writer_,
                        report::PerfDataWriter::create_pipe(STDOUT_FILENO, std::move(config)));
  } else {
    PP_ASSIGN_OR_RETURN(writer_,
                        report::PerfDataWriter::create_file(request_.output, std::move(config)));
  }
  result_.output = writer_->output_name();
  sink_.emplace(*writer_, events_);
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

void Session::add_stats(const report::WriterStats& w) {
  totals_.samples += w.samples;
  totals_.records += w.records;
  totals_.file_bytes += w.file_bytes;
  totals_.dropped_records += w.dropped_records;
}

// Finishes the file, renames it "<output>.<stamp>" as perf does, keeps at
// most --switch-max-files of them, and (unless the recording is over)
// starts the next file under the output's name.
Status Session::switch_file(bool at_exit) {
  Status finished = writer_->finish();
  add_stats(writer_->stats());
  sink_.reset();
  writer_.reset();
  last_stamp_ = switch_stamp(std::chrono::system_clock::now(), last_stamp_);
  std::string name = request_.output + "." + last_stamp_;
  std::error_code ec;
  std::filesystem::rename(request_.output, name, ec);
  if (ec)
    return errorf(ErrorKind::kOutput, ec.value(), "cannot rename %s to %s: %s",
                  request_.output.c_str(), name.c_str(), ec.message().c_str());
  notes_ << "[ perf persistent record: Dump " << name << " ]\n";
  result_.files.push_back(name);
  kept_.push_back(name);
  if (request_.switch_max_files && kept_.size() > request_.switch_max_files) {
    std::filesystem::remove(kept_.front(), ec);
    if (request_.verbose)
      notes_ << "perf persistent record: removed " << kept_.front() << " (--switch-max-files "
             << request_.switch_max_files << ")\n";
    result_.removed.push_back(kept_.front());
    kept_.erase(kept_.begin());
  }
  PP_RETURN_IF_ERROR(finished);
  if (at_exit)
    return ok_status();
  PP_RETURN_IF_ERROR(open_writer());
  return writer_->flush();
}

// --max-size: perf's message when the output reached it.
bool Session::over_max_size() {
  if (!request_.max_size || output_bytes() < request_.max_size)
    return false;
  result_.max_size_reached = true;
  notes_ << "[ perf persistent record: perf size limit reached (" << output_bytes() / 1024
         << " KB), stopping session ]\n";
  return true;
}

// Polls the buffers, the command and the signals until one says stop.
Status Session::follow() {
  enum { kSignals, kChild, kOutput, kFirstBuffer };
  // Each buffer's fd, then each one's hangup pipe beside it (-1 for none).
  const size_t buffers = streams_.size();
  std::vector<pollfd> fds(kFirstBuffer + 2 * buffers);
  fds[kSignals] = {signals_->fd(), POLLIN, 0};
  fds[kChild] = {child_ ? child_->pidfd() : -1, POLLIN, 0};
  // A pipe on standard output polls POLLERR once its reader has gone (`|
  // head`): then stop at once, not at the next write, which may never come.
  fds[kOutput] = {request_.output == "-" ? STDOUT_FILENO : -1, 0, 0};
  for (size_t i = 0; i < buffers; i++) {
    fds[kFirstBuffer + i] = {streams_[i].poll_fd(), streams_[i].poll_events(), 0};
    fds[kFirstBuffer + buffers + i] = {streams_[i].hangup_fd(), 0, 0};
  }
  auto last_flush = Clock::now();
  const auto interval = std::chrono::milliseconds(request_.flush_interval_ms);
  const SwitchOutput& sw = request_.switch_output;
  // Wakeups of a buffer other readers share may go to them: wake in time
  // regardless (record/pace.h). The tracking event is this reader's own.
  std::vector<PacedBuffer> paced;
  for (const Stream& s : streams_)
    paced.push_back({s.reader->data_size(), s.event < events_.size()});
  ReadPacer pacer({.max_ms = request_.flush_interval_ms}, std::move(paced));
  std::vector<uint64_t> written(streams_.size());
  auto observe = [&] {
    for (size_t i = 0; i < streams_.size(); i++)
      written[i] = writer_bytes(streams_[i].reader->stats());
    pacer.observe(written, sys::monotonic_ns());
  };
  observe();
  std::vector<char> hung(streams_.size());
  auto every_event_hung = [&] {
    bool any = false;
    for (size_t i = 0; i < streams_.size(); i++) {
      if (streams_[i].event >= named_events_)
        continue;  // a context stream, the tracking event: no event of the user's
      if (!hung[i])
        return false;
      any = true;
    }
    return any;
  };
  for (;;) {
    int timeout = pacer.timeout_ms();
    if (sw.mode == SwitchOutput::Mode::kTime) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(file_started_ + sw.every -
                                                                        Clock::now());
      timeout = int(std::clamp<int64_t>(left.count(), 0, timeout));
    }
    auto ready = kernel_.poll(fds, timeout);
    if (!ready.ok() && ready.error().code() != EINTR)
      return ready.error().with_context("waiting for the buffers");
    if (fds[kOutput].revents & POLLERR)
      return reader_gone();
    PP_RETURN_IF_ERROR(drain_all());
    observe();
    if (over_max_size()) {
      stop_command();
      return ok_status();
    }
    if ((sw.mode == SwitchOutput::Mode::kSize && output_bytes() >= sw.bytes) ||
        (sw.mode == SwitchOutput::Mode::kTime && Clock::now() >= file_started_ + sw.every)) {
      PP_RETURN_IF_ERROR(switch_file(false));
      appended_since_flush_ = false;
      last_flush = Clock::now();
    }
    if (appended_since_flush_ && Clock::now() - last_flush >= interval) {
      PP_RETURN_IF_ERROR(writer_->flush());
      appended_since_flush_ = false;
      last_flush = Clock::now();
    }
    if (fds[kSignals].revents & POLLIN) {
      if (auto sig = signals_->read(); sig.ok()) {
        if (*sig == SIGUSR2 && sw.mode == SwitchOutput::Mode::kSignal) {
          PP_RETURN_IF_ERROR(switch_file(false));
          appended_since_flush_ = false;
          last_flush = Clock::now();
          continue;
        }
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
    // A buffer whose event went away (POLLHUP on its fd or its hangup
    // pipe) no longer wakes anyone; once every buffer of the events named
    // has, nothing more can come: stop, as perf record does when all its
    // fds hang up. What the rings still hold is drained below.
    std::unique_ptr<persistent::Backend> rejoined;
    bool followed_on = false;
    for (size_t i = kFirstBuffer; i < fds.size(); i++)
      if (fds[i].revents & (POLLHUP | POLLERR)) {
        size_t stream = (i - kFirstBuffer) % buffers;
        if (i >= kFirstBuffer + buffers && still_served(streams_[stream], rejoined)) {
          fds[i].fd = streams_[stream].hangup_fd();
          followed_on = true;
          continue;
        }
        fds[kFirstBuffer + stream].fd = -1;
        fds[kFirstBuffer + buffers + stream].fd = -1;
        hung[stream] = 1;
      }
    if (followed_on) {
      rejoined_ = std::move(rejoined);  // the new broker's reader, whose pipes these are
      notes_ << "[ perf persistent record: its broker was replaced; following the same events "
                "through the new one ]\n";
    }
    if (every_event_hung()) {
      result_.events_gone = true;
      notes_ << "[ perf persistent record: every event followed is gone (killed, or its "
                "broker stopped), stopping session ]\n";
      stop_command();
      return drain_all();
    }
  }
}

bool Session::still_served(Stream& s, std::unique_ptr<persistent::Backend>& rejoined) {
  if (!s.pollable || s.event >= events_.size())
    return false;  // a shared ring dies with its broker
  if (!rejoined)
    rejoined = persistent::make_backend(request_.backend);
  auto buffer = rejoined->open(events_[s.event].info.id, s.cpu);
  if (!buffer.ok() || !buffer->hangup)
    return false;
  auto was = sys::event_id(kernel_, s.fd.get());
  auto now = sys::event_id(kernel_, buffer->fd.get());
  if (!was.ok() || !now.ok() || *was != *now)
    return false;  // made again: what this reader holds is no longer the event
  s.hangup = std::move(buffer->hangup);
  return true;
}

Result<RecordResult> Session::run() {
  if (!request_.follow && !request_.command.empty())
    return usage_error("--no-follow writes what the buffers hold and exits: it runs no command");
  if (switching(request_) && request_.output == "-")
    return usage_error(
        "--switch-output switches between files; standard output (-o -) cannot be switched");
  PP_ASSIGN_OR_RETURN(sys::SignalFd signals,
                      request_.switch_output.mode == SwitchOutput::Mode::kSignal
                          ? sys::SignalFd::open({SIGINT, SIGTERM, SIGHUP, SIGUSR2})
                          : sys::SignalFd::open({SIGINT, SIGTERM, SIGHUP}));
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
  bool stop = status.ok() && over_max_size();
  // From here on the file is a valid perf.data, even if the recorder is
  // killed before its first flush in the loop.
  if (status.ok())
    status = writer_->flush();
  if (status.ok() && request_.follow && !stop) {
    if (!request_.command.empty()) {
      sys::SpawnOptions spawn;
      spawn.stdout_to_stderr = request_.output == "-";
      auto child = sys::Child::spawn(request_.command, spawn);
      if (child.ok())
        child_.emplace(std::move(child).value());
      else
        result_.command_error = std::move(child).error().with_kind(ErrorKind::kCommand);
    }
    if (!result_.command_error)
      status = follow();
  }
  stop_command();
  Status finished = ok_status();
  if (writer_ && switching(request_)) {
    finished = switch_file(true);
  } else if (writer_) {
    finished = writer_->finish();
    add_stats(writer_->stats());
  }
  if (!status.ok())
    result_.stopped_error = status.error();
  else if (!finished.ok())
    result_.stopped_error = finished.error();
  if (switching(request_))
    result_.output = request_.output + ".<timestamp>";  // as perf says it

  result_.samples = totals_.samples;
  result_.records = totals_.records;
  result_.bytes = totals_.file_bytes;
  result_.dropped = totals_.dropped_records;
  result_.overwritten = drained_.overwritten;
  result_.overwritten_bytes = drained_.overwritten_bytes;
  for (const Stream& s : streams_) {
    const sys::RingStats& st = s.reader->stats();
    result_.kernel_lost += st.kernel_lost;
    result_.kernel_lost_samples += st.kernel_lost_samples;
    result_.corrupt_heads += st.corrupt_heads;
    result_.corrupt_bytes += st.corrupt_bytes;
    BufferResult b;
    b.event = s.event < events_.size() ? events_[s.event].text : std::string(kTrackingName);
    b.cpu = s.cpu;
    b.id = s.id;
    b.records = st.records;
    b.samples = st.samples;
    b.bytes = st.bytes;
    b.overwritten = st.lost_records;
    b.kernel_lost = st.kernel_lost;
    b.kernel_lost_samples = st.kernel_lost_samples;
    result_.per_buffer.push_back(std::move(b));
  }
  if (sink_)
    for (const RecordResult::LeftOut& left : sink_->left_out())
      if (left.records)
        result_.left_out.push_back(left);
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

std::string exit_reason(const RecordResult& result) {
  if (result.command_error)
    return "command-error";
  if (result.stopped_error)
    return "error";
  if (result.max_size_reached)
    return "max-size";
  if (result.events_gone)
    return "events-gone";
  if (result.signal)
    return "signal";
  if (result.command_status)
    return "command";
  return "snapshot";
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
  for (const RecordResult::LeftOut& left : r.left_out)
    out += "[ perf persistent record: " + std::to_string(left.records) + " record" +
           (left.records == 1 ? "" : "s") + " of " + left.event +
           " could not be completed to perf record's layout and " +
           (left.records == 1 ? "was" : "were") + " left out (the first: " + left.reason +
           "); every other record is in the file ]\n";
  return out;
}

}  // namespace pp::record

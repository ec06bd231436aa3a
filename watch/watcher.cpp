#include "watch/watcher.h"

#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "base/strings.h"
#include "record/attach.h"
#include "record/drain.h"
#include "record/events.h"
#include "report/trace_report.h"
#include "report/tracing_data.h"
#include "sys/clock.h"
#include "sys/kernel.h"
#include "sys/perf_abi_records.h"
#include "sys/process.h"
#include "sys/tree.h"
#include "watch/journal.h"
#include "watch/ndjson.h"
#include "watch/prometheus.h"

namespace pp::watch {
namespace {

constexpr const char* kMceTracepoint = "mce:mce_record";
// How often the buffers are read when nothing wakes the watcher: a machine
// check is one small record, far below any wakeup watermark, so this bounds
// how late it is seen (and what a power cut can take from the history).
constexpr int kReadIntervalMs = 1000;
// How often missing or vanished events are looked for again.
constexpr uint64_t kReattachMs = 10000;
// How often the broker is asked whether it is up (for the metrics).
constexpr uint64_t kBrokerCheckMs = 15000;

// How often the events' clock is read again beside the wall clock, so that
// a wall clock stepped after the watcher started (NTP at boot) is followed.
constexpr uint64_t kWallClockMs = 1000;

// This boot's id: the history's rows and the keys of records that are not
// machine checks are per boot, so without it one boot's rows would pass
// for another's.
//   /proc/sys/kernel/random/boot_id: "6f0c4d0e-5b1a-4c8e-9a3e-2f1f0a6f7d11\n"
Result<std::string> read_boot_id(const std::string& proc_root) {
  sys::Tree proc(proc_root);
  constexpr const char* kBootId = "sys/kernel/random/boot_id";
  constexpr const char* kWhy =
      "; the history and the records' keys are per boot: watch needs proc mounted at /proc "
      "(mount -t proc proc /proc)";
  auto text = proc.read(kBootId, 64);
  if (!text.ok())
    return Error(text.error().kind(), text.error().code(),
                 "cannot read this boot's id: " + text.error().message() + kWhy);
  std::string id(trim(*text));
  if (id.empty())
    return Error(EINVAL, "cannot read this boot's id: " + proc.path(kBootId) + " is empty" + kWhy);
  return id;
}

class Watcher;

// The drained records, decoded and handed to the watcher one by one.
class DecodeSink final : public record::RecordSink {
 public:
  explicit DecodeSink(Watcher& watcher) : watcher_(watcher) {}
  Status lost(const record::Stream& stream, uint64_t records) override;
  Status append(const record::Stream& stream, std::span<const uint8_t> records) override;
  Status end_round() override { return ok_status(); }

 private:
  Watcher& watcher_;
};

class Watcher {
 public:
  Watcher(const WatchOptions& options, std::ostream& out, std::ostream& log)
      : options_(options), out_(out), log_(log) {}

  Status run();

  // From DecodeSink.
  Status sample(const record::Stream& stream, std::span<const uint8_t> record);
  Status lost(const record::Stream& stream, uint64_t records);

 private:
  Status open_sinks();
  Status harvest();
  // Resolves and attaches the events; `required`: a failure is returned
  // (the command line named them), else noted and tried again later.
  Status attach(bool required);
  Status drain();
  Status feed(const WatchRecord& record);
  Status tick(bool final);
  void check_hangups(const std::vector<pollfd>& fds);
  std::string stream_name(const record::Stream& s) const {
    return "persistent/" + events_[s.event].info.name + "/ CPU " + std::to_string(s.cpu);
  }

  const WatchOptions& options_;
  std::ostream& out_;
  std::ostream& log_;
  std::string boot_id_;
  // A sink, and whether its failure stops the watcher (the history, the
  // output of --ndjson); the others' failures are logged and counted.
  struct Held {
    std::unique_ptr<Sink> sink;
    bool fatal = false;
    const char* name = "";
    uint64_t failures = 0;
  };
  Status each_sink(const std::function<Status(Sink&)>& call);
  std::vector<Held> sinks_;
  History* history_ = nullptr;            // sinks_ owns it
  PrometheusFile* prometheus_ = nullptr;  // sinks_ owns it
  Triggers* triggers_ = nullptr;          // sinks_ owns it
  std::unique_ptr<persistent::Backend> backend_;
  std::vector<record::ResolvedEvent> events_;
  std::vector<record::Stream> streams_;
  // Per buffer of streams_, by its event's index and CPU: its records at or
  // before this time were fed.
  std::map<std::pair<size_t, int>, uint64_t> fed_until_;
  // The same, by event name and CPU, kept when the buffers hung up: where
  // the next attach() resumes them.
  std::map<std::pair<std::string, int>, uint64_t> resume_after_;
  std::unique_ptr<report::TraceDecoder> decoder_;
  // The events' own clock beside the wall clock; nullopt when they have
  // none (their records other than machine checks then have no wall time).
  std::optional<sys::ClockPair> wall_;
  std::set<std::string> mce_keys_;   // machine checks fed in this run
  std::vector<WatchRecord> pstore_;  // what the harvest found in pstore (the relog rule)
  bool attached_ = false;
  uint64_t last_attach_ms_ = 0, last_broker_ms_ = 0, last_wall_ms_ = 0;
  uint64_t fed_ = 0, duplicates_ = 0, lost_ = 0, bad_ = 0;
};

Status DecodeSink::lost(const record::Stream& stream, uint64_t records) {
  return watcher_.lost(stream, records);
}

Status DecodeSink::append(const record::Stream& stream, std::span<const uint8_t> records) {
  Status status = ok_status();
  sys::walk_records(records, [&](const perf_event_header& h, size_t offset) {
    if (h.type != PERF_RECORD_SAMPLE)
      return true;
    status = watcher_.sample(stream, records.subspan(offset, h.size));
    return status.ok();
  });
  return status;
}

Status Watcher::open_sinks() {
  if (!options_.db.empty()) {
    HistoryOptions h = options_.history;
    h.boot_id = boot_id_;
    PP_ASSIGN_OR_RETURN(std::unique_ptr<History> history, History::open(options_.db, h));
    history_ = history.get();
    sinks_.push_back({std::move(history), true, "history"});
  }
  if (!options_.triggers.empty()) {
    TriggerOptions t;
    t.max_children = options_.max_children;
    t.log = &log_;
    PP_ASSIGN_OR_RETURN(std::unique_ptr<Triggers> triggers, Triggers::create(options_.triggers, t));
    triggers_ = triggers.get();
    sinks_.push_back({std::move(triggers), false, "triggers"});
  }
  if (!options_.prometheus.empty()) {
    PrometheusOptions p;
    p.path = options_.prometheus;
    p.interval_ms = options_.prometheus_interval_ms;
    PP_ASSIGN_OR_RETURN(std::unique_ptr<PrometheusFile> file, PrometheusFile::open(p));
    prometheus_ = file.get();
    sinks_.push_back({std::move(file), false, "metrics file"});
  }
  if (options_.journal != JournalMode::kOff) {
    JournalOptions j;
    j.every_record = options_.journal == JournalMode::kEvery;
    j.log = &log_;
    sinks_.push_back({std::make_unique<JournalSink>(real_journal_writer(), j), false, "journal"});
  }
  if (options_.ndjson)
    sinks_.push_back({std::make_unique<NdjsonSink>(out_), true, "--ndjson output"});
  return ok_status();
}

Status Watcher::feed(const WatchRecord& record) {
  if (record.mce) {
    // The same machine check from the log and from the buffer, or again
    // after a restart: one record.
    if (!mce_keys_.insert(record.key).second) {
      duplicates_++;
      return ok_status();
    }
    if (history_) {
      PP_ASSIGN_OR_RETURN(bool stored, history_->contains(record.key));
      if (stored) {
        duplicates_++;
        return ok_status();
      }
    }
  }
  nlohmann::ordered_json json = record_json(record);
  PP_RETURN_IF_ERROR(each_sink([&](Sink& sink) { return sink.record(record, json); }));
  fed_++;
  return ok_status();
}

Status Watcher::each_sink(const std::function<Status(Sink&)>& call) {
  for (Held& held : sinks_) {
    Status status = call(*held.sink);
    if (status.ok())
      continue;
    if (held.fatal)
      return status;
    // Said the first time and then every 1000th: a full disk under the
    // metrics file must not flood the log, nor stop the history.
    if (held.failures++ % 1000 == 0)
      log_ << "watch: " << held.name << ": " << status.error().message() << " (failure "
           << held.failures << "; the watcher goes on)\n";
  }
  return ok_status();
}

Status Watcher::harvest() {
  PP_ASSIGN_OR_RETURN(Harvest found, watch::harvest(options_.harvest_options));
  for (const std::string& note : found.notes)
    log_ << "watch: harvest: " << note << '\n';
  uint64_t before = fed_;
  std::map<std::string, uint64_t> by_origin;
  for (const WatchRecord& r : found.records) {
    if (r.origin == Origin::kPstore)
      pstore_.push_back(r);
    uint64_t was = fed_;
    PP_RETURN_IF_ERROR(feed(r));
    if (fed_ != was)
      by_origin[std::string(origin_name(r.origin))]++;
  }
  log_ << "watch: harvest: " << found.records.size() << " machine check"
       << (found.records.size() == 1 ? "" : "s") << " in the kernel's logs, " << fed_ - before
       << " new";
  for (const auto& [origin, n] : by_origin)
    log_ << ", " << n << " from " << origin;
  log_ << '\n';
  return ok_status();
}

Status Watcher::attach(bool required) {
  last_attach_ms_ = sys::monotonic_ms();
  std::vector<std::string> names = options_.events;
  if (names.empty())
    names.push_back(kDefaultEvent);
  auto fail = [&](const Error& e) -> Status {
    if (required)
      return e;
    if (options_.once)
      log_ << "watch: " << e.message() << "; --once reads only the kernel's logs then\n";
    else
      log_ << "watch: " << e.message() << "; trying again every " << kReattachMs / 1000 << " s\n";
    return ok_status();
  };
  auto model = pmu::Model::load(options_.roots);
  if (!model.ok())
    return fail(model.error());
  std::ostringstream notes;
  auto events = record::resolve_events(names, options_.cpus, *model, *backend_, notes,
                                       /*one_file=*/false);
  const std::string notes_text = notes.str();  // outlives split()'s views
  for (std::string_view line : split(notes_text, '\n'))
    if (!line.empty())
      log_ << "watch: " << line << '\n';
  if (!events.ok())
    return fail(events.error());
  sys::Tree tracefs(options_.roots.tracefs.empty() ? sys::default_tracefs_root()
                                                   : options_.roots.tracefs);
  std::vector<report::Tracepoint> tracepoints;
  for (const record::ResolvedEvent& e : *events) {
    if (e.info.attr.attr.type != PERF_TYPE_TRACEPOINT)
      return usage_error("persistent/" + e.info.name + "/ is " + e.name +
                         ", not a tracepoint: watch keeps decoded tracepoint records; use "
                         "'perf persistent record' for it");
    auto tp = report::find_tracepoint(tracefs, e.info.attr.attr.config, e.name);
    if (!tp.ok())
      return fail(tp.error());
    tracepoints.push_back(std::move(*tp));
  }
  auto built = report::build_tracing_data(tracefs, tracepoints, uint32_t(sys::page_size()));
  if (!built.ok())
    return fail(built.error());
  auto tracing = report::parse_tracing_data(*built);
  if (!tracing.ok())
    return fail(tracing.error());
  auto decoder = report::TraceDecoder::create(*tracing);
  if (!decoder.ok())
    return fail(decoder.error());

  record::AttachOptions attach;
  attach.start = sys::RingStart::kOldest;  // what the buffers held before we came
  attach.kernel = options_.backend.kernel;
  attach.explain = {options_.backend.proc_root, options_.roots.sysfs};
  auto streams = record::attach_events(*backend_, *events, attach);
  if (!streams.ok())
    return fail(streams.error());

  // Resume each buffer after what this run fed, or what the history holds.
  std::map<std::pair<size_t, int>, uint64_t> fed_until;
  for (const record::Stream& s : *streams) {
    const std::string& name = (*events)[s.event].info.name;
    uint64_t& until = fed_until[{s.event, s.cpu}];
    auto kept = resume_after_.find({name, s.cpu});
    if (kept != resume_after_.end())
      until = kept->second;
    if (history_ && until == 0) {
      PP_ASSIGN_OR_RETURN(std::optional<uint64_t> last, history_->last_time(name, s.cpu));
      if (last)
        until = *last;
    }
  }

  wall_ = record::wall_clock_for(*events);
  last_wall_ms_ = sys::monotonic_ms();
  streams_ = std::move(*streams);
  fed_until_ = std::move(fed_until);
  events_ = std::move(*events);
  decoder_ = std::move(*decoder);
  attached_ = true;
  std::string list;
  for (const record::ResolvedEvent& e : events_)
    list += (list.empty() ? "" : ", ") + ("persistent/" + e.info.name + "/ (" + e.name + ")");
  log_ << "watch: reading " << list << ", " << streams_.size() << " buffer"
       << (streams_.size() == 1 ? "" : "s") << '\n';
  if (prometheus_)
    for (const record::ResolvedEvent& e : events_)
      prometheus_->add_event(e.info.name, e.cpus);
  return ok_status();
}

Status Watcher::sample(const record::Stream& stream, std::span<const uint8_t> bytes) {
  const record::ResolvedEvent& event = events_[stream.event];
  auto sample = sys::decode_sample(event.info.attr.attr, bytes);
  if (!sample.ok()) {
    if (bad_++ < 10)
      log_ << "watch: " << stream_name(stream)
           << ": a record cannot be read: " << sample.error().message() << '\n';
    return ok_status();
  }
  uint64_t& fed_until = fed_until_[{stream.event, stream.cpu}];
  if (sample->time && sample->time <= fed_until)
    return ok_status();  // fed before a restart
  fed_until = sample->time;
  const report::TraceEvent* te = decoder_->event_of(sample->raw);
  if (!te || !decoder_->check(*te, sample->raw).ok()) {
    if (bad_++ < 10)
      log_ << "watch: " << stream_name(stream)
           << ": a record does not match its tracepoint's format; skipped\n";
    return ok_status();
  }
  sys::fill_missing(*sample, event.info.attr.attr.sample_type,
                    sys::sample_fill(event.info.attr.attr, stream.cpu, stream.id));
  WatchRecord r;
  r.origin = Origin::kLive;
  r.event = event.info.name;
  r.tracepoint = te->name;
  r.time = sample->time;
  r.wall_ns = wall_ ? wall_->to_wall(sample->time) : 0;
  r.cpu = int32_t(sample->cpu);
  r.pid = int32_t(sample->pid);
  r.tid = int32_t(sample->tid);
  r.comm = std::string(decoder_->saved_comm(r.pid));
  r.fields = report::fields_json(*te, sample->raw);
  if (te->name == kMceTracepoint) {
    mce::MceRegisters regs = report::mce_registers(*te, sample->raw);
    r.mce = mce::decode_mce(regs);
    if (regs.walltime && *regs.walltime)
      r.wall_ns = *regs.walltime * 1000000000ULL;
    r.key = mce_key(regs);
    // The boot-time relog of a previous boot's fatal error, when it fires
    // after the event was made: that error, already harvested from pstore.
    if (const WatchRecord* same = relogged_error(pstore_, regs))
      r.key = same->key;
  } else {
    r.key = "live:" + boot_id_ + ":" + r.event + ":" + std::to_string(stream.cpu) + ":" +
            std::to_string(r.time);
  }
  return feed(r);
}

Status Watcher::lost(const record::Stream& stream, uint64_t records) {
  lost_ += records;
  LostNotice n;
  n.event = events_[stream.event].info.name;
  n.cpu = stream.cpu;
  n.records = records;
  n.wall_ns = sys::realtime_ns();
  log_ << "watch: " << stream_name(stream) << ": " << records
       << " records were overwritten before they were read\n";
  return each_sink([&](Sink& sink) { return sink.lost(n); });
}

Status Watcher::drain() {
  if (!attached_)
    return ok_status();
  uint64_t now = sys::monotonic_ms();
  if (now - last_wall_ms_ >= kWallClockMs) {
    wall_ = record::wall_clock_for(events_);
    last_wall_ms_ = now;
  }
  DecodeSink sink(*this);
  record::DrainTotals totals;  // drain_all's; the losses reach lost() one by one
  PP_RETURN_IF_ERROR(record::drain_all(streams_, sink, totals));
  return ok_status();
}

Status Watcher::tick(bool final) {
  uint64_t now = sys::monotonic_ms();
  if (prometheus_ && (final || now - last_broker_ms_ >= kBrokerCheckMs)) {
    last_broker_ms_ = now;
    std::string note;
    prometheus_->set_broker_up(backend_->list(false, &note).ok());
  }
  return each_sink([&](Sink& sink) { return sink.tick(now, final); });
}

void Watcher::check_hangups(const std::vector<pollfd>& fds) {
  bool gone = false;
  for (size_t i = 1; i < fds.size(); ++i)
    if (fds[i].revents & (POLLHUP | POLLERR))
      gone = true;
  if (!gone)
    return;
  log_ << "watch: an event's buffer went away (killed, or its broker stopped); looking for it "
          "again every "
       << kReattachMs / 1000 << " s\n";
  attached_ = false;
  // What was fed is kept by name and CPU for the next attach(); the
  // buffers go.
  for (const auto& [buffer, until] : fed_until_)
    resume_after_[{events_[buffer.first].info.name, buffer.second}] = until;
  fed_until_.clear();
  streams_.clear();
}

Status Watcher::run() {
  PP_ASSIGN_OR_RETURN(sys::SignalFd signals, sys::SignalFd::open({SIGINT, SIGTERM, SIGHUP}));
  ::signal(SIGPIPE, SIG_IGN);
  PP_ASSIGN_OR_RETURN(boot_id_, read_boot_id(options_.backend.proc_root));
  backend_ = persistent::make_backend(options_.backend);
  PP_RETURN_IF_ERROR(open_sinks());
  // Named on the command line: a mistake is an error now. The default
  // event is waited for (a host whose broker starts later, or a VM).
  // Attached before the harvest, read after it: the harvest's pstore
  // records are known when a live sample relogs one of them.
  PP_RETURN_IF_ERROR(attach(!options_.events.empty()));
  if (options_.harvest)
    PP_RETURN_IF_ERROR(harvest());
  uint64_t start = sys::monotonic_ms();
  if (options_.once) {
    PP_RETURN_IF_ERROR(drain());
    // Every command the triggers queued runs before --once ends (each is
    // bounded by its timeout); a service stopping does not wait for them.
    while (triggers_ && triggers_->running() + triggers_->queued() > 0) {
      PP_RETURN_IF_ERROR(tick(false));
      ::poll(nullptr, 0, 20);
    }
    PP_RETURN_IF_ERROR(tick(true));
    log_ << "watch: " << fed_ << " records kept, " << duplicates_ << " seen before, " << lost_
         << " lost\n";
    return ok_status();
  }
  Status stopped = ok_status();
  bool quit = false;
  while (!quit) {
    std::vector<pollfd> fds;
    fds.push_back({signals.fd(), POLLIN, 0});
    if (attached_)
      for (const record::Stream& s : streams_)
        fds.push_back({s.fd.get(), POLLIN, 0});
    int timeout = kReadIntervalMs;
    if (options_.duration_ms) {
      uint64_t elapsed = sys::monotonic_ms() - start;
      if (elapsed >= options_.duration_ms)
        break;
      timeout = int(std::min<uint64_t>(uint64_t(timeout), options_.duration_ms - elapsed));
    }
    if (::poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) {
      stopped = Error(errno, "watch: poll failed");
      break;
    }
    if (fds[0].revents & POLLIN) {
      auto sig = signals.read();
      if (sig.ok())
        quit = true;
    }
    stopped = drain();
    if (!stopped.ok())
      break;
    if (attached_)
      check_hangups(fds);
    if (!attached_ && sys::monotonic_ms() - last_attach_ms_ >= kReattachMs) {
      stopped = attach(false);
      if (!stopped.ok())
        break;
    }
    stopped = tick(false);
    if (!stopped.ok())
      break;
  }
  // What the buffers hold now is kept too, then everything is committed.
  if (stopped.ok())
    stopped = drain();
  Status final = tick(true);
  log_ << "watch: stopped: " << fed_ << " records kept, " << duplicates_ << " seen before, "
       << lost_ << " lost\n";
  if (!stopped.ok())
    return stopped;
  return final;
}

}  // namespace

Status run_watch(const WatchOptions& options, std::ostream& out, std::ostream& log) {
  Watcher watcher(options, out, log);
  return watcher.run();
}

}  // namespace pp::watch

#include "watch/watcher.h"

#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "base/strings.h"
#include "parse/parse_events.h"
#include "record/attach.h"
#include "record/drain.h"
#include "record/events.h"
#include "report/trace_report.h"
#include "report/tracing_data.h"
#include "sys/clock.h"
#include "sys/kernel.h"
#include "sys/page_offline.h"
#include "sys/perf_abi_records.h"
#include "sys/perf_abi_sample.h"
#include "sys/process.h"
#include "sys/tree.h"
#include "watch/journal.h"
#include "watch/match.h"
#include "watch/ndjson.h"
#include "watch/offline_store.h"
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

// At most this many of this boot's corrected memory errors are read back
// from the history when watch starts (page offlining counts them again).
constexpr size_t kOfflineReplayLimit = 100000;

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
  // Page offlining's sink, its table in the history and its observers.
  Status open_offliner();
  Status offline_action(const OfflineAction& action);
  Result<std::unique_ptr<Triggers>> make_triggers(const WatchOptions& o);
  Result<std::unique_ptr<PrometheusFile>> make_prometheus(const WatchOptions& o);
  std::unique_ptr<Sink> make_journal(const WatchOptions& o);
  // Puts `sink` in the place of the one named `name` (at the end when there
  // is none; removes it when `sink` is null); returns the one it replaced.
  std::unique_ptr<Sink> put_sink(const char* name, std::unique_ptr<Sink> sink);
  // SIGHUP: the config file again. A new configuration that does not
  // parse, or whose new sinks cannot be opened, is refused whole, the
  // running one kept; otherwise the triggers, the metrics file, the journal
  // and the events change, and nothing else (no record is lost, no counter
  // moves). Says what it did on the log.
  void reload();
  Status harvest();
  // Resolves and attaches the events; `required`: a failure is returned
  // (the command line named them), else noted and tried again later.
  Status attach(bool required);
  Status drain();
  // `json` is the record's object, made for the sinks that ask.
  Status feed(const WatchRecord& record, const RecordJson& json);
  Status tick(bool final);
  void check_hangups(const std::vector<pollfd>& fds);
  // Lets the buffers go, keeping where each was read to (resume_after_).
  void detach();
  // Whether an event waited for as unavailable is listed otherwise now.
  bool waited_event_changed();
  // The task name of a record's thread: perf's samples carry none, and
  // the kernel's saved_cmdlines holds only what ftrace recorded, so it is
  // <proc>/<tid>/comm as it is when the record is read ("swapper" for
  // pid 0, as perf script says), remembered for a second; "" when the task
  // is gone.
  const std::string& comm_of(int32_t tid);
  std::string stream_name(const record::Stream& s) const {
    return "persistent/" + events_[s.event].info.name + "/ CPU " + std::to_string(s.cpu);
  }

  WatchOptions options_;  // a copy: SIGHUP replaces parts of it
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
  std::optional<OfflineStore> offline_store_;
  std::unique_ptr<JournalWriter> offline_journal_;
  std::unique_ptr<persistent::Backend> backend_;
  std::vector<record::ResolvedEvent> events_;
  // Per event of events_: its samples' layout, worked out once at attach
  // (a tracepoint's fields are at fixed offsets: no walk per sample).
  std::vector<sys::SampleLayout> layouts_;
  std::vector<record::Stream> streams_;
  // Per buffer of streams_, by its event's index and CPU: where its records
  // were fed to, and the ordinal of the next (history.h).
  std::map<std::pair<size_t, int>, StreamPosition> fed_until_;
  // `fed`, by event name and CPU, kept when the buffers hung up: where
  // the next attach() resumes them.
  std::map<std::pair<std::string, int>, ResumePoint> resume_after_;
  std::unique_ptr<report::TraceDecoder> decoder_;
  // The events' own clock beside the wall clock; nullopt when they have
  // none (their records other than machine checks then have no wall time).
  std::optional<sys::ClockPair> wall_;
  std::map<int32_t, std::string> comms_;  // comm_of()'s, cleared every second
  uint64_t comms_ms_ = 0;
  uint32_t comm_lookups_ = 0;        // comm_of()'s in this drain pass
  std::set<std::string> mce_keys_;   // machine checks fed in this run
  std::vector<WatchRecord> pstore_;  // what the harvest found in pstore (the relog rule)
  // The names of the events the broker lists as unavailable, waited for.
  std::vector<std::string> waiting_;
  std::set<std::string> unavailable_said_;  // each said once
  std::string last_attach_error_;           // the last reason attach() waits, said once
  // Triggers a reload replaced, until their commands end.
  std::vector<std::unique_ptr<Triggers>> retiring_;
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

Result<std::unique_ptr<Triggers>> Watcher::make_triggers(const WatchOptions& o) {
  TriggerOptions t;
  t.max_children = o.max_children;
  t.log = &log_;
  return Triggers::create(o.triggers, t);
}

Result<std::unique_ptr<PrometheusFile>> Watcher::make_prometheus(const WatchOptions& o) {
  PrometheusOptions p;
  p.path = o.prometheus;
  p.interval_ms = o.prometheus_interval_ms;
  PP_ASSIGN_OR_RETURN(std::unique_ptr<PrometheusFile> file, PrometheusFile::open(p));
  // Counted over the history: a restart changes no counter.
  if (history_) {
    PP_ASSIGN_OR_RETURN(HistoryTotals totals, history_->totals());
    file->seed(totals);
  }
  if (o.offline.mode != OfflineMode::kOff) {
    // Its series exist from the start, at 0, for the results an alert watches.
    std::string action(offline_mode_name(o.offline.mode));
    if (o.offline.mode == OfflineMode::kAccount)
      file->count_offline_action(action, "accounted", 0);
    else
      for (const char* result : {"offlined", "failed", "capped"})
        file->count_offline_action(action, result, 0);
  }
  if (offline_store_) {
    PP_ASSIGN_OR_RETURN(auto totals, offline_store_->totals());
    for (const auto& [key, n] : totals)
      file->count_offline_action(key.first, key.second, n);
  }
  if (attached_)
    for (const record::ResolvedEvent& e : events_)
      file->add_event(e.info.name, e.cpus);
  return file;
}

std::unique_ptr<Sink> Watcher::make_journal(const WatchOptions& o) {
  JournalOptions j;
  j.every_record = o.journal == JournalMode::kEvery;
  j.log = &log_;
  return std::make_unique<JournalSink>(real_journal_writer(), j);
}

std::unique_ptr<Sink> Watcher::put_sink(const char* name, std::unique_ptr<Sink> sink) {
  for (auto it = sinks_.begin(); it != sinks_.end(); ++it) {
    if (std::string_view(it->name) != name)
      continue;
    std::unique_ptr<Sink> old = std::move(it->sink);
    if (sink)
      *it = {std::move(sink), false, name};
    else
      sinks_.erase(it);
    return old;
  }
  if (sink)
    sinks_.push_back({std::move(sink), false, name});
  return nullptr;
}

Status Watcher::open_sinks() {
  if (!options_.db.empty()) {
    HistoryOptions h = options_.history;
    h.boot_id = boot_id_;
    h.pid = int64_t(::getpid());
    PP_ASSIGN_OR_RETURN(std::unique_ptr<History> history, History::open(options_.db, h));
    history_ = history.get();
    sinks_.push_back({std::move(history), true, "history"});
  }
  if (options_.offline.mode != OfflineMode::kOff)
    PP_RETURN_IF_ERROR(open_offliner());
  if (!options_.triggers.empty()) {
    PP_ASSIGN_OR_RETURN(std::unique_ptr<Triggers> triggers, make_triggers(options_));
    triggers_ = triggers.get();
    sinks_.push_back({std::move(triggers), false, "triggers"});
  }
  if (!options_.prometheus.empty()) {
    PP_ASSIGN_OR_RETURN(std::unique_ptr<PrometheusFile> file, make_prometheus(options_));
    prometheus_ = file.get();
    sinks_.push_back({std::move(file), false, "metrics file"});
  }
  if (options_.journal != JournalMode::kOff)
    sinks_.push_back({make_journal(options_), false, "journal"});
  if (options_.ndjson)
    sinks_.push_back({std::make_unique<NdjsonSink>(out_), true, "--ndjson output"});
  return ok_status();
}

Status Watcher::open_offliner() {
  const OfflineOptions& o = options_.offline;
  std::unique_ptr<sys::PageOfflineKernel> kernel;
  if (o.mode == OfflineMode::kSoft || o.mode == OfflineMode::kHard)
    kernel = sys::real_page_offline(options_.roots.sysfs, options_.backend.proc_root);
  OfflinerSeams seams;
  seams.log = &log_;
  PP_ASSIGN_OR_RETURN(std::unique_ptr<Offliner> offliner,
                      Offliner::create(o, std::move(kernel), seams));
  log_ << "watch: page offlining: " << offline_mode_name(o.mode) << (o.dry_run ? " (dry run)" : "")
       << ", policy " << offline_policy_name(o.policy) << " ("
       << effective_page_policy(o).threshold.count << " in "
       << duration_text(effective_page_policy(o).threshold.window_ms) << " per page"
       << (o.row_threshold ? ", rows " + std::to_string(o.row_threshold->count) + " in " +
                                 duration_text(o.row_threshold->window_ms)
                           : std::string())
       << ")\n";
  offliner->observe([this](const OfflineAction& a) { return offline_action(a); });
  if (history_) {
    PP_ASSIGN_OR_RETURN(OfflineStore store, OfflineStore::open(*history_));
    offline_store_.emplace(std::move(store));
    // A restart asks for no page this boot acted on already.
    PP_ASSIGN_OR_RETURN(std::set<uint64_t> done, offline_store_->pages_done_this_boot());
    for (uint64_t pfn : done)
      offliner->mark_done(pfn);
    // The errors counted before a restart count again; the actions they
    // made are the pages above, never taken twice.
    PP_ASSIGN_OR_RETURN(std::vector<nlohmann::ordered_json> errors,
                        offline_store_->memory_errors_this_boot(kOfflineReplayLimit));
    for (const nlohmann::ordered_json& e : errors)
      PP_RETURN_IF_ERROR(offliner->replay(e));
    if (!errors.empty())
      log_ << "watch: page offlining: " << errors.size() << " corrected memory error"
           << (errors.size() == 1 ? "" : "s") << " of this boot counted again from the history\n";
  }
  sinks_.push_back({std::move(offliner), false, "page offlining"});
  return ok_status();
}

Status Watcher::offline_action(const OfflineAction& a) {
  if (prometheus_)
    prometheus_->count_offline_action(a.action, a.result);
  if (offline_store_)
    PP_RETURN_IF_ERROR(offline_store_->add(a));
  if (options_.journal != JournalMode::kOff) {
    if (!offline_journal_)
      offline_journal_ = real_journal_writer();
    PP_RETURN_IF_ERROR(offline_journal_->send(offline_journal_entry(a)));
  }
  return ok_status();
}

void Watcher::reload() {
  if (!options_.reload) {
    log_ << "watch: SIGHUP: nothing to reload (no --config file); going on\n";
    return;
  }
  auto fresh = options_.reload();
  auto refuse = [&](const Error& e) {
    log_ << "watch: reload refused, the running configuration is kept: " << e.message() << '\n';
  };
  if (!fresh.ok())
    return refuse(fresh.error());
  WatchOptions& n = *fresh;
  // Every new sink is made before anything changes: a reload is whole or
  // nothing.
  bool triggers_changed =
      n.triggers != options_.triggers || n.max_children != options_.max_children;
  std::unique_ptr<Triggers> triggers;
  if (triggers_changed && !n.triggers.empty()) {
    auto made = make_triggers(n);
    if (!made.ok())
      return refuse(made.error());
    triggers = std::move(*made);
  }
  bool prometheus_changed = n.prometheus != options_.prometheus;
  std::unique_ptr<PrometheusFile> prometheus;
  if (prometheus_changed && !n.prometheus.empty()) {
    auto made = make_prometheus(n);
    if (!made.ok())
      return refuse(made.error());
    prometheus = std::move(*made);
  }
  std::vector<std::string> changed;
  if (triggers_changed) {
    changed.push_back(std::to_string(n.triggers.size()) + " trigger" +
                      (n.triggers.size() == 1 ? "" : "s") +
                      " (thresholds and rate limits start afresh)");
    Triggers* made = triggers.get();
    std::unique_ptr<Sink> old = put_sink("triggers", std::move(triggers));
    // Its commands run to their end, or their timeout; it takes no record.
    if (old)
      retiring_.push_back(std::unique_ptr<Triggers>(static_cast<Triggers*>(old.release())));
    triggers_ = made;
  }
  if (prometheus_changed) {
    changed.push_back("the metrics file " +
                      (n.prometheus.empty() ? std::string("none") : n.prometheus));
    PrometheusFile* made = prometheus.get();
    if (made)
      made->set_broker_up(backend_->list(false, nullptr).ok());
    std::unique_ptr<Sink> old = put_sink("metrics file", std::move(prometheus));
    if (old)
      (void)old->tick(sys::monotonic_ms(), true);  // the old file says watch_up 0
    prometheus_ = made;
  } else if (prometheus_ && n.prometheus_interval_ms != options_.prometheus_interval_ms) {
    prometheus_->set_interval_ms(n.prometheus_interval_ms);
    changed.push_back("the metrics interval");
  }
  if (n.journal != options_.journal) {
    changed.push_back("the journal");
    put_sink("journal", n.journal == JournalMode::kOff ? nullptr : make_journal(n));
  }
  bool events_changed = n.events != options_.events || n.cpus != options_.cpus;
  if (events_changed)
    changed.push_back("the events");
  std::vector<std::string> later;
  if (n.db != options_.db || n.history.max_age_s != options_.history.max_age_s ||
      n.history.max_bytes != options_.history.max_bytes)
    later.push_back("the history and its retention");
  if (n.harvest != options_.harvest || n.harvest_options.kmsg != options_.harvest_options.kmsg ||
      n.harvest_options.pstore != options_.harvest_options.pstore ||
      n.harvest_options.kept_dir != options_.harvest_options.kept_dir)
    later.push_back("the harvest");
  if (n.offline != options_.offline)
    later.push_back("page offlining");
  options_.triggers = n.triggers;
  options_.max_children = n.max_children;
  options_.prometheus = n.prometheus;
  options_.prometheus_interval_ms = n.prometheus_interval_ms;
  options_.journal = n.journal;
  options_.events = n.events;
  options_.cpus = n.cpus;
  options_.events_named = false;  // waited for, as the config file's are
  if (events_changed && attached_) {
    detach();
  }
  if (events_changed) {
    waiting_.clear();
    unavailable_said_.clear();
    last_attach_ms_ = 0;  // attached again at once
  }
  log_ << "watch: reloaded the configuration: ";
  if (changed.empty())
    log_ << "nothing changed";
  for (size_t i = 0; i < changed.size(); i++)
    log_ << (i ? ", " : "") << changed[i];
  if (!later.empty()) {
    log_ << "; not changed before a restart:";
    for (size_t i = 0; i < later.size(); i++)
      log_ << (i ? ", " : " ") << later[i];
  }
  log_ << '\n';
}

Status Watcher::feed(const WatchRecord& record, const RecordJson& json) {
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
  PP_RETURN_IF_ERROR(each_sink([&](Sink& sink) { return sink.take(record, json); }));
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
    if (from_previous_boot(r.origin))
      pstore_.push_back(r);
    uint64_t was = fed_;
    PP_RETURN_IF_ERROR(feed(r, RecordJson(r)));
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

// A broker's error on one line, without a closing full stop (it ends a
// clause of watch's own line).
std::string short_reason(const std::string& error) {
  std::string line = persistent::error_line(error);
  if (!line.empty() && line.back() == '.')
    line.pop_back();
  return line;
}

Status Watcher::attach(bool required) {
  last_attach_ms_ = sys::monotonic_ms();
  std::vector<std::string> names = options_.events;
  if (names.empty())
    names.push_back(kDefaultEvent);
  auto fail = [&](const Error& e) -> Status {
    if (required)
      return e;
    // Said once, and again only when the reason changes: a watcher that
    // waits for days must not fill the journal with one line every 10 s.
    if (e.message() == last_attach_error_)
      return ok_status();
    last_attach_error_ = e.message();
    if (options_.once)
      log_ << "watch: " << e.message() << "; --once reads only the kernel's logs then\n";
    else
      log_ << "watch: " << e.message() << "; trying again every " << kReattachMs / 1000 << " s\n";
    return ok_status();
  };
  auto model = pmu::Model::load(options_.roots);
  if (!model.ok())
    return fail(model.error());
  // An event the broker lists as unavailable (optional in its config, and
  // this host cannot make it: a VM has no mce tracepoint) is a state of the
  // host, not a mistake: it is waited for, named or not, while the other
  // events are read.
  auto listed = backend_->list(false, nullptr);
  if (!listed.ok())
    return fail(listed.error());
  std::vector<std::string> ready;
  std::vector<std::string> waiting;
  for (const std::string& name : names) {
    auto specs = parse::parse_events(name, *model);
    if (!specs.ok()) {
      ready.push_back(name);  // resolve_events() says what is wrong with it
      continue;
    }
    for (const parse::EventSpec& spec : *specs) {
      const persistent::EventInfo* info = nullptr;
      if (spec.pmu == "persistent")
        for (const persistent::EventInfo& e : *listed)
          if (e.id == spec.attr.attr.config)
            info = &e;
      if (!info || info->state != "unavailable") {
        ready.push_back(spec.text);
        continue;
      }
      waiting.push_back(info->name);
      if (!unavailable_said_.insert(spec.text).second)
        continue;
      std::string what = spec.text + (info->event.empty() ? "" : " (" + info->event + ")");
      log_ << "watch: " << what
           << " is unavailable on this host: the broker's config marks it optional and the "
              "broker cannot make it here ("
           << short_reason(info->error) << ")";
      if (starts_with(info->event, "mce:"))
        log_ << "; a VM without virtual machine checks, or a kernel without CONFIG_X86_MCE, has "
                "no mce tracepoints";
      std::string rest;
      if (options_.harvest)
        rest = "the kernel's logs";
      if (names.size() > 1 || specs->size() > 1)
        rest += (rest.empty() ? "" : " and ") + std::string("the other events");
      log_ << ". Not an error: watch " << (options_.once ? "reads " : "goes on reading ")
           << (rest.empty() ? "nothing else" : rest);
      if (!options_.once)
        log_ << ", and attaches it when the broker makes it (at its reload; looked for every "
             << kReattachMs / 1000 << " s)";
      log_ << '\n';
    }
  }
  waiting_ = std::move(waiting);
  if (ready.empty()) {
    last_attach_error_.clear();
    return ok_status();
  }
  std::ostringstream notes;
  auto events = record::resolve_events(ready, options_.cpus, *model, *backend_, notes,
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
  // The formats known, a match naming a field no record has is a mistake,
  // refused whether the events were named or not.
  std::vector<const report::TraceEvent*> formats;
  for (const auto& format : (*decoder)->events())
    formats.push_back(format.get());
  filter::Keys keys = record_keys(formats, options_.harvest);
  for (size_t i = 0; i < options_.triggers.size(); ++i) {
    const TriggerRule& rule = options_.triggers[i];
    std::string what = rule.name == "command line"
                           ? "--match"
                           : "trigger rule '" +
                                 (rule.name.empty() ? "rule " + std::to_string(i + 1) : rule.name) +
                                 "' match";
    if (!rule.on_lost)
      PP_RETURN_IF_ERROR(check_match_fields(rule.match, keys, what));
  }

  record::AttachOptions attach;
  attach.start = sys::RingStart::kOldest;  // what the buffers held before we came
  attach.kernel = options_.backend.kernel;
  attach.explain = {options_.backend.proc_root, options_.roots.sysfs};
  auto streams = record::attach_events(*backend_, *events, attach);
  if (!streams.ok())
    return fail(streams.error());

  // Resume each buffer after what this run fed, or what the history holds.
  std::map<std::pair<size_t, int>, StreamPosition> fed_until;
  for (const record::Stream& s : *streams) {
    const std::string& name = (*events)[s.event].info.name;
    ResumePoint until;
    auto kept = resume_after_.find({name, s.cpu});
    if (kept != resume_after_.end())
      until = kept->second;
    if (history_ && until == ResumePoint{}) {
      PP_ASSIGN_OR_RETURN(std::optional<ResumePoint> last, history_->resume_point(name, s.cpu));
      if (last)
        until = *last;
    }
    fed_until[{s.event, s.cpu}] = StreamPosition(until);
  }

  wall_ = record::wall_clock_for(*events);
  last_wall_ms_ = sys::monotonic_ms();
  streams_ = std::move(*streams);
  fed_until_ = std::move(fed_until);
  events_ = std::move(*events);
  layouts_.clear();
  for (const record::ResolvedEvent& e : events_)
    layouts_.emplace_back(e.info.attr.attr);
  decoder_ = std::move(*decoder);
  attached_ = true;
  last_attach_error_.clear();
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
  // decode_sample()'s result, errors included, without its walk of the
  // sample_type per record (sys/perf_abi_sample.h).
  sys::Sample sample;
  if (Status read = layouts_[stream.event].decode(bytes, sample); !read.ok()) {
    if (bad_++ < 10)
      log_ << "watch: " << stream_name(stream)
           << ": a record cannot be read: " << read.error().message() << '\n';
    return ok_status();
  }
  // The sample's place among those of its time on this buffer: a clock
  // coarser than a record gives several one time, told apart by it.
  std::optional<ResumePoint> point = fed_until_[{stream.event, stream.cpu}].next(sample.time);
  if (!point)
    return ok_status();  // fed before a restart
  const report::TraceEvent* te = decoder_->event_of(sample.raw);
  if (!te || !decoder_->check(*te, sample.raw).ok()) {
    if (bad_++ < 10)
      log_ << "watch: " << stream_name(stream)
           << ": a record does not match its tracepoint's format; skipped\n";
    return ok_status();
  }
  sys::fill_missing(sample, event.info.attr.attr.sample_type,
                    sys::sample_fill(event.info.attr.attr, stream.cpu, stream.id));
  WatchRecord r;
  r.origin = Origin::kLive;
  r.event = event.info.name;
  r.tracepoint = te->name;
  r.time = sample.time;
  r.ordinal = point->ordinal;
  r.wall_ns = wall_ ? wall_->to_wall(sample.time) : 0;
  r.cpu = int32_t(sample.cpu);
  r.pid = int32_t(sample.pid);
  r.tid = int32_t(sample.tid);
  r.comm = comm_of(r.tid >= 0 ? r.tid : r.pid);
  if (te->name == kMceTracepoint) {
    mce::MceRegisters regs = report::mce_registers(*te, sample.raw);
    r.mce = mce::decode_mce(regs, mce::CpuVendor::kUnknown, mce::MceOrigin::kTracepoint);
    if (regs.walltime && *regs.walltime)
      r.wall_ns = *regs.walltime * 1000000000ULL;
    r.key = mce_key(regs);
    // The boot-time relog of a previous boot's fatal error, when it fires
    // after the event was made: that error, already harvested from pstore.
    if (const WatchRecord* same = relogged_error(pstore_, regs))
      r.key = same->key;
  } else {
    r.key.reserve(32 + boot_id_.size() + r.event.size());
    append_stream_key(r.key, boot_id_, r.event, int32_t(stream.cpu), r.time, r.ordinal);
    if (te->is_ras)
      r.ras = mce::decode_ras_event(te->name, report::ras_fields(*te, sample.raw));
  }
  // The fields are written from the payload when a sink asks (r.fields
  // stays empty): most records need their text alone.
  return feed(r, RecordJson(r, *te, sample.raw));
}

const std::string& Watcher::comm_of(int32_t tid) {
  // The clock read at a drain pass's first lookup and every 64th after,
  // not at every record (a clock_gettime was a fiftieth of watch --db's
  // CPU): the records of one pass are in memory already, 64 of them a
  // fraction of a millisecond, so a name is still kept about a second.
  if (comm_lookups_++ % 64 == 0) {
    uint64_t now = sys::monotonic_ms();
    if (now - comms_ms_ >= 1000) {
      comms_.clear();
      comms_ms_ = now;
    }
  }
  if (comms_.size() > 4096)
    comms_.clear();
  auto [it, added] = comms_.try_emplace(tid);
  if (!added)
    return it->second;
  if (tid == 0) {
    it->second = "swapper";
  } else if (tid > 0) {
    //   /proc/<tid>/comm: "kworker/0:1\n" (any thread's, by its id)
    sys::Tree proc(options_.backend.proc_root);
    if (auto text = proc.read(std::to_string(tid) + "/comm", 64); text.ok())
      it->second = std::string(trim(*text));
    if (it->second.empty() && decoder_)
      it->second = std::string(decoder_->saved_comm(tid));
  }
  return it->second;
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
  comm_lookups_ = 0;  // comm_of() reads the clock at this pass's first
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
  for (auto it = retiring_.begin(); it != retiring_.end();) {
    (void)(*it)->tick(now, final);  // its failures were logged by it
    if ((*it)->running() + (*it)->queued() == 0 || final)
      it = retiring_.erase(it);
    else
      ++it;
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
  detach();
}

void Watcher::detach() {
  attached_ = false;
  // What was fed is kept by name and CPU for the next attach(); the
  // buffers go.
  for (const auto& [buffer, at] : fed_until_)
    resume_after_[{events_[buffer.first].info.name, buffer.second}] = at.fed();
  fed_until_.clear();
  streams_.clear();
}

bool Watcher::waited_event_changed() {
  auto listed = backend_->list(false, nullptr);
  if (!listed.ok())
    return false;
  for (const std::string& name : waiting_)
    for (const persistent::EventInfo& e : *listed)
      if (e.name == name && e.state != "unavailable")
        return true;
  return false;
}

Status Watcher::run() {
  PP_ASSIGN_OR_RETURN(sys::SignalFd signals, sys::SignalFd::open({SIGINT, SIGTERM, SIGHUP}));
  ::signal(SIGPIPE, SIG_IGN);
  PP_ASSIGN_OR_RETURN(boot_id_, read_boot_id(options_.backend.proc_root));
  backend_ = persistent::make_backend(options_.backend);
  PP_RETURN_IF_ERROR(open_sinks());
  // Named on the command line: a mistake is an error now. The default
  // event and the config file's are waited for (a host whose broker starts
  // later); an event the broker lists as unavailable always is (a VM).
  // Attached before the harvest, read after it: the harvest's pstore
  // records are known when a live sample relogs one of them.
  PP_RETURN_IF_ERROR(attach(options_.events_named));
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
      for (const record::Stream& s : streams_) {
        fds.push_back({s.poll_fd(), s.poll_events(), 0});
        if (s.hangup_fd() >= 0)  // a perf event's: POLLHUP once it is killed
          fds.push_back({s.hangup_fd(), 0, 0});
      }
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
      if (sig.ok() && *sig == SIGHUP)
        reload();
      else if (sig.ok())
        quit = true;
    }
    stopped = drain();
    if (!stopped.ok())
      break;
    if (attached_)
      check_hangups(fds);
    if (attached_ && !waiting_.empty() && sys::monotonic_ms() - last_attach_ms_ >= kReattachMs) {
      last_attach_ms_ = sys::monotonic_ms();
      if (waited_event_changed()) {
        detach();
        last_attach_ms_ = 0;  // attached again, with it, at once
      }
    }
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

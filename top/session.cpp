#include "top/session.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "base/json.h"
#include "base/strings.h"
#include "base/wall_time.h"
#include "filter/expression.h"
#include "record/attach.h"
#include "record/drain.h"
#include "record/events.h"
#include "report/trace_decoder.h"
#include "report/tracing_data.h"
#include "sys/clock.h"
#include "sys/kernel.h"
#include "sys/process.h"
#include "sys/tree.h"
#include "top/model.h"
#include "top/screen.h"
#include "top/symbols.h"

namespace pp::top {
namespace {

// The drained records, handed to the model by the buffer they came from.
// (The session's model, whichever it is now: the overview makes a new one
// when the events change.)
class ModelSink final : public record::RecordSink {
 public:
  explicit ModelSink(const std::unique_ptr<top::TopModel>& model) : model_(model) {}
  Status lost(const record::Stream& stream, uint64_t records) override {
    model_->lost(stream.event, stream.cpu, records);
    return ok_status();
  }
  Status append(const record::Stream& stream, std::span<const uint8_t> records) override {
    model_->records(stream.event, stream.cpu, records);
    return ok_status();
  }
  Status end_round() override { return ok_status(); }

 private:
  const std::unique_ptr<top::TopModel>& model_;
};

// "comm" for the tables: /proc/PID/comm, remembered (a pid's name rarely
// changes while top runs; the cache is dropped when it grows large).
class Comms {
 public:
  explicit Comms(std::string proc_root) : proc_(std::move(proc_root)) {}
  std::string operator()(int32_t pid) {
    if (pid <= 0)
      return pid == 0 ? "swapper" : "";
    auto found = cache_.find(pid);
    if (found != cache_.end())
      return found->second;
    if (cache_.size() > 8192)
      cache_.clear();
    std::string comm;
    if (auto text = proc_.read(std::to_string(pid) + "/comm", 64); text.ok())
      comm = std::string(trim(*text));
    return cache_[pid] = comm;
  }

 private:
  sys::Tree proc_;
  std::unordered_map<int32_t, std::string> cache_;
};

std::string wall_text(uint64_t ns) {
  return format_wall_time(ns);
}

std::string clock_text(uint64_t wall_ns) {
  time_t t = time_t(wall_ns / 1000000000ULL);
  struct tm tm = {};
  ::localtime_r(&t, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &tm);
  return text;
}

std::string seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

const std::vector<top::TopLine>& help_lines() {
  static const std::vector<top::TopLine> lines = {
      {"Keys", true, false},
      {"  q  quit (the events go on)", false, false},
      {"  s  choose the sort keys: the fields the table counts (e.g. prev_comm,next_comm)", false,
       false},
      {"  f  filter what the tables count (e.g. prev_comm==bash && next_pid>100); empty: none",
       false, false},
      {"  p  pause and resume the display (the events and the counting go on)", false, false},
      {"  z  zero the counts and tables", false, false},
      {"  e  show one event in detail (its name; empty: every event, or the overview)", false,
       false},
      {"  c  the overview's rows per CPU, or not", false, false},
      {"  h  this help; any key goes back", false, false},
  };
  return lines;
}

// -d: seconds, 0.1 to 3600, with a fraction or not.
Result<double> parse_delay(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || errno || end != text.c_str() + text.size() || !std::isfinite(value) ||
      value < 0.1 || value > 3600)
    return usage_error("-d '" + text +
                       "': the refresh delay is seconds from 0.1 to 3600 (e.g. -d 2, -d 0.5)");
  return value;
}

// How long the symbols of processes stay cached (files stay longer).
constexpr uint64_t kForgetProcessesNs = 60 * 1000000000ULL;

class Session {
 public:
  Session(const TopRequest& request, std::ostream& out) : request_(request), out_(out) {}

  Status run();

 private:
  Status set_up();
  Status open_events();
  Result<std::vector<std::string>> overview_names(const std::vector<persistent::EventInfo>& all);
  Status loop();
  void refresh_state();
  Status show();
  void handle_key(int key);
  std::optional<size_t> find_event(const std::string& name) const;
  std::string status_line() const;

  const TopRequest& request_;
  std::ostream& out_;
  std::optional<sys::SignalFd> signals_;
  std::unique_ptr<persistent::Backend> backend_;
  std::vector<record::ResolvedEvent> events_;
  std::vector<record::Stream> streams_;
  std::vector<char> hung_;        // per stream: its fd said POLLHUP (the event is gone)
  std::vector<uint64_t> ids_;     // the events' ids, in the model's order
  std::vector<uint64_t> listed_;  // the running events the overview last opened
  std::string sort_, filter_;     // as last set (they carry over when the events change)
  std::unique_ptr<report::TraceDecoder> decoder_;
  std::unique_ptr<top::Symbolizer> symbols_;
  std::unique_ptr<top::TopModel> model_;
  std::unique_ptr<Comms> comms_;
  std::unique_ptr<Screen> screen_;
  std::vector<std::string> notes_;  // shown above the tables
  top::TopView view_;
  bool overview_ = false;
  bool paused_ = false;
  bool help_ = false;
  bool quit_ = false;
  std::string message_;  // the last prompt's outcome
  double delay_s_ = 2;
  std::vector<top::TopLine> frozen_;  // the display while paused
};

Status Session::set_up() {
  PP_ASSIGN_OR_RETURN(sys::SignalFd signals, sys::SignalFd::open({SIGINT, SIGTERM, SIGHUP}));
  signals_.emplace(std::move(signals));
  ::signal(SIGPIPE, SIG_IGN);
  PP_ASSIGN_OR_RETURN(delay_s_, parse_delay(request_.delay));
  backend_ = persistent::make_backend(request_.backend);
  symbols_ = std::make_unique<top::Symbolizer>(request_.backend.proc_root);
  comms_ = std::make_unique<Comms>(request_.backend.proc_root);
  overview_ = request_.events.empty();
  sort_ = request_.sort;
  filter_ = request_.filter;
  view_.overview = overview_;
  view_.per_cpu = request_.per_cpu;
  view_.rows = request_.rows ? request_.rows : 10;
  // The filter's grammar is checked before anything is opened; its fields
  // when the events are known (TopModel::set_filter).
  PP_RETURN_IF_ERROR(filter::Expression::parse(
      trim(filter_), filter::Keys::open("a field of the events shown"), "--filter"));
  PP_RETURN_IF_ERROR(open_events());
  if (request_.output == Output::kScreen) {
    PP_ASSIGN_OR_RETURN(screen_, Screen::open());
  }
  return ok_status();
}

// The overview's events: every running one the backend lists (failed ones
// are noted), in the backend's order.
Result<std::vector<std::string>> Session::overview_names(
    const std::vector<persistent::EventInfo>& all) {
  std::vector<std::string> names;
  for (const persistent::EventInfo& e : all) {
    if (e.is_context)
      continue;
    if (e.state != "running") {
      notes_.push_back("persistent/" + e.name + "/ is " + e.state +
                       (e.error.empty() ? std::string() : ": " + e.error));
      continue;
    }
    names.push_back("persistent/" + e.name + "/");
  }
  if (names.empty())
    return Error(ErrorKind::kNotFound, ENOENT,
                 "no persistent event is running to show; create one (perf persistent "
                 "create -e EVENT --name NAME) or see them all with perf persistent list");
  return names;
}

// Resolves the events, builds their decoder and model, and attaches to
// their buffers; the counts of events already shown carry over (the
// overview opens again when events come and go).
Status Session::open_events() {
  std::vector<std::string> names = request_.events;
  notes_.clear();
  // Read again each time: the names of events created since are in it.
  PP_ASSIGN_OR_RETURN(pmu::Model pmu, pmu::Model::load(request_.roots));
  if (overview_) {
    std::string note;
    PP_ASSIGN_OR_RETURN(std::vector<persistent::EventInfo> all, backend_->list(false, &note));
    PP_ASSIGN_OR_RETURN(names, overview_names(all));
    listed_.clear();
    for (const persistent::EventInfo& e : all)
      if (!e.is_context && e.state == "running")
        listed_.push_back(e.id);
  }
  std::ostringstream resolve_notes;
  PP_ASSIGN_OR_RETURN(std::vector<record::ResolvedEvent> events,
                      record::resolve_events(names, request_.cpus, pmu, *backend_, resolve_notes,
                                             /*one_file=*/false));
  // The text outlives the views split() makes of it (a temporary in the
  // range-for's expression would not).
  const std::string resolve_text = resolve_notes.str();
  for (std::string_view line : split(resolve_text, '\n'))
    if (!line.empty())
      notes_.emplace_back(line);

  // The formats of the tracepoints, from the live tracefs.
  sys::Tree tracefs(request_.roots.tracefs.empty() ? sys::default_tracefs_root()
                                                   : request_.roots.tracefs);
  std::vector<report::Tracepoint> tracepoints;
  std::vector<top::TopEvent> top_events;
  for (const record::ResolvedEvent& e : events) {
    top::TopEvent t;
    t.text = e.text.empty() ? "persistent/" + e.info.name + "/" : e.text;
    t.name = e.name;
    t.id = e.info.id;
    t.attr = e.info.attr;
    t.cpus = e.cpus;
    t.buffer_bytes = e.info.buffer_bytes();
    t.kind = top::top_kind_for(e.info.attr, e.name);
    if (t.kind == top::TopKind::kTracepoint || t.kind == top::TopKind::kMce) {
      auto tp = report::find_tracepoint(tracefs, e.info.attr.attr.config, e.name);
      if (tp.ok()) {
        tracepoints.push_back(std::move(*tp));
      } else {
        notes_.push_back("persistent/" + e.info.name + "/: " + tp.error().message() +
                         "; only counted");
        t.kind = top::TopKind::kCount;
      }
    }
    top_events.push_back(std::move(t));
  }
  std::unique_ptr<report::TraceDecoder> decoder;
  if (!tracepoints.empty()) {
    PP_ASSIGN_OR_RETURN(report::Bytes built, report::build_tracing_data(
                                                 tracefs, tracepoints, uint32_t(sys::page_size())));
    PP_ASSIGN_OR_RETURN(report::TracingData tracing, report::parse_tracing_data(built));
    PP_ASSIGN_OR_RETURN(decoder, report::TraceDecoder::create(tracing));
  }
  auto model =
      std::make_unique<top::TopModel>(std::move(top_events), decoder.get(), symbols_.get());
  model->set_comm_source([this](int32_t pid) { return (*comms_)(pid); });
  if (!sort_.empty())
    PP_RETURN_IF_ERROR(model->set_sort(sort_));
  if (!filter_.empty())
    PP_RETURN_IF_ERROR(model->set_filter(filter_));

  record::AttachOptions attach;
  attach.start = sys::RingStart::kNow;
  attach.kernel = request_.backend.kernel;
  attach.explain = {request_.backend.proc_root, request_.roots.sysfs};
  PP_ASSIGN_OR_RETURN(std::vector<record::Stream> streams,
                      record::attach_events(*backend_, events, attach));

  // The event shown in detail stays shown when it is still there.
  std::optional<uint64_t> detailed_id;
  if (model_ && view_.event && *view_.event < model_->events().size())
    detailed_id = model_->events()[*view_.event].id;
  view_.event.reset();
  for (size_t i = 0; detailed_id && i < model->events().size(); ++i)
    if (model->events()[i].id == *detailed_id)
      view_.event = i;
  if (overview_)
    model->set_detailed(view_.event);
  if (model_)
    model->adopt_counts(*model_);
  streams_ = std::move(streams);
  hung_.assign(streams_.size(), 0);
  events_ = std::move(events);
  model_ = std::move(model);
  decoder_ = std::move(decoder);  // after the model that used the old one went
  ids_.clear();
  for (const record::ResolvedEvent& e : events_)
    ids_.push_back(e.info.id);
  return ok_status();
}

std::optional<size_t> Session::find_event(const std::string& name) const {
  for (size_t i = 0; i < model_->events().size(); ++i) {
    const top::TopEvent& e = model_->events()[i];
    if (e.text == name || e.name == name || e.text == "persistent/" + name + "/")
      return i;
  }
  return std::nullopt;
}

// Fill and readers, as the buffers and the backend say now.
void Session::refresh_state() {
  for (const record::Stream& s : streams_)
    if (s.reader)
      model_->set_fill(s.event, s.cpu, s.reader->fill());
  std::string note;
  auto listed = backend_->list(true, &note);
  if (!listed.ok()) {
    message_ = "cannot list the events: " + listed.error().message();
    return;
  }
  std::vector<uint64_t> running;
  for (const persistent::EventInfo& e : *listed)
    if (!e.is_context && e.state == "running")
      running.push_back(e.id);
  if (overview_ && running != listed_) {
    // Events came or went: show what runs now.
    listed_ = running;
    if (Status opened = open_events(); !opened.ok())
      message_ = opened.error().message();
    for (const record::Stream& s : streams_)
      if (s.reader)
        model_->set_fill(s.event, s.cpu, s.reader->fill());
  }
  for (size_t i = 0; i < ids_.size(); ++i)
    if (std::find(running.begin(), running.end(), ids_[i]) == running.end())
      model_->set_gone(i);
  for (size_t i = 0; i < events_.size(); ++i) {
    std::optional<int> readers;
    for (const persistent::EventInfo& e : *listed)
      if (e.id == events_[i].info.id)
        readers = e.readers;
    model_->set_readers(i, readers);
  }
}

std::string Session::status_line() const {
  std::string status;
  if (!message_.empty())
    status = message_ + " | ";
  if (paused_)
    status += "PAUSED (p resumes) | ";
  if (!model_->filter().empty())
    status += "filter " + model_->filter().text() + " | ";
  return status + "h help, q quit";
}

Status Session::show() {
  uint64_t wall = sys::realtime_ns();
  if (request_.output == Output::kJson) {
    nlohmann::ordered_json line = model_->json(view_, wall_text(wall));
    if (!notes_.empty() || !message_.empty()) {
      line["notes"] = notes_;
      if (!message_.empty())
        line["notes"].push_back(message_);
    }
    out_ << dump_json(line) << '\n';
  } else if (request_.output == Output::kStdio) {
    out_ << "perf persistent top: " << wall_text(wall) << ", every " << seconds_text(delay_s_)
         << " s\n";
    for (const std::string& n : notes_)
      out_ << "  " << n << '\n';
    if (!message_.empty())
      out_ << "  " << message_ << '\n';
    for (const top::TopLine& l : model_->render(view_))
      out_ << l.text << '\n';
    out_ << '\n';
  } else {
    std::vector<top::TopLine> lines;
    if (help_) {
      lines = help_lines();
    } else if (paused_ && !frozen_.empty()) {
      lines = frozen_;
    } else {
      for (const std::string& n : notes_)
        lines.push_back({n, false, true});
      top::TopView v = view_;
      v.width = screen_->width();
      if (!request_.rows)
        v.rows = screen_->height() > 12 ? screen_->height() - 12 : 3;
      for (top::TopLine& l : model_->render(v))
        lines.push_back(std::move(l));
      frozen_ = lines;
    }
    std::string title = "perf persistent top  " + clock_text(wall) + "  every " +
                        seconds_text(delay_s_) + " s  " + std::to_string(model_->events().size()) +
                        " event" + (model_->events().size() == 1 ? "" : "s");
    screen_->draw(title, lines, status_line());
    return ok_status();
  }
  message_.clear();  // said once
  out_.flush();
  if (!out_)
    return Error(ErrorKind::kOutput, EPIPE, "cannot write to the output; it was closed");
  return ok_status();
}

void Session::handle_key(int key) {
  if (help_ && key != Screen::kResize) {
    help_ = false;
    return;
  }
  message_.clear();
  switch (key) {
    case 'q':
    case 'Q':
      quit_ = true;
      break;
    case 'h':
    case '?':
      help_ = true;
      break;
    case 'p':
      paused_ = !paused_;
      break;
    case 'z':
      model_->zero();
      message_ = "counts zeroed";
      break;
    case 'c':
      view_.per_cpu = !view_.per_cpu;
      break;
    case 's':
      screen_->prompt("sort keys: ", [this](const std::optional<std::string>& text) {
        if (!text)
          return;
        Status set = model_->set_sort(*text);
        if (set.ok())
          sort_ = *text;
        message_ = set.ok() ? "sorted by " + *text : set.error().message();
      });
      break;
    case 'f':
      screen_->prompt("filter: ", [this](const std::optional<std::string>& text) {
        Status set = model_->set_filter(text.value_or(""), "filter");
        if (set.ok())
          filter_ = text.value_or("");
        // The status line has room for the message, not for its caret.
        message_ = set.ok() ? (text ? "" : "no filter")
                            : set.error().message().substr(0, set.error().message().find('\n'));
      });
      break;
    case 'e':
      screen_->prompt("event: ", [this](const std::optional<std::string>& text) {
        if (!text) {
          view_.event.reset();
          if (overview_)
            model_->set_detailed(std::nullopt);
          return;
        }
        std::optional<size_t> found = find_event(std::string(trim(*text)));
        if (!found) {
          message_ = "no event '" + *text + "' is shown; give a name as the first column shows";
          return;
        }
        view_.event = found;
        if (overview_)
          model_->set_detailed(found);
      });
      break;
    default:
      break;
  }
}

Status Session::loop() {
  // The signals, the keyboard, the output (a closed pipe) and every buffer:
  // a buffer's wakeup drains it before the next round when it fills fast.
  enum { kSignals, kInput, kOutput, kFirstBuffer };
  std::vector<pollfd> fds;
  ModelSink sink(model_);
  record::DrainTotals totals;
  auto delay = uint64_t(delay_s_ * 1e9);
  // The first frame at once: it shows what is attached (and tells a script
  // that top is reading).
  uint64_t now = uint64_t(sys::monotonic_ns());
  model_->refresh(now);
  refresh_state();
  PP_RETURN_IF_ERROR(show());
  uint64_t next = now + delay;
  uint64_t symbols_forgotten = now;
  while (!quit_) {
    fds.assign({{signals_->fd(), POLLIN, 0},
                {screen_ ? screen_->input_fd() : -1, POLLIN, 0},
                {screen_ ? -1 : STDOUT_FILENO, 0, 0}});
    // Each buffer's fd, then each one's hangup pipe beside it (-1 for none).
    for (size_t i = 0; i < streams_.size(); ++i)
      fds.push_back({hung_[i] ? -1 : streams_[i].poll_fd(), streams_[i].poll_events(), 0});
    for (size_t i = 0; i < streams_.size(); ++i)
      fds.push_back({hung_[i] ? -1 : streams_[i].hangup_fd(), 0, 0});
    now = uint64_t(sys::monotonic_ns());
    int timeout =
        now >= next ? 0 : int(std::min<uint64_t>((next - now) / 1000000 + 1, kDrainIntervalMs));
    int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0 && errno != EINTR)
      return Error(ErrorKind::kCommand, errno, "waiting for the buffers and the keyboard");
    // A buffer whose event went away (POLLHUP) wakes nobody again.
    for (size_t i = kFirstBuffer; i < fds.size() && ready > 0; ++i)
      if (fds[i].revents & (POLLHUP | POLLERR))
        hung_[(i - kFirstBuffer) % streams_.size()] = 1;
    if (auto drained = record::drain_all(streams_, sink, totals); !drained.ok())
      return drained.error();
    if (fds[kSignals].revents & POLLIN)
      return ok_status();
    if (fds[kOutput].revents & (POLLERR | POLLHUP))
      return ok_status();
    bool redraw = false;
    if (screen_ && ((fds[kInput].revents & POLLIN) || ready < 0)) {
      for (std::vector<int> keys = screen_->keys(); !keys.empty() && !quit_; keys = screen_->keys())
        for (int key : keys)
          handle_key(key);
      redraw = true;  // a key, or one a prompt took
    }
    now = uint64_t(sys::monotonic_ns());
    if (now >= next) {
      model_->refresh(now);
      refresh_state();
      PP_RETURN_IF_ERROR(show());
      if (now - symbols_forgotten >= kForgetProcessesNs) {
        symbols_->forget_processes();
        symbols_forgotten = now;
      }
      next += delay;
      if (next <= now)
        next = now + delay;
    } else if (redraw && !quit_ && !screen_->prompting()) {
      PP_RETURN_IF_ERROR(show());
    }
  }
  return ok_status();
}

Status Session::run() {
  PP_RETURN_IF_ERROR(set_up());
  Status status = loop();
  screen_.reset();  // the terminal back before any message
  return status;
}

}  // namespace

Status run_top(const TopRequest& request, std::ostream& out) {
  Session session(request, out);
  return session.run();
}

}  // namespace pp::top

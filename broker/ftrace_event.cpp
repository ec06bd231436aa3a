#include "broker/ftrace_event.h"

#include <linux/perf_event.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/strings.h"
#include "sys/perf_abi_sample.h"
#include "sys/ring.h"
#include "sys/tracepoint_sample.h"

namespace pp::broker {
namespace {

// buffer_percent: the broker's poll of trace_pipe_raw wakes once a CPU's
// buffer is this full, well before it overwrites (the 100 ms drain tick
// covers quiet rates).
constexpr const char* kWakePercent = "25";

// "syscalls:sys_enter_getppid" -> "events/syscalls/sys_enter_getppid".
std::string event_dir(const std::string& tracepoint) {
  size_t colon = tracepoint.find(':');
  if (colon == std::string::npos)
    return "events/" + tracepoint;
  return "events/" + tracepoint.substr(0, colon) + "/" + tracepoint.substr(colon + 1);
}

// Whether a setting read back as `shown` is what was written as `want`:
// the kernel shows an empty filter as "none" and a cpumask with leading
// zero words ("00000003" for "3").
bool same_setting(const std::string& file, const std::string& shown, const std::string& want) {
  if (shown == want)
    return true;
  if (file.ends_with("/filter"))
    return want == "0" && shown == "none";
  if (file == "buffer_size_kb") {
    // The kernel rounds the size up to whole sub-buffers of data (4096 KiB
    // shows as 4099): a little over what was asked is what was asked.
    auto s = parse_u64(shown, "buffer_size_kb");
    auto w = parse_u64(want, "buffer_size_kb");
    return s.ok() && w.ok() && *s >= *w && *s <= *w + *w / 64 + 8;
  }
  if (file == "tracing_cpumask") {
    auto strip = [](const std::string& t) {
      std::string out;
      for (char c : t)
        if (c != ',')
          out += c;
      size_t first = out.find_first_not_of('0');
      return first == std::string::npos ? std::string("0") : out.substr(first);
    };
    return strip(shown) == strip(want);
  }
  return false;
}

uint64_t next_power_of_two(uint64_t v) {
  uint64_t p = 1;
  while (p < v)
    p <<= 1;
  return p;
}

}  // namespace

Result<std::string> trace_clock_for(int clockid) {
  switch (clockid) {
    case CLOCK_MONOTONIC:
      return std::string("mono");
    case CLOCK_MONOTONIC_RAW:
      return std::string("mono_raw");
    case CLOCK_BOOTTIME:
      return std::string("boot");
    case CLOCK_TAI:
      return std::string("tai");
    default:
      return errorf(ErrorKind::kUsage, EINVAL,
                    "the ftrace backend stamps records with a clock ftrace has (-k monotonic, "
                    "monotonic_raw, boottime or tai); clock id %d has no trace_clock",
                    clockid);
  }
}

std::string cpumask_text(const std::vector<int>& cpus) {
  int highest = cpus.empty() ? 0 : *std::max_element(cpus.begin(), cpus.end());
  std::vector<uint32_t> words(size_t(highest / 32 + 1), 0);
  for (int cpu : cpus)
    if (cpu >= 0)
      words[size_t(cpu / 32)] |= uint32_t(1) << (cpu % 32);
  std::string out;
  char word[16];
  for (size_t i = words.size(); i-- > 0;) {
    std::snprintf(word, sizeof(word), out.empty() ? "%x" : ",%08x", words[i]);
    out += word;
  }
  return out;
}

sys::EventAttr shared_ring_attr(uint64_t tracepoint_id, int clockid) {
  sys::EventAttr a = sys::tracepoint_sample_attr(tracepoint_id);
  a.attr.write_backward = 1;
  a.attr.use_clockid = 1;
  a.attr.clockid = clockid;
  return a;
}

std::vector<FtraceEvent::Setting> FtraceEvent::settings() const {
  std::string dir = event_dir(spec_.tracepoint);
  return {
      {"tracing_on", "0"},  // while the rest is set; turned on last
      {"trace_clock", trace_clock_for(spec_.clockid).value_or("mono")},
      {"buffer_size_kb", std::to_string(spec_.buffer_kb)},
      {"tracing_cpumask", cpumask_text(spec_.cpus)},
      {"options/overwrite", "1"},
      {"buffer_percent", kWakePercent},
      {dir + "/filter", spec_.filter.empty() ? "0" : spec_.filter},
      {dir + "/enable", "1"},
      {"tracing_on", "1"},
  };
}

Status FtraceEvent::apply() {
  baseline_.clear();
  for (const Setting& s : settings()) {
    if (Status written = instance_.write_setting(s.file, s.value); !written.ok()) {
      if (s.file.ends_with("/filter"))
        return Error(ErrorKind::kUsage, written.error().code(),
                     "ftrace refused the filter '" + spec_.filter + "' of " + spec_.tracepoint +
                         " (" + written.error().message() +
                         "); the filter language is perf's (see 'perf persistent create --help')");
      return written.error().with_context("setting up ftrace instance '" + spec_.instance + "'");
    }
    // What the kernel shows once it took the value: what check() expects.
    std::string shown;
    if (s.file == "trace_clock") {
      shown = instance_.trace_clock().value_or(s.value);
    } else {
      shown = instance_.read_setting(s.file).value_or(s.value);
    }
    auto same = std::find_if(baseline_.begin(), baseline_.end(),
                             [&](const Setting& b) { return b.file == s.file; });
    if (same != baseline_.end())
      same->value = shown;
    else
      baseline_.push_back({s.file, shown});
  }
  return ok_status();
}

Status FtraceEvent::open_cpus() {
  PP_ASSIGN_OR_RETURN(std::string header_page, instance_.header_page());
  PP_ASSIGN_OR_RETURN(std::string header_event, instance_.header_event());
  PP_ASSIGN_OR_RETURN(layout_, ftrace::parse_ring_layout(header_page, header_event));
  auto format = instance_.tree().read(event_dir(spec_.tracepoint) + "/format");
  pid_ = ftrace::common_pid_field(format.ok() ? *format : std::string());
  attr_ = shared_ring_attr(spec_.tracepoint_id, spec_.clockid);
  uint64_t ring_bytes =
      next_power_of_two(std::max<uint64_t>(spec_.buffer_kb * 1024 * kSharedRingFactor, 4096));
  PP_ASSIGN_OR_RETURN(hangup_, sys::HangupPipe::create());
  cpus_.clear();
  cpus_.reserve(spec_.cpus.size());
  for (int cpu : spec_.cpus) {
    Cpu c;
    c.cpu = cpu;
    PP_ASSIGN_OR_RETURN(c.pipe, instance_.open_pipe_raw(uint32_t(cpu)));
    c.pipe_path = instance_.tree().path("per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw");
    PP_ASSIGN_OR_RETURN(c.ring, sys::SharedRing::create("perf-persistent:" + spec_.instance +
                                                            "/cpu" + std::to_string(cpu),
                                                        size_t(ring_bytes)));
    c.writer = sys::RingWriter(c.ring.memory(), c.ring.data_offset(), c.ring.data_size(),
                               sys::RingLayout::kBackward, true);
    c.sample_id = kSharedRingIdBase | (spec_.event_id << 12) | uint64_t(cpu);
    // Drops from before the broker took the instance are no reader's.
    if (auto stats = instance_.cpu_stats(uint32_t(cpu)); stats.ok())
      c.commit_overrun = stats->commit_overrun;
    cpus_.push_back(std::move(c));
  }
  pages_.resize(size_t(layout_.page_size()) * 64);
  return ok_status();
}

Result<std::unique_ptr<FtraceEvent>> FtraceEvent::create(const sys::Tree& tracefs,
                                                         const FtraceSpec& spec) {
  if (auto clock = trace_clock_for(spec.clockid); !clock.ok())
    return clock.error();
  PP_ASSIGN_OR_RETURN(sys::FtraceInstance instance,
                      sys::FtraceInstance::make(tracefs, spec.instance, kInstanceMode));
  std::unique_ptr<FtraceEvent> event(new FtraceEvent(std::move(instance), spec));
  event->tracefs_root_ = tracefs.root();
  Status made = event->apply();
  if (made.ok())
    made = event->open_cpus();
  if (!made.ok()) {
    (void)event->remove();
    return made.error();
  }
  return event;
}

Result<std::unique_ptr<FtraceEvent>> FtraceEvent::adopt(const sys::Tree& tracefs,
                                                        const FtraceSpec& spec,
                                                        std::vector<std::string>* changed) {
  PP_ASSIGN_OR_RETURN(sys::FtraceInstance instance,
                      sys::FtraceInstance::open(tracefs, spec.instance));
  std::unique_ptr<FtraceEvent> event(new FtraceEvent(std::move(instance), spec));
  event->tracefs_root_ = tracefs.root();
  // The baseline is what the spec wants; whatever differs is a change made
  // while no broker watched. Buffer size and clock are compared before
  // anything is written: writing either resets the buffer.
  for (const Setting& s : event->settings()) {
    if (s.file == "tracing_on" && s.value == "0")
      continue;
    std::string shown = s.file == "trace_clock"
                            ? event->instance_.trace_clock().value_or("")
                            : event->instance_.read_setting(s.file).value_or("");
    if (!same_setting(s.file, shown, s.value)) {
      if (changed)
        changed->push_back(s.file + " was '" + shown + "', set to '" + s.value + "' again");
      PP_RETURN_IF_ERROR(event->instance_.write_setting(s.file, s.value));
    }
    shown = s.file == "trace_clock" ? event->instance_.trace_clock().value_or(s.value)
                                    : event->instance_.read_setting(s.file).value_or(s.value);
    event->baseline_.push_back({s.file, shown});
  }
  if (auto mode = event->instance_.mode(); mode.ok() && *mode != kInstanceMode) {
    if (changed) {
      char text[64];
      std::snprintf(text, sizeof(text), "the instance's mode was %04o, set to %04o again",
                    unsigned(*mode), unsigned(kInstanceMode));
      changed->push_back(text);
    }
    PP_RETURN_IF_ERROR(event->instance_.set_mode(kInstanceMode));
  }
  PP_RETURN_IF_ERROR(event->open_cpus());
  return event;
}

Status FtraceEvent::remove() {
  (void)instance_.write_setting("tracing_on", "0");
  cpus_.clear();                // the pipes close: rmdir fails with EBUSY while one is open
  hangup_ = sys::HangupPipe();  // readers see POLLHUP
  return sys::FtraceInstance::remove(sys::Tree(tracefs_root_), spec_.instance);
}

const sys::SharedRing* FtraceEvent::ring(int cpu) const {
  for (const Cpu& c : cpus_)
    if (c.cpu == cpu)
      return &c.ring;
  return nullptr;
}

uint64_t FtraceEvent::sample_id(int cpu) const {
  for (const Cpu& c : cpus_)
    if (c.cpu == cpu)
      return c.sample_id;
  return 0;
}

uint64_t FtraceEvent::published(int cpu) const {
  for (const Cpu& c : cpus_)
    if (c.cpu == cpu)
      return c.published;
  return 0;
}

std::vector<std::pair<int, int>> FtraceEvent::poll_fds() const {
  std::vector<std::pair<int, int>> out;
  for (const Cpu& c : cpus_)
    out.emplace_back(c.pipe.get(), c.cpu);
  return out;
}

void FtraceEvent::publish_lost(Cpu& cpu, uint64_t lost, uint64_t time) {
  // PERF_RECORD_LOST {header, u64 id, u64 lost} and the sample_id trailer
  // (sample_id_all): what the kernel writes when its ring is full.
  record_.clear();
  perf_event_header header{};
  header.type = PERF_RECORD_LOST;
  header.size = uint16_t(sizeof(header) + 16 + sys::sample_id_size(sys::kTracepointSampleType));
  record_.resize(sizeof(header) + 16);
  std::memcpy(record_.data(), &header, sizeof(header));
  std::memcpy(record_.data() + sizeof(header), &cpu.sample_id, 8);
  std::memcpy(record_.data() + sizeof(header) + 8, &lost, 8);
  sys::SampleId id;
  id.time = time;
  id.id = cpu.sample_id;
  id.cpu = uint32_t(cpu.cpu);
  sys::encode_sample_id(sys::kTracepointSampleType, id, record_);
  cpu.writer.stage(record_);
}

Result<FtraceEvent::Drained> FtraceEvent::drain(int only) {
  Drained total;
  const size_t page_size = layout_.page_size();
  std::optional<Error> bad;
  for (Cpu& c : cpus_) {
    if (only >= 0 && c.cpu != only)
      continue;
    size_t taken = 0;
    bool more = true;
    while (more && taken < kMaxDrainPages) {
      // A batch of pages, then their records: the payloads point into it.
      size_t filled = 0;
      while (filled + page_size <= pages_.size() && taken < kMaxDrainPages) {
        auto n = sys::FtraceInstance::read_page(
            c.pipe.get(), std::span<uint8_t>(pages_.data() + filled, page_size), c.pipe_path);
        if (!n.ok())
          return n.error();
        if (*n == 0) {
          more = false;
          break;
        }
        filled += page_size;
        taken++;
      }
      if (filled == 0)
        break;
      ftrace::RingRead read;
      Status walked = ftrace::read_ring_pages(std::span<const uint8_t>(pages_.data(), filled),
                                              layout_, uint32_t(c.cpu), read);
      if (!walked.ok() && !bad)
        bad = walked.error();
      total.pages += read.pages;
      // Losses before the records of this batch: the counts the kernel
      // stored after a page's data, and at least one for each page flagged
      // without room for its count (kernel/trace/ring_buffer.c,
      // ring_buffer_read_page(): RB_MISSED_EVENTS alone). Overwritten
      // events all reach some page's flag: the count is the CPU's overrun
      // since the reader last took a page (rb_get_reader_page()).
      uint64_t lost = read.missed_events + read.losses_uncounted;
      if (lost) {
        publish_lost(c, lost, read.records.empty() ? 0 : read.records.front().timestamp);
        total.lost += lost;
      }
      for (const ftrace::RingRecord& r : read.records) {
        if (r.event_id != spec_.tracepoint_id) {
          total.foreign++;
          continue;
        }
        int32_t pid = ftrace::record_pid(r.payload, pid_);
        record_.clear();
        if (!sys::append_tracepoint_sample({.identifier = c.sample_id,
                                            .pid = pid >= 0 ? uint32_t(pid) : 0,
                                            .time = r.timestamp,
                                            .cpu = uint32_t(c.cpu),
                                            .record = r.payload},
                                           record_)) {
          // Over a u16 record size (a sub-buffer over 64 KiB): readers
          // learn of it as a loss.
          publish_lost(c, 1, r.timestamp);
          total.lost++;
          continue;
        }
        c.writer.stage(record_);
        c.published++;
        c.last_time = r.timestamp;
        total.records++;
      }
      c.writer.publish();
      if (bad)
        return *bad;
    }
    // Only where pages came: a nested write fills a buffer only while it
    // is written hard, and the stats file costs a read per CPU.
    if (taken > 0)
      publish_commit_overrun(c, total);
  }
  return total;
}

void FtraceEvent::publish_commit_overrun(Cpu& cpu, Drained& total) {
  // "commit overrun: N" (kernel/trace/trace.c, tracing_stats_read()): events
  // dropped because a write nested in another filled the whole buffer up to
  // the page being committed (rb_move_tail()); counted apart from "overrun"
  // and never flagged on a page. A buffer reset (a new buffer_size_kb)
  // starts the count again.
  auto stats = instance_.cpu_stats(uint32_t(cpu.cpu));
  if (!stats.ok())
    return;
  if (stats->commit_overrun < cpu.commit_overrun)
    cpu.commit_overrun = 0;
  uint64_t dropped = stats->commit_overrun - cpu.commit_overrun;
  if (dropped == 0)
    return;
  cpu.commit_overrun = stats->commit_overrun;
  publish_lost(cpu, dropped, cpu.last_time);
  cpu.writer.publish();
  total.lost += dropped;
}

std::vector<std::string> FtraceEvent::check() {
  std::vector<std::string> found;
  for (Setting& b : baseline_) {
    std::string shown = b.file == "trace_clock" ? instance_.trace_clock().value_or("")
                                                : instance_.read_setting(b.file).value_or("");
    if (shown == b.value)
      continue;
    // Put back what the spec wants (the baseline is how the kernel shows it).
    std::string want;
    for (const Setting& s : settings())
      if (s.file == b.file)
        want = s.value;  // the last one: tracing_on's is "1"
    Status put = instance_.write_setting(b.file, want);
    found.push_back("ftrace instance '" + spec_.instance + "': " + b.file + " was '" + shown +
                    "' (changed by another process); " +
                    (put.ok() ? "set to '" + want + "' again"
                              : "could not set it back: " + put.error().message()));
  }
  // Another event enabled in the instance: its records would fill the
  // buffer; turned off again.
  if (auto enabled = instance_.enabled_events(); enabled.ok()) {
    for (const sys::InstanceEvent& e : *enabled) {
      std::string name = e.system + ":" + e.name;
      if (name == spec_.tracepoint)
        continue;
      Status off = instance_.write_setting("events/" + e.system + "/" + e.name + "/enable", "0");
      found.push_back(
          "ftrace instance '" + spec_.instance + "': " + name +
          " was enabled in it by another process; " +
          (off.ok() ? "disabled again" : "could not disable it: " + off.error().message()));
    }
  }
  if (auto mode = instance_.mode(); mode.ok() && *mode != kInstanceMode) {
    Status put = instance_.set_mode(kInstanceMode);
    char text[160];
    std::snprintf(text, sizeof(text), "ftrace instance '%s': its mode was %04o; %s",
                  spec_.instance.c_str(), unsigned(*mode),
                  put.ok() ? "set to 0700 again" : "could not set it back");
    found.push_back(text);
  }
  return found;
}

}  // namespace pp::broker

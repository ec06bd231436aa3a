#include "broker/previous_boot.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <map>
#include <set>

#include "base/ini.h"
#include "base/strings.h"
#include "ftrace/boot_param.h"
#include "ftrace/ring_page.h"
#include "sys/atomic_file.h"
#include "sys/clock.h"

namespace pp::broker {
namespace {

// "SYSTEM:EVENT" split; nothing for a name that is not one.
std::optional<std::pair<std::string, std::string>> split_event(std::string_view text) {
  size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size())
    return std::nullopt;
  std::string system(text.substr(0, colon)), name(text.substr(colon + 1));
  for (const std::string& part : {system, name})
    for (char c : part)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
        return std::nullopt;
  return std::make_pair(system, name);
}

}  // namespace

Result<PreviousBootSettings> parse_previous_boot_settings(std::string_view text,
                                                          std::string_view path) {
  PreviousBootSettings settings;
  PP_ASSIGN_OR_RETURN(IniDocument doc, parse_ini(text, path));
  bool seen = false;
  for (const IniSection& section : doc.sections) {
    if (section.name != kPreviousBootSection)
      continue;
    if (seen)
      return ini_error(path, section.line, "a second section [previous boot]; give it once");
    seen = true;
    std::set<std::string> keys;
    for (const IniEntry& entry : section.entries) {
      if (!keys.insert(entry.key).second)
        return ini_error(path, entry.line, "a second '" + entry.key + "' in [previous boot]");
      if (entry.key == "events") {
        for (std::string_view word : split(entry.value, ',')) {
          word = trim(word);
          if (word.empty())
            continue;
          if (!split_event(word))
            return ini_error(path, entry.line,
                             "'" + std::string(word) +
                                 "' is no tracepoint; 'events' lists SYSTEM:EVENT names, e.g. "
                                 "'events = sched:sched_process_exit, irq:irq_handler_entry'");
          settings.events.emplace_back(word);
        }
      } else if (entry.key == "keep") {
        auto keep = parse_u64(entry.value, "keep");
        if (!keep.ok() || *keep < 1 || *keep > kMaxKeptCopies)
          return ini_error(path, entry.line,
                           "'keep' is the number of previous boots' copies kept, 1 to " +
                               std::to_string(kMaxKeptCopies) + ", not '" + entry.value + "'");
        settings.keep = size_t(*keep);
      } else {
        return ini_error(path, entry.line,
                         "unknown key '" + entry.key +
                             "' in [previous boot]; the keys are "
                             "events and keep");
      }
    }
  }
  return settings;
}

void BlackBox::log(const std::string& line) const {
  if (config_.log)
    config_.log(line);
}

Result<std::unique_ptr<BlackBox>> BlackBox::start(BlackBoxConfig config) {
  sys::Tree proc(config.proc_root);
  std::string cmdline;
  if (config.kernel_cmdline) {
    cmdline = *config.kernel_cmdline;
  } else {
    PP_ASSIGN_OR_RETURN(cmdline, proc.read("cmdline"));
  }
  const std::vector<std::string> names = ftrace::boot_mapped_names(cmdline);
  if (names.empty())
    return std::unique_ptr<BlackBox>();
  std::unique_ptr<BlackBox> box(new BlackBox(std::move(config)));
  box->report_.instance = names.front();
  if (names.size() > 1)
    box->log("the kernel command line names " + std::to_string(names.size()) +
             " boot-mapped ftrace instances (" + join(names, ", ") + "); the black box uses '" +
             names.front() + "'");
  if (auto id = proc.read("sys/kernel/random/boot_id", 64); id.ok())
    box->boot_id_ = std::string(trim(*id));
  sys::Tree tracefs(box->config_.tracefs_root.empty() ? sys::default_tracefs_root()
                                                      : box->config_.tracefs_root);
  auto instance = sys::FtraceInstance::open(tracefs, names.front());
  if (!instance.ok()) {
    box->log("black box: " + instance.error().message() +
             " (the kernel command line names it: boot-mapped instances need Linux 6.12 or "
             "later, and tracefs mounted at " +
             tracefs.root() + ")");
    return box;
  }
  box->clock_ = instance->trace_clock().value_or("local");
  std::optional<std::string> info = instance->last_boot_info();
  box->report_.held_previous = info && ftrace::holds_previous_boot(*info);

  auto kept = persistent::list_kept_boots(box->config_.kept_dir);
  box->report_.already_kept =
      kept.ok() && persistent::kept_by_boot(*kept, box->boot_id_, names.front()) != nullptr;
  if (box->report_.held_previous && !box->report_.already_kept) {
    if (Status s = box->keep(*instance); !s.ok()) {
      box->report_.keep_error = s.error().message();
      box->log("black box: cannot keep the previous boot's buffer of ftrace instance '" +
               names.front() + "': " + s.error().message() +
               "; the instance is left as it is, not armed (arming would clear it): read it "
               "with 'perf persistent record --previous-boot -o FILE', or free the room and "
               "restart the broker");
      box->instance_.emplace(std::move(*instance));
      return box;
    }
  }
  box->arm(*instance);
  box->instance_.emplace(std::move(*instance));
  if (box->report_.armed) {
    if (Status s = box->write_marker(); !s.ok())
      box->log("black box: " + s.error().message());
  }
  box->log("black box: " + box->summary());
  return box;
}

Status BlackBox::keep(const sys::FtraceInstance& instance) {
  PP_RETURN_IF_ERROR(sys::make_directories(config_.kept_dir, 0700));
  PP_RETURN_IF_ERROR(sys::set_mode(config_.kept_dir, 0700));
  int64_t now = config_.unix_seconds ? config_.unix_seconds() : int64_t(::time(nullptr));
  std::string boot_id = boot_id_.empty() ? "unknown-boot" : boot_id_;
  std::string final_dir = config_.kept_dir + "/" + persistent::kept_dir_name(now, boot_id);
  std::string temp_dir =
      config_.kept_dir + "/.keeping-" + boot_id + "." + std::to_string(::getpid());
  PP_RETURN_IF_ERROR(sys::remove_tree(temp_dir));
  const std::string base = temp_dir + "/instances/" + instance.name();
  PP_RETURN_IF_ERROR(sys::make_directories(base + "/events", 0700));
  auto under = [&](const std::string& relative) {
    std::string path = base;
    path += '/';
    path += relative;
    return path;
  };
  auto write = [&](const std::string& relative, std::string_view text) {
    return sys::write_file_atomically(under(relative), text, 0600, sys::Durability::kNoSync);
  };
  const sys::Tree& tree = instance.tree();
  PP_ASSIGN_OR_RETURN(std::string header_page, instance.header_page());
  PP_ASSIGN_OR_RETURN(std::string header_event, instance.header_event());
  PP_RETURN_IF_ERROR(write("events/header_page", header_page));
  PP_RETURN_IF_ERROR(write("events/header_event", header_event));
  PP_RETURN_IF_ERROR(write("last_boot_info", instance.last_boot_info().value_or("")));
  PP_RETURN_IF_ERROR(write("trace_clock", tree.read("trace_clock").value_or("[local]\n")));
  PP_RETURN_IF_ERROR(write("set_event", ""));
  PP_ASSIGN_OR_RETURN(ftrace::RingLayout layout,
                      ftrace::parse_ring_layout(header_page, header_event));
  PP_ASSIGN_OR_RETURN(std::vector<uint32_t> cpus, instance.cpus());
  // The pages first, each CPU as the kernel hands it out; then the ids
  // their records carry, for the formats. A malformed page is kept as read:
  // the reader reports it (record --previous-boot).
  std::set<uint64_t> ids;
  uint64_t bytes = 0, records = 0;
  for (uint32_t cpu : cpus) {
    PP_ASSIGN_OR_RETURN(std::vector<uint8_t> pages,
                        instance.read_pages(cpu, layout.page_size(), config_.max_bytes_per_cpu));
    std::string dir = "per_cpu/cpu" + std::to_string(cpu);
    PP_RETURN_IF_ERROR(sys::make_directories(under(dir), 0700));
    PP_RETURN_IF_ERROR(
        write(dir + "/trace_pipe_raw",
              std::string_view(reinterpret_cast<const char*>(pages.data()), pages.size())));
    ftrace::RingRead read;
    (void)ftrace::read_ring_pages(pages, layout, cpu, read);
    for (const ftrace::RingRecord& r : read.records)
      ids.insert(r.event_id);
    records += read.records.size() + read.missed_events;
    bytes += pages.size();
  }
  // 6.12 says "text delta" in last_boot_info on every boot until a setting
  // changes, also when the firmware zeroed the memory and the kernel
  // started the buffer empty: nothing to keep then.
  if (records == 0) {
    report_.held_previous = false;
    return sys::remove_tree(temp_dir);
  }
  // The formats: the instance's events/SYS/EVENT/id of every id seen, and
  // ftrace/print (the markers) always.
  auto systems = tree.list("events");
  if (systems.ok()) {
    for (const std::string& system : *systems) {
      if (!tree.is_directory("events/" + system))
        continue;
      for (const std::string& event : instance.system_events(system)) {
        std::string dir = "events/";
        dir += system;
        dir += '/';
        dir += event;
        auto id_text = tree.read(dir + "/id", 64);
        if (!id_text.ok())
          continue;
        auto id = parse_u64(trim(*id_text), "id");
        bool wanted = (id.ok() && ids.count(*id)) || (system == "ftrace" && event == "print");
        if (!wanted)
          continue;
        auto format = tree.read(dir + "/format");
        if (!format.ok())
          continue;
        PP_RETURN_IF_ERROR(sys::make_directories(under(dir), 0700));
        PP_RETURN_IF_ERROR(write(dir + "/id", *id_text));
        PP_RETURN_IF_ERROR(write(dir + "/format", *format));
      }
    }
  }
  persistent::KeptBoot boot;
  boot.instance = instance.name();
  boot.boot_id = boot_id;
  boot.kept_at = now;
  boot.kernel = std::string(
      trim(sys::Tree(config_.proc_root).read("sys/kernel/osrelease", 256).value_or("")));
  boot.cpus = uint32_t(cpus.size());
  boot.bytes = bytes;
  PP_RETURN_IF_ERROR(sys::write_file_atomically(temp_dir + "/" + persistent::kKeptFile,
                                                persistent::kept_boot_json(boot), 0600));
  PP_RETURN_IF_ERROR(sys::rename_path(temp_dir, final_dir));
  PP_RETURN_IF_ERROR(sys::sync_directory(config_.kept_dir));
  report_.kept = final_dir;
  report_.kept_bytes = bytes;
  report_.kept_cpus = uint32_t(cpus.size());
  // The oldest copies beyond `keep` go.
  auto all = persistent::list_kept_boots(config_.kept_dir);
  if (all.ok() && all->size() > config_.settings.keep) {
    for (size_t i = 0; i + config_.settings.keep < all->size(); i++) {
      if (Status s = sys::remove_tree((*all)[i].path); s.ok())
        report_.pruned.push_back((*all)[i].path);
      else
        log("black box: " + s.error().message());
    }
  }
  return ok_status();
}

void BlackBox::arm(const sys::FtraceInstance& instance) {
  std::vector<std::pair<std::string, std::string>> wanted;
  std::set<std::string> seen;
  auto want = [&](const std::string& system, const std::string& name) {
    if (seen.insert(system + ":" + name).second)
      wanted.emplace_back(system, name);
  };
  want("mce", "mce_record");
  for (const std::string& name : instance.system_events("ras"))
    want("ras", name);
  for (const std::string& text : config_.settings.events)
    if (auto e = split_event(text))
      want(e->first, e->second);
  for (const auto& [system, name] : wanted) {
    std::string full = system;
    full += ':';
    full += name;
    std::string dir = "events/";
    dir += system;
    dir += '/';
    dir += name;
    if (!instance.tree().is_directory(dir)) {
      report_.missing.push_back(full);
      continue;
    }
    if (Status s = instance.enable_event(system, name); !s.ok()) {
      log("black box: cannot enable " + full + " in ftrace instance '" + instance.name() +
          "': " + s.error().message());
      report_.missing.push_back(full);
      continue;
    }
    report_.enabled.push_back(full);
  }
  if (Status s = instance.set_tracing_on(true); !s.ok()) {
    log("black box: cannot start tracing in ftrace instance '" + instance.name() +
        "': " + s.error().message() + "; this boot is not recorded");
    return;
  }
  report_.armed = true;
}

std::string BlackBox::summary() const {
  std::string out;
  const BlackBoxReport& r = report_;
  if (!r.kept.empty())
    out = "kept the previous boot's buffer of ftrace instance '" + r.instance + "' (" +
          std::to_string(r.kept_cpus) + " CPUs, " + std::to_string(r.kept_bytes / 1024) +
          " KiB) in " + r.kept + "; ";
  else if (r.already_kept)
    out = "the previous boot's buffer of ftrace instance '" + r.instance +
          "' was kept earlier in this boot; ";
  else if (!r.keep_error.empty())
    out =
        "could not keep the previous boot's buffer of '" + r.instance + "': " + r.keep_error + "; ";
  else
    out = "ftrace instance '" + r.instance + "' held no previous boot's buffer; ";
  if (r.armed)
    out += "armed with " + (r.enabled.empty() ? std::string("no event") : join(r.enabled, ", ")) +
           (r.missing.empty() ? "" : " (this kernel lacks " + join(r.missing, ", ") + ")") +
           ", a clock marker every " + std::to_string(persistent::kMarkerIntervalS) + " s";
  else
    out += "not armed";
  return out;
}

int BlackBox::ms_until_marker(int64_t now_ms) const {
  if (!report_.armed || next_marker_ms_ < 0)
    return -1;
  return int(std::clamp<int64_t>(next_marker_ms_ - now_ms, 0, 1 << 30));
}

void BlackBox::tick(int64_t now_ms) {
  if (!report_.armed || next_marker_ms_ < 0 || now_ms < next_marker_ms_)
    return;
  Status s = write_marker();
  if (!s.ok() && !marker_failing_)
    log("black box: " + s.error().message() + " (logged once until a marker is written again)");
  marker_failing_ = !s.ok();
  next_marker_ms_ = now_ms + int64_t{persistent::kMarkerIntervalS} * 1000;
}

Status BlackBox::write_marker() {
  if (!instance_)
    return Error(ENOENT, "no boot-mapped ftrace instance to mark");
  persistent::ClockMarker m;
  m.clock = clock_;
  m.realtime_ns = config_.realtime_ns ? config_.realtime_ns() : sys::realtime_ns();
  m.boot_id = boot_id_;
  Status s = instance_->write_marker(persistent::clock_marker_text(m));
  if (next_marker_ms_ < 0)
    next_marker_ms_ = sys::monotonic_ms() + int64_t{persistent::kMarkerIntervalS} * 1000;
  if (!s.ok())
    return s.error().with_context("writing the clock marker of ftrace instance '" +
                                  instance_->name() + "'");
  return ok_status();
}

}  // namespace pp::broker

#include "persistent/kernel_backend.h"

#include <linux/perf_event.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <set>

#include "base/cpu_list.h"
#include "base/strings.h"
#include "persistent/create.h"
#include "persistent/event_json.h"
#include "persistent/event_open.h"
#include "persistent/names.h"
#include "sys/atomic_file.h"

namespace pp::persistent {
namespace {

constexpr const char* kPmuDir = "bus/event_source/devices/persistent";

}  // namespace

Result<uint64_t> parse_persistent_entry(std::string_view text, std::string_view path) {
  std::optional<uint64_t> config;
  for (std::string_view term : split(trim(text), ',')) {
    term = trim(term);
    if (term == "persistent" || term == "persistent=1")
      continue;
    if (starts_with(term, "config=")) {
      auto value = parse_u64(term.substr(7), "persistent event id");
      if (!value.ok())
        return errorf(EINVAL, "%.*s: %s", int(path.size()), path.data(),
                      value.error().message().c_str());
      config = *value;
      continue;
    }
    return errorf(EINVAL, "%.*s: unexpected term '%.*s' (expected 'persistent,config=<id>')",
                  int(path.size()), path.data(), int(term.size()), term.data());
  }
  if (!config)
    return errorf(EINVAL, "%.*s has no config=<id> term", int(path.size()), path.data());
  return *config;
}

sys::EventAttr boot_tracepoint_attr(uint64_t tracepoint_id) {
  sys::EventAttr attr;
  attr.attr.type = PERF_TYPE_TRACEPOINT;
  attr.attr.size = sys::kAttrSizeVer7;
  attr.attr.config = tracepoint_id;
  attr.attr.sample_period = 1;
  attr.attr.wakeup_events = 1;
  attr.attr.sample_type = PERF_SAMPLE_RAW;
  return attr;
}

KernelBackend::KernelBackend(sys::Kernel& kernel, const sys::Tree& sysfs, RunDir run_dir,
                             EventResolver* resolver, std::string tracefs)
    : kernel_(kernel),
      sysfs_(sysfs),
      tracefs_(tracefs.empty() ? sys::default_tracefs_root() : std::move(tracefs)),
      run_dir_(std::move(run_dir)),
      resolver_(resolver),
      env_{sys::kDefaultProcRoot, sysfs.root()} {}

uint64_t KernelBackend::seed_pages() const {
  return std::max<uint64_t>(1, kSeedBufferBytes / sys::page_size());
}

Result<uint32_t> KernelBackend::pmu_type() const {
  std::string relative = std::string(kPmuDir) + "/type";
  PP_ASSIGN_OR_RETURN(std::string text, sysfs_.read(relative));
  auto type = parse_u64(trim(text), "PMU type");
  if (!type.ok() || *type > UINT32_MAX)
    return errorf(EINVAL, "%s does not hold a PMU type number: '%s'", sysfs_.path(relative).c_str(),
                  std::string(trim(text)).c_str());
  return uint32_t(*type);
}

Result<std::vector<KernelBackend::Entry>> KernelBackend::entries() const {
  std::string dir = std::string(kPmuDir) + "/events";
  auto names = sysfs_.list(dir);
  if (!names.ok()) {
    if (names.error().code() == ENOENT)  // the group exists only while there are events (11/12)
      return std::vector<Entry>{};
    return names.error();
  }
  std::vector<Entry> out;
  for (const std::string& name : *names) {
    std::string relative = dir;
    relative += '/';
    relative += name;
    PP_ASSIGN_OR_RETURN(std::string text, sysfs_.read(relative));
    PP_ASSIGN_OR_RETURN(uint64_t id, parse_persistent_entry(text, sysfs_.path(relative)));
    out.push_back({name, id});
  }
  return out;
}

std::vector<EventInfo> KernelBackend::records() const {
  std::vector<EventInfo> out;
  sys::Tree dir(run_dir_.kernel_records());
  auto names = dir.list("");
  if (!names.ok())
    return out;
  for (const std::string& file : *names) {
    if (file.size() < 6 || file.substr(file.size() - 5) != ".json")
      continue;
    auto text = dir.read(file);
    if (!text.ok())
      continue;
    auto doc = parse_json(*text, dir.path(file));
    if (!doc.ok())
      continue;
    auto event = event_from_json(*doc, dir.path(file));
    if (event.ok() && !event->cpu_ids.empty())
      out.push_back(std::move(*event));
  }
  return out;
}

Result<sys::Fd> KernelBackend::open_persistent(uint32_t type, uint64_t id, int cpu) {
  sys::EventAttr attr;
  attr.attr.type = type;
  attr.attr.size = sys::kAttrSizeVer7;
  attr.attr.config = id;
  return kernel_.perf_event_open(attr, -1, cpu, -1, 0);
}

Status KernelBackend::attach(uint32_t type, uint64_t id, int cpu, std::string_view what) {
  sys::FailedCall call{
      .call = sys::PerfCall::kOpen,
      .event = "persistent event " + std::to_string(id) + " (" + std::string(what) + ")",
      .cpu = cpu,
      .persistent_type = type};
  auto fd = open_persistent(type, id, cpu);
  if (!fd.ok()) {
    if (fd.error().code() == ENOENT)
      return ok_status();  // already gone from that CPU
    return kernel_refusal(fd.error(), call, env_);
  }
  auto attached = kernel_.ioctl(fd->get(), sys::kIocAttach, 0);
  if (!attached.ok()) {
    call.call = sys::PerfCall::kIoctl;
    call.request = sys::kIocAttach;
    return kernel_refusal(attached.error(), call, env_);
  }
  return ok_status();
}

// A sysfs entry with no record of ours is an event the kernel made at boot
// (06/12: mce_record), named after its tracepoint. Finding that tracepoint
// in tracefs gives the event string and the attr 05/12 opens it with, so
// record can write a perf.data that perf decodes. A name that is no
// tracepoint (or a tracefs that cannot be read) leaves both unknown.
void KernelBackend::infer_boot_event(EventInfo& event) const {
  auto systems = tracefs_.list("events");
  if (!systems.ok())
    return;
  for (const std::string& system : *systems) {
    std::string id_file = "events/" + system + "/" + event.name + "/id";
    if (!tracefs_.exists(id_file))
      continue;
    auto text = tracefs_.read(id_file);
    if (!text.ok())
      return;
    auto id = parse_u64(trim(*text), "tracepoint id");
    if (!id.ok())
      return;
    event.event = system + ":" + event.name;
    event.attr = boot_tracepoint_attr(*id);
    return;
  }
}

Result<std::vector<EventInfo>> KernelBackend::list(bool verbose, std::string* /*note*/) {
  PP_ASSIGN_OR_RETURN(uint32_t type, pmu_type());
  PP_ASSIGN_OR_RETURN(std::vector<Entry> found, entries());
  std::set<uint64_t> present;
  for (const Entry& e : found)
    present.insert(e.id);
  auto online = online_cpus(sysfs_);
  uint64_t pages = seed_pages();

  std::vector<EventInfo> events;
  std::set<uint64_t> claimed;
  for (EventInfo& record : records()) {
    std::vector<CpuId> alive;
    for (const CpuId& c : record.cpu_ids)
      if (present.count(c.id) && !claimed.count(c.id))
        alive.push_back(c);
    if (alive.empty())
      continue;  // killed by another tool: the record is stale
    for (const CpuId& c : alive)
      claimed.insert(c.id);
    record.cpu_ids = alive;
    record.cpus.clear();
    for (const CpuId& c : alive)
      record.cpus.push_back(c.cpu);
    record.id = alive.front().id;
    record.backend = "kernel";
    record.layout = Layout::kForward;
    record.pages = pages;
    record.page_size = sys::page_size();
    events.push_back(std::move(record));
  }
  for (const Entry& entry : found) {
    if (claimed.count(entry.id))
      continue;
    EventInfo e;
    e.id = entry.id;
    e.name = entry.name;
    e.backend = "kernel";
    e.layout = Layout::kForward;
    e.pages = pages;
    e.page_size = sys::page_size();
    infer_boot_event(e);
    // Where it lives: a boot event on every CPU, a detached one on one.
    if (online.ok()) {
      for (int cpu : *online) {
        auto fd = open_persistent(type, entry.id, cpu);
        if (fd.ok()) {
          e.cpus.push_back(cpu);
          e.cpu_ids.push_back({cpu, entry.id});
        } else if (fd.error().code() != ENOENT) {
          break;  // not allowed to look: the CPUs stay unknown
        }
      }
    }
    events.push_back(std::move(e));
  }
  if (verbose) {
    for (EventInfo& e : events) {
      e.counts.emplace();
      for (const CpuId& c : e.cpu_ids) {
        auto fd = open_persistent(type, c.id, c.cpu);
        if (!fd.ok())
          continue;
        auto count = read_count(kernel_, fd->get());
        if (count.ok())
          e.counts->push_back({c.cpu, *count});
      }
    }
  }
  std::sort(events.begin(), events.end(),
            [](const EventInfo& a, const EventInfo& b) { return a.id < b.id; });
  return events;
}

Result<EventInfo> KernelBackend::create(const CreateRequest& request, std::string* /*note*/) {
  if (request.backend == kRingFtrace)
    return usage_error(
        "--backend ftrace is the broker's (it owns the ftrace instance), and this kernel's own "
        "persistent events serve this host; create it without --backend ftrace");
  CreateContext context{
      .resolver = resolver_,
      .sysfs = &sysfs_,
      .layout = Layout::kForward,  // the kernel allocates the buffer itself at DETACH
      .fixed_pages = seed_pages(),
      .existing = [this] { return list(false, nullptr); }};
  PP_ASSIGN_OR_RETURN(CreatePlan plan, plan_create(request, context));
  PP_ASSIGN_OR_RETURN(uint32_t type, pmu_type());

  std::vector<CpuId> detached;
  auto roll_back = [&]() {
    for (const CpuId& c : detached)
      (void)attach(type, c.id, c.cpu, plan.event);
  };
  for (int cpu : plan.cpus) {
    sys::FailedCall call{.call = sys::PerfCall::kOpen,
                         .event = plan.event,
                         .cpu = cpu,
                         .attr = plan.attr,
                         .persistent_type = type};
    auto fd = kernel_.perf_event_open(plan.attr, -1, cpu, -1, 0);
    if (!fd.ok()) {
      roll_back();
      return kernel_refusal(fd.error(), call, env_);
    }
    if (Status set = apply_filter(kernel_, fd->get(), plan.filter, call, env_); !set.ok()) {
      roll_back();
      return set.error();
    }
    auto id = kernel_.ioctl(fd->get(), sys::kIocDetach, 0);
    if (!id.ok()) {
      roll_back();
      if (id.error().code() == ENOTTY)
        return Error(ENOTTY,
                     "this kernel lists a persistent PMU but does not know "
                     "PERF_EVENT_IOC_DETACH (ENOTTY): it lacks the seed's patch 12/12, so "
                     "persistent events cannot be created with it");
      call.call = sys::PerfCall::kIoctl;
      call.request = sys::kIocDetach;
      return kernel_refusal(id.error(), call, env_);
    }
    detached.push_back({cpu, uint64_t(*id)});
  }  // each fd closes here: the events run on, persistent

  EventInfo info;
  info.id = detached.front().id;
  info.name = plan.name.empty() ? std::to_string(info.id) : plan.name;
  info.event = plan.event;
  info.backend = "kernel";
  info.attr = plan.attr;
  info.cpus = plan.cpus;
  info.cpu_ids = detached;
  info.pages = plan.pages;
  info.page_size = sys::page_size();
  info.layout = Layout::kForward;
  info.filter = plan.filter;
  info.created = info.buffer_start = int64_t(::time(nullptr));
  info.creator_uid = ::geteuid();
  info.creator_pid = ::getpid();
  Status saved = run_dir_.prepare();
  if (saved.ok())
    saved = sys::make_directories(run_dir_.kernel_records(), 0700);
  if (saved.ok())
    saved = sys::write_file_atomically(run_dir_.kernel_records() + "/" + info.name + ".json",
                                       dump_json(event_to_json(info), 1) + "\n", 0600);
  if (!saved.ok()) {
    roll_back();
    return saved.error().with_context("recording the name of the new persistent event");
  }
  return info;
}

Result<EventInfo> KernelBackend::kill(std::string_view reference) {
  PP_ASSIGN_OR_RETURN(uint32_t type, pmu_type());
  PP_ASSIGN_OR_RETURN(std::vector<EventInfo> events, list(false, nullptr));
  PP_ASSIGN_OR_RETURN(const EventInfo* found, find_event(events, reference));
  EventInfo event = *found;
  std::vector<CpuId> where = event.cpu_ids;
  if (where.empty())  // CPUs unknown: try every online one
    if (auto online = online_cpus(sysfs_); online.ok())
      for (int cpu : *online)
        where.push_back({cpu, event.id});
  for (const CpuId& c : where)
    PP_RETURN_IF_ERROR(attach(type, c.id, c.cpu, event.name));
  (void)sys::remove_file_durably(run_dir_.kernel_records() + "/" + event.name + ".json");
  return event;
}

Result<Buffer> KernelBackend::open(uint64_t id, int cpu) {
  PP_ASSIGN_OR_RETURN(uint32_t type, pmu_type());
  // An id of a recorded event stands for all its CPUs' ids.
  uint64_t kernel_id = id;
  for (const EventInfo& record : records()) {
    bool ours = std::any_of(record.cpu_ids.begin(), record.cpu_ids.end(),
                            [&](const CpuId& c) { return c.id == id; });
    if (!ours)
      continue;
    auto on_cpu = std::find_if(record.cpu_ids.begin(), record.cpu_ids.end(),
                               [&](const CpuId& c) { return c.cpu == cpu; });
    if (on_cpu == record.cpu_ids.end())
      return errorf(ErrorKind::kNotFound, ENOENT,
                    "persistent event %llu '%s' has no buffer on CPU %d (its CPUs: %s)",
                    (unsigned long long)id, record.name.c_str(), cpu,
                    format_cpu_list(record.cpus).c_str());
    kernel_id = on_cpu->id;
    break;
  }
  auto fd = open_persistent(type, kernel_id, cpu);
  if (!fd.ok()) {
    if (fd.error().code() == ENOENT)
      return errorf(ErrorKind::kNotFound, ENOENT,
                    "no persistent event %llu on CPU %d; see 'perf persistent list'",
                    (unsigned long long)id, cpu);
    return kernel_refusal(fd.error(),
                          {.call = sys::PerfCall::kOpen,
                           .event = "persistent event " + std::to_string(id),
                           .cpu = cpu,
                           .persistent_type = type},
                          env_);
  }
  Buffer buffer;
  buffer.fd = std::move(*fd);
  buffer.id = id;
  buffer.cpu = cpu;
  buffer.mmap_length = size_t(1 + seed_pages()) * sys::page_size();
  buffer.layout = Layout::kForward;
  return buffer;
}

}  // namespace pp::persistent

#include "record/events.h"

#include "base/cpu_list.h"
#include "parse/parse_events.h"
#include "persistent/sample_layout.h"
#include "sys/clock.h"

namespace pp::record {

bool has_sample_id(const sys::EventAttr& attr) {
  return persistent::completed_attr(attr).attr.sample_type &
         (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID);
}

Result<std::vector<ResolvedEvent>> resolve_events(const std::vector<std::string>& events,
                                                  const std::string& cpus, const pmu::Model& model,
                                                  persistent::Backend& backend, std::ostream& notes,
                                                  bool one_file) {
  std::vector<ResolvedEvent> resolved;
  if (events.empty())
    return usage_error(
        "no event given: name the persistent events to record with "
        "-e persistent/NAME/ (see 'perf persistent list')");
  PP_ASSIGN_OR_RETURN(auto listed, backend.list(false, nullptr));
  for (const std::string& text : events) {
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
      for (const ResolvedEvent& r : resolved)
        if (r.info.id == id)
          return errorf(ErrorKind::kUsage, EINVAL, "persistent event '%s' (id %llu) is named twice",
                        found->name.c_str(), (unsigned long long)id);
      ResolvedEvent r;
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
        notes << "perf persistent record: the buffers of '" << found->name
              << "' restarted when the broker restarted; samples from before are gone\n";
      resolved.push_back(std::move(r));
    }
  }
  bool all_ids = true;
  for (const ResolvedEvent& r : resolved)
    all_ids &= has_sample_id(r.info.attr);
  if (one_file && resolved.size() > 1 && !all_ids)
    return usage_error(
        "the events do not put sample ids in their records (PERF_SAMPLE_IDENTIFIER), "
        "so one file cannot tell them apart: record them one per file");

  for (const ResolvedEvent& r : resolved) {
    if (!one_file)
      break;
    const perf_event_attr& a = resolved.front().info.attr.attr;
    const perf_event_attr& b = r.info.attr.attr;
    if (a.use_clockid != b.use_clockid || (a.use_clockid && a.clockid != b.clockid)) {
      auto clock = [](const perf_event_attr& x) {
        return x.use_clockid ? sys::clock_name(x.clockid)
                             : std::string("no clock (perf's default)");
      };
      return errorf(ErrorKind::kUsage, EINVAL,
                    "persistent events '%s' (%s) and '%s' (%s) stamp their records with "
                    "different clocks, and one file has one clock: record them one per file, "
                    "or create them with the same -k",
                    resolved.front().info.name.c_str(), clock(a).c_str(), r.info.name.c_str(),
                    clock(b).c_str());
    }
  }

  std::optional<std::vector<int>> requested;
  if (!cpus.empty()) {
    PP_ASSIGN_OR_RETURN(requested, parse_cpu_list(cpus));
  }
  for (ResolvedEvent& r : resolved) {
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
  return resolved;
}

std::optional<sys::ClockPair> wall_clock_for(const std::vector<ResolvedEvent>& events) {
  if (events.empty())
    return std::nullopt;
  const perf_event_attr& first = events.front().info.attr.attr;
  for (const ResolvedEvent& e : events)
    if (!e.info.attr.attr.use_clockid || e.info.attr.attr.clockid != first.clockid)
      return std::nullopt;
  auto pair = sys::read_clock_pair(int(first.clockid));
  if (!pair.ok())
    return std::nullopt;
  return *pair;
}

}  // namespace pp::record

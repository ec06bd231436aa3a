#include "persistent/create.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <cstdio>

#include "base/cpu_list.h"
#include "persistent/names.h"
#include "persistent/sample_layout.h"

namespace pp::persistent {

sys::EventAttr sampling_attr(const ResolvedEvent& event, Layout layout) {
  sys::EventAttr a = event.attr;
  perf_event_attr& attr = a.attr;
  bool tracepoint = attr.type == PERF_TYPE_TRACEPOINT;
  if (attr.size < sys::kAttrSizeVer7)
    attr.size = sys::kAttrSizeVer7;
  if (attr.sample_period == 0) {  // neither a period nor a frequency in the event string
    if (tracepoint) {
      attr.freq = 0;
      attr.sample_period = 1;
    } else {
      attr.freq = 1;
      attr.sample_freq = 4000;
    }
  }
  if (tracepoint) {
    // Lean (persistent/sample_layout.h): what the readers know, the kernel
    // need not write on every event.
    attr.sample_type = kLeanTracepointSampleType;
    if (attr.freq)
      attr.sample_type |= PERF_SAMPLE_PERIOD;
  } else {
    attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
                       PERF_SAMPLE_PERIOD | PERF_SAMPLE_IDENTIFIER;
  }
  attr.sample_id_all = 1;
  attr.disabled = 0;
  attr.inherit = 0;
  attr.write_backward = layout == Layout::kBackward ? 1 : 0;
  return a;
}

Result<std::vector<int>> online_cpus(const sys::Tree& sysfs) {
  auto text = sysfs.read("devices/system/cpu/online");
  if (!text.ok())
    return text.error().with_context("finding the online CPUs");
  auto cpus = parse_cpu_list(*text);
  if (!cpus.ok())  // the system's file, not the user's words: not a usage error
    return cpus.error()
        .with_context(sysfs.path("devices/system/cpu/online"))
        .with_kind(ErrorKind::kRefused);
  return cpus;
}

Result<std::vector<int>> choose_cpus(std::string_view requested, const std::vector<int>& online,
                                     const std::vector<int>& pmu_cpus) {
  auto in = [](const std::vector<int>& set, int cpu) {
    return std::binary_search(set.begin(), set.end(), cpu);
  };
  std::vector<int> chosen;
  if (requested.empty()) {
    for (int cpu : online)
      if (pmu_cpus.empty() || in(pmu_cpus, cpu))
        chosen.push_back(cpu);
    if (chosen.empty())
      return errorf(ErrorKind::kUsage, EINVAL,
                    "none of the online CPUs (%s) is in the event's PMU cpumask (%s)",
                    format_cpu_list(online).c_str(), format_cpu_list(pmu_cpus).c_str());
    return chosen;
  }
  PP_ASSIGN_OR_RETURN(chosen, parse_cpu_list(requested));
  for (int cpu : chosen) {
    if (!in(online, cpu))
      return errorf(ErrorKind::kUsage, EINVAL,
                    "CPU %d is not online (online: %s); choose CPUs with -C from those", cpu,
                    format_cpu_list(online).c_str());
    if (!pmu_cpus.empty() && !in(pmu_cpus, cpu))
      return errorf(ErrorKind::kUsage, EINVAL, "CPU %d is not in the event's PMU cpumask (%s)", cpu,
                    format_cpu_list(pmu_cpus).c_str());
  }
  return chosen;
}

Status validate_pages(uint64_t pages) {
  if (pages == 0 || pages > kMaxPages || (pages & (pages - 1)) != 0)
    return errorf(ErrorKind::kUsage, EINVAL,
                  "-m %llu: the buffer size in pages must be a power of two from 1 to %llu "
                  "(the default is %llu)",
                  (unsigned long long)pages, (unsigned long long)kMaxPages,
                  (unsigned long long)kDefaultPages);
  return ok_status();
}

namespace {

// -m against the backend's buffers: the seed kernel allocates its own.
Status check_pages(uint64_t pages, uint64_t fixed_pages) {
  if (fixed_pages == 0)
    return validate_pages(pages ? pages : kDefaultPages);
  if (pages != 0 && pages != fixed_pages)
    return errorf(ErrorKind::kUsage, EINVAL,
                  "-m %llu: this kernel's persistent events always have %llu pages per CPU "
                  "(PERF_EVENT_IOC_DETACH allocates %llu KiB); leave -m out",
                  (unsigned long long)pages, (unsigned long long)fixed_pages,
                  (unsigned long long)(fixed_pages * sys::page_size() / 1024));
  return ok_status();
}

// The event resolved, its CPUs chosen and its attr made: what every create
// and re-create shares once the names and pages are settled.
Result<CreatePlan> plan_event(std::string_view event, std::string_view cpus,
                              const CreateContext& context, ResolvedEvent* resolved) {
  if (event.empty())
    return usage_error("no event given: create needs -e EVENT");
  if (!context.resolver)
    return internal_error("no event parser to create with");
  PP_ASSIGN_OR_RETURN(*resolved, context.resolver->resolve(event));
  PP_ASSIGN_OR_RETURN(std::vector<int> online, online_cpus(*context.sysfs));
  CreatePlan plan;
  PP_ASSIGN_OR_RETURN(plan.cpus, choose_cpus(cpus, online, resolved->pmu_cpus));
  plan.event = std::string(event);
  plan.tracepoint = resolved->tracepoint;
  plan.attr = sampling_attr(*resolved, context.layout);
  return plan;
}

}  // namespace

Status check_printable(std::string_view what, std::string_view text, bool spaces_allowed) {
  for (size_t i = 0; i < text.size(); i++) {
    auto c = uint8_t(text[i]);
    bool control = c < 0x20 || c == 0x7f;
    if (!control && !(c == ' ' && !spaces_allowed))
      continue;
    char shown[8] = "' '";
    if (c != ' ')
      std::snprintf(shown, sizeof(shown), "\\x%02x", unsigned(c));
    std::string why = c == 0     ? "a NUL byte would cut it short where the kernel reads it"
                      : c == ' ' ? "an event string has no spaces"
                                 : "a control character would garble every listing and log";
    return usage_error(
        std::string(what) + " has " + shown + " at offset " + std::to_string(i) + " (" + why +
        "); write it without" +
        (spaces_allowed ? " control characters" : " whitespace or control characters"));
  }
  return ok_status();
}

Result<CreatePlan> plan_create(const CreateRequest& request, const CreateContext& context) {
  if (!request.name.empty())
    PP_RETURN_IF_ERROR(validate_name(request.name));
  PP_RETURN_IF_ERROR(check_printable("the event string", request.event, false));
  PP_RETURN_IF_ERROR(check_printable("the filter", request.filter, true));
  PP_RETURN_IF_ERROR(check_pages(request.pages, context.fixed_pages));
  ResolvedEvent resolved;
  PP_ASSIGN_OR_RETURN(CreatePlan plan, plan_event(request.event, request.cpus, context, &resolved));
  plan.pages = context.fixed_pages  ? context.fixed_pages
               : request.pages != 0 ? request.pages
                                    : kDefaultPages;
  plan.filter = request.filter;
  plan.attr.attr.use_clockid = 1;
  plan.attr.attr.clockid = request.clockid;
  plan.name = request.name;
  if (plan.name.empty()) {
    // A tracepoint's event name when it makes a valid name, else the id:
    // default_name() gives the id it is passed then, and ids are digits.
    std::string by_tracepoint = default_name(resolved.tracepoint, 0);
    if (!is_id_reference(by_tracepoint))
      plan.name = by_tracepoint;
  }
  if (plan.name.empty() || !context.existing)
    return plan;
  PP_ASSIGN_OR_RETURN(std::vector<EventInfo> existing, context.existing());
  for (const EventInfo& other : existing) {
    if (other.name == plan.name)
      return errorf(ErrorKind::kNameTaken, EEXIST,
                    "the name '%s'%s is taken by persistent event %llu; choose another with "
                    "--name, or kill that one first ('perf persistent kill %s')",
                    plan.name.c_str(), request.name.empty() ? " (this event's default name)" : "",
                    (unsigned long long)other.id, plan.name.c_str());
  }
  return plan;
}

Result<CreatePlan> plan_recreate(const EventInfo& saved, const CreateContext& context) {
  ResolvedEvent resolved;
  PP_ASSIGN_OR_RETURN(CreatePlan plan,
                      plan_event(saved.event, format_cpu_list(saved.cpus), context, &resolved));
  plan.name = saved.name;
  plan.pages = saved.pages;
  plan.filter = saved.filter;
  // The clock it had; one saved before events had clocks keeps none.
  if (saved.attr.attr.use_clockid) {
    plan.attr.attr.use_clockid = 1;
    plan.attr.attr.clockid = saved.attr.attr.clockid;
  } else if (saved.attr.attr.size == 0) {
    plan.attr.attr.use_clockid = 1;
    plan.attr.attr.clockid = sys::kDefaultClockId;
  }
  return plan;
}

}  // namespace pp::persistent

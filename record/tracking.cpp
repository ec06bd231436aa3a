#include "record/tracking.h"

#include <algorithm>

#include "persistent/tracking.h"

namespace pp::record {

Result<std::vector<ResolvedEvent>> context_events(const std::vector<ResolvedEvent>& events,
                                                  persistent::Backend& backend,
                                                  std::ostream& notes) {
  std::vector<ResolvedEvent> contexts;
  bool any = std::any_of(events.begin(), events.end(),
                         [](const ResolvedEvent& r) { return r.info.context != 0; });
  if (!any)
    return contexts;
  PP_ASSIGN_OR_RETURN(auto listed, backend.list(false, nullptr));
  for (const ResolvedEvent& r : events) {
    uint64_t id = r.info.context;
    if (!id)
      continue;
    auto found = std::find_if(listed.begin(), listed.end(), [&](const persistent::EventInfo& e) {
      return e.is_context && e.id == id;
    });
    if (found == listed.end() || found->state != "running") {
      notes << "perf persistent record: the context stream " << id << " of '" << r.info.name
            << "' is " << (found == listed.end() ? "gone" : "not running: " + found->error)
            << "; tasks that exited before recording will show no name\n";
      continue;
    }
    auto same = std::find_if(contexts.begin(), contexts.end(),
                             [&](const ResolvedEvent& c) { return c.info.id == id; });
    if (same == contexts.end()) {
      ResolvedEvent c;
      c.info = *found;
      c.text = found->name;
      c.name = kContextName;
      contexts.push_back(std::move(c));
      same = contexts.end() - 1;
    }
    for (int cpu : r.cpus) {
      bool covered = std::find(found->cpus.begin(), found->cpus.end(), cpu) != found->cpus.end();
      bool listed_already =
          std::find(same->cpus.begin(), same->cpus.end(), cpu) != same->cpus.end();
      if (covered && !listed_already)
        same->cpus.push_back(cpu);
    }
  }
  for (ResolvedEvent& c : contexts)
    std::sort(c.cpus.begin(), c.cpus.end());
  return contexts;
}

bool contexts_cover(const std::vector<ResolvedEvent>& events,
                    const std::vector<ResolvedEvent>& contexts) {
  return std::all_of(events.begin(), events.end(), [&](const ResolvedEvent& r) {
    return std::any_of(contexts.begin(), contexts.end(),
                       [&](const ResolvedEvent& c) { return c.info.id == r.info.context; });
  });
}

}  // namespace pp::record

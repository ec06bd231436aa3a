#include "watch/offline_policy.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "mce/fault.h"

namespace pp::watch {
namespace {

constexpr uint64_t kDayMs = uint64_t{24} * 3600 * 1000;

struct PolicyName {
  OfflinePolicyKind kind;
  std::string_view name;
};
constexpr PolicyName kPolicyNames[] = {{OfflinePolicyKind::kWindow, "window"},
                                       {OfflinePolicyKind::kMcelog, "mcelog"},
                                       {OfflinePolicyKind::kRasdaemon, "rasdaemon"},
                                       {OfflinePolicyKind::kKernelCec, "kernel-cec"}};

std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof(text), "%#llx", static_cast<unsigned long long>(v));
  return text;
}

}  // namespace

std::string_view offline_policy_name(OfflinePolicyKind kind) {
  for (const PolicyName& p : kPolicyNames)
    if (p.kind == kind)
      return p.name;
  return "window";
}

Result<OfflinePolicyKind> parse_offline_policy(std::string_view text, std::string_view what) {
  for (const PolicyName& p : kPolicyNames)
    if (p.name == text)
      return p.kind;
  return usage_error(std::string(what) + " '" + std::string(text) +
                     "': say window, mcelog, rasdaemon or kernel-cec");
}

PagePolicy page_policy_preset(OfflinePolicyKind kind) {
  PagePolicy p;
  p.kind = kind;
  switch (kind) {
    case OfflinePolicyKind::kWindow:
    case OfflinePolicyKind::kMcelog:
      p.threshold = {2, kDayMs};
      break;
    case OfflinePolicyKind::kRasdaemon:
      p.threshold = {50, kDayMs};
      break;
    case OfflinePolicyKind::kKernelCec:
      p.threshold = {2, kDayMs};
      p.max_pages = kCecPoolPages;
      break;
  }
  return p;
}

Status check_page_policy(const PagePolicy& policy, std::string_view what) {
  if (policy.threshold.count < 1 || policy.threshold.window_ms == 0)
    return usage_error(std::string(what) +
                       ": give 'N in TIME' with N at least 1 and TIME more "
                       "than 0 (e.g. '2 in 24h')");
  if (policy.kind == OfflinePolicyKind::kKernelCec && policy.threshold.count > kCecMaxCount)
    return usage_error(std::string(what) + " " + std::to_string(policy.threshold.count) +
                       " with --offline-policy kernel-cec: the CEC counts to at most " +
                       std::to_string(kCecMaxCount) + "; give a smaller N");
  if (policy.max_pages == 0)
    return usage_error(std::string(what) + ": no page can be remembered");
  return ok_status();
}

std::string row_id(const mce::MemoryLocation& location) {
  if (!location.row)
    return "";
  std::string dimm = mce::dimm_name(location);
  if (dimm.empty())
    return "";
  std::string id = dimm;
  if (location.rank)
    id += " rank " + std::to_string(*location.rank);
  else if (location.chip_select)
    id += " chip select " + std::to_string(*location.chip_select);
  if (location.bank_group)
    id += " bank group " + std::to_string(*location.bank_group);
  if (location.bank)
    id += " bank " + std::to_string(*location.bank);
  id += " row " + hex(*location.row);
  return id;
}

std::string duration_text(uint64_t ms) {
  struct Unit {
    uint64_t ms;
    const char* suffix;
  };
  constexpr Unit kUnits[] = {
      {uint64_t{7} * kDayMs, "w"}, {kDayMs, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
  // Days and weeks from two of them on: "24h" reads as the user wrote it.
  for (const Unit& u : kUnits)
    if (ms >= (u.ms >= kDayMs ? 2 * u.ms : u.ms) && ms % u.ms == 0)
      return std::to_string(ms / u.ms) + u.suffix;
  return std::to_string(ms) + "ms";
}

OfflineDecider::OfflineDecider(PagePolicy policy, std::optional<Threshold> row)
    : policy_(policy), row_(row) {}

size_t OfflineDecider::pages() const {
  return pages_.size();
}

void OfflineDecider::mark_done(uint64_t pfn) {
  pages_.erase(pfn);
  remember_done(pfn);
}

void OfflineDecider::remember_done(uint64_t pfn) {
  if (!done_.insert(pfn).second)
    return;
  done_order_.push_back(pfn);
  // Bounded as the counts are: the oldest is forgotten first (it is offline
  // by then, and the kernel says so: watch/offline.h asks kpageflags).
  while (done_order_.size() > policy_.max_pages) {
    done_.erase(done_order_.front());
    done_order_.pop_front();
  }
}

std::string OfflineDecider::threshold_text() const {
  return std::to_string(policy_.threshold.count) + " in " +
         duration_text(policy_.threshold.window_ms);
}

std::vector<OfflineRequest> OfflineDecider::add(const MemoryError& error) {
  uint64_t pfn = error.address >> kPageShift;
  std::vector<OfflineRequest> out;
  if (row_ && !error.row.empty())
    out = add_to_row(pfn, error);
  if (done_.count(pfn))
    return out;
  for (const OfflineRequest& r : out)
    if (r.pfn == pfn)
      return out;
  if (auto request = add_to_page(pfn, error)) {
    mark_done(pfn);
    out.push_back(std::move(*request));
  }
  return out;
}

std::optional<OfflineRequest> OfflineDecider::add_to_page(uint64_t pfn, const MemoryError& error) {
  if (policy_.kind == OfflinePolicyKind::kKernelCec)
    return add_cec(pfn, error);
  auto it = pages_.find(pfn);
  if (it == pages_.end()) {
    if (pages_.size() >= policy_.max_pages)
      evict_page();
    it = pages_.emplace(pfn, Page{}).first;
    it->second.start_ms = error.wall_ms;
  }
  Page& page = it->second;
  page.last_ms = std::max(page.last_ms, error.wall_ms);
  if (policy_.kind == OfflinePolicyKind::kWindow)
    return add_window(page, pfn, error);
  return add_bucket(page, pfn, error);
}

bool OfflineDecider::Window::add(uint64_t wall_ms, uint64_t count, const Threshold& threshold) {
  auto pos = errors.end();
  while (pos != errors.begin() && std::prev(pos)->first > wall_ms)
    --pos;
  errors.insert(pos, {wall_ms, count});
  total += count;
  uint64_t newest = errors.back().first;
  while (newest - errors.front().first >= threshold.window_ms) {
    total -= errors.front().second;
    errors.pop_front();
  }
  if (total < threshold.count)
    return false;
  errors.clear();
  total = 0;
  return true;
}

std::optional<OfflineRequest> OfflineDecider::add_window(Page& page, uint64_t pfn,
                                                         const MemoryError& error) {
  const Threshold& t = policy_.threshold;
  if (!page.window.add(error.wall_ms, std::max<uint32_t>(error.count, 1), t))
    return std::nullopt;
  OfflineRequest r;
  r.pfn = pfn;
  r.errors = t.count;
  r.reason = std::to_string(r.errors) + " corrected errors within " + duration_text(t.window_ms) +
             " (policy window, " + threshold_text() + ")";
  return r;
}

std::optional<OfflineRequest> OfflineDecider::add_bucket(Page& page, uint64_t pfn,
                                                         const MemoryError& error) {
  const Threshold& t = policy_.threshold;
  // mcelog's bucket_age() and rasdaemon's page_record(): drained in
  // proportion to the time since the bucket's start, once it is a whole
  // window old; times before the start (a record out of order) drain nothing.
  if (error.wall_ms >= page.start_ms && error.wall_ms - page.start_ms >= t.window_ms) {
    double elapsed = double(error.wall_ms - page.start_ms) / double(t.window_ms);
    auto tolerate = uint64_t(elapsed * double(t.count));
    page.count -= std::min(tolerate, page.count);
    page.start_ms = error.wall_ms;
  }
  page.count += std::max<uint32_t>(error.count, 1);
  if (page.count < t.count)
    return std::nullopt;
  OfflineRequest r;
  r.pfn = pfn;
  r.errors = page.count;
  page.count = 0;
  r.reason = std::to_string(r.errors) + " corrected errors, the leaky bucket of " +
             threshold_text() + " overflowed (policy " +
             std::string(offline_policy_name(policy_.kind)) + ")";
  return r;
}

void OfflineDecider::cec_spring_cleaning() {
  for (auto& [pfn, page] : pages_)
    if (page.generation > 0)
      page.generation--;
  cec_since_cleaning_ = 0;
}

void OfflineDecider::cec_decay(uint64_t now_ms) {
  // The CEC's delayed work runs every decay interval from its start; here
  // the clock starts at the first error.
  if (!cec_last_decay_ms_) {
    cec_last_decay_ms_ = now_ms;
    return;
  }
  const uint64_t interval = policy_.threshold.window_ms;
  while (now_ms >= *cec_last_decay_ms_ && now_ms - *cec_last_decay_ms_ >= interval) {
    cec_spring_cleaning();
    *cec_last_decay_ms_ += interval;
  }
}

std::optional<OfflineRequest> OfflineDecider::add_cec(uint64_t pfn, const MemoryError& error) {
  cec_decay(error.wall_ms);
  auto it = pages_.find(pfn);
  if (it == pages_.end()) {
    if (pages_.size() >= policy_.max_pages)
      evict_page();
    it = pages_.emplace(pfn, Page{}).first;
  }
  Page& page = it->second;
  page.generation = kCecMaxGeneration;
  page.last_ms = error.wall_ms;
  // One error per report: the CEC is fed each machine check once.
  page.count = std::min(page.count + 1, kCecMaxCount);
  if (page.count >= policy_.threshold.count) {
    OfflineRequest r;
    r.pfn = pfn;
    r.errors = page.count;
    r.reason = std::to_string(r.errors) + " corrected errors reached the action threshold " +
               std::to_string(policy_.threshold.count) + " (policy kernel-cec)";
    pages_.erase(it);  // del_elem(): the entry is freed
    return r;
  }
  if (++cec_since_cleaning_ >= kCecCleanEvery)
    cec_spring_cleaning();
  return std::nullopt;
}

void OfflineDecider::evict_page() {
  if (pages_.empty())
    return;
  auto victim = pages_.begin();
  if (policy_.kind == OfflinePolicyKind::kKernelCec) {
    // del_lru_elem(): the smallest (generation << 10 | count), the lowest
    // page first among equals (the pool is sorted by page).
    auto key = [](const Page& p) { return uint64_t(p.generation) << 10 | p.count; };
    for (auto it = pages_.begin(); it != pages_.end(); ++it)
      if (key(it->second) < key(victim->second))
        victim = it;
  } else {
    for (auto it = pages_.begin(); it != pages_.end(); ++it)
      if (it->second.last_ms < victim->second.last_ms)
        victim = it;
  }
  pages_.erase(victim);
  evicted_++;
}

std::vector<OfflineRequest> OfflineDecider::add_to_row(uint64_t pfn, const MemoryError& error) {
  std::vector<OfflineRequest> out;
  auto it = rows_.find(error.row);
  if (it == rows_.end()) {
    if (rows_.size() >= policy_.max_pages) {
      auto victim = rows_.begin();
      for (auto r = rows_.begin(); r != rows_.end(); ++r)
        if (r->second.last_ms < victim->second.last_ms)
          victim = r;
      rows_.erase(victim);
    }
    it = rows_.emplace(error.row, Row{}).first;
  }
  Row& row = it->second;
  row.last_ms = std::max(row.last_ms, error.wall_ms);
  const Threshold& t = *row_;
  auto ask = [&](uint64_t page, const std::string& why) {
    if (done_.count(page))
      return;
    mark_done(page);
    OfflineRequest r;
    r.pfn = page;
    r.errors = t.count;
    r.reason = why;
    r.row = true;
    out.push_back(std::move(r));
  };
  if (row.isolated) {
    ask(pfn, "row " + error.row + " was isolated (row threshold " + std::to_string(t.count) +
                 " in " + duration_text(t.window_ms) + ")");
    return out;
  }
  if (row.pages.size() < 4096)  // a row is at most a few pages of a DIMM's address space
    row.pages.insert(pfn);
  if (!row.window.add(error.wall_ms, std::max<uint32_t>(error.count, 1), t))
    return out;
  row.isolated = true;
  std::string why = "row " + error.row + ": " + std::to_string(t.count) +
                    " corrected errors within " + duration_text(t.window_ms) + " (row threshold " +
                    std::to_string(t.count) + " in " + duration_text(t.window_ms) + ")";
  for (uint64_t page : row.pages)
    ask(page, why);
  row.pages.clear();
  return out;
}

}  // namespace pp::watch

#include "watch/offline.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <tuple>

#include "base/wall_time.h"
#include "mce/decode.h"
#include "sys/clock.h"
#include "watch/faults.h"

namespace pp::watch {
namespace {

// A machine check and EDAC's report of it: one error (watch/faults.h).
constexpr uint64_t kJoinWindowMs = kEdacJoinWindowNs / 1000000;
constexpr size_t kRecentErrors = 64;

std::string hex(uint64_t v) {
  char text[24];
  std::snprintf(text, sizeof(text), "%#llx", static_cast<unsigned long long>(v));
  return text;
}

bool retryable(int error) {
  return error == EBUSY || error == EAGAIN || error == EIO;
}

}  // namespace

std::string_view offline_mode_name(OfflineMode mode) {
  switch (mode) {
    case OfflineMode::kOff:
      return "off";
    case OfflineMode::kAccount:
      return "account";
    case OfflineMode::kSoft:
      return "soft";
    case OfflineMode::kHard:
      return "hard";
  }
  return "off";
}

Result<OfflineMode> parse_offline_mode(std::string_view text, std::string_view what) {
  for (OfflineMode m :
       {OfflineMode::kOff, OfflineMode::kAccount, OfflineMode::kSoft, OfflineMode::kHard})
    if (offline_mode_name(m) == text)
      return m;
  return usage_error(std::string(what) + " '" + std::string(text) +
                     "': say soft, hard, account or off");
}

PagePolicy effective_page_policy(const OfflineOptions& options) {
  PagePolicy p = page_policy_preset(options.policy);
  if (options.page_threshold)
    p.threshold = *options.page_threshold;
  return p;
}

Status check_offline_options(const OfflineOptions& options) {
  PP_RETURN_IF_ERROR(check_page_policy(effective_page_policy(options), "--page-threshold"));
  if (options.row_threshold &&
      (options.row_threshold->count < 1 || options.row_threshold->window_ms == 0))
    return usage_error("--row-threshold: give 'N in TIME' (e.g. '4 in 24h')");
  if (options.max_attempts < 1)
    return usage_error("page offlining needs at least one attempt");
  return ok_status();
}

nlohmann::ordered_json offline_action_json(const OfflineAction& a) {
  nlohmann::ordered_json j;
  j["time"] = format_wall_time(a.wall_ns);
  j["page"] = hex(a.pfn);
  j["address"] = hex(a.address());
  j["action"] = a.action;
  j["policy"] = a.policy;
  j["result"] = a.result;
  j["errno"] = a.error ? nlohmann::ordered_json(errno_name(a.error)) : nlohmann::ordered_json();
  j["attempt"] = a.attempt;
  j["reason"] = a.reason;
  j["message"] = a.message.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(a.message);
  j["record_key"] = a.record_key;
  j["row"] = a.row;
  return j;
}

std::string offline_action_text(const OfflineAction& a) {
  std::string t = format_wall_time(a.wall_ns);
  // Seconds are enough on a line: "2026-12-05T03:00:00Z".
  if (auto dot = t.find('.'); dot != std::string::npos)
    t = t.substr(0, dot) + "Z";
  t += " page " + hex(a.pfn) + " " + a.action + " " + a.result;
  if (a.error)
    t += " (" + errno_name(a.error) + (a.attempt ? ", attempt " + std::to_string(a.attempt) : "") +
         ")";
  t += ": " + a.reason;
  if (!a.message.empty())
    t += "; " + a.message;
  return t;
}

std::vector<std::string> offline_journal_entry(const OfflineAction& a) {
  int priority = 6;
  if (a.result == "failed" || a.result == "capped" || a.result == "disabled")
    priority = 4;
  else if (a.result == "offlined" || a.result == "retrying")
    priority = 5;
  std::string message = "page " + hex(a.pfn) + " " + a.action + " " + a.result + ": " + a.reason;
  if (!a.message.empty())
    message += "; " + a.message;
  std::vector<std::string> f = {"MESSAGE=" + message,
                                std::string("MESSAGE_ID=") + kOfflineMessageId,
                                "PRIORITY=" + std::to_string(priority),
                                "SYSLOG_IDENTIFIER=perf-persistent-watch",
                                "PAGE_OFFLINE_PAGE=" + hex(a.pfn),
                                "PAGE_OFFLINE_ADDRESS=" + hex(a.address()),
                                "PAGE_OFFLINE_ACTION=" + a.action,
                                "PAGE_OFFLINE_POLICY=" + a.policy,
                                "PAGE_OFFLINE_RESULT=" + a.result,
                                "PAGE_OFFLINE_ATTEMPT=" + std::to_string(a.attempt),
                                "PAGE_OFFLINE_REASON=" + a.reason,
                                "PAGE_OFFLINE_RECORD_KEY=" + a.record_key};
  if (a.error)
    f.push_back("PAGE_OFFLINE_ERRNO=" + errno_name(a.error));
  return f;
}

Result<std::unique_ptr<Offliner>> Offliner::create(const OfflineOptions& options,
                                                   std::unique_ptr<sys::PageOfflineKernel> kernel,
                                                   OfflinerSeams seams) {
  PP_RETURN_IF_ERROR(check_offline_options(options));
  if (options.mode == OfflineMode::kOff)
    return internal_error("page offlining is off: no offliner to make");
  if ((options.mode == OfflineMode::kSoft || options.mode == OfflineMode::kHard) && !kernel)
    return internal_error("page offlining needs the kernel's offline files");
  return std::unique_ptr<Offliner>(new Offliner(options, std::move(kernel), std::move(seams)));
}

Offliner::Offliner(const OfflineOptions& options, std::unique_ptr<sys::PageOfflineKernel> kernel,
                   OfflinerSeams seams)
    : options_(options),
      kernel_(std::move(kernel)),
      seams_(std::move(seams)),
      decider_(effective_page_policy(options), options.row_threshold) {}

Offliner::~Offliner() = default;

int64_t Offliner::wall_ms() const {
  if (seams_.wall_ms)
    return seams_.wall_ms();
  return int64_t(sys::realtime_ns() / 1000000);
}

int64_t Offliner::monotonic_ms() const {
  if (seams_.monotonic_ms)
    return seams_.monotonic_ms();
  return int64_t(sys::monotonic_ms());
}

Status Offliner::take(const WatchRecord& record, const RecordJson& json) {
  if (!record.mce && record.tracepoint != "ras:mc_event")
    return ok_status();
  return this->record(record, json.tree());
}

Status Offliner::replay(const nlohmann::ordered_json& json) {
  if (!json.is_object())
    return ok_status();
  WatchRecord r;
  auto text = [&](const char* key) {
    auto it = json.find(key);
    return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::string origin = text("origin");
  for (Origin o : {Origin::kKmsg, Origin::kPstore, Origin::kErst})
    if (origin == origin_name(o))
      r.origin = o;
  if (auto ns = parse_wall_time(text("wall_time")); ns.ok())
    r.wall_ns = *ns;
  r.key = text("key");
  return record(r, json);
}

bool Offliner::same_error_seen(uint64_t pfn, uint64_t wall, bool machine_check) {
  for (const auto& [p, t, mc] : recent_)
    if (p == pfn && mc != machine_check && (wall > t ? wall - t : t - wall) <= kJoinWindowMs)
      return true;
  recent_.emplace_back(pfn, wall, machine_check);
  if (recent_.size() > kRecentErrors)
    recent_.pop_front();
  return false;
}

Status Offliner::record(const WatchRecord& record, const nlohmann::ordered_json& json) {
  if (from_previous_boot(record.origin))
    return ok_status();  // a previous boot's page: this boot's kernel has it online again
  std::optional<mce::FaultError> e = fault_error_of(json);
  if (!e || e->uncorrected)
    return ok_status();
  if (e->mce && e->mce->severity != mce::MceSeverity::kCorrected)
    return ok_status();  // deferred (AMD) is no corrected error for the kernel's CEC either
  std::optional<uint64_t> address = e->location.address;
  if (!address && e->location.page)
    address = *e->location.page << kPageShift;
  if (!address)
    return ok_status();
  uint64_t when = record.wall_ns ? record.wall_ns / 1000000 : uint64_t(wall_ms());
  if (same_error_seen(*address >> kPageShift, when, e->machine_check))
    return ok_status();
  MemoryError m;
  m.address = *address;
  m.wall_ms = when;
  m.count = e->machine_check ? 1 : e->count;
  m.row = row_id(e->location);
  for (const OfflineRequest& r : decider_.add(m))
    act(r, record.key);
  return ok_status();
}

OfflineAction Offliner::base_action(const OfflineRequest& request,
                                    const std::string& record_key) const {
  OfflineAction a;
  a.wall_ns = uint64_t(wall_ms()) * 1000000;
  a.pfn = request.pfn;
  a.action = options_.mode == OfflineMode::kAccount ? "account"
                                                    : std::string(offline_mode_name(options_.mode));
  a.policy = std::string(offline_policy_name(options_.policy));
  a.reason = request.reason;
  a.record_key = record_key;
  a.row = request.row;
  return a;
}

void Offliner::act(const OfflineRequest& request, const std::string& record_key) {
  if (options_.mode == OfflineMode::kAccount) {
    OfflineAction a = base_action(request, record_key);
    a.result = "accounted";
    emit(a);
    return;
  }
  // The cap counts pages tried (a dry run's too), not retries.
  int64_t now = monotonic_ms();
  if (options_.max.runs) {
    while (!tries_.empty() && now - tries_.front() >= int64_t(options_.max.window_ms))
      tries_.pop_front();
    if (tries_.size() >= options_.max.runs) {
      OfflineAction a = base_action(request, record_key);
      a.result = "capped";
      a.message = "the cap of " + std::to_string(options_.max.runs) + " pages per " +
                  duration_text(options_.max.window_ms) +
                  " (--offline-max) is reached: more pages failing this fast is a fault "
                  "larger than pages; see report --db --faults";
      if (!capped_said_ && seams_.log)
        *seams_.log << "watch: page offlining: " << a.message << "; page " << hex(a.pfn)
                    << " and those after it within the window are only recorded\n";
      capped_said_ = true;
      emit(a);
      return;
    }
    capped_said_ = false;
    tries_.push_back(now);
  }
  Pending p;
  p.request = request;
  p.record_key = record_key;
  attempt(std::move(p));
}

void Offliner::attempt(Pending p) {
  OfflineAction a = base_action(p.request, p.record_key);
  auto poisoned = kernel_->hwpoisoned(p.request.pfn);
  if (poisoned.ok() && *poisoned) {
    a.result = "already-poisoned";
    emit(a);
    return;
  }
  if (!poisoned.ok() && !kpageflags_said_ && seams_.log) {
    kpageflags_said_ = true;
    *seams_.log << "watch: page offlining: " << poisoned.error().message()
                << "; pages are offlined without asking whether the kernel poisoned them "
                   "already (the kernel then refuses, harmlessly)\n";
  }
  if (options_.mode == OfflineMode::kSoft) {
    auto enabled = kernel_->soft_offline_enabled();
    if (enabled.ok() && enabled->has_value() && !**enabled) {
      a.result = "disabled";
      a.message =
          "vm.enable_soft_offline is 0: the administrator turned soft offlining off; set it to 1 "
          "(sysctl vm.enable_soft_offline=1), or use --offline-pages=account";
      emit(a);
      return;
    }
  }
  if (options_.dry_run) {
    a.result = "dry-run";
    emit(a);
    return;
  }
  p.attempt++;
  a.attempt = p.attempt;
  Status written = kernel_->offline(p.request.pfn << kPageShift, options_.mode == OfflineMode::kHard
                                                                     ? sys::PageOfflineKind::kHard
                                                                     : sys::PageOfflineKind::kSoft);
  if (written.ok()) {
    a.result = "offlined";
    emit(a);
    return;
  }
  a.error = written.error().code();
  a.message = written.error().message();
  if (retryable(a.error) && p.attempt < options_.max_attempts) {
    uint64_t delay = options_.retry_ms;
    for (uint32_t i = 1; i < p.attempt && delay < options_.max_retry_ms; i++)
      delay *= 2;
    delay = std::min(delay, options_.max_retry_ms);
    p.due_ms = uint64_t(monotonic_ms()) + delay;
    a.result = "retrying";
    a.message += "; trying again in " + duration_text(delay);
    uint64_t pfn = p.request.pfn;
    pending_[pfn] = std::move(p);
    emit(a);
    return;
  }
  a.result = "failed";
  if (a.error == ENOENT)
    a.message += "; this kernel has no page offlining (CONFIG_MEMORY_FAILURE)";
  else if (a.error == EPERM || a.error == EACCES)
    a.message +=
        "; watch needs CAP_SYS_ADMIN and a unit that lets it write there "
        "(ReadWritePaths=)";
  emit(a);
}

void Offliner::emit(const OfflineAction& action) {
  if (seams_.log)
    *seams_.log << "watch: page offlining: " << offline_action_text(action) << '\n';
  for (const Observer& o : observers_) {
    Status s = o(action);
    if (!s.ok() && observer_failures_++ % 1000 == 0 && seams_.log)
      *seams_.log << "watch: page offlining: cannot record the action: " << s.error().message()
                  << '\n';
  }
}

Status Offliner::tick(uint64_t now_ms, bool final) {
  std::vector<Pending> due;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second.due_ms <= now_ms) {
      due.push_back(std::move(it->second));
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  for (Pending& p : due)
    attempt(std::move(p));
  if (!final)
    return ok_status();
  // A retry still waiting is not made: the page's last action says so, not
  // "retrying" for ever in the history.
  std::map<uint64_t, Pending> left;
  left.swap(pending_);
  for (const auto& [pfn, p] : left) {
    OfflineAction a = base_action(p.request, p.record_key);
    a.result = "failed";
    a.attempt = p.attempt;
    a.message = "watch stopped before try " + std::to_string(p.attempt + 1) + " of " +
                std::to_string(options_.max_attempts) +
                "; not offlined (a restart counts this boot's errors again from the history)";
    emit(a);
  }
  return ok_status();
}

}  // namespace pp::watch

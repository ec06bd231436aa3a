// watch's page offlining: a sink that counts corrected memory errors per
// page (watch/offline_policy.h decides) and takes the pages that cross the
// threshold out of use through sys/page_offline.h, within a cap, retrying
// what the kernel refuses for now. Every action is an OfflineAction handed
// to the observers: the history's table (watch/offline_store.h), the
// journal and the metrics.
//
//   OfflineOptions o;                         // --offline-pages=soft ...
//   o.mode = OfflineMode::kSoft;
//   PP_ASSIGN_OR_RETURN(auto offliner, Offliner::create(o, std::move(kernel), {.log = &log}));
//   offliner->observe([&](const OfflineAction& a) { return store.add(a); });
//   watcher feeds it as any sink; its tick() runs the retries that are due.
//
// The records it takes (Documentation/perf-persistent-watch.txt, OFFLINING):
// corrected memory errors of this boot with a physical address: a
// machine check (mce:mce_record, live or from this boot's kernel log) whose
// severity is corrected and that is located in memory or is of the memory
// controller class with ADDRV (watch/faults.h fault_error_of()), and EDAC's
// ras:mc_event records of type corrected (their page and offset; error_count
// errors). A machine check and an EDAC report of the same page within 5 s
// are one error (the EDAC drivers report the machine check again). A previous
// boot's records (pstore, ERST) are not counted.
//
// What happens to a page the policy asks for, in order; each outcome is one
// action with its "result":
//   mode account                 -> "accounted" (nothing touches the kernel)
//   the cap (--offline-max) is reached -> "capped" (never tried later)
//   the page is poisoned already (kpageflags HWPOISON) -> "already-poisoned"
//   soft, and vm.enable_soft_offline is 0 -> "disabled"
//   --offline-dry-run             -> "dry-run" (the checks above were made)
//   the write succeeds            -> "offlined"
//   EBUSY, EAGAIN or EIO          -> "retrying" with its errno; again after
//                                    retry_ms, doubled each time up to
//                                    max_retry_ms, at most max_attempts tries
//                                    in all; the last one's refusal -> "failed";
//                                    watch stopping before the next -> "failed"
//   any other refusal             -> "failed" with its errno (ENOENT: a kernel
//                                    without CONFIG_MEMORY_FAILURE; EPERM)
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sys/page_offline.h"
#include "watch/offline_policy.h"
#include "watch/record.h"
#include "watch/trigger.h"

namespace pp::watch {

// --offline-pages: off takes no action and counts nothing; account records
// the pages that crossed the threshold; soft and hard offline them.
enum class OfflineMode { kOff, kAccount, kSoft, kHard };
// "off", "account", "soft", "hard".
std::string_view offline_mode_name(OfflineMode mode);
Result<OfflineMode> parse_offline_mode(std::string_view text, std::string_view what);

// The cap by default: more pages than this in a day are a fault larger than
// pages (a row, a device, a channel): the DIMM is to be replaced, and
// offlining more only eats memory.
inline constexpr std::string_view kDefaultOfflineMax = "32 per 24h";

struct OfflineOptions {
  OfflineMode mode = OfflineMode::kAccount;
  OfflinePolicyKind policy = OfflinePolicyKind::kWindow;
  // --page-threshold; nullopt: the policy's preset.
  std::optional<Threshold> page_threshold;
  std::optional<Threshold> row_threshold;         // --row-threshold; nullopt: no row isolation
  RateLimit max{32, uint64_t{24} * 3600 * 1000};  // --offline-max; runs 0: no cap
  bool dry_run = false;
  uint32_t max_attempts = 5;
  uint64_t retry_ms = 5000;
  uint64_t max_retry_ms = 600000;

  bool operator==(const OfflineOptions&) const = default;
};

// The page policy these options make: the preset with --page-threshold over it.
PagePolicy effective_page_policy(const OfflineOptions& options);
// Checks the options as Offliner::create() does; a usage error otherwise.
Status check_offline_options(const OfflineOptions& options);

// One action on one page.
struct OfflineAction {
  uint64_t wall_ns = 0;  // when it was taken
  uint64_t pfn = 0;
  std::string action;      // "account", "soft", "hard"
  std::string policy;      // "window", "mcelog", "rasdaemon", "kernel-cec"
  std::string reason;      // OfflineRequest::reason
  std::string result;      // "offlined", "accounted", "dry-run", "already-poisoned",
                           // "disabled", "capped", "retrying", "failed"
  int error = 0;           // the kernel's errno for retrying and failed, else 0
  uint32_t attempt = 0;    // 1 for the first try; 0 when nothing was tried
  std::string message;     // what failed, for failed and disabled; "" otherwise
  std::string record_key;  // the record whose error decided it
  bool row = false;        // asked for by row isolation

  uint64_t address() const { return pfn << kPageShift; }
};

// The action's object, as report --db --actions --json prints it:
//   {"time":"2026-12-05T03:00:00.000000000Z","page":"0x1234","address":"0x1234000",
//    "action":"soft","policy":"window","result":"offlined","errno":null,"attempt":1,
//    "reason":"...","message":null,"record_key":"...","row":false}
// "errno" is the symbolic name ("EBUSY") or null.
nlohmann::ordered_json offline_action_json(const OfflineAction& action);
// One line: "2026-12-05T03:00:00Z page 0x1234 soft offlined (window: 2 corrected ...)".
std::string offline_action_text(const OfflineAction& action);

// The journal entry of an action (Documentation/perf-persistent-watch.txt,
// OFFLINING):
//   MESSAGE=page 0x1234 soft offlined: 2 corrected errors within 24h (...)
//   MESSAGE_ID=kOfflineMessageId  PRIORITY=4 (failed, capped, disabled), 5
//   (offlined, retrying), 6 (accounted, dry-run, already-poisoned)
//   SYSLOG_IDENTIFIER=perf-persistent-watch
//   PAGE_OFFLINE_PAGE=0x1234 PAGE_OFFLINE_ADDRESS=0x1234000 PAGE_OFFLINE_ACTION=soft
//   PAGE_OFFLINE_POLICY=window PAGE_OFFLINE_RESULT=offlined PAGE_OFFLINE_ERRNO=EBUSY (when one)
//   PAGE_OFFLINE_ATTEMPT=1 PAGE_OFFLINE_REASON=... PAGE_OFFLINE_RECORD_KEY=...
inline constexpr const char* kOfflineMessageId = "cbde55d38428432598dd9a5e3b734607";
std::vector<std::string> offline_journal_entry(const OfflineAction& action);

// Seams for tests; empty: the real clocks.
struct OfflinerSeams {
  std::ostream* log = nullptr;
  std::function<int64_t()> wall_ms;
  std::function<int64_t()> monotonic_ms;
};

class Offliner final : public Sink {
 public:
  using Observer = std::function<Status(const OfflineAction&)>;

  // `kernel` is used in modes soft and hard only (may be null in account).
  static Result<std::unique_ptr<Offliner>> create(const OfflineOptions& options,
                                                  std::unique_ptr<sys::PageOfflineKernel> kernel,
                                                  OfflinerSeams seams);
  Offliner(const Offliner&) = delete;
  Offliner& operator=(const Offliner&) = delete;
  ~Offliner() override;

  // Called with every action, in order; a failure is logged (once in a
  // while), never stops the others.
  void observe(Observer observer) { observers_.push_back(std::move(observer)); }
  // Pages acted on before (this boot's actions in the history): never
  // asked for again.
  void mark_done(uint64_t pfn) { decider_.mark_done(pfn); }

  Status record(const WatchRecord& record, const nlohmann::ordered_json& json) override;
  // A record the history stored before a restart (its object), counted as
  // if it came now: its origin, wall time and key are read from it.
  Status replay(const nlohmann::ordered_json& json);
  // Makes the record's tree only for a machine check or an EDAC record.
  Status take(const WatchRecord& record, const RecordJson& json) override;
  Status lost(const LostNotice&) override { return ok_status(); }
  // Runs the retries due by `now_ms` (monotonic); at `final`, a retry
  // still waiting is an action "failed" (watch stopped before it).
  Status tick(uint64_t now_ms, bool final) override;

  size_t pending() const { return pending_.size(); }
  const OfflineDecider& decider() const { return decider_; }

 private:
  struct Pending {
    OfflineRequest request;
    std::string record_key;
    uint32_t attempt = 0;  // tries made
    uint64_t due_ms = 0;   // monotonic
  };
  Offliner(const OfflineOptions& options, std::unique_ptr<sys::PageOfflineKernel> kernel,
           OfflinerSeams seams);
  void act(const OfflineRequest& request, const std::string& record_key);
  // One try at a page that passed the cap; records what came of it.
  void attempt(Pending pending);
  void emit(const OfflineAction& action);
  OfflineAction base_action(const OfflineRequest& request, const std::string& record_key) const;
  bool same_error_seen(uint64_t pfn, uint64_t wall_ms, bool machine_check);
  int64_t wall_ms() const;
  int64_t monotonic_ms() const;

  OfflineOptions options_;
  std::unique_ptr<sys::PageOfflineKernel> kernel_;
  OfflinerSeams seams_;
  OfflineDecider decider_;
  std::vector<Observer> observers_;
  std::deque<int64_t> tries_;            // monotonic times of the tries the cap counts
  std::map<uint64_t, Pending> pending_;  // retries, by page
  // Recent errors (page, wall time, machine check?), for the EDAC join.
  std::deque<std::tuple<uint64_t, uint64_t, bool>> recent_;
  bool capped_said_ = false, kpageflags_said_ = false;
  uint64_t observer_failures_ = 0;
};

}  // namespace pp::watch

// When a page of memory should be taken out of use: the decision of watch's
// page offlining (watch/offline.h acts on it). Pure: corrected memory
// errors in (a physical address, a time, a count, the DRAM row when the
// error was located), pages to offline out. No kernel, no clock of its own.
//
//   PagePolicy policy = page_policy_preset(OfflinePolicyKind::kMcelog);  // 2 in 24h, leaky
//   OfflineDecider decider(policy, std::nullopt);                        // no row isolation
//   decider.add({.address = 0x1234040, .wall_ms = t});        // nothing yet
//   decider.add({.address = 0x1234080, .wall_ms = t + 1000}); // {pfn 0x1234, "2 corrected ..."}
//   decider.add({.address = 0x12340c0, .wall_ms = t + 2000}); // nothing: asked for already
//
// The policies (--offline-policy), each a peer's documented rule, per 4 KiB
// page (the physical address >> 12):
// - window (ours, the default): the Nth error of a page within TIME of the
//   first of those N (--page-threshold 'N in TIME', default 2 in 24h; the
//   same sliding window as a trigger's threshold, watch/trigger.h).
// - mcelog: mcelog's leaky bucket ([page] memory-ce-threshold, "2 / 24h"
//   since the Intel and Samsung field study, "10 / 24h" before; leaky-bucket.c):
//   a page's bucket starts at its first error; an error at least TIME after
//   the bucket's start first drains floor(elapsed / TIME * N) from the count
//   and restarts the bucket there; the count grows by the error's count;
//   reaching N asks for the page and empties the bucket.
// - rasdaemon: the same leaky bucket with rasdaemon's defaults
//   (PAGE_CE_THRESHOLD=50, PAGE_CE_REFRESH_CYCLE=24h; ras-page-isolation.c,
//   page_record()), counting EDAC's error_count of each report.
// - kernel-cec: the kernel's Correctable Errors Collector
//   (drivers/ras/cec.c, Linux 6.0 and later): a pool of 512 pages; each error
//   adds 1 to its page's count and makes the entry young (generation 3);
//   a count reaching the action threshold (2) asks for the page and frees
//   its entry; the generations of all entries decay by one every decay
//   interval (24 h, counted from the first error) and after every 128
//   errors counted; a new page in a full pool evicts the entry with the
//   oldest generation and, among those, the smallest count (the lowest
//   page first). Counts themselves never decay. --page-threshold 'N in
//   TIME' sets the action threshold (at most 1023, the CEC's count field)
//   and the decay interval.
// Every page is asked for once: a page asked for is never asked for again
// (the errors that follow its offlining are the old page's, or it stays
// poisoned). Pages remembered are bounded (PagePolicy::max_pages): the
// least recently seen is forgotten first.
//
// Row isolation (--row-threshold 'N in TIME', off by default; rasdaemon's
// ROW_CE_THRESHOLD in spirit): errors located to a DRAM row (the DIMM,
// rank, bank group, bank and row of mce/fault.h's model) count per row in a
// sliding window; the row's Nth error asks for every page of that row seen
// so far, and each page of the row seen afterwards at its first error.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "mce/location.h"
#include "watch/trigger.h"

namespace pp::watch {

inline constexpr uint64_t kPageShift = 12;

enum class OfflinePolicyKind { kWindow, kMcelog, kRasdaemon, kKernelCec };

// "window", "mcelog", "rasdaemon", "kernel-cec".
std::string_view offline_policy_name(OfflinePolicyKind kind);
// The names above; a usage error naming `what` and the choices otherwise.
Result<OfflinePolicyKind> parse_offline_policy(std::string_view text, std::string_view what);

struct PagePolicy {
  OfflinePolicyKind kind = OfflinePolicyKind::kWindow;
  Threshold threshold{2, uint64_t{24} * 3600 * 1000};
  size_t max_pages = 65536;  // pages remembered; kernel-cec: its pool, 512
};

// The preset's threshold, window and pool: window 2 in 24h, mcelog 2 in
// 24h, rasdaemon 50 in 24h, kernel-cec 2 (decay 24h, 512 pages).
PagePolicy page_policy_preset(OfflinePolicyKind kind);

// The kernel CEC's constants (drivers/ras/cec.c).
inline constexpr size_t kCecPoolPages = 512;      // MAX_ELEMS: one page of u64
inline constexpr uint64_t kCecMaxCount = 1023;    // COUNT_MASK: 10 bits
inline constexpr uint32_t kCecMaxGeneration = 3;  // DECAY_MASK: 2 bits
inline constexpr uint64_t kCecCleanEvery = 128;   // CLEAN_ELEMS: MAX_ELEMS >> DECAY_BITS

// Checks a policy with its threshold (kernel-cec: a count of at most
// kCecMaxCount); a usage error naming `what` otherwise.
Status check_page_policy(const PagePolicy& policy, std::string_view what);

// One corrected memory error.
struct MemoryError {
  uint64_t address = 0;  // physical
  uint64_t wall_ms = 0;  // when (ms since the epoch)
  uint32_t count = 1;    // errors the report stands for (EDAC's error_count; 0 counts 1)
  // The DRAM row it was located to ("" when it was not): row_id().
  std::string row;
};

// The identity of a location's DRAM row: its DIMM (dimm_name()), rank or
// chip select, bank group, bank and row; "" when the location has no row
// or no DIMM.
std::string row_id(const mce::MemoryLocation& location);

// A page to offline and why.
struct OfflineRequest {
  uint64_t pfn = 0;
  uint64_t errors = 0;  // the count that reached the threshold (the row's, for a row)
  // "2 corrected errors within 24h (policy window)",
  // "row DIMM_A1 rank 0 bank 1 row 0x1d26: 4 corrected errors within 1h".
  std::string reason;
  bool row = false;  // asked for by row isolation
};

class OfflineDecider {
 public:
  // `row`: the row threshold, nullopt for none. The policy must pass
  // check_page_policy().
  OfflineDecider(PagePolicy policy, std::optional<Threshold> row);

  // The pages this error asks for now (none, its page, or a row's pages).
  std::vector<OfflineRequest> add(const MemoryError& error);

  // The page was asked for before (by this run, or, on restart, by the
  // history): never asked for again.
  void mark_done(uint64_t pfn);
  bool done(uint64_t pfn) const { return done_.count(pfn) != 0; }
  // Pages whose counts are remembered now (the CEC's pool, for kernel-cec).
  size_t pages() const;
  // Pages forgotten for room (kernel-cec: entries evicted from its pool).
  uint64_t evicted() const { return evicted_; }

  const PagePolicy& policy() const { return policy_; }

 private:
  // The sliding window of a trigger's threshold (watch/trigger.h): an
  // error counts with those less than TIME older than the newest; one that
  // comes late (a harvested record after live ones) goes where its time
  // belongs. Errors of one report are one entry: its count.
  struct Window {
    std::deque<std::pair<uint64_t, uint64_t>> errors;  // (wall ms, count), oldest first
    uint64_t total = 0;                                // the counts held, less than N
    // Adds `count` errors at `wall_ms`; true when the window holds N (it
    // then holds nothing more, as a trigger's bucket that fired).
    bool add(uint64_t wall_ms, uint64_t count, const Threshold& threshold);
  };
  struct Page {
    Window window;            // window
    uint64_t count = 0;       // mcelog, rasdaemon: the bucket; kernel-cec: the count
    uint64_t start_ms = 0;    // mcelog, rasdaemon: the bucket's start
    uint32_t generation = 0;  // kernel-cec
    uint64_t last_ms = 0;     // for eviction
  };
  struct Row {
    Window window;
    std::set<uint64_t> pages;
    bool isolated = false;
    uint64_t last_ms = 0;
  };
  std::optional<OfflineRequest> add_to_page(uint64_t pfn, const MemoryError& error);
  std::optional<OfflineRequest> add_window(Page& page, uint64_t pfn, const MemoryError& error);
  std::optional<OfflineRequest> add_bucket(Page& page, uint64_t pfn, const MemoryError& error);
  std::optional<OfflineRequest> add_cec(uint64_t pfn, const MemoryError& error);
  void cec_decay(uint64_t now_ms);
  void cec_spring_cleaning();
  void evict_page();
  void remember_done(uint64_t pfn);
  std::vector<OfflineRequest> add_to_row(uint64_t pfn, const MemoryError& error);
  std::string threshold_text() const;

  PagePolicy policy_;
  std::optional<Threshold> row_;
  std::map<uint64_t, Page> pages_;
  std::map<std::string, Row> rows_;
  std::set<uint64_t> done_;
  std::deque<uint64_t> done_order_;
  uint64_t evicted_ = 0;
  // kernel-cec: errors counted since the last spring cleaning, and when the
  // decay's clock started (the first error) and last struck.
  uint64_t cec_since_cleaning_ = 0;
  std::optional<uint64_t> cec_last_decay_ms_;
};

// "24h", "90m", "45s", "1500ms": a window as the man page writes it.
std::string duration_text(uint64_t ms);

}  // namespace pp::watch

#include "record/record_options.h"

#include <time.h>

#include <cctype>
#include <cstdio>

#include "base/strings.h"

namespace pp::record {
namespace {

// A number and one unit letter from `units`, whose multipliers are `mult`;
// with `fold_case`, a lower-case letter is its upper-case unit.
Result<uint64_t> number_with_unit(std::string_view text, std::string_view units,
                                  const uint64_t* mult, bool unit_required, bool fold_case = true) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])))
    digits++;
  if (digits == 0 || text.size() > digits + 1)
    return errorf(EINVAL, "not a number with a unit");
  PP_ASSIGN_OR_RETURN(uint64_t n, parse_u64(text.substr(0, digits), "number"));
  if (digits == text.size()) {
    if (unit_required)
      return errorf(EINVAL, "no unit");
    return n;
  }
  char unit = text[digits];
  if (fold_case)
    unit = char(std::toupper(static_cast<unsigned char>(unit)));
  size_t at = units.find(unit);
  if (at == std::string_view::npos)
    return errorf(EINVAL, "unknown unit");
  if (n > UINT64_MAX / mult[at])
    return errorf(EINVAL, "too large");
  return n * mult[at];
}

constexpr uint64_t kSizeMult[] = {1, 1ULL << 10, 1ULL << 20, 1ULL << 30};
constexpr uint64_t kTimeMult[] = {1000, 60 * 1000ULL, 3600 * 1000ULL, 86400 * 1000ULL};

}  // namespace

Result<SwitchOutput> parse_switch_output(std::string_view text) {
  SwitchOutput out;
  if (text.empty() || text == "signal") {
    out.mode = SwitchOutput::Mode::kSignal;
    return out;
  }
  // Time first, its units as perf spells them (lower case): 2m is two
  // minutes, 2M two MiB.
  if (auto ms = number_with_unit(text, "smhd", kTimeMult, true, false); ms.ok() && *ms > 0) {
    out.mode = SwitchOutput::Mode::kTime;
    out.every = std::chrono::milliseconds(*ms);
    return out;
  }
  if (auto bytes = number_with_unit(text, "BKMG", kSizeMult, true); bytes.ok() && *bytes > 0) {
    out.mode = SwitchOutput::Mode::kSize;
    out.bytes = *bytes;
    return out;
  }
  return errorf(ErrorKind::kUsage, EINVAL,
                "--switch-output=%.*s: give 'signal' (a new file at each SIGUSR2), a size with "
                "a unit B, K, M or G (100M), or a time with a unit s, m, h or d (30s)",
                int(text.size()), text.data());
}

Result<uint64_t> parse_size(std::string_view text, std::string_view option) {
  auto bytes = number_with_unit(text, "BKMG", kSizeMult, false);
  if (!bytes.ok() || *bytes == 0)
    return errorf(ErrorKind::kUsage, EINVAL,
                  "%.*s=%.*s: give a size above 0, in bytes or with a unit B, K, M or G (2G)",
                  int(option.size()), option.data(), int(text.size()), text.data());
  return *bytes;
}

std::string switch_stamp(std::chrono::system_clock::time_point now, const std::string& after) {
  auto since_epoch = now.time_since_epoch();
  int64_t centis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count() / 10;
  auto format = [](int64_t cs) {
    time_t secs = time_t(cs / 100);
    struct tm tm = {};
    ::localtime_r(&secs, &tm);
    char buf[96];
    std::snprintf(buf, sizeof(buf), "%04d%02d%02d%02d%02d%02d%02d", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  int((cs % 100 + 100) % 100));
    return std::string(buf);
  };
  std::string stamp = format(centis);
  // Stamps of one length compare as times do.
  while (!after.empty() && stamp.size() == after.size() && stamp <= after)
    stamp = format(++centis);
  return stamp;
}

// Decided one by one from perf record's option list (perf 6.1).
const std::vector<RefusedOption> kRefusedOptions = {
    {'m', "mmap-pages", true,
     "the buffer belongs to the event and every reader maps all of it: choose its size when "
     "creating the event (perf persistent create -m PAGES); perf persistent list shows it"},
    {0, "filter", true,
     "a tracepoint filter acts in the kernel on the event itself, whose one buffer every reader "
     "shares, so a reader cannot filter for itself: set it when creating the event (perf "
     "persistent create --filter FILTER), or filter the recorded samples (perf script)"},
    {'c', "count", true,
     "the sample period belongs to the event: create it with the period in the event string (-e "
     "'cpu-clock/period=N/')"},
    {'F', "freq", true,
     "the sampling frequency belongs to the event: create it with freq= in the event string (-e "
     "'cpu-clock/freq=999/')"},
    {'g', "", false,
     "call chains are chosen when the event is created, and persistent events sample none"},
    {0, "call-graph", true,
     "call chains are chosen when the event is created, and persistent events sample none"},
    {'k', "clockid", true,
     "the clock belongs to the event: create it with 'perf persistent create -k CLOCK'"},
    {'p', "pid", true,
     "persistent events are per CPU, for every task; filter the samples afterwards (perf script "
     "--pid)"},
    {'t', "tid", true,
     "persistent events are per CPU, for every task; filter the samples afterwards (perf script "
     "--tid)"},
    {'u', "uid", true,
     "persistent events are per CPU, for every user; filter the samples afterwards (perf script)"},
    {'G', "cgroup", true, "persistent events count every cgroup; no per-cgroup reader exists"},
    {'i', "no-inherit", false, "persistent events are per CPU: there is nothing to inherit"},
    {0, "per-thread", false, "persistent events are per CPU, never per thread"},
    {'b', "branch-any", false, "branch stacks are chosen when the event is created"},
    {'j', "branch-filter", true, "branch stacks are chosen when the event is created"},
    {'d', "data", false, "what a sample holds is fixed when the event is created"},
    {'P', "period", false,
     "what a sample holds is fixed when the event is created (it has PERIOD)"},
    {'T', "timestamp", false,
     "what a sample holds is fixed when the event is created (it has TIME)"},
    {'R', "raw-samples", false,
     "what a sample holds is fixed when the event is created (tracepoints have RAW)"},
    {'W', "weight", false, "what a sample holds is fixed when the event is created"},
    {'I', "intr-regs", false, "what a sample holds is fixed when the event is created"},
    {0, "user-regs", false, "what a sample holds is fixed when the event is created"},
    {0, "sample-cpu", false, "what a sample holds is fixed when the event is created (it has CPU)"},
    {0, "phys-data", false, "what a sample holds is fixed when the event is created"},
    {0, "transaction", false, "what a sample holds is fixed when the event is created"},
    {'s', "stat", false, "persistent events are per CPU; there are no per-thread counts"},
    {'n', "no-samples", false, "a persistent event samples: that is what its buffer is for"},
    {'D', "delay", true, "persistent events are always enabled; record reads, it does not enable"},
    {0, "overwrite", false,
     "persistent buffers are always in overwrite mode; the reader never moves the writer"},
    {0, "all-kernel", false,
     "exclude_user/exclude_kernel are chosen when the event is created (the :k and :u modifiers)"},
    {0, "all-user", false,
     "exclude_user/exclude_kernel are chosen when the event is created (the :k and :u modifiers)"},
    {'z', "compression-level", false,
     "record writes perf.data uncompressed; compress the file afterwards"},
    {0, "aio", false, "record writes with buffered pwritev, not POSIX AIO"},
    {0, "threads", false, "one reader thread drains every buffer"},
    {0, "switch-events", false,
     "context-switch records are chosen when the event is created (create -e sched:sched_switch)"},
};

}  // namespace pp::record

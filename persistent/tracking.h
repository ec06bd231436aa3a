// The context stream: what a snapshot needs to name the tasks and maps of
// its samples after those tasks have exited. perf record opens a tracking
// event beside the events it records; a persistent event needs one that is
// as persistent as itself, or a `record --snapshot` taken later finds the
// COMM records of tasks that are long gone only in /proc, where they are not.
//
// A context stream is a software dummy event (PERF_COUNT_SW_DUMMY, which
// counts nothing) opened on every online CPU with comm, comm_exec and task
// set, and mmap where the events it serves sample instruction pointers (MMAP,
// not MMAP2: the seed ABI gave mmap2's bit to its persistent flag, and perf
// resolves symbols from either), with its own read-only overwrite buffer of kContextPages pages
// per CPU. Its records carry the same sample id fields, in the same clock, as
// the events it serves (sample_id_all), so perf orders them among the
// samples. One stream serves every event whose context_key() is the same; the
// backend makes it with the first such event and removes it with the last.
// It is listed (EventInfo::is_context) but never published as
// persistent/NAME/, and cannot be killed by itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "persistent/event.h"
#include "sys/perf_attr.h"

namespace pp::persistent {

// Data pages per CPU of a context stream: 128 KiB with 4 KiB pages. A task
// that forks, execs and exits leaves about 230 bytes of FORK, COMM and EXIT
// records (plus about 100 bytes per MMAP for instruction-pointer events), so
// this keeps the last 500 or so task lifetimes per CPU: more than the
// default 512 KiB of sched_switch samples covers on a busy CPU.
inline constexpr uint64_t kContextPages = 32;

// Context streams take ids from here up, so they never take an id that
// `create` would give an event (ids stay 1, 2, 3 whatever streams exist).
// 2^40 stays exact in JSON readers that keep 53 bits.
inline constexpr uint64_t kFirstContextId = uint64_t(1) << 40;

// The name a context stream is listed under: "[context]", "[context-mmap]",
// with "-clock<N>" before the "]" when its events use clock N. The brackets
// keep it apart from every name an event can have (persistent/names.h).
std::string context_name(const sys::EventAttr& attr);

// What a context stream must match to serve an event of `served`: whether
// it carries MMAP records (events that sample instruction pointers and are not
// tracepoints) and the clock (use_clockid, clockid).
struct ContextKey {
  bool mmap = false;
  bool use_clockid = false;
  uint32_t clockid = 0;
  bool operator==(const ContextKey&) const = default;
};
ContextKey context_key(const sys::EventAttr& served);

// The attr a context stream opens on each CPU for events with `key`:
// PERF_TYPE_SOFTWARE / PERF_COUNT_SW_DUMMY, sample_period 1, sample_type
// TID|TIME|CPU|IDENTIFIER (the sample id fields every created event has, so
// perf finds one layout across the file), sample_id_all, comm, comm_exec,
// task, mmap when key.mmap, the key's clock, exclude_guest, and
// write_backward for a backward layout.
sys::EventAttr context_attr(const ContextKey& key, Layout layout);

// The key a context stream was made for, from its attr.
ContextKey key_of_context(const sys::EventAttr& context);

// Whether an event of `served` can use context streams at all: its records
// must carry the sample id in every record (sample_id_all and
// PERF_SAMPLE_IDENTIFIER or PERF_SAMPLE_ID, or a lean tracepoint event whose
// readers add the buffer's id: persistent/sample_layout.h), else perf could
// not tell whose a COMM is.
bool wants_context(const sys::EventAttr& served);

// The context stream among `events` that serves `served`, if any.
const EventInfo* find_context(const std::vector<EventInfo>& events, const sys::EventAttr& served);

// The id for a new context stream: one past the largest context id in
// `events`, at least kFirstContextId.
uint64_t next_context_id(const std::vector<EventInfo>& events);

// Whether any event among `events` still uses context stream `id`.
bool context_in_use(const std::vector<EventInfo>& events, uint64_t id);

}  // namespace pp::persistent

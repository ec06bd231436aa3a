// What the broker bounds, in one place (Documentation/perf-persistent-daemon.txt,
// LIMITS, says what happens at each): how much one event may carry, how many
// events the registry holds, how many connections it serves and for how long,
// and how fast its log may grow. A request past a bound is refused with a
// message naming the bound; nothing is cut short silently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/result.h"
#include "persistent/event.h"
#include "sys/explain.h"

namespace pp::persistent {

// One event. A filter is handed to PERF_EVENT_IOC_SET_FILTER, which copies
// at most a page less its NUL; an event string is far shorter in practice.
inline constexpr size_t kMaxEventStringBytes = 4096;
inline constexpr size_t kMaxFilterBytes = 4095;
inline constexpr size_t kMaxCpuListBytes = 4096;

// The registry: create refuses an event past this many (ENOSPC).
inline constexpr size_t kMaxEvents = 1024;

// A list reply holds events up to this many bytes, then says "more": the
// client asks again from the last id it got, so a list works at any size.
inline constexpr size_t kListPageBytes = size_t{4} * 1024 * 1024;

// Connections: all together, and per uid for a uid whose process is not
// perfmon-capable (root and CAP_PERFMON holders are never turned away while
// an idle connection can make room for them).
inline constexpr size_t kMaxConnections = 256;
inline constexpr size_t kMaxConnectionsPerUid = 32;
// Readers (connections that hold an event's buffer fd, the keeper included)
// may fill all but kReservedConnections of kMaxConnections: the rest are
// kept for perfmon-capable clients that hold no buffer, so that root's
// list, kill and check always get in (a reader cannot be closed to make
// room: that would end someone's record). One uid, root included, may hold
// at most kMaxReadersPerUid readers, so that one user cannot take every
// reader's place.
inline constexpr size_t kReservedConnections = 16;
inline constexpr size_t kMaxReadersPerUid = 64;
// A connection with nothing under way and no event buffers open is closed
// after this long; one halfway through a request or a reply, after
// kStallTimeoutMs.
inline constexpr int kIdleTimeoutMs = 60 * 1000;
inline constexpr int kStallTimeoutMs = 10 * 1000;
// The broker reads every connection as soon as bytes arrive, also while a
// reply is still being sent, so that a client cannot choose when its rights
// are read (the credential checks happen on arrival). A client never needs
// more than one request ahead; one with more than this many bytes of
// requests not yet answered is closed.
inline constexpr size_t kMaxUnansweredRequestBytes = size_t(2) * (64 * 1024 + 12);
// A handover (daemon --replace) freezes the registry and stops accepts
// until the new broker holds the lock; one not complete this long after its
// first request is abandoned, and the broker serves on.
inline constexpr int kHandoverTimeoutMs = 10 * 1000;
// Out of descriptors (EMFILE, ENFILE), the broker stops accepting for this
// long instead of retrying at once.
inline constexpr int kAcceptBackoffMs = 250;

// File descriptors: the broker holds one per CPU of every event and context
// stream, and refuses a create that would leave fewer than this many free
// under its RLIMIT_NOFILE, for the files it writes and the fds it hands
// out, beyond one for each connection it may still accept (up to
// kMaxConnections); EMFILE, saying the figures and what to raise. Out of
// descriptors all the same, it keeps one spare to accept a connection, tell
// it why it is turned away, and close it.
inline constexpr size_t kFdReserve = 16;

// The log: each client uid, and each other source, may write this many
// lines per window; the rest are counted and said once the window ends. A
// detached broker's broker.log is moved to broker.log.1 past kLogMaxBytes.
inline constexpr int kLogBurst = 20;
inline constexpr int kLogWindowMs = 10 * 1000;
inline constexpr uint64_t kLogMaxBytes = uint64_t{4} * 1024 * 1024;

// EINVAL naming the field and its bound when `request` carries more than
// the bounds above allow.
Status check_create_limits(const CreateRequest& request);

// What a create is about to open, against what the broker holds.
struct FdRoom {
  std::string event;        // its name, for the message
  size_t cpus = 0;          // one fd each
  size_t context_cpus = 0;  // a context stream to open with it: one fd each; 0: none
  sys::FdUsage usage{};     // what the broker holds now; limit 0: unknown
  size_t events = 0;        // events it holds now, context streams not counted
  size_t client_room = 0;   // connections it may still accept: one fd each
  std::string service{};    // the systemd unit it runs as (LimitNOFILE=); "": by hand (ulimit -n)
};
// EMFILE when opening the event would leave fewer than kFdReserve fds free:
//   cannot create 'fp25': it needs 2 file descriptors (one per CPU, 2 CPUs),
//   and the broker holds 50 fds of its limit of 64 (RLIMIT_NOFILE, hard limit
//   64) for 24 events (each takes one fd per CPU, and each context stream one
//   per CPU), keeping 16 free for clients and its own files; raise
//   LimitNOFILE= (e.g. LimitNOFILE=1024, 'systemctl edit
//   perf-persistent.service') and restart the broker, or kill events you no
//   longer need ('perf persistent kill')
Status check_fd_room(const FdRoom& room);
// The second half of that message, for an EMFILE met anyway in a file the
// broker writes (a perf_event_open the kernel refuses is explained by
// sys::explain, from the same figures).
std::string describe_fd_use(const FdRoom& room);

}  // namespace pp::persistent

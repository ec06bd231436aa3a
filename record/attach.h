// Attaching to persistent events' buffers, read-only: one Stream per CPU of
// each event, through a persistent backend (the kernel's or the broker's
// read-only fd), mapped with PROT_READ and read by a sys::RingReader that
// never moves the writer (the kernel writes over the oldest records). Other
// readers keep their own positions; nothing here pauses the event.
//
// Also the tracking event perf record adds, which is the reader's own: a
// dummy software event per CPU for the COMM, FORK and EXIT records of tasks
// started while reading.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "persistent/backend.h"
#include "record/events.h"
#include "sys/explain.h"
#include "sys/fd.h"
#include "sys/kernel.h"
#include "sys/perf_attr.h"
#include "sys/ring_reader.h"

namespace pp::record {

// One CPU's buffer of one event (or of the tracking event).
struct Stream {
  size_t event = 0;  // index of its event; the tracking event's comes after them
  int cpu = 0;
  uint64_t id = 0;  // the sample id, when the attr asks for one or the event is lean
                    // (PERF_RECORD_LOST; what a lean event's records are given)
  sys::Fd fd;
  sys::Mapping mapping;
  std::optional<sys::RingReader> reader;
  bool read_once = false;  // the reader has read once (the first read takes a snapshot)
  // False for a shared ring the broker writes (an ftrace-backend event):
  // its fd is always readable, so the reader wakes by time, not by poll.
  bool pollable = true;
  // The broker's hangup pipe, when it passed one: POLLHUP once the event
  // is gone (killed, or its broker stopped). A perf event's fd cannot say
  // so: the reader's own fd keeps the kernel event alive.
  sys::Fd hangup;
  // What to put in a pollfd for this buffer: its fd, or for a shared ring
  // the hangup pipe, which polls only POLLHUP (the event is gone).
  int poll_fd() const { return pollable ? fd.get() : hangup.get(); }
  // What to poll beside it: a pollable buffer's hangup pipe, -1 when there
  // is none or poll_fd() is the pipe already (poll(2) skips a negative fd).
  int hangup_fd() const { return pollable && hangup ? hangup.get() : -1; }
  // The events to ask of poll_fd(): POLLIN of a buffer's fd; nothing of a
  // hangup pipe, whose POLLHUP poll(2) reports unasked, while bytes that
  // someone wrote into it (a write end reopened through /proc) must not
  // wake the reader again and again. Ask 0 of hangup_fd() too.
  short poll_events() const { return pollable ? short(POLLIN) : short(0); }
};

struct AttachOptions {
  sys::Kernel* kernel = nullptr;                // mmap, ioctl; nullptr: sys::real_kernel()
  sys::RingStart start = sys::RingStart::kNow;  // kOldest: first read what the buffers hold
  sys::ExplainEnv explain;                      // the roots a failed mmap is explained from
};

// Opens, maps and puts a reader on every CPU of every event, in the order of
// `events` and of each event's cpus. The first failure is returned (a
// refused open or mmap, explained); nothing stays attached then.
Result<std::vector<Stream>> attach_events(persistent::Backend& backend,
                                          const std::vector<ResolvedEvent>& events,
                                          const AttachOptions& options);

// The tracking event on every CPU that `events` read, when they put sample
// ids on every record (sample_id_all; else perf could not tell whose a
// COMM is), with MMAP2 too when they sample instruction pointers. Best
// effort: std::nullopt, and a line on `notes`, when it cannot be opened.
// Its streams get the event index after the events': events.size().
struct Tracking {
  sys::EventAttr attr;
  std::vector<Stream> streams;
};
std::optional<Tracking> attach_tracking(const std::vector<ResolvedEvent>& events,
                                        const AttachOptions& options, std::ostream& notes);

// The name perf shows for the tracking event.
inline constexpr std::string_view kTrackingName = "dummy:HG";

}  // namespace pp::record

// A perf ring buffer in shared memory, written by a process instead of the
// kernel: the broker's ftrace backend republishes each record an ftrace
// instance gave it into one of these per CPU, and every reader maps it
// read-only exactly as it maps a perf event's buffer (sys/ring.h's layout,
// read by sys/ring_reader.h).
//
//   memfd "perf-persistent:NAME/cpuN":
//     offset 0           struct perf_event_mmap_page (data_offset, data_size,
//                        data_head; nothing else is filled in)
//     offset page_size   data_size bytes of records
//
// The memory is a sealed memfd: its size cannot change (F_SEAL_SHRINK,
// F_SEAL_GROW) and, once the writer has mapped it, no new writable mapping
// or write(2) is possible (F_SEAL_FUTURE_WRITE, Linux 5.1+), so a descriptor
// handed to a reader lets it read and nothing else. On a kernel without
// F_SEAL_FUTURE_WRITE the descriptor handed out is the memfd reopened
// read-only (/proc/self/fd/N), which refuses PROT_WRITE the same way.
//
// Unlike a perf event's fd, the descriptor never polls "nothing new": a
// regular file is always readable. Readers pace themselves by time instead
// (persistent::Buffer::pollable), and poll a HangupPipe's reader end to
// learn that the ring is written no more.
//
//   PP_ASSIGN_OR_RETURN(SharedRing ring, SharedRing::create("perf-persistent:mce/cpu0", 1 << 20));
//   RingWriter writer(ring.memory(), ring.data_offset(), ring.data_size(),
//                     RingLayout::kBackward, true);
//   writer.write(record);
//   PP_ASSIGN_OR_RETURN(Fd for_reader, ring.reader_fd());
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/result.h"
#include "sys/fd.h"

namespace pp::sys {

class SharedRing {
 public:
  SharedRing() = default;
  ~SharedRing();
  SharedRing(SharedRing&& other) noexcept;
  SharedRing& operator=(SharedRing&& other) noexcept;
  SharedRing(const SharedRing&) = delete;
  SharedRing& operator=(const SharedRing&) = delete;

  // A control page and `data_size` bytes (a power of two, at least one
  // page), zeroed, mapped writable for the caller, sealed as above. `name`
  // shows in /proc/PID/fd and /proc/PID/maps. ENOMEM, EMFILE, ENOSYS
  // (no memfd_create) as the kernel says.
  static Result<SharedRing> create(const std::string& name, size_t data_size);

  // The whole mapping, control page first: what a RingWriter writes into.
  std::span<uint8_t> memory() const { return {memory_, bytes_}; }
  size_t data_offset() const { return data_offset_; }
  size_t data_size() const { return bytes_ - data_offset_; }
  // What a reader maps: the control page and the data.
  size_t mmap_bytes() const { return bytes_; }

  // A new descriptor for a reader: it maps it PROT_READ, MAP_SHARED.
  Result<Fd> reader_fd() const;

 private:
  Fd fd_;
  uint8_t* memory_ = nullptr;
  size_t bytes_ = 0;
  size_t data_offset_ = 0;
  bool sealed_for_writes_ = false;  // F_SEAL_FUTURE_WRITE took
};

// A pipe nobody writes to. Its reader ends, handed out with a shared ring,
// poll(2) nothing while the HangupPipe lives and POLLHUP once it is
// destroyed, or its holder exits however it does: what a perf event's fd
// says when its event is gone, for a ring no kernel event stands behind.
class HangupPipe {
 public:
  HangupPipe() = default;
  // EMFILE, ENFILE as the kernel says.
  static Result<HangupPipe> create();
  // A new reader end: POLLHUP once this pipe is gone.
  Result<Fd> reader_fd() const;
  // False for a default-made or moved-from pipe: it hands out nothing.
  bool valid() const { return read_.valid(); }

 private:
  Fd read_;
  Fd write_;
};

}  // namespace pp::sys

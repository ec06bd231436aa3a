// Where perf.data goes: a file (positioned writes, space reservation), or a
// pipe or any stream fd (appends only). Tests write to memory instead
// (report/testing/memory_output.h).
//
// Every write takes a list of buffers and is done with as few system calls
// as the kernel allows (pwritev / writev, retried on short writes and
// EINTR). A failed write reports how many bytes reached the output before
// the error, so the writer can restore a consistent file. Every error an
// Output returns is of kind output (base/result.h): the output failed.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/result.h"
#include "report/bytes.h"

namespace pp::report {

class Output {
 public:
  virtual ~Output() = default;

  // Names the output in messages: the path, or "standard output".
  virtual const std::string& name() const = 0;

  // Whether write_at/reserve/truncate work (files), or only append (pipes).
  virtual bool seekable() const = 0;

  // Writes every byte of `parts` starting at `offset`. On error, `*written`
  // (when not null) says how many bytes were written first.
  virtual Status write_at(uint64_t offset, std::span<const iovec> parts, uint64_t* written) = 0;

  // Appends every byte of `parts`.
  virtual Status append(std::span<const iovec> parts) = 0;

  // Makes sure that writes to [offset, offset + length) cannot fail for lack
  // of space, without changing the file size (fallocate KEEP_SIZE).
  // ENOSPC when the space is not there; EOPNOTSUPP when the file system
  // cannot reserve.
  virtual Status reserve(uint64_t offset, uint64_t length) = 0;

  virtual Status truncate(uint64_t size) = 0;

  // System calls that wrote data (for the writer's statistics).
  uint64_t write_calls() const { return write_calls_; }

 protected:
  uint64_t write_calls_ = 0;
};

// Creates `path` for writing (mode 0600, truncated). An existing non-empty
// regular file is first renamed to "<path>.old", replacing any old one, as
// perf record does. A directory at `path` is refused. A FIFO or a device
// (/dev/stdout) gives a stream output, which the writer writes in pipe mode.
Result<std::unique_ptr<Output>> create_file_output(const std::string& path);

// Appends to `fd` (a pipe, a terminal, a socket); the fd is not closed.
std::unique_ptr<Output> stream_output(int fd, std::string name);

// The bytes `parts` hold together.
uint64_t total_size(std::span<const iovec> parts);

}  // namespace pp::report

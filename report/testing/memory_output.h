// An Output in memory, for the writer's and reader's tests: a simulated disk
// size lets a full disk be tested without one. Test-only: the program never
// links report/testing/.
#pragma once

#include <cstdint>
#include <string>

#include "report/bytes.h"
#include "report/output.h"

namespace pp::report::testing {

// A growable byte array standing in for a file. `capacity` simulates the
// free space of a disk: writes and reservations past it fail with ENOSPC
// (writes first fill what fits, as a real file system does).
// `can_reserve` false answers reserve() with EOPNOTSUPP.
class MemoryOutput : public Output {
 public:
  explicit MemoryOutput(uint64_t capacity = UINT64_MAX, bool can_reserve = true);

  const std::string& name() const override { return name_; }
  bool seekable() const override { return true; }
  Status write_at(uint64_t offset, std::span<const iovec> parts, uint64_t* written) override;
  Status append(std::span<const iovec> parts) override;
  Status reserve(uint64_t offset, uint64_t length) override;
  Status truncate(uint64_t size) override;

  const Bytes& bytes() const { return bytes_; }
  void set_capacity(uint64_t capacity) { capacity_ = capacity; }

 private:
  // Space in use: the file, or the reservation past its end.
  uint64_t allocated() const;

  std::string name_ = "memory";
  Bytes bytes_;
  uint64_t capacity_;
  uint64_t reserved_end_ = 0;
  bool can_reserve_;
};

}  // namespace pp::report::testing

#include "report/testing/memory_output.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pp::report::testing {

MemoryOutput::MemoryOutput(uint64_t capacity, bool can_reserve)
    : capacity_(capacity), can_reserve_(can_reserve) {}

uint64_t MemoryOutput::allocated() const {
  return std::max<uint64_t>(bytes_.size(), reserved_end_);
}

Status MemoryOutput::write_at(uint64_t offset, std::span<const iovec> parts, uint64_t* written) {
  write_calls_++;
  // Bytes inside the file or its reservation need no new space.
  const uint64_t limit = std::max(allocated(), capacity_);
  uint64_t done = 0;
  for (const iovec& part : parts) {
    uint64_t at = offset + done;
    uint64_t fits = at < limit ? std::min<uint64_t>(part.iov_len, limit - at) : 0;
    if (at + fits > bytes_.size())
      bytes_.resize(at + fits, 0);
    if (fits)
      std::memcpy(bytes_.data() + at, part.iov_base, fits);
    done += fits;
    if (fits < part.iov_len) {
      if (written)
        *written = done;
      return errorf(ErrorKind::kOutput, ENOSPC,
                    "no space left writing %s (%llu of %llu bytes made it)", name_.c_str(),
                    static_cast<unsigned long long>(done),
                    static_cast<unsigned long long>(total_size(parts)));
    }
  }
  if (written)
    *written = done;
  return ok_status();
}

Status MemoryOutput::append(std::span<const iovec> parts) {
  return write_at(bytes_.size(), parts, nullptr);
}

Status MemoryOutput::reserve(uint64_t offset, uint64_t length) {
  if (!can_reserve_)
    return errorf(ErrorKind::kOutput, EOPNOTSUPP, "reserving space in %s: not supported",
                  name_.c_str());
  uint64_t end = offset + length;
  if (end > allocated() && end > capacity_)
    return errorf(ErrorKind::kOutput, ENOSPC, "reserving space in %s: no space left on device",
                  name_.c_str());
  reserved_end_ = std::max(reserved_end_, end);
  return ok_status();
}

Status MemoryOutput::truncate(uint64_t size) {
  bytes_.resize(size, 0);
  reserved_end_ = std::min(reserved_end_, size);
  return ok_status();
}

}  // namespace pp::report::testing

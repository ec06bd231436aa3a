#include "sys/ring_writer.h"

#include <algorithm>
#include <cstring>

namespace pp::sys {

RingWriter::RingWriter(std::span<uint8_t> mapping, size_t data_offset, size_t data_size,
                       RingLayout layout, bool overwrite)
    : page_(reinterpret_cast<perf_event_mmap_page*>(mapping.data())),
      data_(mapping.data() + data_offset),
      data_size_(data_size),
      layout_(layout),
      overwrite_(overwrite) {
  page_->data_offset = data_offset;
  page_->data_size = data_size;
  page_->data_tail = 0;
  store_data_head(page_, 0);
}

bool RingWriter::has_room(size_t size) const {
  if (overwrite_)
    return true;
  // The reader's data_tail, read as the kernel does before reserving.
  uint64_t tail = __atomic_load_n(&page_->data_tail, __ATOMIC_ACQUIRE);
  uint64_t used = layout_ == RingLayout::kForward ? reserved_ - tail : tail - reserved_;
  return used + size <= data_size_;
}

void RingWriter::copy_in(uint64_t position, std::span<const uint8_t> bytes) {
  size_t offset = size_t(position & (data_size_ - 1));
  size_t first = std::min(bytes.size(), data_size_ - offset);
  std::memcpy(data_ + offset, bytes.data(), first);
  std::memcpy(data_, bytes.data() + first, bytes.size() - first);
}

bool RingWriter::stage(std::span<const uint8_t> record) {
  if (record.empty() || record.size() > data_size_ || !has_room(record.size())) {
    ++lost_;
    return false;
  }
  if (layout_ == RingLayout::kForward) {
    copy_in(reserved_, record);
    reserved_ += record.size();
  } else {
    reserved_ -= record.size();
    copy_in(reserved_, record);
  }
  written_ += record.size();
  return true;
}

void RingWriter::publish() {
  published_ = reserved_;
  store_data_head(page_, published_);
}

bool RingWriter::write(std::span<const uint8_t> record) {
  if (!stage(record))
    return false;
  publish();
  return true;
}

}  // namespace pp::sys

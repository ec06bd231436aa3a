#include "ftrace/testing/page_builder.h"

#include <bit>
#include <cstring>

namespace pp::ftrace::testing {

PageBuilder::PageBuilder(const RingLayout& layout, uint64_t timestamp)
    : layout_(layout), timestamp_(timestamp) {}

void PageBuilder::u32(uint32_t value) {
  uint8_t b[4];
  std::memcpy(b, &value, 4);
  data_.insert(data_.end(), b, b + 4);
}

void PageBuilder::header(uint32_t type_len, uint32_t delta) {
  delta &= (1U << layout_.time_delta_bits) - 1;
  if constexpr (std::endian::native == std::endian::little)
    u32(type_len | (delta << layout_.type_len_bits));
  else
    u32((type_len << layout_.time_delta_bits) | delta);
}

void PageBuilder::record(uint32_t delta, const std::vector<uint8_t>& payload) {
  header(uint32_t(payload.size() / 4), delta);
  data_.insert(data_.end(), payload.begin(), payload.end());
}

void PageBuilder::big_record(uint32_t delta, std::vector<uint8_t> payload, uint16_t event_id) {
  payload.resize((payload.size() + 3) / 4 * 4);
  std::memcpy(payload.data(), &event_id, 2);
  header(0, delta);
  u32(uint32_t(payload.size()) + 4);
  data_.insert(data_.end(), payload.begin(), payload.end());
}

void PageBuilder::padding(uint32_t delta, uint32_t size) {
  header(layout_.padding_type, delta);
  u32(size);  // the bytes after the header, this word included
  data_.resize(data_.size() + size - 4);
}

void PageBuilder::end_padding() {
  header(layout_.padding_type, 0);
}

void PageBuilder::time_extend(uint64_t delta) {
  header(layout_.time_extend_type, uint32_t(delta));
  u32(uint32_t(delta >> layout_.time_delta_bits));
}

void PageBuilder::time_stamp(uint64_t absolute) {
  header(layout_.time_stamp_type, uint32_t(absolute));
  u32(uint32_t(absolute >> layout_.time_delta_bits));
}

void PageBuilder::raw_event(uint32_t type_len, uint32_t delta, uint32_t array) {
  header(type_len, delta);
  u32(array);
}

void PageBuilder::missed(std::optional<uint64_t> count) {
  flags_ |= 1U << 31;
  if (count) {
    flags_ |= 1U << 30;
    stored_count_ = count;
  }
}

const std::vector<uint8_t>& PageBuilder::bytes() {
  page_.assign(layout_.page_size(), 0);
  std::memcpy(page_.data() + layout_.timestamp_offset, &timestamp_, 8);
  const uint32_t length = length_override_ ? *length_override_ : uint32_t(data_.size());
  // The kernel adds the int flag 1 << 31 to a long: the upper half of an
  // 8-byte commit is then all ones.
  uint64_t commit = length | flags_;
  if ((flags_ & (1U << 31)) && layout_.commit_size == 8)
    commit |= uint64_t(0xffffffff) << 32;
  std::memcpy(page_.data() + layout_.commit_offset, &commit, layout_.commit_size);
  if (!data_.empty())
    std::memcpy(page_.data() + layout_.data_offset, data_.data(),
                std::min<size_t>(data_.size(), layout_.data_size));
  if (stored_count_ && data_.size() + layout_.commit_size <= layout_.data_size)
    std::memcpy(page_.data() + layout_.data_offset + data_.size(), &*stored_count_,
                layout_.commit_size);
  return page_;
}

std::vector<uint8_t> sched_switch_6_18(int32_t pid) {
  std::vector<uint8_t> r(64, 0);
  const uint16_t id = 372;
  std::memcpy(r.data(), &id, 2);
  std::memcpy(r.data() + 4, &pid, 4);
  return r;
}

}  // namespace pp::ftrace::testing

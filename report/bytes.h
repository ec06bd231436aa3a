// Byte-level encoding and decoding for perf.data, in the host's byte order
// (perf.data is written in the recording host's order; its magic tells the
// reader which one).
//
// ByteWriter appends to a byte vector; ByteReader reads a bounded span and
// never reads past its end: every read reports a short input as an error,
// so a malformed file can never make the reader touch memory outside it.
//
// perf's "string" in feature sections is a u32 length (the string, its NUL
// and zero padding up to a multiple of 64) followed by those bytes:
//
//   40 00 00 00  'v' 'm' 00 00 ... 00     "vm": length 64, then 64 bytes
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace pp::report {

using Bytes = std::vector<uint8_t>;

// perf aligns feature strings (and synthesised file names) to this.
inline constexpr size_t kNameAlign = 64;

inline constexpr uint64_t align_up(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// A tracepoint field's value: an unsigned number of `size` bytes at `p`,
// in the host's order; 0 for a size other than 1, 2, 4 or 8, as
// libtraceevent's tep_read_number() reads it. `p` must hold `size` bytes.
inline uint64_t read_unsigned(const uint8_t* p, uint32_t size) {
  switch (size) {
    case 1:
      return *p;
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
    default:
      return 0;
  }
}

class ByteWriter {
 public:
  explicit ByteWriter(Bytes* out) : out_(out) {}

  size_t size() const { return out_->size(); }

  void u8(uint8_t v) { out_->push_back(v); }
  void u16(uint16_t v) { raw(&v, sizeof(v)); }
  void u32(uint32_t v) { raw(&v, sizeof(v)); }
  void u64(uint64_t v) { raw(&v, sizeof(v)); }
  void bytes(std::span<const uint8_t> data) { raw(data.data(), data.size()); }
  void text(std::string_view s) { raw(s.data(), s.size()); }
  void zeros(size_t n) { out_->insert(out_->end(), n, 0); }

  // Zero bytes up to the next multiple of `alignment` of the total size.
  void pad_to(size_t alignment) { zeros(align_up(out_->size(), alignment) - out_->size()); }

  // A NUL-terminated string, no padding (tracing data's system names).
  void c_string(std::string_view s) {
    text(s);
    u8(0);
  }

  // perf's feature string: u32 padded length, then the string, its NUL and
  // zeros up to a multiple of kNameAlign.
  void perf_string(std::string_view s) {
    uint32_t len = uint32_t(align_up(s.size() + 1, kNameAlign));
    u32(len);
    text(s);
    zeros(len - s.size());
  }

  // Overwrites a u16/u32/u64 already written at `offset` (sizes patched in
  // after the payload is known).
  void patch_u16(size_t offset, uint16_t v) { std::memcpy(out_->data() + offset, &v, sizeof(v)); }
  void patch_u32(size_t offset, uint32_t v) { std::memcpy(out_->data() + offset, &v, sizeof(v)); }
  void patch_u64(size_t offset, uint64_t v) { std::memcpy(out_->data() + offset, &v, sizeof(v)); }

 private:
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_->insert(out_->end(), b, b + n);
  }

  Bytes* out_;
};

// The size perf_string() writes for `s`.
inline size_t perf_string_size(std::string_view s) {
  return sizeof(uint32_t) + align_up(s.size() + 1, kNameAlign);
}

class ByteReader {
 public:
  // `what` names the input in error messages ("HEADER_CMDLINE").
  ByteReader(std::span<const uint8_t> data, std::string what)
      : data_(data), what_(std::move(what)) {}

  size_t offset() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  bool at_end() const { return pos_ == data_.size(); }

  Result<uint8_t> u8() { return fixed<uint8_t>("u8"); }
  Result<uint16_t> u16() { return fixed<uint16_t>("u16"); }
  Result<uint32_t> u32() { return fixed<uint32_t>("u32"); }
  Result<uint64_t> u64() { return fixed<uint64_t>("u64"); }

  Result<std::span<const uint8_t>> bytes(uint64_t n) {
    if (n > remaining())
      return short_input(n, "bytes");
    auto out = data_.subspan(pos_, size_t(n));
    pos_ += size_t(n);
    return out;
  }

  Status skip(uint64_t n) {
    if (n > remaining())
      return short_input(n, "bytes");
    pos_ += size_t(n);
    return ok_status();
  }

  // A NUL-terminated string; the NUL is consumed, not returned.
  Result<std::string> c_string() {
    const void* nul = std::memchr(data_.data() + pos_, 0, remaining());
    if (!nul)
      return errorf(EINVAL, "%s: unterminated string at offset %zu", what_.c_str(), pos_);
    size_t len = size_t(static_cast<const uint8_t*>(nul) - (data_.data() + pos_));
    std::string s(reinterpret_cast<const char*>(data_.data() + pos_), len);
    pos_ += len + 1;
    return s;
  }

  // perf's feature string (see perf_string above); the text stops at the
  // first NUL inside the padded length.
  Result<std::string> perf_string() {
    PP_ASSIGN_OR_RETURN(uint32_t len, u32());
    PP_ASSIGN_OR_RETURN(auto raw, bytes(len));
    const void* nul = std::memchr(raw.data(), 0, raw.size());
    size_t n = nul ? size_t(static_cast<const uint8_t*>(nul) - raw.data()) : raw.size();
    return std::string(reinterpret_cast<const char*>(raw.data()), n);
  }

 private:
  template <typename T>
  Result<T> fixed(const char* type) {
    if (sizeof(T) > remaining())
      return short_input(sizeof(T), type);
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  Error short_input(uint64_t wanted, const char* type) const {
    return errorf(EINVAL, "%s is truncated: %llu %s wanted at offset %zu, %zu left", what_.c_str(),
                  static_cast<unsigned long long>(wanted), type, pos_, remaining());
  }

  std::span<const uint8_t> data_;
  std::string what_;
  size_t pos_ = 0;
};

}  // namespace pp::report

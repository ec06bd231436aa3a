#include "check/sample_size.h"

#include <algorithm>
#include <vector>

#include "base/strings.h"
#include "sys/perf_abi_sample.h"

namespace pp::check {

namespace {

constexpr uint64_t kUnknownRawBytes = 64;

}  // namespace

uint64_t estimated_sample_bytes(const sys::EventAttr& attr, uint64_t raw_bytes) {
  std::vector<uint8_t> payload(raw_bytes ? raw_bytes : kUnknownRawBytes, 0);
  std::vector<uint8_t> padded = sys::pad_raw(payload);
  sys::Sample sample;
  sample.raw = padded;
  std::vector<uint8_t> record;
  sys::encode_sample(attr.attr, sample, 0, record);
  return record.size();
}

uint64_t tracepoint_raw_bytes(std::string_view format) {
  uint64_t end = 0;
  for (std::string_view line : split(format, '\n')) {
    size_t off = line.find("offset:");
    size_t size = line.find("size:");
    if (off == std::string_view::npos || size == std::string_view::npos)
      continue;
    auto number = [&](size_t at) -> uint64_t {
      std::string_view rest = line.substr(at);
      rest = rest.substr(0, rest.find(';'));
      auto v = parse_u64(trim(rest), "a format field");
      return v.ok() ? *v : 0;
    };
    end = std::max(end, number(off + 7) + number(size + 5));
  }
  return end;
}

}  // namespace pp::check

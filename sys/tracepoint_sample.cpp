#include "sys/tracepoint_sample.h"

#include <cstring>

#include "sys/perf_abi_sample.h"

namespace pp::sys {

EventAttr tracepoint_sample_attr(uint64_t tracepoint_id) {
  EventAttr a;
  a.attr.type = PERF_TYPE_TRACEPOINT;
  a.attr.size = kAttrSizeVer7;
  a.attr.config = tracepoint_id;
  a.attr.sample_period = 1;
  a.attr.sample_type = kTracepointSampleType;
  a.attr.sample_id_all = 1;
  return a;
}

bool append_tracepoint_sample(const TracepointSample& sample, std::vector<uint8_t>& out) {
  // u32 size + record, then zeros to the next u64 (perf_prepare_sample()
  // in kernel/events/core.c pads RAW so).
  const size_t padded = (sizeof(uint32_t) + sample.record.size() + 7) & ~size_t(7);
  const size_t raw_size = padded - sizeof(uint32_t);
  static const perf_event_attr attr = tracepoint_sample_attr(0).attr;
  Sample s;
  s.identifier = sample.identifier;
  s.pid = s.tid = sample.pid;
  s.time = sample.time;
  s.cpu = sample.cpu;
  s.period = 1;
  // RAW is the last field of kTracepointSampleType (the table's order):
  // encoded empty, its u32 size ends `out`; the record and its padding
  // follow it, and the size and the header are set to match.
  const size_t start = out.size();
  encode_sample(attr, s, PERF_RECORD_MISC_KERNEL, out);
  const size_t total = out.size() - start + raw_size;
  if (total > UINT16_MAX) {
    out.resize(start);
    return false;
  }
  const auto size32 = uint32_t(raw_size);
  std::memcpy(out.data() + out.size() - sizeof(size32), &size32, sizeof(size32));
  out.insert(out.end(), sample.record.begin(), sample.record.end());
  out.resize(start + total, 0);
  const auto size16 = uint16_t(total);
  std::memcpy(out.data() + start + offsetof(perf_event_header, size), &size16, sizeof(size16));
  return true;
}

}  // namespace pp::sys

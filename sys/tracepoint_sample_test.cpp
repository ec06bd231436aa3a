#include "sys/tracepoint_sample.h"

#include <gtest/gtest.h>

#include "sys/perf_abi_sample.h"

namespace pp::sys {
namespace {

// The sample is what encode_sample() writes for the same fields with the
// record through pad_raw(): the one encoder's layout, for every padding.
TEST(TracepointSample, IsTheEncodersSampleWithTheRecordPadded) {
  const perf_event_attr attr = tracepoint_sample_attr(305).attr;
  EXPECT_EQ(attr.type, uint32_t(PERF_TYPE_TRACEPOINT));
  EXPECT_EQ(attr.config, 305u);
  EXPECT_EQ(attr.sample_type, kTracepointSampleType);
  EXPECT_EQ(attr.sample_type & PERF_SAMPLE_IP, 0u);
  for (size_t n : {0, 1, 4, 5, 12, 16, 20, 4080}) {
    SCOPED_TRACE(n);
    std::vector<uint8_t> record(n);
    for (size_t i = 0; i < n; i++)
      record[i] = uint8_t(i + 1);
    std::vector<uint8_t> out = {0xee};  // appended after what is there
    ASSERT_TRUE(append_tracepoint_sample(
        {.identifier = 7, .pid = 42, .time = 1000, .cpu = 1, .record = record}, out));
    Sample s;
    s.identifier = 7;
    s.pid = s.tid = 42;
    s.time = 1000;
    s.cpu = 1;
    s.period = 1;
    std::vector<uint8_t> raw = pad_raw(record);
    s.raw = raw;
    std::vector<uint8_t> want = {0xee};
    encode_sample(attr, s, PERF_RECORD_MISC_KERNEL, want);
    EXPECT_EQ(out, want);
    EXPECT_EQ((out.size() - 1) % 8, 0u);
  }
}

TEST(TracepointSample, ARecordTooLargeForAPerfRecordIsRefused) {
  std::vector<uint8_t> record(UINT16_MAX);
  std::vector<uint8_t> out = {1, 2, 3};
  EXPECT_FALSE(append_tracepoint_sample({.record = record}, out));
  EXPECT_EQ(out, (std::vector<uint8_t>{1, 2, 3}));
}

}  // namespace
}  // namespace pp::sys

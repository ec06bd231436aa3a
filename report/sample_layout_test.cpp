// The sample_id trailer and sample decoding against hand-built records.
#include "report/sample_layout.h"

#include <gtest/gtest.h>

namespace pp::report {
namespace {

constexpr uint64_t kTracepointSampleType = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                           PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW |
                                           PERF_SAMPLE_IDENTIFIER;

TEST(IdTrailer, SizeCountsOnlyTrailerFields) {
  EXPECT_EQ(id_trailer_size(0), 0u);
  EXPECT_EQ(id_trailer_size(PERF_SAMPLE_IP | PERF_SAMPLE_RAW | PERF_SAMPLE_PERIOD), 0u);
  // TID, TIME, CPU, IDENTIFIER: 8 each.
  EXPECT_EQ(id_trailer_size(kTracepointSampleType), 32u);
  EXPECT_EQ(id_trailer_size(PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID), 16u);
}

TEST(IdTrailer, FieldsInTheKernelsOrder) {
  SampleId sid;
  sid.pid = 10;
  sid.tid = 11;
  sid.time = 0x1122334455667788ULL;
  sid.id = 42;
  sid.stream_id = 43;
  sid.cpu = 3;
  Bytes out;
  ByteWriter w(&out);
  uint64_t type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
                  PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
  write_id_trailer(type, sid, w);
  Bytes expected = {10,   0,    0,    0,    11,   0,    0,    0,     // pid, tid
                    0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,  // time
                    42,   0,    0,    0,    0,    0,    0,    0,     // id
                    43,   0,    0,    0,    0,    0,    0,    0,     // stream_id
                    3,    0,    0,    0,    0,    0,    0,    0,     // cpu, res
                    42,   0,    0,    0,    0,    0,    0,    0};    // identifier
  EXPECT_EQ(out, expected);

  Bytes record(8, 0);  // a header, then the trailer
  record.insert(record.end(), out.begin(), out.end());
  auto back = read_id_trailer(type, record);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->pid, 10u);
  EXPECT_EQ(back->tid, 11u);
  EXPECT_EQ(back->time, sid.time);
  EXPECT_EQ(back->id, 42u);
  EXPECT_EQ(back->stream_id, 43u);
  EXPECT_EQ(back->cpu, 3u);
}

TEST(IdTrailer, RecordTooShortIsAnError) {
  Bytes record(16, 0);
  EXPECT_FALSE(read_id_trailer(kTracepointSampleType, record).ok());
}

TEST(SampleTime, OffsetFollowsIdentifierIpAndTid) {
  EXPECT_EQ(sample_time_offset(kTracepointSampleType), std::optional<size_t>(32));
  EXPECT_EQ(sample_time_offset(PERF_SAMPLE_TIME), std::optional<size_t>(8));
  EXPECT_EQ(sample_time_offset(PERF_SAMPLE_IP | PERF_SAMPLE_RAW), std::nullopt);
}

Bytes tracepoint_sample(uint32_t raw_size) {
  Bytes out;
  ByteWriter w(&out);
  size_t size = 8 + 6 * 8 + align_up(4 + raw_size, 8);
  w.u32(PERF_RECORD_SAMPLE);
  w.u16(PERF_RECORD_MISC_KERNEL);
  w.u16(uint16_t(size));
  w.u64(77);                     // identifier
  w.u64(0xffffffff81000010ULL);  // ip
  w.u32(100);                    // pid
  w.u32(101);                    // tid
  w.u64(5000);                   // time
  w.u32(1);                      // cpu
  w.u32(0);
  w.u64(1);  // period
  w.u32(raw_size);
  for (uint32_t i = 0; i < raw_size; i++)
    w.u8(uint8_t(i));
  w.pad_to(8);
  return out;
}

TEST(ParseSample, TracepointSample) {
  perf_event_attr attr = {};
  attr.sample_type = kTracepointSampleType;
  Bytes record = tracepoint_sample(20);
  auto s = parse_sample(attr, record);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->id, 77u);
  EXPECT_EQ(s->ip, 0xffffffff81000010ULL);
  EXPECT_EQ(s->pid, 100u);
  EXPECT_EQ(s->tid, 101u);
  EXPECT_EQ(s->time, 5000u);
  EXPECT_EQ(s->cpu, 1u);
  EXPECT_EQ(s->period, 1u);
  ASSERT_EQ(s->raw.size(), 20u);
  EXPECT_EQ(s->raw[19], 19);
}

TEST(ParseSample, CallchainAndRead) {
  perf_event_attr attr = {};
  attr.sample_type = PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN;
  attr.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
  Bytes record;
  ByteWriter w(&record);
  w.u32(PERF_RECORD_SAMPLE);
  w.u16(0);
  w.u16(8 + (8 + 2 * 16) + (8 + 3 * 8));
  w.u64(2);  // group of two: value, id each
  w.u64(10);
  w.u64(1);
  w.u64(20);
  w.u64(2);
  w.u64(3);  // callchain depth
  w.u64(0xa);
  w.u64(0xb);
  w.u64(0xc);
  auto s = parse_sample(attr, record);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->read.size(), 40u);
  ASSERT_EQ(s->callchain_depth(), 3u);
  EXPECT_EQ(s->callchain_ip(2), 0xcu);
}

TEST(ParseSample, EveryTruncationIsRejected) {
  perf_event_attr attr = {};
  attr.sample_type = kTracepointSampleType;
  Bytes record = tracepoint_sample(20);
  // The raw payload ends 4 bytes before the record (padding); cut inside it.
  for (size_t n = 0; n < record.size() - 4; n++)
    EXPECT_FALSE(parse_sample(attr, {record.data(), n}).ok()) << n;
}

TEST(ParseSample, HugeCallchainCountIsRejected) {
  perf_event_attr attr = {};
  attr.sample_type = PERF_SAMPLE_CALLCHAIN;
  Bytes record;
  ByteWriter w(&record);
  w.u32(PERF_RECORD_SAMPLE);
  w.u16(0);
  w.u16(16);
  w.u64(~0ULL);
  EXPECT_FALSE(parse_sample(attr, record).ok());
}

}  // namespace
}  // namespace pp::report

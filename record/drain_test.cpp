// The drain pass over rings built in memory by the kernel's side
// (sys/ring_writer.h): what reaches the sink, in how many appends,
// when a round ends, and what overwritten records become.
#include "record/drain.h"

#include <linux/perf_event.h>

#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "sys/ring_writer.h"

namespace pp::record {
namespace {

constexpr size_t kControl = 4096;

std::vector<uint8_t> make_record(uint8_t fill, size_t size) {
  std::vector<uint8_t> out(size, fill);
  perf_event_header header{PERF_RECORD_SAMPLE, 0, uint16_t(size)};
  std::memcpy(out.data(), &header, sizeof(header));
  return out;
}

// A ring in memory and a stream reading it, as attach_events() would make.
class MemoryStream {
 public:
  MemoryStream(size_t data_size, sys::RingStart start)
      : memory_((kControl + data_size) / sizeof(uint64_t)),
        writer_({reinterpret_cast<uint8_t*>(memory_.data()), kControl + data_size}, kControl,
                data_size, sys::RingLayout::kForward, true),
        start_(start) {}

  Stream stream(size_t event, int cpu, uint64_t id) const {
    Stream s;
    s.event = event;
    s.cpu = cpu;
    s.id = id;
    auto reader = sys::RingReader::create(
        {reinterpret_cast<const uint8_t*>(memory_.data()), memory_.size() * sizeof(uint64_t)},
        {.layout = sys::RingLayout::kForward, .start = start_, .settle_us = 0});
    EXPECT_TRUE(reader.ok()) << reader.error().message();
    s.reader.emplace(std::move(reader).value());
    return s;
  }

  void write(uint8_t fill, size_t size) { EXPECT_TRUE(writer_.write(make_record(fill, size))); }

 private:
  std::vector<uint64_t> memory_;
  sys::RingWriter writer_;
  sys::RingStart start_;
};

// Remembers every call.
class LogSink final : public RecordSink {
 public:
  Status lost(const Stream& stream, uint64_t records) override {
    calls.push_back("lost id " + std::to_string(stream.id) + " cpu " + std::to_string(stream.cpu) +
                    ": " + std::to_string(records));
    return ok_status();
  }
  Status append(const Stream&, std::span<const uint8_t> records) override {
    calls.push_back("append " + std::to_string(records.size()) + " bytes");
    bytes.insert(bytes.end(), records.begin(), records.end());
    return ok_status();
  }
  Status end_round() override {
    calls.push_back("end round");
    return ok_status();
  }

  std::vector<std::string> calls;
  std::vector<uint8_t> bytes;
};

TEST(Drain, ASnapshotHandsOnWhatEachBufferHoldsThenEndsTheRoundOnce) {
  MemoryStream cpu0(4096, sys::RingStart::kOldest), cpu1(4096, sys::RingStart::kOldest);
  cpu0.write(0xa0, 32);
  cpu0.write(0xa1, 48);
  cpu1.write(0xb0, 24);
  std::vector<Stream> streams;
  streams.push_back(cpu0.stream(0, 0, 10));
  streams.push_back(cpu1.stream(0, 1, 11));
  LogSink sink;
  DrainTotals totals;

  auto any = drain_all(streams, sink, totals);
  ASSERT_TRUE(any.ok()) << any.error().message();
  EXPECT_TRUE(*any);
  // Records back to back in one buffer go on as one append.
  EXPECT_EQ(sink.calls,
            (std::vector<std::string>{"append 80 bytes", "append 24 bytes", "end round"}));
  ASSERT_EQ(sink.bytes.size(), 104u);
  EXPECT_EQ(sink.bytes[8], 0xa0);
  EXPECT_EQ(sink.bytes[32 + 8], 0xa1);
  EXPECT_EQ(sink.bytes[80 + 8], 0xb0);

  // Nothing new: nothing handed on, no round.
  sink.calls.clear();
  any = drain_all(streams, sink, totals);
  ASSERT_TRUE(any.ok());
  EXPECT_FALSE(*any);
  EXPECT_TRUE(sink.calls.empty());

  // Only what is new since the last pass.
  cpu1.write(0xb1, 16);
  any = drain_all(streams, sink, totals);
  ASSERT_TRUE(any.ok());
  EXPECT_TRUE(*any);
  EXPECT_EQ(sink.calls, (std::vector<std::string>{"append 16 bytes", "end round"}));
  EXPECT_EQ(totals.overwritten, 0u);
}

TEST(Drain, RecordsOverwrittenBeforeTheyWereReadAreCountedAndReportedPerBuffer) {
  MemoryStream ring(4096, sys::RingStart::kNow);
  std::vector<Stream> streams;
  streams.push_back(ring.stream(0, 3, 42));
  LogSink sink;
  DrainTotals totals;
  ASSERT_TRUE(drain_all(streams, sink, totals).ok());  // the reader starts here
  for (int i = 0; i < 300; i++)                        // 19,200 bytes through a 4096-byte ring
    ring.write(uint8_t(i), 64);
  auto any = drain_all(streams, sink, totals);
  ASSERT_TRUE(any.ok()) << any.error().message();
  EXPECT_TRUE(*any);
  ASSERT_FALSE(sink.calls.empty());
  EXPECT_EQ(sink.calls.front().rfind("lost id 42 cpu 3: ", 0), 0u) << sink.calls.front();
  EXPECT_GT(totals.overwritten, 0u);
  EXPECT_EQ(totals.overwritten_bytes, totals.overwritten * 64);
  EXPECT_EQ(sink.calls.back(), "end round");
  // What it did read is whole records only.
  EXPECT_EQ(sink.bytes.size() % 64, 0u);
  EXPECT_EQ(totals.overwritten + sink.bytes.size() / 64, 300u);
}

}  // namespace
}  // namespace pp::record

// The record walk on whole, truncated, zero-size and oversized records.
#include "sys/perf_abi_records.h"

#include <gtest/gtest.h>
#include <vector>

namespace pp::sys {
namespace {

using Bytes = std::vector<uint8_t>;

void add_record(Bytes& out, uint32_t type, uint16_t size) {
  perf_event_header h{type, 0, size};
  const auto* b = reinterpret_cast<const uint8_t*>(&h);
  out.insert(out.end(), b, b + sizeof(h));
  if (size > sizeof(h))
    out.insert(out.end(), size - sizeof(h), uint8_t(type));
}

struct Seen {
  std::vector<uint32_t> types;
  std::vector<size_t> offsets;
};

RecordWalk walk(const Bytes& bytes, Seen& seen) {
  return walk_records(bytes, [&](const perf_event_header& h, size_t offset) {
    seen.types.push_back(h.type);
    seen.offsets.push_back(offset);
    return true;
  });
}

TEST(RecordWalk, VisitsWholeRecordsInOrder) {
  Bytes b;
  add_record(b, PERF_RECORD_SAMPLE, 16);
  add_record(b, PERF_RECORD_LOST, 24);
  add_record(b, PERF_RECORD_EXIT, 8);  // a bare header
  Seen seen;
  RecordWalk end = walk(b, seen);
  EXPECT_EQ(end.problem, RecordProblem::kNone);
  EXPECT_EQ(end.offset, b.size());
  EXPECT_EQ(end.records, 3u);
  EXPECT_EQ(seen.types,
            (std::vector<uint32_t>{uint32_t(PERF_RECORD_SAMPLE), uint32_t(PERF_RECORD_LOST),
                                   uint32_t(PERF_RECORD_EXIT)}));
  EXPECT_EQ(seen.offsets, (std::vector<size_t>{0, 16, 40}));
}

TEST(RecordWalk, EmptyRangeIsWhole) {
  Seen seen;
  RecordWalk end = walk({}, seen);
  EXPECT_EQ(end.problem, RecordProblem::kNone);
  EXPECT_EQ(end.records, 0u);
}

TEST(RecordWalk, TruncatedTailStopsAtItsStart) {
  Bytes b;
  add_record(b, PERF_RECORD_SAMPLE, 16);
  add_record(b, PERF_RECORD_LOST, 24);
  for (size_t cut = 17; cut < b.size(); cut++) {
    Seen seen;
    RecordWalk end = walk(Bytes(b.begin(), b.begin() + long(cut)), seen);
    EXPECT_EQ(end.offset, 16u) << cut;
    EXPECT_EQ(end.records, 1u) << cut;
    EXPECT_EQ(end.problem, cut - 16 < sizeof(perf_event_header) ? RecordProblem::kCutOff
                                                                : RecordProblem::kTooLarge)
        << cut;
    EXPECT_EQ(seen.types.size(), 1u) << "the cut record is never visited";
  }
}

TEST(RecordWalk, ZeroAndUndersizedRecordsStopTheWalk) {
  for (uint16_t size : {0, 1, 7}) {
    Bytes b;
    add_record(b, PERF_RECORD_SAMPLE, 16);
    add_record(b, PERF_RECORD_MMAP, size);
    b.resize(64, 0);
    Seen seen;
    RecordWalk end = walk(b, seen);
    EXPECT_EQ(end.problem, RecordProblem::kTooSmall) << size;
    EXPECT_EQ(end.offset, 16u);
    EXPECT_EQ(end.header.size, size);
    EXPECT_EQ(end.header.type, uint32_t(PERF_RECORD_MMAP));
  }
}

TEST(RecordWalk, OversizedRecordIsNotVisited) {
  Bytes b;
  add_record(b, PERF_RECORD_SAMPLE, 16);
  add_record(b, PERF_RECORD_SAMPLE, 16);
  b[16 + 6] = 0xff;  // size 0x00ff... past the end
  Seen seen;
  RecordWalk end = walk(b, seen);
  EXPECT_EQ(end.problem, RecordProblem::kTooLarge);
  EXPECT_EQ(end.offset, 16u);
  EXPECT_EQ(seen.types.size(), 1u);
}

TEST(RecordWalk, TheVisitorCanStopBeforeARecord) {
  Bytes b;
  for (int i = 0; i < 4; i++)
    add_record(b, PERF_RECORD_SAMPLE, 16);
  RecordWalk end =
      walk_records(b, [](const perf_event_header&, size_t offset) { return offset < 32; });
  EXPECT_EQ(end.problem, RecordProblem::kNone);
  EXPECT_EQ(end.offset, 32u);
  EXPECT_EQ(end.records, 2u);
}

TEST(CheckRecord, SaysWhyARecordIsNotWhole) {
  Bytes b;
  add_record(b, PERF_RECORD_SAMPLE, 16);
  perf_event_header h{};
  EXPECT_EQ(check_record(b, h), RecordProblem::kNone);
  EXPECT_EQ(h.size, 16u);
  EXPECT_EQ(check_record(std::span<const uint8_t>(b).first(7), h), RecordProblem::kCutOff);
  EXPECT_EQ(check_record(std::span<const uint8_t>(b).first(15), h), RecordProblem::kTooLarge);
}

}  // namespace
}  // namespace pp::sys

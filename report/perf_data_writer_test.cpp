// The perf.data writer on memory outputs: the file and pipe layouts against
// bytes computed by hand, consistency after every flush, losses, a full
// disk with and without space reservation, and the checks on its events.
// The real perf reading these files is tests/kernel/report_perf_data_test.cpp.
#include "report/perf_data_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "report/perf_data_reader.h"
#include "report/synthesize.h"
#include "report/testing/memory_output.h"
#include "report/tracing_data.h"
#include "sys/fd.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::report {
namespace {

constexpr uint64_t kSampleType = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW |
                                 PERF_SAMPLE_IDENTIFIER;
constexpr uint64_t kMceId = 113;  // mce:mce_record in the Debian 6.1 snapshot
constexpr uint32_t kMceRawSize = 116;

std::string fixture_tracefs() {
  return pp::testing::fixtures_dir() + "/tracefs-debian-6.1";
}

HostInfo small_host() {
  HostInfo host;
  host.hostname = "h";
  host.os_release = "r";
  host.arch = "a";
  host.nr_cpus_available = 2;
  host.nr_cpus_online = 2;
  return host;
}

EventDesc mce_event(uint64_t sample_type = kSampleType) {
  EventDesc e;
  e.attr.attr.type = PERF_TYPE_TRACEPOINT;
  e.attr.attr.size = 128;
  e.attr.attr.config = kMceId;
  e.attr.attr.sample_period = 1;
  e.attr.attr.sample_type = sample_type;
  e.attr.attr.sample_id_all = 1;
  e.name = "mce:mce_record";
  e.ids = {1000, 1001};
  return e;
}

WriterConfig mce_config() {
  WriterConfig config;
  config.events.push_back(mce_event());
  config.host = small_host();
  config.cmdline = {"test"};
  config.tracefs_root = fixture_tracefs();
  config.side_band = SideBand::kNever;
  config.page_size = 4096;
  return config;
}

// A sample as the kernel writes it for kSampleType: 8 + 6*8 + 4 + 116 = 176.
Bytes mce_sample(uint64_t id, uint32_t pid, uint64_t time, uint32_t cpu) {
  Bytes out;
  ByteWriter w(&out);
  w.u32(PERF_RECORD_SAMPLE);
  w.u16(PERF_RECORD_MISC_KERNEL);
  w.u16(176);
  w.u64(id);
  w.u64(0xffffffff81000000ULL);
  w.u32(pid);
  w.u32(pid);
  w.u64(time);
  w.u32(cpu);
  w.u32(0);
  w.u64(1);
  w.u32(kMceRawSize);
  w.u16(uint16_t(kMceId));  // common_type
  w.zeros(kMceRawSize - 2);
  return out;
}

Bytes samples(size_t n, uint64_t first_time = 1000) {
  Bytes out;
  for (size_t i = 0; i < n; i++) {
    Bytes one = mce_sample(1000 + i % 2, 42, first_time + i, uint32_t(i % 2));
    out.insert(out.end(), one.begin(), one.end());
  }
  return out;
}

struct MemoryWriter {
  testing::MemoryOutput* output;
  std::unique_ptr<PerfDataWriter> writer;
};

MemoryWriter memory_writer(WriterConfig config, uint64_t capacity = UINT64_MAX,
                           bool can_reserve = true, bool pipe = false) {
  auto output = std::make_unique<testing::MemoryOutput>(capacity, can_reserve);
  testing::MemoryOutput* raw = output.get();
  auto writer = PerfDataWriter::create(std::move(output), std::move(config), pipe);
  EXPECT_TRUE(writer.ok()) << writer.error().message();
  return {raw, writer.ok() ? std::move(*writer) : nullptr};
}

Result<PerfDataReader> reread(const testing::MemoryOutput& output) {
  return PerfDataReader::parse(output.bytes(), "memory");
}

size_t count_type(const PerfDataReader& data, uint32_t type) {
  size_t n = 0;
  EXPECT_TRUE(data.for_each_record([&](const PerfDataRecord& r) {
                    n += r.type == type;
                    return ok_status();
                  })
                  .ok());
  return n;
}

uint64_t u64_at(const Bytes& b, size_t offset) {
  uint64_t v;
  std::memcpy(&v, b.data() + offset, 8);
  return v;
}

TEST(PerfDataWriter, FileHeaderAttrsAndIdsByHand) {
  auto [out, writer] = memory_writer(mce_config());
  ASSERT_TRUE(writer);
  Bytes one = mce_sample(1000, 42, 5000, 0);
  ASSERT_TRUE(writer->append(one).ok());
  ASSERT_TRUE(writer->flush().ok());
  const Bytes& b = out->bytes();

  // Header: PERFILE2, 104, attr_size 144, attrs {120, 144}, data {264, 176}.
  EXPECT_EQ(std::string(b.begin(), b.begin() + 8), "PERFILE2");
  EXPECT_EQ(u64_at(b, 8), 104u);
  EXPECT_EQ(u64_at(b, 16), 144u);
  EXPECT_EQ(u64_at(b, 24), 120u);
  EXPECT_EQ(u64_at(b, 32), 144u);
  EXPECT_EQ(u64_at(b, 40), 264u);
  EXPECT_EQ(u64_at(b, 48), 176u);
  EXPECT_EQ(u64_at(b, 56), 0u);  // event_types
  EXPECT_EQ(u64_at(b, 64), 0u);
  // Features: TRACING_DATA 1, HOSTNAME 3, OSRELEASE 4, ARCH 6, NRCPUS 7,
  // CMDLINE 11, EVENT_DESC 12, SAMPLE_TIME 21.
  uint64_t bits = (1u << 1) | (1u << 3) | (1u << 4) | (1u << 6) | (1u << 7) | (1u << 11) |
                  (1u << 12) | (1u << 21);
  EXPECT_EQ(u64_at(b, 72), bits);
  EXPECT_EQ(u64_at(b, 80), 0u);
  EXPECT_EQ(u64_at(b, 88), 0u);
  EXPECT_EQ(u64_at(b, 96), 0u);
  // The ids, then the attr and its ids section.
  EXPECT_EQ(u64_at(b, 104), 1000u);
  EXPECT_EQ(u64_at(b, 112), 1001u);
  EXPECT_EQ(std::memcmp(b.data() + 120, mce_event().attr.words, 128), 0);
  EXPECT_EQ(u64_at(b, 248), 104u);
  EXPECT_EQ(u64_at(b, 256), 16u);
  // The data, exactly the record.
  EXPECT_TRUE(std::equal(one.begin(), one.end(), b.begin() + 264));

  // The feature table right after the data: 8 sections, back to back.
  size_t table = 264 + 176;
  uint64_t expect_offset = table + 8 * 16;
  std::vector<Bytes> expected = {
      Bytes(),  // tracing data: checked by parsing below
      encode_string_feature("h"),
      encode_string_feature("r"),
      encode_string_feature("a"),
      encode_nr_cpus(2, 2),
      encode_cmdline(std::vector<std::string>{"test"}),
      encode_event_desc(std::vector<EventDesc>{mce_event()}, 128),
      encode_sample_time(5000, 5000),
  };
  for (size_t i = 0; i < expected.size(); i++) {
    uint64_t offset = u64_at(b, table + 16 * i);
    uint64_t size = u64_at(b, table + 16 * i + 8);
    EXPECT_EQ(offset, expect_offset) << "feature " << i;
    if (i == 0) {
      auto tracing = parse_tracing_data({b.data() + offset, size_t(size)});
      ASSERT_TRUE(tracing.ok()) << tracing.error().message();
      EXPECT_EQ(tracing->size, size);
      EXPECT_EQ(tracing->event_names(), std::vector<std::string>{"mce:mce_record"});
    } else {
      EXPECT_EQ(Bytes(b.begin() + long(offset), b.begin() + long(offset + size)), expected[i])
          << "feature " << i;
    }
    expect_offset += size;
  }
  EXPECT_EQ(b.size(), expect_offset) << "the file ends with the last feature";
  EXPECT_EQ(writer->stats().file_bytes, b.size());
}

TEST(PerfDataWriter, PipeStreamByHand) {
  WriterConfig config = mce_config();
  auto [out, writer] = memory_writer(config, UINT64_MAX, true, /*pipe=*/true);
  ASSERT_TRUE(writer);
  EXPECT_TRUE(writer->pipe_mode());
  Bytes one = mce_sample(1000, 42, 5000, 0);
  ASSERT_TRUE(writer->append(one).ok());
  ASSERT_TRUE(writer->finish().ok());
  const Bytes& b = out->bytes();

  Bytes expected;
  ByteWriter w(&expected);
  w.text("PERFILE2");
  w.u64(16);
  w.u32(kRecordHeaderAttr);
  w.u16(0);
  w.u16(8 + 128 + 16);
  w.bytes({reinterpret_cast<const uint8_t*>(mce_event().attr.words), 128});
  w.u64(1000);
  w.u64(1001);
  auto feature = [&](uint64_t id, const Bytes& data) {
    w.u32(kRecordHeaderFeature);
    w.u16(0);
    w.u16(uint16_t(16 + data.size()));
    w.u64(id);
    w.bytes(data);
  };
  feature(kFeatureHostname, encode_string_feature("h"));
  feature(kFeatureOsRelease, encode_string_feature("r"));
  feature(kFeatureArch, encode_string_feature("a"));
  feature(kFeatureNrCpus, encode_nr_cpus(2, 2));
  feature(kFeatureCmdline, encode_cmdline(std::vector<std::string>{"test"}));
  feature(kFeatureEventDesc, encode_event_desc(std::vector<EventDesc>{mce_event()}, 128));
  feature(kFeatureLast, {});
  std::vector<Tracepoint> tps = {{"mce", "mce_record", kMceId}};
  auto tracing = build_tracing_data(sys::Tree(fixture_tracefs()), tps, 4096);
  ASSERT_TRUE(tracing.ok());
  w.u32(kRecordHeaderTracingData);
  w.u16(0);
  w.u16(16);
  w.u32(uint32_t(align_up(tracing->size(), 8)));
  w.u32(0);
  w.bytes(*tracing);
  w.zeros(align_up(tracing->size(), 8) - tracing->size());  // the data's own padding
  w.bytes(one);
  w.u32(kRecordFinishedRound);  // finish() ends the round
  w.u16(0);
  w.u16(8);
  EXPECT_EQ(b.size(), expected.size());
  EXPECT_TRUE(b == expected);
}

TEST(PerfDataWriter, FileAndPipeReadBackTheSame) {
  for (bool pipe : {false, true}) {
    SCOPED_TRACE(pipe ? "pipe" : "file");
    auto [out, writer] = memory_writer(mce_config(), UINT64_MAX, true, pipe);
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->append(samples(10)).ok());
    ASSERT_TRUE(writer->finished_round().ok());
    ASSERT_TRUE(writer->append(samples(5, 2000)).ok());
    ASSERT_TRUE(writer->finish().ok());
    EXPECT_EQ(writer->stats().samples, 15u);
    EXPECT_EQ(writer->stats().records, 17u);  // 15 samples, 2 FINISHED_ROUNDs

    auto data = reread(*out);
    ASSERT_TRUE(data.ok()) << data.error().message();
    EXPECT_EQ(data->pipe_mode(), pipe);
    ASSERT_EQ(data->events().size(), 1u);
    EXPECT_EQ(data->events()[0].name, "mce:mce_record");
    EXPECT_EQ(data->events()[0].ids, (std::vector<uint64_t>{1000, 1001}));
    EXPECT_EQ(data->events()[0].attr.attr.config, kMceId);
    EXPECT_EQ(data->record_count(), 17u);
    EXPECT_EQ(count_type(*data, PERF_RECORD_SAMPLE), 15u);
    EXPECT_EQ(count_type(*data, kRecordFinishedRound), 2u);
    auto tracing = data->tracing_data();
    ASSERT_TRUE(tracing.ok()) << tracing.error().message();
    EXPECT_EQ(tracing->event_names(), std::vector<std::string>{"mce:mce_record"});
    auto host = data->string_feature(kFeatureHostname);
    ASSERT_TRUE(host.ok());
    EXPECT_EQ(*host, "h");
    uint64_t last_time = 0;
    ASSERT_TRUE(data->for_each_record([&](const PerfDataRecord& r) -> Status {
                      if (r.type != PERF_RECORD_SAMPLE)
                        return ok_status();
                      PP_ASSIGN_OR_RETURN(Sample s, data->sample(r));
                      EXPECT_EQ(s.pid, 42u);
                      EXPECT_EQ(s.raw.size(), kMceRawSize);
                      last_time = s.time;
                      return ok_status();
                    })
                    .ok());
    EXPECT_EQ(last_time, 2004u);
    if (!pipe) {
      auto times = decode_sample_time(*data->feature(kFeatureSampleTime));
      ASSERT_TRUE(times.ok());
      EXPECT_EQ(times->first, 1000u);
      EXPECT_EQ(times->second, 2004u);
    }
  }
}

TEST(PerfDataWriter, EveryFlushLeavesACompleteFile) {
  WriterConfig config = mce_config();
  auto [out, writer] = memory_writer(config);
  ASSERT_TRUE(writer);
  auto fresh = reread(*out);
  ASSERT_TRUE(fresh.ok()) << "right after create: " << fresh.error().message();
  EXPECT_EQ(fresh->record_count(), 0u);
  for (int round = 1; round <= 5; round++) {
    ASSERT_TRUE(writer->append(samples(3)).ok());
    // Before the flush the file on "disk" still holds the previous rounds.
    auto before = reread(*out);
    ASSERT_TRUE(before.ok()) << before.error().message();
    EXPECT_EQ(count_type(*before, PERF_RECORD_SAMPLE), size_t(3 * (round - 1)));
    ASSERT_TRUE(writer->flush().ok());
    auto after = reread(*out);
    ASSERT_TRUE(after.ok()) << after.error().message();
    EXPECT_EQ(count_type(*after, PERF_RECORD_SAMPLE), size_t(3 * round));
    EXPECT_TRUE(after->has_feature(kFeatureTracingData));
    EXPECT_EQ(out->bytes().size(), writer->stats().file_bytes);
  }
}

TEST(PerfDataWriter, DestructorFinishesTheFile) {
  pp::testing::TempDir dir;
  {
    auto writer = PerfDataWriter::create_file(dir.path("perf.data"), mce_config());
    ASSERT_TRUE(writer.ok()) << writer.error().message();
    ASSERT_TRUE((*writer)->append(samples(4)).ok());
  }
  auto data = PerfDataReader::read_file(dir.path("perf.data"));
  ASSERT_TRUE(data.ok()) << data.error().message();
  EXPECT_EQ(count_type(*data, PERF_RECORD_SAMPLE), 4u);
}

TEST(PerfDataWriter, BatchesLargerThanTheBufferAreSplitAtRecords) {
  WriterConfig config = mce_config();
  config.buffer_size = 64 << 10;
  auto [out, writer] = memory_writer(config);
  ASSERT_TRUE(writer);
  Bytes many = samples(2000);  // 352000 bytes: six buffers
  ASSERT_TRUE(writer->append(many).ok());
  ASSERT_TRUE(writer->finish().ok());
  EXPECT_GE(writer->stats().write_calls, 6u);
  auto data = reread(*out);
  ASSERT_TRUE(data.ok()) << data.error().message();
  EXPECT_EQ(count_type(*data, PERF_RECORD_SAMPLE), 2000u);
  EXPECT_EQ(writer->stats().samples, 2000u);
}

TEST(PerfDataWriter, MalformedBatchesAreRefusedWhole) {
  auto [out, writer] = memory_writer(mce_config());
  ASSERT_TRUE(writer);
  Bytes good = mce_sample(1000, 1, 1, 0);
  struct Case {
    const char* what;
    Bytes batch;
  };
  Bytes zero = good;
  zero[6] = zero[7] = 0;  // size 0
  Bytes too_big = good;
  too_big[6] = 0xff;  // past the end of the batch
  Bytes cut(good.begin(), good.begin() + 5);
  Bytes good_then_cut = good;
  good_then_cut.insert(good_then_cut.end(), good.begin(), good.begin() + 100);
  for (const Case& c : {Case{"size 0", zero}, Case{"too big", too_big}, Case{"cut header", cut},
                        Case{"second cut", good_then_cut}}) {
    Status s = writer->append(c.batch);
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.error().code(), EINVAL) << c.what;
  }
  ASSERT_TRUE(writer->finish().ok());
  auto data = reread(*out);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(count_type(*data, PERF_RECORD_SAMPLE), 0u);
}

TEST(PerfDataWriter, LostRecordCarriesTheTrailer) {
  auto [out, writer] = memory_writer(mce_config());
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->append_lost({.id = 1001, .lost = 12, .cpu = 1, .time = 777}).ok());
  ASSERT_TRUE(writer->finish().ok());
  EXPECT_EQ(writer->stats().lost_records, 1u);
  EXPECT_EQ(writer->stats().lost, 12u);
  auto data = reread(*out);
  ASSERT_TRUE(data.ok());
  Bytes expected;
  ByteWriter w(&expected);
  w.u32(PERF_RECORD_LOST);
  w.u16(0);
  w.u16(8 + 16 + 32);
  w.u64(1001);
  w.u64(12);
  w.u32(UINT32_MAX);  // pid
  w.u32(UINT32_MAX);  // tid
  w.u64(777);         // time
  w.u32(1);           // cpu
  w.u32(0);
  w.u64(1001);  // identifier
  bool seen = false;
  ASSERT_TRUE(data->for_each_record([&](const PerfDataRecord& r) {
                    if (r.type == PERF_RECORD_LOST) {
                      seen = true;
                      EXPECT_TRUE(std::equal(r.bytes.begin(), r.bytes.end(), expected.begin(),
                                             expected.end()));
                    }
                    return ok_status();
                  })
                  .ok());
  EXPECT_TRUE(seen);
}

TEST(PerfDataWriter, KernelLostRecordsAreCounted) {
  auto [out, writer] = memory_writer(mce_config());
  ASSERT_TRUE(writer);
  Bytes lost;
  ByteWriter w(&lost);
  w.u32(PERF_RECORD_LOST);
  w.u16(0);
  w.u16(8 + 16 + 32);
  w.u64(1000);
  w.u64(5);
  w.zeros(32);
  w.u32(PERF_RECORD_LOST_SAMPLES);
  w.u16(0);
  w.u16(8 + 8 + 32);
  w.u64(3);
  w.zeros(32);
  ASSERT_TRUE(writer->append(lost).ok());
  ASSERT_TRUE(writer->finish().ok());
  EXPECT_EQ(writer->stats().lost_records, 2u);
  EXPECT_EQ(writer->stats().lost, 8u);
}

// Fills a memory "disk" until it is full, then checks the file reads back
// with exactly what the writer says it holds.
void fill_until_full(bool can_reserve) {
  WriterConfig config = mce_config();
  config.buffer_size = 64 << 10;
  // Room for the header, the features and about 100 KiB of data.
  auto [out, writer] = memory_writer(config, UINT64_MAX, can_reserve);
  ASSERT_TRUE(writer);
  const uint64_t capacity = out->bytes().size() + (100 << 10);
  out->set_capacity(capacity);
  Status failed = ok_status();
  size_t appended = 0;
  for (int i = 0; i < 100 && failed.ok(); i++) {
    failed = writer->append(samples(50, 1000 + i * 50));
    appended += 50;
  }
  ASSERT_FALSE(failed.ok()) << "the disk never filled";
  EXPECT_EQ(failed.error().code(), ENOSPC);
  EXPECT_NE(failed.error().message().find("stays readable"), std::string::npos)
      << failed.error().message();
  // Every later call fails the same way and counts what it drops.
  uint64_t dropped = writer->stats().dropped_samples;
  Status again = writer->append(samples(7));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code(), ENOSPC);
  EXPECT_EQ(writer->stats().dropped_samples, dropped + 7);
  Status finished = writer->finish();
  ASSERT_FALSE(finished.ok());
  EXPECT_EQ(finished.error().code(), ENOSPC);
  EXPECT_NE(finished.error().message().find(std::to_string(writer->stats().samples) + " samples"),
            std::string::npos)
      << finished.error().message();

  const WriterStats& stats = writer->stats();
  EXPECT_GT(stats.samples, 0u);
  EXPECT_EQ(stats.samples + stats.dropped_samples, appended + 7);
  auto data = reread(*out);
  ASSERT_TRUE(data.ok()) << data.error().message();
  EXPECT_EQ(count_type(*data, PERF_RECORD_SAMPLE), stats.samples);
  EXPECT_TRUE(data->has_feature(kFeatureTracingData));
  EXPECT_TRUE(data->has_feature(kFeatureEventDesc));
  EXPECT_EQ(out->bytes().size(), stats.file_bytes);
  EXPECT_LE(out->bytes().size(), capacity);
  if (can_reserve) {
    // With reservation the last flush keeps whole records up to the limit:
    // less than one more sample would have fitted.
    EXPECT_LT(capacity - out->bytes().size(), 176u);
  }
}

TEST(PerfDataWriter, FullDiskWithReservationKeepsWholeRecords) {
  fill_until_full(true);
}

TEST(PerfDataWriter, FullDiskWithoutReservationUndoesTheHalfWrite) {
  fill_until_full(false);
}

TEST(PerfDataWriter, FullDiskAtCreateIsAnError) {
  auto output = std::make_unique<testing::MemoryOutput>(1000);
  auto writer = PerfDataWriter::create(std::move(output), mce_config());
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.error().code(), ENOSPC);
}

TEST(PerfDataWriter, AttrSizesAreMadeOne) {
  WriterConfig config = mce_config();
  config.events[0].attr.attr.size = 0;  // 0: perf 6.1's 128
  EventDesc second = mce_event();
  second.ids = {2000};
  config.events.push_back(second);
  auto [out, writer] = memory_writer(config);
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->finish().ok());
  auto data = reread(*out);
  ASSERT_TRUE(data.ok()) << data.error().message();
  EXPECT_EQ(data->attr_size(), 128u);
  ASSERT_EQ(data->events().size(), 2u);
  EXPECT_EQ(data->events()[1].ids, std::vector<uint64_t>{2000});

  WriterConfig big = mce_config();
  big.events[0].attr.attr.size = 136;
  auto [big_out, big_writer] = memory_writer(big);
  ASSERT_TRUE(big_writer);
  ASSERT_TRUE(big_writer->finish().ok());
  auto big_data = reread(*big_out);
  ASSERT_TRUE(big_data.ok()) << big_data.error().message();
  EXPECT_EQ(big_data->attr_size(), 136u);
}

TEST(PerfDataWriter, EventsPerfCannotReadAreRefused) {
  struct Case {
    const char* what;
    std::function<void(WriterConfig&)> change;
    const char* message;
  };
  std::vector<Case> cases = {
      {"no events", [](WriterConfig& c) { c.events.clear(); }, "at least one event"},
      {"tiny attr", [](WriterConfig& c) { c.events[0].attr.attr.size = 40; }, "attr size 40"},
      {"sample_id_all differs",
       [](WriterConfig& c) {
         c.events.push_back(mce_event());
         c.events[1].attr.attr.sample_id_all = 0;
       },
       "sample_id_all"},
      {"trailers differ",
       [](WriterConfig& c) { c.events.push_back(mce_event(kSampleType & ~PERF_SAMPLE_CPU)); },
       "sample_id trailers"},
      {"no id to tell samples apart",
       [](WriterConfig& c) {
         uint64_t type = kSampleType & ~PERF_SAMPLE_IDENTIFIER;
         c.events = {mce_event(type), mce_event(type)};
       },
       "tells samples apart"},
      {"unknown tracepoint", [](WriterConfig& c) { c.events[0].attr.attr.config = 99999; },
       "no tracepoint with id 99999"},
  };
  for (const Case& c : cases) {
    WriterConfig config = mce_config();
    c.change(config);
    auto writer = PerfDataWriter::create(std::make_unique<testing::MemoryOutput>(), config);
    ASSERT_FALSE(writer.ok()) << c.what;
    EXPECT_NE(writer.error().message().find(c.message), std::string::npos)
        << c.what << ": " << writer.error().message();
  }
}

TEST(PerfDataWriter, SideBandFromAFakeProc) {
  pp::testing::TempDir proc;
  proc.write("kallsyms", "ffffffff81000000 T _text\nffffffff82000000 T _etext\n");
  proc.write("7/task/7/comm", "busy\n");
  proc.write("7/maps", "400000-401000 r-xp 00000000 08:02 77 /bin/busy\n");
  pp::testing::TempDir sysfs;  // no kernel/notes: no build-id

  WriterConfig clock;
  EventDesc e;
  e.attr.attr.type = PERF_TYPE_SOFTWARE;
  e.attr.attr.size = 128;
  e.attr.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  e.attr.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
  e.attr.attr.sample_id_all = 1;
  e.name = "cpu-clock";
  e.ids = {1};
  clock.events = {e};
  clock.host = small_host();
  clock.proc_root = proc.path();
  clock.sysfs_root = sysfs.path();

  auto [out, writer] = memory_writer(clock);
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->finish().ok());
  auto data = reread(*out);
  ASSERT_TRUE(data.ok()) << data.error().message();
  EXPECT_EQ(count_type(*data, PERF_RECORD_MMAP), 1u);
  EXPECT_EQ(count_type(*data, PERF_RECORD_COMM), 1u);
  EXPECT_EQ(count_type(*data, PERF_RECORD_MMAP2), 1u);
  EXPECT_FALSE(data->has_feature(kFeatureTracingData));
  EXPECT_FALSE(data->has_feature(kFeatureBuildId));

  // A tracepoint recording names threads and the kernel, not user binaries.
  WriterConfig tp = mce_config();
  tp.side_band = SideBand::kAuto;
  tp.proc_root = proc.path();
  tp.sysfs_root = sysfs.path();
  auto [tp_out, tp_writer] = memory_writer(tp);
  ASSERT_TRUE(tp_writer);
  ASSERT_TRUE(tp_writer->finish().ok());
  auto tp_data = reread(*tp_out);
  ASSERT_TRUE(tp_data.ok());
  EXPECT_EQ(count_type(*tp_data, PERF_RECORD_MMAP), 1u);
  EXPECT_EQ(count_type(*tp_data, PERF_RECORD_COMM), 1u);
  EXPECT_EQ(count_type(*tp_data, PERF_RECORD_MMAP2), 0u);
}

TEST(PerfDataWriter, KernelBuildIdGoesWithTheKernelMap) {
  pp::testing::TempDir proc, sysfs;
  proc.write("kallsyms", "ffffffff81000000 T _text\nffffffff82000000 T _etext\n");
  Bytes id(20, 0x5a);
  Bytes notes;
  ByteWriter w(&notes);
  w.u32(4);
  w.u32(20);
  w.u32(3);
  w.text(std::string_view("GNU\0", 4));
  w.bytes(id);
  sysfs.write("kernel/notes", std::string(notes.begin(), notes.end()));
  for (bool pipe : {false, true}) {
    WriterConfig config = mce_config();
    config.side_band = SideBand::kAuto;
    config.proc_root = proc.path();
    config.sysfs_root = sysfs.path();
    auto [out, writer] = memory_writer(config, UINT64_MAX, true, pipe);
    ASSERT_TRUE(writer);
    ASSERT_TRUE(writer->finish().ok());
    Bytes entry;
    uint32_t type = pipe ? uint32_t(kRecordHeaderBuildId) : 0u;
    build_id_entry(type, PERF_RECORD_MISC_KERNEL, -1, id, "[kernel.kallsyms]", &entry);
    if (pipe) {
      // A record of its own, after the tracing data.
      auto at = std::search(out->bytes().begin(), out->bytes().end(), entry.begin(), entry.end());
      EXPECT_NE(at, out->bytes().end());
      auto data = reread(*out);
      ASSERT_TRUE(data.ok()) << data.error().message();
      EXPECT_EQ(count_type(*data, kRecordHeaderBuildId), 1u);
    } else {
      auto data = reread(*out);
      ASSERT_TRUE(data.ok()) << data.error().message();
      ASSERT_TRUE(data->has_feature(kFeatureBuildId));
      auto section = data->feature(kFeatureBuildId);
      EXPECT_TRUE(std::equal(section->begin(), section->end(), entry.begin(), entry.end()));
    }
  }
}

TEST(PerfDataWriter, UseClockidWritesClockFeatures) {
  WriterConfig config = mce_config();
  config.events[0].attr.attr.use_clockid = 1;
  config.events[0].attr.attr.clockid = CLOCK_MONOTONIC;
  auto [out, writer] = memory_writer(config);
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->finish().ok());
  auto data = reread(*out);
  ASSERT_TRUE(data.ok());
  EXPECT_TRUE(data->has_feature(kFeatureClockId));
  ASSERT_TRUE(data->has_feature(kFeatureClockData));
  auto clock = data->feature(kFeatureClockData);
  ASSERT_EQ(clock->size(), 24u);
  EXPECT_EQ((*clock)[0], 1);  // version
  EXPECT_EQ((*clock)[4], CLOCK_MONOTONIC);
}

// The clock data given is written as given (the recorder reads the clocks
// through sys/); events on different clocks cannot share a file.
TEST(PerfDataWriter, ClockDataAsGivenAndOneClockPerFile) {
  WriterConfig config = mce_config();
  config.events[0].attr.attr.use_clockid = 1;
  config.events[0].attr.attr.clockid = CLOCK_BOOTTIME;
  sys::ClockPair pair{
      .clockid = CLOCK_BOOTTIME, .wall_ns = 1700000000123456789ULL, .clock_ns = 987654321};
  config.clock = ClockData{.resolution_ns = 4, .pair = pair};
  auto [out, writer] = memory_writer(config);
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->finish().ok());
  auto data = reread(*out);
  ASSERT_TRUE(data.ok());
  auto as_bytes = [](std::span<const uint8_t> s) { return Bytes(s.begin(), s.end()); };
  EXPECT_EQ(as_bytes(*data->feature(kFeatureClockId)), encode_clockid(4));
  EXPECT_EQ(as_bytes(*data->feature(kFeatureClockData)), encode_clock_data(pair));
  auto back = decode_clock_data(*data->feature(kFeatureClockData));
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->clockid, CLOCK_BOOTTIME);
  EXPECT_EQ(back->wall_ns, pair.wall_ns);
  EXPECT_EQ(back->clock_ns, pair.clock_ns);

  // A pair of another clock than the events' is the caller's mistake.
  WriterConfig other = config;
  other.clock->pair.clockid = CLOCK_MONOTONIC;
  auto mismatched =
      PerfDataWriter::create(std::make_unique<testing::MemoryOutput>(UINT64_MAX, true), other);
  ASSERT_FALSE(mismatched.ok());
  EXPECT_EQ(mismatched.error().kind(), ErrorKind::kInternal);

  WriterConfig two = mce_config();
  two.events.push_back(two.events[0]);
  two.events[1].name = "other";
  two.events[0].attr.attr.sample_type |= PERF_SAMPLE_IDENTIFIER;
  two.events[1].attr.attr.sample_type |= PERF_SAMPLE_IDENTIFIER;
  two.events[0].attr.attr.use_clockid = 1;
  two.events[0].attr.attr.clockid = CLOCK_MONOTONIC;
  auto refused =
      PerfDataWriter::create(std::make_unique<testing::MemoryOutput>(UINT64_MAX, true), two);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("different clocks (monotonic and perf's default clock)"),
            std::string::npos)
      << refused.error().message();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PerfDataWriter, ExistingFileBecomesOld) {
  pp::testing::TempDir dir;
  std::string path = dir.path("perf.data");
  dir.write("perf.data", "previous recording");
  dir.write("perf.data.old", "older still");
  {
    auto writer = PerfDataWriter::create_file(path, mce_config());
    ASSERT_TRUE(writer.ok()) << writer.error().message();
    ASSERT_TRUE((*writer)->finish().ok());
  }
  EXPECT_EQ(slurp(path + ".old"), "previous recording");
  auto data = PerfDataReader::read_file(path);
  ASSERT_TRUE(data.ok()) << data.error().message();
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // An empty file is simply replaced, as perf does.
  pp::testing::TempDir empty_dir;
  empty_dir.write("perf.data", "");
  auto writer = PerfDataWriter::create_file(empty_dir.path("perf.data"), mce_config());
  ASSERT_TRUE(writer.ok());
  struct stat old_st;
  EXPECT_NE(::stat(empty_dir.path("perf.data.old").c_str(), &old_st), 0);
}

TEST(PerfDataWriter, AFifoPathGetsPipeMode) {
  pp::testing::TempDir dir;
  std::string path = dir.path("fifo");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  // A reader first (O_RDWR never blocks on a FIFO), so opening to write does not wait.
  sys::Fd reader(::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  ASSERT_TRUE(reader.valid());
  auto writer = PerfDataWriter::create_file(path, mce_config());
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  EXPECT_TRUE((*writer)->pipe_mode());
  ASSERT_TRUE((*writer)->append(samples(2)).ok());
  ASSERT_TRUE((*writer)->finish().ok());
  Bytes stream(1 << 16);
  ssize_t n = ::read(reader.get(), stream.data(), stream.size());
  ASSERT_GT(n, 0);
  stream.resize(size_t(n));
  auto data = PerfDataReader::parse(stream);
  ASSERT_TRUE(data.ok()) << data.error().message();
  EXPECT_TRUE(data->pipe_mode());
  EXPECT_EQ(count_type(*data, PERF_RECORD_SAMPLE), 2u);
  struct stat st;
  EXPECT_NE(::stat((path + ".old").c_str(), &st), 0) << "a FIFO is not renamed";
}

TEST(PerfDataWriter, DirectoryIsRefused) {
  pp::testing::TempDir dir;
  dir.mkdir("perf.data");
  auto writer = PerfDataWriter::create_file(dir.path("perf.data"), mce_config());
  ASSERT_FALSE(writer.ok());
  EXPECT_EQ(writer.error().code(), EISDIR);
}

TEST(PerfDataWriter, AppendAfterFinishIsAnError) {
  auto [out, writer] = memory_writer(mce_config());
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->finish().ok());
  EXPECT_TRUE(writer->finish().ok()) << "finish is idempotent";
  EXPECT_FALSE(writer->append(samples(1)).ok());
}

}  // namespace
}  // namespace pp::report

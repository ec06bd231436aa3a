// The perf.data reader refuses malformed input with a clear error and never
// reads outside it: hand-corrupted files, every truncation, and bit flips
// of files the writer made. (Files the real perf wrote are read in
// tests/kernel/report_perf_data_test.cpp.)
#include "report/perf_data_reader.h"

#include <gtest/gtest.h>

#include "report/perf_data_writer.h"
#include "report/testing/memory_output.h"
#include "tests/support/test_env.h"

namespace pp::report {
namespace {

constexpr uint64_t kSampleType = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW |
                                 PERF_SAMPLE_IDENTIFIER;

WriterConfig config_for(size_t events) {
  WriterConfig config;
  for (size_t i = 0; i < events; i++) {
    EventDesc e;
    e.attr.attr.type = PERF_TYPE_TRACEPOINT;
    e.attr.attr.size = 128;
    e.attr.attr.config = 113;
    e.attr.attr.sample_type = kSampleType;
    e.attr.attr.sample_id_all = 1;
    e.name = "mce:mce_record";
    e.ids = {100 + 2 * i, 101 + 2 * i};
    config.events.push_back(e);
  }
  HostInfo host;
  host.hostname = "h";
  host.os_release = "r";
  host.arch = "a";
  host.nr_cpus_online = host.nr_cpus_available = 1;
  config.host = host;
  config.tracefs_root = pp::testing::fixtures_dir() + "/tracefs-debian-6.1";
  config.side_band = SideBand::kNever;
  return config;
}

Bytes sample(uint64_t id, uint64_t time) {
  Bytes out;
  ByteWriter w(&out);
  w.u32(PERF_RECORD_SAMPLE);
  w.u16(0);
  w.u16(8 + 6 * 8 + 8);
  w.u64(id);
  w.u64(0x1234);
  w.u32(7);
  w.u32(7);
  w.u64(time);
  w.u32(0);
  w.u32(0);
  w.u64(1);
  w.u32(4);
  w.u32(0xdeadbeef);
  return out;
}

// A small valid file (or pipe stream) with two events and three samples.
Bytes written(bool pipe) {
  auto output = std::make_unique<testing::MemoryOutput>();
  testing::MemoryOutput* raw = output.get();
  auto writer = PerfDataWriter::create(std::move(output), config_for(2), pipe);
  EXPECT_TRUE(writer.ok()) << writer.error().message();
  for (uint64_t id : {100, 102, 103}) {
    Bytes s = sample(id, 10 + id);
    EXPECT_TRUE((*writer)->append(s).ok());
  }
  EXPECT_TRUE((*writer)->finish().ok());
  return raw->bytes();
}

void put_u64(Bytes& b, size_t offset, uint64_t v) {
  std::memcpy(b.data() + offset, &v, 8);
}
uint64_t get_u64(const Bytes& b, size_t offset) {
  uint64_t v;
  std::memcpy(&v, b.data() + offset, 8);
  return v;
}

std::string parse_error(Bytes bytes) {
  auto r = PerfDataReader::parse(std::move(bytes), "x.data");
  return r.ok() ? "" : r.error().message();
}

TEST(PerfDataReader, ReadsWhatTheWriterWrote) {
  for (bool pipe : {false, true}) {
    auto data = PerfDataReader::parse(written(pipe));
    ASSERT_TRUE(data.ok()) << data.error().message();
    ASSERT_EQ(data->events().size(), 2u);
    EXPECT_EQ(data->events()[1].ids, (std::vector<uint64_t>{102, 103}));
    std::vector<uint64_t> ids;
    ASSERT_TRUE(data->for_each_record([&](const PerfDataRecord& r) -> Status {
                      if (r.type != PERF_RECORD_SAMPLE)
                        return ok_status();
                      PP_ASSIGN_OR_RETURN(Sample s, data->sample(r));
                      ids.push_back(s.id);
                      EXPECT_EQ(data->event_for_id(s.id), &data->events()[s.id >= 102 ? 1 : 0]);
                      EXPECT_EQ(s.raw.size(), 4u);
                      return ok_status();
                    })
                    .ok());
    EXPECT_EQ(ids, (std::vector<uint64_t>{100, 102, 103}));
    EXPECT_EQ(data->event_for_id(999), nullptr);
  }
}

TEST(PerfDataReader, HandCorruptedFilesAreRefusedWithTheReason) {
  const Bytes good = written(false);
  ASSERT_EQ(parse_error(good), "");
  struct Case {
    const char* what;
    std::function<void(Bytes&)> corrupt;
    const char* message;
  };
  const uint64_t data_offset = get_u64(good, 40);
  const uint64_t data_size = get_u64(good, 48);
  std::vector<Case> cases = {
      {"short", [](Bytes& b) { b.resize(10); }, "shorter than any perf.data header"},
      {"magic", [](Bytes& b) { b[0] = 'X'; }, "PERFILE2"},
      {"legacy", [](Bytes& b) { std::memcpy(b.data(), "PERFFILE", 8); }, "legacy"},
      {"swapped", [](Bytes& b) { std::memcpy(b.data(), "2ELIFREP", 8); }, "byte order"},
      {"header size", [](Bytes& b) { put_u64(b, 8, 72); }, "neither 104"},
      {"attr size 0", [](Bytes& b) { put_u64(b, 16, 0); }, "attr size 0"},
      {"attrs past end", [](Bytes& b) { put_u64(b, 24, 1 << 30); }, "attrs section"},
      {"attrs not whole", [](Bytes& b) { put_u64(b, 32, 200); }, "not a multiple"},
      {"no attrs", [](Bytes& b) { put_u64(b, 32, 0); }, "no events"},
      // Two events: ids at 104 (32 bytes), attrs at 136, the first attr's
      // ids section right after its 128 bytes.
      {"ids past end", [](Bytes& b) { put_u64(b, 136 + 128, 1ULL << 40); }, "ids"},
      {"ids not whole", [](Bytes& b) { put_u64(b, 136 + 128 + 8, 5); }, "ids"},
      {"attr.size disagrees", [](Bytes& b) { b[136 + 4] = 100; }, "attr.size is 100"},
      {"data past end", [](Bytes& b) { put_u64(b, 48, 1ULL << 40); }, "data section"},
      {"record size 0",
       [&](Bytes& b) {
         b[data_offset + 6] = 0;
         b[data_offset + 7] = 0;
       },
       "has size 0"},
      {"record past data", [&](Bytes& b) { put_u64(b, 48, data_size - 1); }, "cut off"},
      {"record crossing the data end",
       [&](Bytes& b) { put_u64(b, 48, data_size - 12); },  // into the last sample
       "bytes of data left"},
      {"feature table past end",
       [](Bytes& b) {
         for (size_t word = 0; word < 4; word++)
           put_u64(b, 72 + 8 * word, ~0ULL);  // 256 sections: 4 KiB of table
       },
       "table of 256 features"},
      {"feature past end", [&](Bytes& b) { put_u64(b, data_offset + data_size, 1ULL << 40); },
       "TRACING_DATA"},
  };
  for (const Case& c : cases) {
    Bytes b = good;
    c.corrupt(b);
    std::string error = parse_error(b);
    EXPECT_NE(error, "") << c.what;
    EXPECT_NE(error.find(c.message), std::string::npos) << c.what << ": " << error;
    EXPECT_NE(error.find("x.data"), std::string::npos) << c.what << ": " << error;
  }
}

TEST(PerfDataReader, HandCorruptedPipesAreRefused) {
  const Bytes good = written(true);
  ASSERT_EQ(parse_error(good), "");
  // The first record is the first ATTR, at 16.
  struct Case {
    const char* what;
    std::function<void(Bytes&)> corrupt;
    const char* message;
  };
  std::vector<Case> cases = {
      {"cut record", [](Bytes& b) { b.resize(16 + 4); }, "cut off"},
      {"record size 0",
       [](Bytes& b) {
         b[16 + 6] = 0;
         b[16 + 7] = 0;
       },
       "has size 0"},
      {"attr too short",
       [](Bytes& b) {
         b[16 + 6] = 16;
         b[16 + 7] = 0;
       },
       "too short"},
      {"attr.size past record", [](Bytes& b) { b[16 + 8 + 4] = 200; }, "attr.size 200"},
      {"no attr",
       [](Bytes& b) {
         b[16] = PERF_RECORD_MMAP;  // the ATTRs become data
         b[16 + 152] = PERF_RECORD_MMAP;
       },
       "no ATTR"},
  };
  for (const Case& c : cases) {
    Bytes b = good;
    c.corrupt(b);
    std::string error = parse_error(b);
    EXPECT_NE(error.find(c.message), std::string::npos) << c.what << ": " << error;
  }
}

TEST(PerfDataReader, EveryTruncationIsRefusedOrReadWithoutOverrun) {
  for (bool pipe : {false, true}) {
    const Bytes good = written(pipe);
    size_t accepted = 0;
    for (size_t n = 0; n < good.size(); n++) {
      auto r = PerfDataReader::parse(Bytes(good.begin(), good.begin() + long(n)));
      if (!r.ok())
        continue;
      accepted++;
      // Whatever parses must also iterate and decode without error or overrun.
      EXPECT_TRUE(r->for_each_record([](const PerfDataRecord&) { return ok_status(); }).ok());
    }
    if (!pipe) {
      EXPECT_EQ(accepted, 0u) << "a cut file lacks its features: never valid";
    }
  }
}

TEST(PerfDataReader, BitFlipsNeverCrash) {
  for (bool pipe : {false, true}) {
    const Bytes good = written(pipe);
    for (size_t i = 0; i < good.size(); i += 3) {
      Bytes b = good;
      b[i] ^= uint8_t(0x80 >> (i % 8));
      auto r = PerfDataReader::parse(std::move(b));
      if (!r.ok())
        continue;
      (void)r->tracing_data();
      (void)r->for_each_record([&](const PerfDataRecord& rec) -> Status {
        if (rec.type == PERF_RECORD_SAMPLE)
          (void)r->sample(rec);
        return ok_status();
      });
    }
  }
}

TEST(PerfDataReader, MissingFileNamesThePath) {
  auto r = PerfDataReader::read_file("/nonexistent/perf.data");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ENOENT);
  EXPECT_NE(r.error().message().find("/nonexistent/perf.data"), std::string::npos);
}

}  // namespace
}  // namespace pp::report

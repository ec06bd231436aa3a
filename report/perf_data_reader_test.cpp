// The perf.data reader refuses malformed input with a clear error and never
// reads outside it: hand-corrupted files, every truncation, and bit flips
// of files the writer made. (Files the real perf wrote are read in
// tests/kernel/report_perf_data_test.cpp.)
#include "report/perf_data_reader.h"

#include <cstring>
#include <gtest/gtest.h>
#include <tuple>

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

// What a reader saw of a file: its data records, and the ids of its samples.
struct Walk {
  std::vector<std::tuple<uint32_t, uint64_t, size_t>> records;  // type, offset, size
  std::vector<uint64_t> sample_ids;
};

// Walks every record of `data` (of `file_size` bytes), checking that each
// lies inside the file, after the one before it, with the size its header
// says, and that a sample either decodes or is refused naming the file and
// where the sample is.
Walk walk(const PerfDataReader& data, size_t file_size) {
  Walk w;
  uint64_t end_of_last = 0;
  Status status = data.for_each_record([&](const PerfDataRecord& rec) -> Status {
    EXPECT_GE(rec.bytes.size(), sizeof(perf_event_header)) << "at " << rec.offset;
    EXPECT_LE(rec.offset + rec.bytes.size(), file_size) << "at " << rec.offset;
    EXPECT_GE(rec.offset, end_of_last) << "records overlap at " << rec.offset;
    end_of_last = rec.offset + rec.bytes.size();
    perf_event_header header;
    std::memcpy(&header, rec.bytes.data(), sizeof(header));
    EXPECT_EQ(header.size, rec.bytes.size()) << "at " << rec.offset;
    EXPECT_EQ(header.type, rec.type) << "at " << rec.offset;
    // Every byte readable (ASan sees an overrun).
    std::vector<uint8_t> copy(rec.bytes.begin(), rec.bytes.end());
    EXPECT_EQ(copy.size(), size_t(header.size));
    w.records.emplace_back(rec.type, rec.offset, rec.bytes.size());
    if (rec.type == PERF_RECORD_SAMPLE) {
      auto s = data.sample(rec);
      if (s.ok())
        w.sample_ids.push_back(s->id);
      else {  // refused naming the file and where the sample is
        EXPECT_EQ(s.error().message().rfind("x.data", 0), 0u) << s.error().message();
        EXPECT_NE(s.error().message().find("sample at " + std::to_string(rec.offset)),
                  std::string::npos)
            << s.error().message();
      }
    }
    return ok_status();
  });
  // parse() checked every record: walking them cannot fail.
  EXPECT_TRUE(status.ok()) << status.error().message();
  size_t total = 0;
  for (const auto& r : w.records)
    total += std::get<2>(r);
  EXPECT_LE(total, file_size);
  return w;
}

// Every single-bit flip of a valid file (every third byte, each a different
// bit) is either refused with EINVAL saying what is wrong in which file, or
// read as records that lie inside the file; the file unflipped reads as
// exactly what was written.
TEST(PerfDataReader, BitFlipsAreRefusedWithAReasonOrReadInsideTheFile) {
  for (bool pipe : {false, true}) {
    SCOPED_TRACE(pipe ? "pipe" : "file");
    const Bytes good = written(pipe);
    auto unflipped = PerfDataReader::parse(good, "x.data");
    ASSERT_TRUE(unflipped.ok()) << unflipped.error().message();
    Walk want = walk(*unflipped, good.size());
    EXPECT_EQ(want.sample_ids, (std::vector<uint64_t>{100, 102, 103}));
    // The three samples as appended, then the round finish() closes with.
    std::vector<uint32_t> types;
    for (const auto& [type, offset, size] : want.records) {
      types.push_back(type);
      if (type == PERF_RECORD_SAMPLE) {
        EXPECT_EQ(size, sample(100, 0).size());
      }
    }
    EXPECT_EQ(types, (std::vector<uint32_t>{PERF_RECORD_SAMPLE, PERF_RECORD_SAMPLE,
                                            PERF_RECORD_SAMPLE, uint32_t(kRecordFinishedRound)}));
    EXPECT_TRUE(unflipped->tracing_data().ok());

    size_t refused = 0, read = 0;
    for (size_t i = 0; i < good.size(); i += 3) {
      Bytes b = good;
      b[i] ^= uint8_t(0x80 >> (i % 8));
      auto r = PerfDataReader::parse(std::move(b), "x.data");
      if (!r.ok()) {
        refused++;
        EXPECT_EQ(r.error().code(), EINVAL) << "flip at " << i;
        const std::string prefix = "x.data is not a valid perf.data file: ";
        EXPECT_EQ(r.error().message().rfind(prefix, 0), 0u) << r.error().message();
        EXPECT_GT(r.error().message().size(), prefix.size()) << "flip at " << i;
        continue;
      }
      read++;
      SCOPED_TRACE("flip at " + std::to_string(i));
      walk(*r, good.size());
      (void)r->tracing_data();  // may be refused; must not overrun
      // The magic and the header's size are always checked.
      EXPECT_GE(i, 16u) << "a flipped magic or header size was read";
    }
    EXPECT_GT(refused, 0u);
    EXPECT_GT(read, 0u);
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

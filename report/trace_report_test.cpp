// Tracepoint decoding and the report printer, from the real Debian 6.1
// formats (tests/fixtures/tracefs-debian-6.1) and synthetic records: every
// field by name, an optional field present in a newer format and absent in
// the old one, a print function libtraceevent does not know, a record cut
// short, and whole perf.data files written by report/'s writer.
#include "report/trace_report.h"

#include <cstring>
#include <gtest/gtest.h>
#include <map>
#include <sstream>

#include "base/json.h"
#include "base/wall_time.h"
#include "report/perf_data_reader.h"
#include "report/perf_data_writer.h"
#include "report/trace_decoder.h"
#include "report/tracing_data.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::report {
namespace {

constexpr uint64_t kMceId = 113;  // the fixture's events/mce/mce_record/id

std::string fixture_tracefs() {
  return testing::fixtures_dir() + "/tracefs-debian-6.1";
}

TracingData fixture_tracing(const std::string& root = fixture_tracefs()) {
  sys::Tree tree(root);
  std::vector<Tracepoint> tps = {{"mce", "mce_record", kMceId}};
  auto built = build_tracing_data(tree, tps, 4096);
  EXPECT_TRUE(built.ok()) << built.error().message();
  auto parsed = parse_tracing_data(*built);
  EXPECT_TRUE(parsed.ok()) << parsed.error().message();
  return *parsed;
}

std::unique_ptr<TraceDecoder> decoder_for(const TracingData& data) {
  auto d = TraceDecoder::create(data, /*plugins=*/false);
  EXPECT_TRUE(d.ok()) << d.error().message();
  return std::move(*d);
}

template <typename T>
void put(Bytes& b, size_t offset, T v) {
  if (b.size() < offset + sizeof(T))
    b.resize(offset + sizeof(T));
  std::memcpy(b.data() + offset, &v, sizeof(T));
}

// An mce_record payload in the 6.1 layout (format file offsets).
Bytes mce_payload(uint64_t status, uint8_t bank, uint32_t cpu) {
  Bytes b(107, 0);
  put<uint16_t>(b, 0, uint16_t(kMceId));
  put<int32_t>(b, 4, 0);                        // common_pid
  put<uint64_t>(b, 8, 0x1000c14);               // mcgcap
  put<uint64_t>(b, 16, 0x5);                    // mcgstatus: RIPV MCIP
  put<uint64_t>(b, 24, status);                 // status
  put<uint64_t>(b, 32, 0x1234f000);             // addr
  put<uint64_t>(b, 40, 0x86);                   // misc
  put<uint64_t>(b, 64, 0xffffffff81234567ULL);  // ip
  put<uint64_t>(b, 72, 0x8d3a5c1f2);            // tsc
  put<uint64_t>(b, 80, 1764770012);             // walltime
  put<uint32_t>(b, 88, cpu);                    // cpu
  put<uint32_t>(b, 92, 0x50654);                // cpuid
  put<uint32_t>(b, 96, 4);                      // apicid
  put<uint8_t>(b, 104, 0x10);                   // cs
  put<uint8_t>(b, 105, bank);                   // bank
  return b;
}

TEST(TraceDecoder, FixtureMceRecordFieldsByName) {
  auto d = decoder_for(fixture_tracing());
  const TraceEvent* e = d->event(kMceId);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->name, "mce:mce_record");
  EXPECT_TRUE(e->print_ok);
  EXPECT_EQ(e->min_size, 107u);
  Bytes raw = mce_payload(0x9c00000000010135ULL, 4, 2);
  ASSERT_TRUE(d->check(*e, raw).ok());
  EXPECT_EQ(d->event_of(raw), e);
  EXPECT_EQ(TraceDecoder::number(*e, raw, "status"), 0x9c00000000010135ULL);
  EXPECT_EQ(TraceDecoder::number(*e, raw, "bank"), 4u);
  EXPECT_EQ(TraceDecoder::number(*e, raw, "cpu"), 2u);
  EXPECT_EQ(TraceDecoder::number(*e, raw, "cs"), 0x10u);
  // 6.1 has neither: absent, not zero.
  EXPECT_EQ(e->field("ppin"), nullptr);
  EXPECT_EQ(TraceDecoder::number(*e, raw, "ppin"), std::nullopt);
  EXPECT_EQ(TraceDecoder::number(*e, raw, "microcode"), std::nullopt);
}

// ras:mc_event in the fixture's 6.1 layout (events/ras/mc_event/format):
// u32 error_type @8, __data_loc msg @12, label @16, u16 error_count @20,
// u8 mc_index @22, s8 top/middle/lower @23-25, long address @32, u8
// grain_bits @40, long syndrome @48, __data_loc driver_detail @56; the
// strings after the fixed part, each a (length << 16 | offset) word.
TEST(TraceDecoder, FixtureMcEventDecodesAsEdac) {
  constexpr uint64_t kMcEventId = 1227;  // the fixture's events/ras/mc_event/id
  sys::Tree tree(fixture_tracefs());
  std::vector<Tracepoint> tps = {{"ras", "mc_event", kMcEventId}};
  auto built = build_tracing_data(tree, tps, 4096);
  ASSERT_TRUE(built.ok()) << built.error().message();
  auto parsed = parse_tracing_data(*built);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  auto d = decoder_for(*parsed);
  const TraceEvent* e = d->event(kMcEventId);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->name, "ras:mc_event");
  Bytes b(60, 0);
  put<uint16_t>(b, 0, uint16_t(kMcEventId));
  auto add_string = [&](size_t loc, const std::string& text) {
    size_t offset = b.size();
    b.insert(b.end(), text.begin(), text.end());
    b.push_back(0);
    put<uint32_t>(b, loc, uint32_t((text.size() + 1) << 16 | offset));
  };
  put<uint32_t>(b, 8, 1);  // uncorrected
  put<uint16_t>(b, 20, 2);
  put<uint8_t>(b, 22, 3);
  put<int8_t>(b, 23, 0);
  put<int8_t>(b, 24, 1);
  put<int8_t>(b, 25, -1);
  put<int64_t>(b, 32, 0x8a6c1a00);
  put<uint8_t>(b, 40, 5);
  put<int64_t>(b, 48, 0x1234);
  add_string(12, "memory read error");
  add_string(16, "CPU_SrcID#1_MC#1_Chan#1_DIMM#0");
  add_string(56, "err_code:0x0101:0x0091 socket:1 imc:1 rank:0 bg:1 ba:3 row:0x16a3d col:0x3f8");
  ASSERT_TRUE(d->check(*e, b).ok());
  mce::McEventFields f = mc_event_fields(*e, b);
  EXPECT_EQ(f.error_type, 1u);
  EXPECT_EQ(f.error_count, 2u);
  EXPECT_EQ(f.mc_index, 3u);
  EXPECT_EQ(f.lower_layer, -1);
  EXPECT_EQ(f.msg, "memory read error");
  mce::EdacError edac = mce::decode_mc_event(f);
  EXPECT_EQ(edac.type, mce::EdacErrorType::kUncorrected);
  EXPECT_EQ(edac.count, 2u);
  EXPECT_EQ(edac.grain, 32u);
  EXPECT_EQ(edac.syndrome, 0x1234u);
  EXPECT_EQ(edac.lower_layer, std::nullopt);
  EXPECT_EQ(edac.location.socket, 1u);
  EXPECT_EQ(edac.location.controller, 1u);
  EXPECT_EQ(edac.location.channel, 1u);
  EXPECT_EQ(edac.location.row, 0x16a3du);
  EXPECT_EQ(edac.location.column, 0x3f8u);
  EXPECT_EQ(edac.location.address, 0x8a6c1a00u);
}

TEST(TraceDecoder, PrintFormatAsTheKernelWroteIt) {
  auto d = decoder_for(fixture_tracing());
  const TraceEvent* e = d->event(kMceId);
  ASSERT_NE(e, nullptr);
  Bytes raw = mce_payload(0x9c00000000010135ULL, 4, 2);
  std::string out;
  d->print_fmt(*e, raw, 2, out);
  EXPECT_EQ(out,
            "CPU: 2, MCGc/s: 1000c14/5, MC4: 9c00000000010135, IPID: 0000000000000000, "
            "ADDR/MISC/SYND: 000000001234f000/0000000000000086/0000000000000000, "
            "RIP: 10:<ffffffff81234567>, TSC: 8d3a5c1f2, PROCESSOR: 0:50654, TIME: 1764770012, "
            "SOCKET: 0, APIC: 4");
}

// A tracefs like the fixture's, but with mce_record as newer kernels have
// it: ppin and microcode after cpuvendor.
class NewerMceFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("events/header_page", "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n");
    dir_.write("events/header_event", "# compressed entry header\n");
    std::string format =
        "name: mce_record\nID: 113\nformat:\n"
        "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
        "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
        "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
        "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
        "\tfield:u64 status;\toffset:8;\tsize:8;\tsigned:0;\n"
        "\tfield:u8 bank;\toffset:16;\tsize:1;\tsigned:0;\n"
        "\tfield:u64 ppin;\toffset:24;\tsize:8;\tsigned:0;\n"
        "\tfield:u32 microcode;\toffset:32;\tsize:4;\tsigned:0;\n\n"
        "print fmt: \"MC%d: %016Lx, PPIN: %llx, MICROCODE: %x\", REC->bank, REC->status, "
        "REC->ppin, REC->microcode\n";
    dir_.write("events/mce/mce_record/format", format);
    dir_.write("events/mce/mce_record/id", "113\n");
  }
  testing::TempDir dir_;
};

TEST_F(NewerMceFormat, OptionalFieldsShowWhenPresent) {
  auto d = decoder_for(fixture_tracing(dir_.path()));
  const TraceEvent* e = d->event(kMceId);
  ASSERT_NE(e, nullptr);
  Bytes raw(36, 0);
  put<uint16_t>(raw, 0, 113);
  put<uint64_t>(raw, 8, 0xbe00000000000150ULL);
  put<uint8_t>(raw, 16, 1);
  put<uint64_t>(raw, 24, 0x1122334455667788ULL);
  put<uint32_t>(raw, 32, 0x2006e05);
  ASSERT_TRUE(d->check(*e, raw).ok());
  EXPECT_EQ(TraceDecoder::number(*e, raw, "ppin"), 0x1122334455667788ULL);
  EXPECT_EQ(TraceDecoder::number(*e, raw, "microcode"), 0x2006e05u);
  std::string out;
  d->print_fmt(*e, raw, 0, out);
  EXPECT_EQ(out, "MC1: be00000000000150, PPIN: 1122334455667788, MICROCODE: 2006e05");
}

TEST(TraceDecoder, UnknownPrintFunctionGivesTheRawFields) {
  testing::TempDir dir;
  dir.write("events/header_page", "");
  dir.write("events/header_event", "");
  dir.write("events/x/y/format",
            "name: y\nID: 900\nformat:\n"
            "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
            "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
            "\tfield:int value;\toffset:8;\tsize:4;\tsigned:1;\n"
            "\tfield:char name[8];\toffset:12;\tsize:8;\tsigned:0;\n"
            "\tfield:void * where;\toffset:24;\tsize:8;\tsigned:0;\n\n"
            "print fmt: \"%s\", __no_such_print_function(REC->value)\n");
  dir.write("events/x/y/id", "900\n");
  sys::Tree tree(dir.path());
  std::vector<Tracepoint> tps = {{"x", "y", 900}};
  auto built = build_tracing_data(tree, tps, 4096);
  ASSERT_TRUE(built.ok()) << built.error().message();
  auto parsed = parse_tracing_data(*built);
  ASSERT_TRUE(parsed.ok());
  auto d = decoder_for(*parsed);
  const TraceEvent* e = d->event(900);
  ASSERT_NE(e, nullptr);
  Bytes raw(32, 0);
  put<uint16_t>(raw, 0, 900);
  put<int32_t>(raw, 8, -7);
  std::memcpy(raw.data() + 12, "abc", 3);
  put<uint64_t>(raw, 24, 0xffff8880deadbeefULL);
  std::string out;
  d->print_fmt(*e, raw, 0, out);
  EXPECT_EQ(out, "value=-7 name=abc where=0xffff8880deadbeef");
}

TEST(TraceDecoder, ShortPayloadIsRefusedWithSizes) {
  auto d = decoder_for(fixture_tracing());
  const TraceEvent* e = d->event(kMceId);
  ASSERT_NE(e, nullptr);
  Bytes raw = mce_payload(1, 0, 0);
  raw.resize(60);
  Status s = d->check(*e, raw);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("60 bytes"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("107"), std::string::npos) << s.error().message();
}

TEST(JsonWriter, StringsAsDumpJsonWritesThem) {
  for (std::string s : {std::string("plain"), std::string("q\"b\\s"), std::string("\n\t\x01"),
                        std::string("caf\xc3\xa9"), std::string("bad\xff\xfe"), std::string()}) {
    std::string mine;
    append_json_string(mine, s);
    EXPECT_EQ(mine, dump_json(json(s))) << s;
  }
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.key("a");
  w.number(1);
  w.key("b");
  w.begin_array();
  w.hex(0x9c00000000010135ULL);
  w.signed_number(-1);
  w.end_array();
  w.key("c");
  w.begin_object();
  w.end_object();
  w.end_object();
  EXPECT_EQ(out, R"({"a":1,"b":["0x9c00000000010135",-1],"c":{}})");
}

// report's path of the one TIME grammar: seconds on the records' clock
// always; the wall-clock forms (ISO time, date, duration before now) only
// with a clock pair, which moves them onto the records' clock.
TEST(ReportTime, SecondsAndWallClock) {
  constexpr uint64_t kNow = 1764774300000000000ULL;  // 2025-12-03T15:05:00Z
  // 2025-12-03T14:05:00Z at 100000 s on the records' clock.
  const sys::ClockPair wall{
      .clockid = 1, .wall_ns = 1764770700000000000ULL, .clock_ns = 100000000000000ULL};
  struct Case {
    const char* text;
    bool with_wall;
    uint64_t ns;  // on the records' clock
  };
  const Case cases[] = {
      {"18970.883561", false, 18970883561000ULL},
      {"5", false, 5000000000ULL},
      {"5.", false, 5000000000ULL},
      {"18970.883561", true, 18970883561000ULL},  // seconds are never converted
      {"2025-12-03T14:05:01Z", true, 100001000000000ULL},
      {"2025-12-03T15:05:01.5+01:00", true, 100001500000000ULL},
      {"2025-12-03", true, 49300000000000ULL},  // 14:05 before
      {"2025-12-02", true, 0},                  // before the clock's zero: from its start
      {"1h", true, 100000000000000ULL},
      {"59m", true, 100060000000000ULL},
      {"90s", true, 103510000000000ULL},
      {"0s", true, 103600000000000ULL},
      {"999999999999999999d", true, 0},
  };
  for (const Case& c : cases) {
    auto t = parse_report_time(c.text, kNow, c.with_wall ? std::optional(wall) : std::nullopt);
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.error().message();
    EXPECT_EQ(*t, c.ns) << c.text;
  }
  struct Bad {
    const char* text;
    bool with_wall;
    const char* message;
  };
  const Bad bad[] = {
      {"5.x", true, "'5.x' is not a time: give an ISO 8601 time"},
      {"5.1234567891", true, "at most nine digits after the point"},
      {"", true, "is not a time"},
      {"yesterday", true, "or seconds on the records' clock as the lines show them"},
      {"2026-12-03T14:05:00Z", false, "is a wall-clock time, but the records' clock cannot be"},
      {"2026-12-03", false, "is a wall-clock time"},
      {"24h", false, "is a wall-clock time"},
      {"2026-02-30", true, "there is no day 2026-02-30"},
      {"2026-12-03T25:00:00Z", true, "there is no time of day 25:00:00"},
  };
  for (const Bad& b : bad) {
    auto t = parse_report_time(b.text, kNow, b.with_wall ? std::optional(wall) : std::nullopt);
    ASSERT_FALSE(t.ok()) << b.text;
    EXPECT_EQ(t.error().kind(), ErrorKind::kUsage) << b.text;
    EXPECT_NE(t.error().message().find(b.message), std::string::npos)
        << b.text << ": " << t.error().message();
  }
  EXPECT_EQ(format_wall_time(wall.to_wall(100001000000001ULL)), "2025-12-03T14:05:01.000000001Z");
}

TEST(ReportOptions, SortKeysAndSeveritiesAreChecked) {
  auto keys = parse_sort_keys("cpu, time");
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ(*keys, (std::vector<SortKey>{SortKey::kCpu, SortKey::kTime}));
  auto bad = parse_sort_keys("cpu,tiem");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kUsage);
  EXPECT_NE(bad.error().message().find("'tiem'"), std::string::npos);
  auto severities = parse_severity_list("fatal,srar");
  ASSERT_TRUE(severities.ok());
  EXPECT_EQ(*severities,
            (std::vector<mce::MceSeverity>{mce::MceSeverity::kFatal, mce::MceSeverity::kSrar}));
  auto unknown = parse_severity_list("fatal,bad");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("'bad'; the severities are invalid,corrected"),
            std::string::npos)
      << unknown.error().message();
}

// perf.data from report/'s writer: one mce_record event, samples laid out
// as the kernel writes them (RAW payload padded).
class MceFile : public ::testing::Test {
 protected:
  sys::EventAttr attr() const {
    sys::EventAttr a;
    a.attr.type = PERF_TYPE_TRACEPOINT;
    a.attr.size = sizeof(perf_event_attr);
    a.attr.config = kMceId;
    a.attr.sample_period = 1;
    a.attr.sample_type =
        PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW | PERF_SAMPLE_PERIOD;
    return a;
  }

  void append_sample(Bytes& records, Bytes payload, uint64_t time, uint32_t cpu) {
    std::vector<uint8_t> padded = sys::pad_raw(payload);
    sys::Sample s;
    s.pid = 0;
    s.tid = 0;
    s.time = time;
    s.cpu = cpu;
    s.period = 1;
    s.raw = padded;
    sys::encode_sample(attr().attr, s, PERF_RECORD_MISC_KERNEL, records);
  }

  std::string write(const Bytes& records) {
    WriterConfig config;
    config.events.push_back({attr(), "mce:mce_record", {}});
    config.tracefs_root = fixture_tracefs();
    config.side_band = SideBand::kNever;
    config.page_size = 4096;
    HostInfo host;
    config.host = host;
    std::string path = dir_.path("mce.data");
    auto writer = PerfDataWriter::create_file(path, std::move(config));
    EXPECT_TRUE(writer.ok()) << writer.error().message();
    EXPECT_TRUE((*writer)->append(records).ok());
    EXPECT_TRUE((*writer)->finish().ok());
    return path;
  }

  Result<ReportStats> run(const std::string& path, const ReportOptions& options) {
    out_.str("");
    err_.str("");
    return report_file(path, options, out_, err_);
  }

  testing::TempDir dir_;
  std::ostringstream out_, err_;
};

TEST_F(MceFile, JsonLinePerRecordInTimeOrder) {
  Bytes records;
  append_sample(records, mce_payload(0xbd80000000100134ULL, 4, 2), 2000, 2);
  append_sample(records, mce_payload(0x9c00000000010135ULL, 1, 0), 1000, 0);
  std::string path = write(records);
  ReportOptions options;
  options.json = true;
  auto stats = run(path, options);
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  EXPECT_EQ(stats->records, 2u);
  EXPECT_EQ(stats->bad, 0u);
  std::istringstream lines(out_.str());
  std::vector<json> objects;
  for (std::string line; std::getline(lines, line);) {
    auto j = parse_json(line, "a report line");
    ASSERT_TRUE(j.ok()) << line;
    objects.push_back(*j);
  }
  ASSERT_EQ(objects.size(), 2u) << out_.str();
  EXPECT_EQ(objects[0]["time"], 1000);
  EXPECT_EQ(objects[0]["cpu"], 0);
  EXPECT_EQ(objects[0]["event"], "mce:mce_record");
  EXPECT_EQ(objects[0]["fields"]["status"], "0x9c00000000010135");
  EXPECT_EQ(objects[0]["fields"]["bank"], 1);
  EXPECT_FALSE(objects[0]["fields"].contains("ppin"));
  EXPECT_FALSE(objects[0].contains("wall_time"));  // no clock data
  EXPECT_EQ(objects[1]["time"], 2000);
  EXPECT_EQ(objects[1]["fields"]["addr"], "0x1234f000");
  EXPECT_EQ(objects[1]["fields"]["cpu"], 2);
}

TEST_F(MceFile, TruncatedRecordIsNamedAndTheNextOneStillDecoded) {
  Bytes records;
  append_sample(records, mce_payload(0x9c00000000010135ULL, 1, 0), 1000, 0);
  size_t bad_at = records.size();
  Bytes cut = mce_payload(0x9c00000000010135ULL, 2, 1);
  cut.resize(40);
  append_sample(records, cut, 1500, 1);
  append_sample(records, mce_payload(0x9c00000000010135ULL, 3, 1), 2000, 1);
  std::string path = write(records);
  auto stats = run(path, ReportOptions{});
  ASSERT_TRUE(stats.ok()) << stats.error().message();
  EXPECT_EQ(stats->records, 2u);
  EXPECT_EQ(stats->bad, 1u);
  ASSERT_TRUE(final_error(*stats).has_value());
  std::string out = out_.str();
  EXPECT_NE(out.find("MC1:"), std::string::npos) << out;
  EXPECT_NE(out.find("MC3:"), std::string::npos) << out;
  EXPECT_EQ(out.find("MC2:"), std::string::npos) << out;
  // The data section starts after the header, ids and attrs; the message
  // names the record's own offset, which lies bad_at bytes into it.
  std::string err = err_.str();
  EXPECT_NE(err.find("record at offset "), std::string::npos) << err;
  // 40 bytes of payload, padded (as perf pads PERF_SAMPLE_RAW) so that the
  // u32 size and the data end on a u64 boundary: 44.
  EXPECT_NE(err.find("44 bytes, but the format's fields need 107"), std::string::npos) << err;
  size_t at = err.find("record at offset ") + std::strlen("record at offset ");
  uint64_t offset = std::stoull(err.substr(at));
  auto reread = PerfDataReader::read_file(path);
  ASSERT_TRUE(reread.ok());
  EXPECT_EQ(offset, reread->file_header().data.offset + bad_at);
}

TEST_F(MceFile, FiltersSummaryAndSort) {
  Bytes records;
  append_sample(records, mce_payload(1, 1, 0), 1000, 0);
  append_sample(records, mce_payload(2, 2, 1), 1500, 1);
  append_sample(records, mce_payload(3, 3, 1), 3000000000ULL, 1);
  std::string path = write(records);

  ReportOptions cpu1;
  cpu1.cpus = std::vector<int>{1};
  cpu1.until = "2";
  ASSERT_TRUE(run(path, cpu1).ok());
  EXPECT_EQ(out_.str().find("MC1:"), std::string::npos);
  EXPECT_NE(out_.str().find("MC2:"), std::string::npos);
  EXPECT_EQ(out_.str().find("MC3:"), std::string::npos) << "after --until";

  ReportOptions summary;
  summary.summary = true;
  ASSERT_TRUE(run(path, summary).ok());
  EXPECT_NE(out_.str().find("         1    0  mce:mce_record"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("         2    1  mce:mce_record"), std::string::npos) << out_.str();

  ReportOptions by_cpu;
  by_cpu.sort = {SortKey::kCpu};
  by_cpu.json = true;
  ASSERT_TRUE(run(path, by_cpu).ok());
  std::string out = out_.str();
  EXPECT_LT(out.find("\"cpu\":0"), out.find("\"cpu\":1")) << out;
}

// --severity keeps the machine checks of those classes only; --summary
// counts them (mce/tally.h: per severity, bank, CPU, socket, error class).
// The three statuses are SDM classes with MCG_CAP.SER_P set (the payload's
// mcgcap 0x1000c14), each on socket 0:
// 0x9000000000000134 corrected (UC=0), a cache error (data read, L1);
// 0xbd000000000000c2 SRAO (UC=1 PCC=0 S=1 AR=0), a memory-controller scrub;
// 0xbe00000000000150 fatal (UC=1 PCC=1), a cache error (instruction fetch).
TEST_F(MceFile, SeverityFilterAndMceSummary) {
  Bytes records;
  append_sample(records, mce_payload(0x9000000000000134ULL, 1, 0), 1000, 0);
  append_sample(records, mce_payload(0xbd000000000000c2ULL, 9, 1), 2000, 1);
  append_sample(records, mce_payload(0xbe00000000000150ULL, 1, 0), 3000, 0);
  std::string path = write(records);

  ReportOptions action;
  action.json = true;
  action.severities = {mce::MceSeverity::kSrao, mce::MceSeverity::kFatal};
  ASSERT_TRUE(run(path, action).ok());
  std::vector<std::string> kept;
  std::istringstream lines(out_.str());
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    kept.push_back(j["mce"]["status"].get<std::string>() + " " +
                   j["mce"]["severity"].get<std::string>());
  }
  EXPECT_EQ(kept, (std::vector<std::string>{"0xbd000000000000c2 srao", "0xbe00000000000150 fatal"}))
      << out_.str();

  ReportOptions summary;
  summary.summary = true;
  summary.json = true;
  ASSERT_TRUE(run(path, summary).ok());
  EXPECT_EQ(out_.str(),
            R"({"summary":{"records":3,"shown":3,"bad_records":0,)"
            R"("events":[{"event":"mce:mce_record","cpu":0,"count":2},)"
            R"({"event":"mce:mce_record","cpu":1,"count":1}],)"
            R"("mce":{"records":3,)"
            R"("severities":[{"severity":"corrected","count":1},{"severity":"srao","count":1},)"
            R"({"severity":"fatal","count":1}],)"
            R"("banks":[{"bank":1,"count":2},{"bank":9,"count":1}],)"
            R"("cpus":[{"cpu":0,"count":2},{"cpu":1,"count":1}],)"
            R"("sockets":[{"socket":0,"count":3}],)"
            R"("error_classes":[{"error_class":"cache","count":2},)"
            R"({"error_class":"memory-controller","count":1}]}}})"
            "\n");

  summary.json = false;
  ASSERT_TRUE(run(path, summary).ok());
  EXPECT_EQ(out_.str(),
            "# records per event and CPU\n#\n#    count  cpu  event\n"
            "         2    0  mce:mce_record\n"
            "         1    1  mce:mce_record\n"
            "#\n# 3 machine checks\n"
            "#\n# machine checks per severity\n#\n#    count  severity\n"
            "         1  corrected\n         1  srao\n         1  fatal\n"
            "#\n# machine checks per bank\n#\n#    count  bank\n"
            "         2  1\n         1  9\n"
            "#\n# machine checks per CPU\n#\n#    count  cpu\n"
            "         2  0\n         1  1\n"
            "#\n# machine checks per socket\n#\n#    count  socket\n"
            "         3  0\n"
            "#\n# machine checks per error class\n#\n#    count  class\n"
            "         2  cache\n         1  memory-controller\n"
            "#\n# 3 records shown of 3 decoded; 0 could not be decoded\n");
}

TEST_F(MceFile, FileWithoutTracingDataIsRefused) {
  ReportOptions options;
  auto stats = run("/nonexistent/perf.data", options);
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.error().message().find("/nonexistent/perf.data"), std::string::npos);
}

}  // namespace
}  // namespace pp::report

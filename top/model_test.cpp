// What top shows, from records built here in the layouts the kernel writes:
// the MCE view from the fixture's mce_record format (severities, banks,
// classes, CPUs, the last ten newest first, the bad ones highlighted), the
// tracepoint tables (default and chosen keys, the filter), the symbols
// view through a fake SymbolSource, rates, losses, zeroing, the overview
// and the JSON object.
#include "top/model.h"

#include <cstring>
#include <gtest/gtest.h>
#include <map>

#include "base/json.h"
#include "report/tracing_data.h"
#include "sys/perf_abi_sample.h"
#include "tests/support/test_env.h"

namespace pp::top {
namespace {

constexpr uint64_t kMceId = 113;   // the fixture's events/mce/mce_record/id
constexpr uint64_t kAerId = 1224;  // events/ras/aer_event/id
constexpr uint64_t kSampleType = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW;

template <typename T>
void put(report::Bytes& b, size_t offset, T v) {
  if (b.size() < offset + sizeof(T))
    b.resize(offset + sizeof(T));
  std::memcpy(b.data() + offset, &v, sizeof(T));
}

// An mce_record payload in the 6.1 layout (the format file's offsets).
report::Bytes mce_payload(uint64_t status, uint8_t bank, uint32_t cpu) {
  report::Bytes b(107, 0);
  put<uint16_t>(b, 0, uint16_t(kMceId));
  put<uint64_t>(b, 8, 0x1000c14);  // mcgcap: SER_P, CMCI_P, TES_P
  put<uint64_t>(b, 16, 0x5);       // mcgstatus: RIPV MCIP
  put<uint64_t>(b, 24, status);
  put<uint64_t>(b, 32, 0x1234f000);  // addr
  put<uint32_t>(b, 88, cpu);
  put<uint8_t>(b, 105, bank);
  return b;
}

// An aer_event payload: __data_loc dev_name at 8, status at 12, severity at 16.
report::Bytes aer_payload(const std::string& dev, uint32_t status, uint8_t severity) {
  report::Bytes b(36, 0);
  put<uint16_t>(b, 0, uint16_t(kAerId));
  put<int32_t>(b, 4, 77);
  put<uint32_t>(b, 8, uint32_t(36) | (uint32_t(dev.size() + 1) << 16));
  put<uint32_t>(b, 12, status);
  put<uint8_t>(b, 16, severity);
  b.resize(36 + dev.size() + 1, 0);
  std::memcpy(b.data() + 36, dev.data(), dev.size());
  return b;
}

sys::EventAttr tracepoint_attr(uint64_t id) {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_TRACEPOINT;
  a.attr.size = sizeof(perf_event_attr);
  a.attr.config = id;
  a.attr.sample_type = kSampleType;
  return a;
}

sys::EventAttr cpu_clock_attr() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_SOFTWARE;
  a.attr.size = sizeof(perf_event_attr);
  a.attr.config = PERF_COUNT_SW_CPU_CLOCK;
  a.attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;
  return a;
}

void append_sample(const sys::EventAttr& attr, const report::Bytes& payload, uint32_t pid,
                   uint64_t time, uint32_t cpu, report::Bytes& out, uint64_t ip = 0,
                   uint16_t misc = PERF_RECORD_MISC_KERNEL) {
  sys::Sample s;
  s.ip = ip;
  s.pid = s.tid = pid;
  s.time = time;
  s.cpu = cpu;
  s.period = 1;
  report::Bytes raw = sys::pad_raw(payload);
  s.raw = raw;
  sys::encode_sample(attr.attr, s, misc, out);
}

class TopModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sys::Tree tree(testing::fixtures_dir() + "/tracefs-debian-6.1");
    std::vector<report::Tracepoint> tps = {{"mce", "mce_record", kMceId},
                                           {"ras", "aer_event", kAerId}};
    auto built = report::build_tracing_data(tree, tps, 4096);
    ASSERT_TRUE(built.ok()) << built.error().message();
    auto parsed = report::parse_tracing_data(*built);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message();
    auto d = report::TraceDecoder::create(*parsed, /*plugins=*/false);
    ASSERT_TRUE(d.ok()) << d.error().message();
    decoder_ = std::move(*d);
  }

  TopEvent event(std::string text, std::string name, sys::EventAttr attr) const {
    TopEvent e;
    e.text = std::move(text);
    e.name = std::move(name);
    e.attr = attr;
    e.kind = top_kind_for(attr, e.name);
    e.cpus = {0, 1};
    e.buffer_bytes = uint64_t(512) * 1024;
    return e;
  }

  std::unique_ptr<report::TraceDecoder> decoder_;
};

std::string all_text(const std::vector<TopLine>& lines) {
  std::string text;
  for (const TopLine& l : lines)
    text += l.text + "\n";
  return text;
}

TEST_F(TopModelTest, KindsFollowTheAttr) {
  EXPECT_EQ(top_kind_for(tracepoint_attr(kMceId), "mce:mce_record"), TopKind::kMce);
  EXPECT_EQ(top_kind_for(tracepoint_attr(kAerId), "ras:aer_event"), TopKind::kTracepoint);
  EXPECT_EQ(top_kind_for(cpu_clock_attr(), "cpu-clock"), TopKind::kSymbols);
  sys::EventAttr counting = tracepoint_attr(kAerId);
  counting.attr.sample_type = PERF_SAMPLE_TID;
  EXPECT_EQ(top_kind_for(counting, "ras:aer_event"), TopKind::kCount);
}

// Twelve machine checks of four severities on two CPUs and three banks.
TEST_F(TopModelTest, MceViewCountsAndTheLastTenNewestFirst) {
  sys::EventAttr attr = tracepoint_attr(kMceId);
  TopModel model({event("persistent/mce/", "mce:mce_record", attr)}, decoder_.get(), nullptr);
  struct Rec {
    uint64_t status;
    uint8_t bank;
    uint32_t cpu;
  };
  const Rec recs[] = {
      {0x9c00000000010135, 4, 0},  // corrected (cache class), x6
      {0x9c00000000010135, 4, 1},  {0x9c00000000010135, 4, 0},
      {0x9c00000000010135, 4, 1},  {0x9c00000000010135, 4, 0},
      {0x9c00000000010135, 4, 1},  {0xbc0000000000009f, 17, 0},  // ucna (memory controller), x2
      {0xbc0000000000009f, 17, 1}, {0xbd000000000001c0, 1, 0},   // srao
      {0xbd80000000100134, 1, 1},                                // srar
      {0xbe00000000000e0b, 1, 0},                                // fatal (simple: I/O error), x2
      {0xbe00000000000e0b, 1, 1},
  };
  for (size_t i = 0; i < std::size(recs); ++i) {
    report::Bytes b;
    append_sample(attr, mce_payload(recs[i].status, recs[i].bank, recs[i].cpu), 0,
                  1000000000ULL * (i + 1), recs[i].cpu, b);
    model.records(0, int(recs[i].cpu), b);
  }
  model.refresh(1);
  EXPECT_EQ(model.total(0), 12u);
  EXPECT_EQ(model.undecodable(0), 0u);

  nlohmann::ordered_json j = model.json(TopView{});
  const auto& mce = j["events"][0]["mce"];
  // The counts are the machine-check tally's object (mce/tally.h), then "last".
  nlohmann::ordered_json counts = mce;
  counts.erase("last");
  EXPECT_EQ(
      dump_json(counts),
      R"({"records":12,)"
      R"("severities":[{"severity":"corrected","count":6},{"severity":"ucna","count":2},)"
      R"({"severity":"srao","count":1},{"severity":"srar","count":1},)"
      R"({"severity":"fatal","count":2}],)"
      R"("banks":[{"bank":1,"count":4},{"bank":4,"count":6},{"bank":17,"count":2}],)"
      R"("cpus":[{"cpu":0,"count":6},{"cpu":1,"count":6}],)"
      R"("sockets":[{"socket":0,"count":12}],)"
      R"("error_classes":[{"error_class":"cache","count":8},)"
      R"({"error_class":"memory-controller","count":2},{"error_class":"simple","count":2}]})");
  ASSERT_EQ(mce["last"].size(), kTopLastMce);
  // Newest first: the twelfth record (fatal, CPU 1) leads; the first two are gone.
  EXPECT_EQ(mce["last"][0]["time"], 12000000000ULL);
  EXPECT_EQ(mce["last"][0]["cpu"], 1);
  EXPECT_EQ(mce["last"][0]["decoded"]["severity"], "fatal");
  EXPECT_EQ(mce["last"][9]["time"], 3000000000ULL);

  std::vector<TopLine> lines = model.render(TopView{});
  std::string text = all_text(lines);
  EXPECT_NE(text.find("\n  severity  corrected=6  ucna=2  srao=1  srar=1  fatal=2\n"
                      "  bank      1=4  4=6  17=2\n"
                      "  cpu       0=6  1=6\n"
                      "  socket    0=12\n"
                      "  class     cache=8  memory-controller=2  simple=2\n"
                      "  last 10 (newest first)\n"),
            std::string::npos)
      << text;
  // The fatal, srar, srao and ucna lines are highlighted, the corrected not.
  size_t highlighted = 0, corrected = 0;
  for (const TopLine& l : lines) {
    if (l.text.find(", status 0x") == std::string::npos)
      continue;
    if (l.text.find(": corrected,") != std::string::npos) {
      corrected++;
      EXPECT_FALSE(l.highlight) << l.text;
    } else {
      highlighted++;
      EXPECT_TRUE(l.highlight) << l.text;
    }
  }
  EXPECT_EQ(highlighted, 6u);
  EXPECT_EQ(corrected, 4u);
  EXPECT_NE(text.find("12.000000 CPU 1 bank 1: fatal, simple, status 0xbe00000000000e0b"),
            std::string::npos)
      << text;

  // The filter keeps the tables to what matches; totals count everything.
  ASSERT_TRUE(model.set_filter("severity>=srao").ok());
  for (size_t i = 0; i < std::size(recs); ++i) {
    report::Bytes b;
    append_sample(attr, mce_payload(recs[i].status, recs[i].bank, recs[i].cpu), 0,
                  1000000000ULL * (i + 13), recs[i].cpu, b);
    model.records(0, int(recs[i].cpu), b);
  }
  j = model.json(TopView{});
  EXPECT_EQ(j["events"][0]["total"], 24);
  EXPECT_EQ(j["events"][0]["counted"], 4);
  EXPECT_EQ(j["events"][0]["filtered"], 8);
  EXPECT_EQ(dump_json(j["events"][0]["mce"]["severities"]),
            R"([{"severity":"srao","count":1},{"severity":"srar","count":1},)"
            R"({"severity":"fatal","count":2}])");
}

TEST_F(TopModelTest, TracepointTableByDefaultKeyThenChosenKeys) {
  sys::EventAttr attr = tracepoint_attr(kAerId);
  TopModel model({event("persistent/aer/", "ras:aer_event", attr)}, decoder_.get(), nullptr);
  // The first string field groups by default.
  EXPECT_EQ(model.sort_text(0), "dev_name");
  auto feed = [&](const std::string& dev, uint8_t severity, int times) {
    for (int i = 0; i < times; ++i) {
      report::Bytes b;
      append_sample(attr, aer_payload(dev, 0x40, severity), 77, 1, 0, b);
      model.records(0, 0, b);
    }
  };
  feed("0000:00:1c.0", 2, 3);
  feed("0000:03:00.0", 1, 1);
  nlohmann::ordered_json j = model.json(TopView{});
  const auto& top = j["events"][0]["top"];
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0]["values"]["dev_name"], "0000:00:1c.0");
  EXPECT_EQ(top[0]["count"], 3);
  EXPECT_EQ(top[1]["count"], 1);
  std::string text = all_text(model.render(TopView{}));
  EXPECT_NE(text.find("           3   75.00%  0000:00:1c.0"), std::string::npos) << text;

  // Two keys; the table starts again.
  ASSERT_TRUE(model.set_sort("severity,dev_name").ok());
  feed("0000:00:1c.0", 2, 2);
  feed("0000:03:00.0", 1, 5);
  feed("0000:00:1c.0", 1, 1);
  j = model.json(TopView{});
  EXPECT_EQ(j["events"][0]["sort"], nlohmann::ordered_json::parse(R"(["severity","dev_name"])"));
  const auto& rows = j["events"][0]["top"];
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["values"],
            nlohmann::ordered_json::parse(R"({"severity":"1","dev_name":"0000:03:00.0"})"));
  EXPECT_EQ(rows[0]["count"], 5);
  EXPECT_EQ(rows[1]["count"], 2);
  EXPECT_EQ(rows[2]["count"], 1);

  // -n keeps the rows.
  TopView two;
  two.rows = 2;
  EXPECT_EQ(model.json(two)["events"][0]["top"].size(), 2u);

  // A key no event has: a usage error that lists the fields.
  Status bad = model.set_sort("prev_comm");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kUsage);
  EXPECT_NE(bad.error().message().find("ras:aer_event has dev_name status severity"),
            std::string::npos)
      << bad.error().message();
  // The pseudo keys every event has.
  ASSERT_TRUE(model.set_sort("pid").ok());
  feed("x", 0, 4);
  EXPECT_EQ(model.json(TopView{})["events"][0]["top"][0]["values"]["pid"], "77");
  EXPECT_FALSE(model.set_filter("no_such==1").ok());
}

// A RAS tracepoint's table is followed by its last records decoded,
// newest first (mce/ras_events.h), in the text and under "ras_last".
TEST_F(TopModelTest, RasTracepointShowsItsLastRecordsDecoded) {
  sys::EventAttr attr = tracepoint_attr(kAerId);
  TopModel model({event("persistent/aer/", "ras:aer_event", attr)}, decoder_.get(), nullptr);
  for (int i = 0; i < 12; ++i) {
    report::Bytes b;
    // Completion Timeout, non-fatal; the newest a fatal Poisoned TLP.
    bool last = i == 11;
    append_sample(
        attr,
        aer_payload(last ? "0000:03:00.0" : "0000:00:1c.0", last ? 0x1000 : 0x4000, last ? 1 : 0),
        77, uint64_t(i + 1) * 1000000000, 0, b);
    model.records(0, 0, b);
  }
  nlohmann::ordered_json j = model.json(TopView{});
  const auto& last = j["events"][0]["ras_last"];
  ASSERT_EQ(last.size(), kTopLastMce);
  EXPECT_EQ(last[0]["time"], 12000000000u);
  EXPECT_EQ(last[0]["decoded"]["severity"], "fatal");
  EXPECT_EQ(last[0]["decoded"]["status_bits"][0], "Poisoned TLP");
  EXPECT_EQ(last[1]["decoded"]["aer_severity"], "non-fatal");
  std::string text = all_text(model.render(TopView{}));
  EXPECT_NE(text.find("last 10 decoded (newest first)\n"
                      "  12.000000 CPU 0: PCIe AER fatal on 0000:03:00.0: Poisoned TLP\n"
                      "    status 0x00001000, TLP header not available\n"),
            std::string::npos)
      << text;
}

class TableSymbols final : public SymbolSource {
 public:
  SymbolHit resolve(int32_t pid, uint64_t ip, bool kernel) override {
    calls++;
    if (kernel)
      return {"schedule", "[kernel.kallsyms]", true};
    if (pid == 42 && ip >= 0x1000 && ip < 0x2000)
      return {"busy_loop", "/usr/bin/busy", false};
    return {"[unknown]", "[unknown]", false};
  }
  void forget(int32_t) override {}
  int calls = 0;
};

// The filter's fields are those of the events shown: top's own for their
// kinds, then the formats'; a machine check's decoding as watch has it.
TEST_F(TopModelTest, TheFilterTakesTheFieldsOfTheEventsShown) {
  sys::EventAttr aer = tracepoint_attr(kAerId);
  TopModel only_aer({event("persistent/aer/", "ras:aer_event", aer)}, decoder_.get(), nullptr);
  Status bad = only_aer.set_filter("dev_name ~ 1c || error_class ~ cache");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kUsage);
  EXPECT_EQ(bad.error().message(),
            "--filter 'dev_name ~ 1c || error_class ~ cache': at column 18: unknown field "
            "'error_class'; the fields are: pid, tid, cpu, comm, dev_name, status, severity, "
            "tlp_header_valid, tlp_header\n"
            "  dev_name ~ 1c || error_class ~ cache\n"
            "                   ^");
  Status from_key = only_aer.set_filter("sym ~ x", "filter");
  ASSERT_FALSE(from_key.ok());
  EXPECT_EQ(
      from_key.error().message().rfind("filter 'sym ~ x': at column 1: unknown field 'sym'", 0), 0u)
      << from_key.error().message();
  // Without a machine check shown, aer_event's severity is its number.
  ASSERT_TRUE(only_aer.set_filter("severity >= 2").ok());
  auto feed = [&](TopModel& model, uint8_t severity) {
    report::Bytes b;
    append_sample(aer, aer_payload("0000:00:1c.0", 0x40, severity), 77, 1, 0, b);
    model.records(0, 0, b);
  };
  feed(only_aer, 1);
  feed(only_aer, 2);
  EXPECT_EQ(only_aer.json(TopView{})["events"][0]["counted"], 1);

  // With one, severity is a machine check's, by rank.
  sys::EventAttr mce = tracepoint_attr(kMceId);
  TopModel both({event("persistent/aer/", "ras:aer_event", aer),
                 event("persistent/mce/", "mce:mce_record", mce)},
                decoder_.get(), nullptr);
  Status number = both.set_filter("severity >= 2");
  ASSERT_FALSE(number.ok());
  EXPECT_NE(number.error().message().find("unknown severity '2'; least to most severe: invalid"),
            std::string::npos)
      << number.error().message();
  auto mce_sample = [&](uint64_t status, uint8_t bank) {
    report::Bytes b;
    append_sample(mce, mce_payload(status, bank, 1), 0, 1, 1, b);
    both.records(1, 1, b);
  };
  auto counted = [&] { return both.json(TopView{})["events"][1]["counted"].get<uint64_t>(); };
  struct Case {
    const char* filter;
    uint64_t status;
    uint8_t bank;
    bool counted;
  } cases[] = {
      {"severity >= ucna", 0xbe00000000000e0b, 1, true},
      {"severity >= ucna", 0x9000000000000134, 1, false},
      // A traced record was survived: never a panic (the kernel panics
      // before it traces), an uncorrected error the kernel lived through.
      {"kernel_severity == panic", 0xbe00000000000e0b, 1, false},
      {"kernel_severity == uc", 0xbe00000000000e0b, 1, true},
      {"error_class == cache && class == cache", 0x9000000000000134, 1, true},
      {"error_class ~ cache || bank == 7", 0x9000000000000091, 7, true},
      {"error_class ~ cache || bank == 7", 0x9000000000000091, 6, false},
      {"status_bits ~ PCC", 0xbe00000000000e0b, 1, true},
      {"status_bits ~ PCC", 0x9000000000000134, 1, false},
      {"status ~ 0xbe", 0xbe00000000000e0b, 1, true},
      {"status > 0xbd00000000000000 && addr == 0x1234f000", 0xbe00000000000e0b, 1, true},
  };
  for (const Case& c : cases) {
    ASSERT_TRUE(both.set_filter(c.filter).ok()) << c.filter;
    mce_sample(c.status, c.bank);
    EXPECT_EQ(counted(), c.counted ? 1u : 0u) << c.filter << " on " << std::hex << c.status;
  }
  // The aer samples have no such fields: left out.
  ASSERT_TRUE(both.set_filter("error_class ~ cache || bank == 7").ok());
  feed(both, 1);
  EXPECT_EQ(both.json(TopView{})["events"][0]["counted"], 0);
  EXPECT_EQ(both.json(TopView{})["events"][0]["filtered"], 1);
}

TEST_F(TopModelTest, SymbolsHottestFirstWithKernelMarks) {
  sys::EventAttr attr = cpu_clock_attr();
  TableSymbols symbols;
  TopModel model({event("persistent/cc/", "cpu-clock", attr)}, decoder_.get(), &symbols);
  report::Bytes b;
  for (int i = 0; i < 7; ++i)
    append_sample(attr, {}, 42, 1, 0, b, 0x1000 + uint64_t(i), PERF_RECORD_MISC_USER);
  for (int i = 0; i < 2; ++i)
    append_sample(attr, {}, 0, 1, 0, b, 0xffffffff81000000ULL, PERF_RECORD_MISC_KERNEL);
  append_sample(attr, {}, 43, 1, 0, b, 0x5000, PERF_RECORD_MISC_USER);
  model.records(0, 1, b);
  EXPECT_EQ(symbols.calls, 10);
  nlohmann::ordered_json j = model.json(TopView{});
  const auto& rows = j["events"][0]["symbols"];
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["symbol"], "busy_loop");
  EXPECT_EQ(rows[0]["count"], 7);
  EXPECT_DOUBLE_EQ(rows[0]["percent"].get<double>(), 70.0);
  EXPECT_EQ(rows[1]["symbol"], "schedule");
  EXPECT_EQ(rows[1]["kernel"], true);
  std::string text = all_text(model.render(TopView{}));
  EXPECT_NE(text.find("70.00%           7  busy               [.] busy_loop"), std::string::npos)
      << text;
  EXPECT_NE(text.find("[k] schedule"), std::string::npos) << text;
  ASSERT_TRUE(model.set_filter("sym==busy_loop").ok());
  model.records(0, 1, b);
  EXPECT_EQ(model.json(TopView{})["events"][0]["symbols"].size(), 1u);
}

TEST_F(TopModelTest, RatesLossesZeroAndTheOverview) {
  sys::EventAttr aer = tracepoint_attr(kAerId);
  sys::EventAttr mce = tracepoint_attr(kMceId);
  TopModel model({event("persistent/aer/", "ras:aer_event", aer),
                  event("persistent/mce/", "mce:mce_record", mce)},
                 decoder_.get(), nullptr);
  model.set_detailed(std::nullopt);  // the overview: counted only
  model.refresh(1000000000ULL);
  report::Bytes b;
  for (int i = 0; i < 50; ++i)
    append_sample(aer, aer_payload("d", 1, 1), 1, 1, 1, b);
  model.records(0, 1, b);
  // A PERF_RECORD_LOST in the stream (id, lost) and an overwrite the reader saw.
  report::Bytes lost(24, 0);
  put<uint32_t>(lost, 0, PERF_RECORD_LOST);
  put<uint16_t>(lost, 6, 24);
  put<uint64_t>(lost, 16, 3);
  model.records(0, 0, lost);
  model.lost(0, 0, 4);
  model.set_fill(0, 1, 0.25);
  model.set_readers(0, 2);
  model.refresh(1500000000ULL);  // half a second later

  TopView overview;
  overview.overview = true;
  nlohmann::ordered_json j = model.json(overview);
  EXPECT_EQ(j["interval"], 0.5);
  const auto& e = j["events"][0];
  EXPECT_EQ(e["total"], 50);
  EXPECT_EQ(e["lost"], 7);
  EXPECT_EQ(e["rate"], 100.0);
  EXPECT_EQ(e["readers"], 2);
  EXPECT_EQ(e["fill"], 0.25);
  EXPECT_EQ(e["cpus"][1]["total"], 50);
  EXPECT_EQ(e["cpus"][0]["lost"], 7);
  EXPECT_FALSE(e.contains("top"));  // not detailed: no table was kept
  EXPECT_EQ(j["events"][1]["total"], 0);

  overview.per_cpu = true;
  std::string text = all_text(model.render(overview));
  EXPECT_NE(text.find("persistent/aer/  ras:aer_event          100            50           7"
                      "        2    25%"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  cpu 1"), std::string::npos) << text;

  model.zero();
  EXPECT_EQ(model.total(0), 0u);
  EXPECT_EQ(model.lost_total(0), 0u);
}

TEST_F(TopModelTest, AShortRecordIsCountedAsUndecodable) {
  sys::EventAttr attr = tracepoint_attr(kMceId);
  TopModel model({event("persistent/mce/", "mce:mce_record", attr)}, decoder_.get(), nullptr);
  report::Bytes b;
  report::Bytes cut = mce_payload(0x9c00000000010135, 4, 0);
  cut.resize(40);  // the format needs 107 bytes
  append_sample(attr, cut, 0, 1, 0, b);
  model.records(0, 0, b);
  EXPECT_EQ(model.total(0), 1u);
  EXPECT_EQ(model.undecodable(0), 1u);
  EXPECT_NE(all_text(model.render(TopView{})).find("1 samples could not be decoded"),
            std::string::npos);
}

}  // namespace
}  // namespace pp::top

#include "watch/prometheus.h"

#include <dirent.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "mce/decode.h"
#include "report/trace_decoder.h"
#include "report/tracing_data.h"
#include "sys/tree.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::watch {
namespace {

constexpr uint64_t kStartNs = 1796285030500000000ull;  // 2026-12-03T08:03:50.5Z

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> dir_entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (!d)
    return names;
  while (dirent* e = readdir(d))
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
      names.push_back(e->d_name);
  closedir(d);
  return names;
}

WatchRecord tracepoint_record(const std::string& event, int cpu, uint64_t wall_ns) {
  WatchRecord r;
  r.event = event;
  r.tracepoint = "syscalls:sys_enter_getppid";
  r.cpu = cpu;
  r.pid = r.tid = 100;
  r.wall_ns = wall_ns;
  r.key = event + std::to_string(wall_ns);
  return r;
}

WatchRecord mce_record(Origin origin, uint64_t status, uint32_t bank, uint32_t cpu,
                       uint64_t wall_ns, std::optional<uint64_t> mcgcap = std::nullopt) {
  WatchRecord r;
  r.origin = origin;
  r.event = origin == Origin::kLive ? "mce_record" : "";
  r.tracepoint = "mce:mce_record";
  r.cpu = origin == Origin::kLive ? int32_t(cpu) : -1;
  r.wall_ns = wall_ns;
  mce::MceRegisters regs;
  regs.status = status;
  regs.bank = bank;
  regs.cpu = cpu;
  regs.addr = 0x5678000;
  regs.mcgcap = mcgcap;
  r.mce = mce::decode_mce(regs);
  r.key = "mce-" + std::to_string(status) + "-" + std::to_string(wall_ns);
  return r;
}

Status feed(PrometheusFile& p, const WatchRecord& r) {
  return p.record(r, record_json(r));
}

std::unique_ptr<PrometheusFile> open_in(const testing::TempDir& dir, uint64_t interval_ms = 10000) {
  PrometheusOptions o;
  o.path = dir.path("perf-persistent.prom");
  o.interval_ms = interval_ms;
  o.start_wall_ns = kStartNs;
  o.version = "1.2.3";
  o.commit = "0123456789ab";
  auto p = PrometheusFile::open(o);
  EXPECT_TRUE(p.ok()) << p.error().message();
  return p.ok() ? std::move(p).value() : nullptr;
}

// The known load: 1000 getppid records on CPU 0 (CPU 1 watched, idle), 3
// machine checks (a corrected one live, a fatal one from pstore, an SRAR one
// live), 7 samples lost on CPU 1.
void known_load(PrometheusFile& p) {
  p.add_event("getppid", {0, 1});
  p.add_event("mce_record", {0, 1, 2});
  p.set_broker_up(true);
  for (int i = 0; i < 1000; i++)
    ASSERT_TRUE(feed(p, tracepoint_record("getppid", 0, kStartNs + uint64_t(i) * 1000000)).ok());
  ASSERT_TRUE(
      feed(p, mce_record(Origin::kLive, 0x9400000000000091, 2, 1, kStartNs + 2000000000)).ok());
  ASSERT_TRUE(feed(p, mce_record(Origin::kPstore, 0xbe00000000000150, 1, 0, 0)).ok());
  ASSERT_TRUE(
      feed(p, mce_record(Origin::kLive, 0xbd80000000100134, 3, 2, kStartNs + 3000000000, 0x1000c14))
          .ok());
  LostNotice lost;
  lost.event = "getppid";
  lost.cpu = 1;
  lost.records = 7;
  ASSERT_TRUE(p.lost(lost).ok());
}

constexpr const char* kKnownLoadText =
    R"(# HELP perf_persistent_records_total Records the watcher read from a persistent event's buffer, per CPU, counted over its history (from its start without one).
# TYPE perf_persistent_records_total counter
perf_persistent_records_total{event="getppid",cpu="0"} 1000
perf_persistent_records_total{event="getppid",cpu="1"} 0
perf_persistent_records_total{event="mce_record",cpu="0"} 0
perf_persistent_records_total{event="mce_record",cpu="1"} 1
perf_persistent_records_total{event="mce_record",cpu="2"} 1
# HELP perf_persistent_samples_lost_total Samples a persistent event's buffer overwrote before the watcher read them, per CPU, counted over its history (from its start without one).
# TYPE perf_persistent_samples_lost_total counter
perf_persistent_samples_lost_total{event="getppid",cpu="0"} 0
perf_persistent_samples_lost_total{event="getppid",cpu="1"} 7
perf_persistent_samples_lost_total{event="mce_record",cpu="0"} 0
perf_persistent_samples_lost_total{event="mce_record",cpu="1"} 0
perf_persistent_samples_lost_total{event="mce_record",cpu="2"} 0
# HELP perf_persistent_machine_checks_total Machine checks counted over the watcher's history (from its start without one), by decoded severity, bank, MCA error class, CPU and origin (live buffer, kmsg: this boot's kernel log, pstore: a previous boot's).
# TYPE perf_persistent_machine_checks_total counter
perf_persistent_machine_checks_total{mce_severity="corrected",bank="2",error_class="memory-controller",cpu="1",origin="live"} 1
perf_persistent_machine_checks_total{mce_severity="fatal",bank="1",error_class="cache",cpu="0",origin="pstore"} 1
perf_persistent_machine_checks_total{mce_severity="srar",bank="3",error_class="cache",cpu="2",origin="live"} 1
# HELP perf_persistent_machine_checks_by_severity_total Machine checks counted over the watcher's history (from its start without one), by decoded severity; every severity is present from the start.
# TYPE perf_persistent_machine_checks_by_severity_total counter
perf_persistent_machine_checks_by_severity_total{mce_severity="corrected"} 1
perf_persistent_machine_checks_by_severity_total{mce_severity="deferred"} 0
perf_persistent_machine_checks_by_severity_total{mce_severity="fatal"} 1
perf_persistent_machine_checks_by_severity_total{mce_severity="invalid"} 0
perf_persistent_machine_checks_by_severity_total{mce_severity="srao"} 0
perf_persistent_machine_checks_by_severity_total{mce_severity="srar"} 1
perf_persistent_machine_checks_by_severity_total{mce_severity="ucna"} 0
perf_persistent_machine_checks_by_severity_total{mce_severity="uncorrected"} 0
# HELP perf_persistent_last_record_timestamp_seconds Wall-clock time of the newest record of a persistent event.
# TYPE perf_persistent_last_record_timestamp_seconds gauge
perf_persistent_last_record_timestamp_seconds{event="getppid"} 1796285031.499
perf_persistent_last_record_timestamp_seconds{event="mce_record"} 1796285033.5
# HELP perf_persistent_last_machine_check_timestamp_seconds Wall-clock time of the newest machine check of a severity.
# TYPE perf_persistent_last_machine_check_timestamp_seconds gauge
perf_persistent_last_machine_check_timestamp_seconds{mce_severity="corrected"} 1796285032.5
perf_persistent_last_machine_check_timestamp_seconds{mce_severity="srar"} 1796285033.5
# HELP perf_persistent_broker_up 1 when the broker that holds the persistent events answers, else 0.
# TYPE perf_persistent_broker_up gauge
perf_persistent_broker_up 1
# HELP perf_persistent_watch_up 1 while perf persistent watch runs; 0 in the file it leaves when it stops.
# TYPE perf_persistent_watch_up gauge
perf_persistent_watch_up 1
# HELP perf_persistent_watch_start_time_seconds Wall-clock time perf persistent watch started (the counters count from it only when it keeps no history).
# TYPE perf_persistent_watch_start_time_seconds gauge
perf_persistent_watch_start_time_seconds 1796285030.5
# HELP perf_persistent_build_info Always 1; the labels say which perf-persistent wrote the file (its version and the source revision it was built from).
# TYPE perf_persistent_build_info gauge
perf_persistent_build_info{version="1.2.3",commit="0123456789ab"} 1
)";

TEST(PrometheusFile, KnownLoadGivesExactText) {
  testing::TempDir dir;
  auto p = open_in(dir);
  ASSERT_TRUE(p);
  known_load(*p);
  EXPECT_EQ(p->text(), kKnownLoadText);
  ASSERT_TRUE(p->tick(1000, false).ok());
  EXPECT_EQ(read_file(dir.path("perf-persistent.prom")), kKnownLoadText);
}

// EDAC's records count per DIMM, by the label the kernel gives, and type.
TEST(PrometheusFile, MemoryErrorsPerDimm) {
  testing::TempDir dir;
  auto p = open_in(dir);
  ASSERT_TRUE(p);
  for (int i = 0; i < 2; i++) {
    WatchRecord r;
    r.event = "mc_event";
    r.tracepoint = "ras:mc_event";
    r.cpu = 0;
    r.fields = {{"error_type", i},         {"msg", "memory read error"},
                {"label", "CPU0_DIMM_A1"}, {"error_count", 3},
                {"mc_index", 0},           {"top_layer", 1},
                {"middle_layer", 0},       {"lower_layer", -1},
                {"address", 0x1000},       {"grain_bits", 5},
                {"syndrome", 0},           {"driver_detail", ""}};
    ASSERT_TRUE(p->record(r, record_json(r)).ok());
  }
  std::string text = p->text();
  EXPECT_NE(
      text.find("# TYPE perf_persistent_memory_errors_total counter\n"
                "perf_persistent_memory_errors_total{dimm=\"CPU0_DIMM_A1\",type=\"corrected\"} "
                "3\n"
                "perf_persistent_memory_errors_total{dimm=\"CPU0_DIMM_A1\",type=\"uncorrected\"} "
                "3\n"),
      std::string::npos)
      << text;
}

// The other RAS records count in their source's family, labelled from
// their decoding (mce/ras_events.h) as take() gets them: without the
// record's tree. promtool accepts the families (checked below with the
// rest when it is installed).
TEST(PrometheusFile, AerAndOtherRasRecordsCountByTheirLabels) {
  testing::TempDir dir;
  auto p = open_in(dir);
  ASSERT_TRUE(p);
  auto ras = [](const std::string& tp, const char* fields_text) {
    WatchRecord r;
    r.event = tp.substr(tp.find(':') + 1);
    r.tracepoint = tp;
    r.cpu = 0;
    r.ras = mce::decode_ras_event(
        tp, mce::ras_fields_from_json(nlohmann::ordered_json::parse(fields_text)));
    return r;
  };
  WatchRecord aer =
      ras("ras:aer_event", R"({"dev_name":"0000:01:00.0","status":16384,"severity":0})");
  for (int i = 0; i < 2; i++)
    ASSERT_TRUE(p->take(aer, RecordJson(aer)).ok());
  WatchRecord corrected =
      ras("ras:aer_event", R"({"dev_name":"0000:01:00.0","status":1,"severity":2})");
  ASSERT_TRUE(p->take(corrected, RecordJson(corrected)).ok());
  WatchRecord failure = ras("ras:memory_failure_event", R"({"pfn":4660,"type":13,"result":3})");
  ASSERT_TRUE(p->take(failure, RecordJson(failure)).ok());
  std::string text = p->text();
  EXPECT_NE(text.find("# TYPE perf_persistent_aer_errors_total counter\n"
                      "perf_persistent_aer_errors_total{device=\"0000:01:00.0\",aer_severity="
                      "\"corrected\"} 1\n"
                      "perf_persistent_aer_errors_total{device=\"0000:01:00.0\",aer_severity="
                      "\"non-fatal\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("perf_persistent_memory_failures_total{page_type=\"dirty LRU page\","
                      "result=\"Recovered\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("perf_persistent_cxl_events_total"), std::string::npos)
      << "a family appears with its first record";
}

// A live ras:mc_event record, as the watcher feeds it: its fields are in
// the payload alone (record.fields empty), and take() still counts its
// errors on its DIMM. The payload is the 6.1 layout of the fixture's
// events/ras/mc_event/format.
TEST(PrometheusFile, LiveMemoryErrorsCountFromThePayload) {
  constexpr uint64_t kMcEventId = 1227;
  sys::Tree tree(testing::fixtures_dir() + "/tracefs-debian-6.1");
  std::vector<report::Tracepoint> tps = {{"ras", "mc_event", kMcEventId}};
  auto built = report::build_tracing_data(tree, tps, 4096);
  ASSERT_TRUE(built.ok()) << built.error().message();
  auto parsed = report::parse_tracing_data(*built);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  auto decoder = report::TraceDecoder::create(*parsed, /*plugins=*/false);
  ASSERT_TRUE(decoder.ok()) << decoder.error().message();
  const report::TraceEvent* event = (*decoder)->event(kMcEventId);
  ASSERT_NE(event, nullptr);
  std::vector<uint8_t> raw(60, 0);
  auto put = [&](size_t offset, auto v) { std::memcpy(raw.data() + offset, &v, sizeof(v)); };
  auto add_string = [&](size_t loc, const std::string& text) {
    size_t offset = raw.size();
    raw.insert(raw.end(), text.begin(), text.end());
    raw.push_back(0);
    put(loc, uint32_t((text.size() + 1) << 16 | offset));
  };
  put(0, uint16_t(kMcEventId));
  put(8, uint32_t(0));   // corrected
  put(20, uint16_t(3));  // error_count
  put(25, int8_t(-1));   // lower_layer
  add_string(12, "memory read error");
  add_string(16, "CPU0_DIMM_A1");
  add_string(56, "");
  ASSERT_TRUE((*decoder)->check(*event, raw).ok());

  testing::TempDir dir;
  auto p = open_in(dir);
  ASSERT_TRUE(p);
  WatchRecord r;
  r.event = "mc_event";
  r.tracepoint = "ras:mc_event";
  r.cpu = 0;
  r.pid = r.tid = 0;
  r.key = "live:mc";
  ASSERT_TRUE(p->take(r, RecordJson(r, *event, raw)).ok());
  EXPECT_NE(
      p->text().find(
          "perf_persistent_memory_errors_total{dimm=\"CPU0_DIMM_A1\",type=\"corrected\"} 3\n"),
      std::string::npos)
      << p->text();
}

// A history's lost samples and memory errors start their counters, as its
// records and machine checks do.
TEST(PrometheusFile, SeedStartsLostSamplesAndMemoryErrors) {
  testing::TempDir dir;
  auto p = open_in(dir);
  ASSERT_TRUE(p);
  HistoryTotals totals;
  totals.lost.push_back({"mce_record", 1, 4});
  totals.lost.push_back({"mce_record", std::nullopt, 2});
  totals.mc_events.push_back({R"({"error_type":1,"label":"CPU0_DIMM_A1","error_count":3})", 2});
  p->seed(totals);
  std::string text = p->text();
  EXPECT_NE(text.find("perf_persistent_samples_lost_total{event=\"mce_record\",cpu=\"1\"} 4\n"
                      "perf_persistent_samples_lost_total{event=\"mce_record\",cpu=\"unknown\"} "
                      "2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("perf_persistent_memory_errors_total{dimm=\"CPU0_DIMM_A1\",type="
                      "\"uncorrected\"} 6\n"),
            std::string::npos)
      << text;
}

// The six RAS families survive a restart: a watch that counted records
// live, and one that starts over the history those records went to, write
// the same text (the records' own counters and gauges seeded as well).
TEST(PrometheusFile, RestartOverTheHistoryKeepsTheRasCounts) {
  testing::TempDir dir;
  std::string db = dir.path("history.db");
  auto ras = [](const std::string& tp, const char* fields_text, int i) {
    WatchRecord r;
    r.event = tp.substr(tp.find(':') + 1);
    r.tracepoint = tp;
    r.cpu = i % 2;
    r.wall_ns = kStartNs + uint64_t(i) * 1000000000;
    r.key = "live:" + r.event + ":" + std::to_string(i);
    r.fields = nlohmann::ordered_json::parse(fields_text);
    r.ras = mce::decode_ras_event(tp, mce::ras_fields_from_json(r.fields));
    return r;
  };
  std::vector<WatchRecord> records;
  records.reserve(10);
  for (int i = 0; i < 3; i++)
    records.push_back(
        ras("ras:aer_event", R"({"dev_name":"0000:01:00.0","status":16384,"severity":0})", i));
  records.push_back(
      ras("ras:aer_event", R"({"dev_name":"0000:01:00.0","status":1,"severity":2})", 3));
  records.push_back(ras("ras:memory_failure_event", R"({"pfn":4660,"type":13,"result":3})", 4));
  records.push_back(ras("ras:memory_failure_event", R"({"pfn":4661,"type":13,"result":3})", 5));
  records.push_back(ras("ras:arm_event", R"({"affinity":0,"mpidr":0,"midr":0,"sev":2})", 6));
  records.push_back(ras("ras:non_standard_event",
                        R"({"sec_type":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16],"sev":0,)"
                        R"("len":0,"buf":[]})",
                        7));
  records.push_back(
      ras("ras:extlog_mem_event", R"({"sev":2,"etype":2,"pa":"0x1000","data":[]})", 8));
  records.push_back(ras("cxl:cxl_general_media", R"({"memdev":"mem0","log":3,"dpa":"0x4000"})", 9));
  for (const WatchRecord& r : records)
    ASSERT_TRUE(r.ras) << r.tracepoint << " was not decoded";

  auto live = open_in(dir);
  ASSERT_TRUE(live);
  {
    auto h = History::open(db, HistoryOptions{});
    ASSERT_TRUE(h.ok()) << h.error().message();
    for (const WatchRecord& r : records) {
      ASSERT_TRUE(live->take(r, RecordJson(r)).ok());
      ASSERT_TRUE((*h)->take(r, RecordJson(r)).ok());
    }
    ASSERT_TRUE((*h)->tick(0, true).ok());
  }
  std::string before = live->text();
  const std::string failures = std::string("perf_persistent_memory_failures_total{") +
                               "page_type=\"dirty LRU page\",result=\"Recovered\"} 2\n";
  for (const std::string& family :
       {std::string("perf_persistent_aer_errors_total{device=\"0000:01:00.0\",aer_severity=\"non-"
                    "fatal\"} 3\n"),
        failures, std::string("perf_persistent_arm_errors_total{"),
        std::string("perf_persistent_vendor_errors_total{"),
        std::string("perf_persistent_extlog_memory_errors_total{"),
        std::string("perf_persistent_cxl_events_total{")})
    EXPECT_NE(before.find(family), std::string::npos) << family << " missing in:\n" << before;

  // The restart: a new history and file, seeded from what the first holds.
  auto h = History::open(db, HistoryOptions{});
  ASSERT_TRUE(h.ok()) << h.error().message();
  auto totals = (*h)->totals();
  ASSERT_TRUE(totals.ok()) << totals.error().message();
  testing::TempDir dir2;
  auto restarted = open_in(dir2);
  ASSERT_TRUE(restarted);
  restarted->seed(*totals);
  EXPECT_EQ(restarted->text(), before);
  // A record the history already holds is not fed again (History::contains
  // stops it before the sinks), so nothing is counted twice: the next new
  // record moves one series by one.
  WatchRecord next =
      ras("ras:aer_event", R"({"dev_name":"0000:01:00.0","status":16384,"severity":0})", 10);
  ASSERT_TRUE(restarted->take(next, RecordJson(next)).ok());
  EXPECT_NE(restarted->text().find("perf_persistent_aer_errors_total{device=\"0000:01:00.0\","
                                   "aer_severity=\"non-fatal\"} 4\n"),
            std::string::npos)
      << restarted->text();
}

TEST(PrometheusFile, PromtoolAcceptsTheFile) {
  if (access("/usr/bin/promtool", X_OK) != 0) {
    if (getenv("CI"))
      FAIL() << "/usr/bin/promtool is missing (Debian package prometheus); CI must have it";
    GTEST_SKIP() << "/usr/bin/promtool is missing: install Debian's prometheus package to lint "
                    "the metrics file";
  }
  testing::TempDir dir;
  auto p = open_in(dir);
  ASSERT_TRUE(p);
  known_load(*p);
  WatchRecord aer;
  aer.event = "aer_event";
  aer.tracepoint = "ras:aer_event";
  aer.ras = mce::decode_ras_event(
      "ras:aer_event", mce::ras_fields_from_json(nlohmann::ordered_json::parse(
                           R"({"dev_name":"0000:01:00.0","status":16384,"severity":1})")));
  ASSERT_TRUE(p->take(aer, RecordJson(aer)).ok());
  // A label value that needs escaping.
  p->add_event("odd\"name\\with\nnewline", {5});
  ASSERT_TRUE(p->tick(0, true).ok());
  std::string text = read_file(dir.path("perf-persistent.prom"));
  testing::CommandOptions o;
  o.input = text;
  auto r = testing::run_command({"/usr/bin/promtool", "check", "metrics"}, o);
  EXPECT_EQ(r.status, 0) << r.out << r.err << "\n" << text;
  EXPECT_EQ(r.out + r.err, "");
}

TEST(PrometheusFile, WritesAtomicallyWithMode0644AndNoTempLeft) {
  testing::TempDir dir;
  auto p = open_in(dir);
  ASSERT_TRUE(p);
  EXPECT_TRUE(dir_entries(dir.path()).empty()) << "open() writes nothing";
  ASSERT_TRUE(p->tick(500, false).ok());
  struct stat st {};
  ASSERT_EQ(stat(dir.path("perf-persistent.prom").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(dir_entries(dir.path()), std::vector<std::string>{"perf-persistent.prom"});
}

TEST(PrometheusFile, WritesEveryIntervalAndAtFinal) {
  testing::TempDir dir;
  auto p = open_in(dir, 10000);
  ASSERT_TRUE(p);
  std::string path = dir.path("perf-persistent.prom");
  p->add_event("getppid", {0});
  ASSERT_TRUE(p->tick(100, false).ok());  // the first tick writes
  EXPECT_NE(read_file(path).find("records_total{event=\"getppid\",cpu=\"0\"} 0\n"),
            std::string::npos);
  ASSERT_TRUE(feed(*p, tracepoint_record("getppid", 0, kStartNs)).ok());
  ASSERT_TRUE(p->tick(10099, false).ok());  // not yet an interval
  EXPECT_NE(read_file(path).find("cpu=\"0\"} 0\n"), std::string::npos);
  ASSERT_TRUE(p->tick(10100, false).ok());
  EXPECT_NE(read_file(path).find("records_total{event=\"getppid\",cpu=\"0\"} 1\n"),
            std::string::npos);
  EXPECT_NE(read_file(path).find("\nperf_persistent_watch_up 1\n"), std::string::npos);
  ASSERT_TRUE(p->tick(10200, true).ok());  // final: at once, watch_up 0
  EXPECT_NE(read_file(path).find("\nperf_persistent_watch_up 0\n"), std::string::npos);
}

TEST(PrometheusFile, SeriesSortNumbersAsNumbers) {
  testing::TempDir dir;
  auto p = open_in(dir);
  ASSERT_TRUE(p);
  p->add_event("e", {10, 2, 1});
  std::string t = p->text();
  size_t one = t.find("cpu=\"1\"}"), two = t.find("cpu=\"2\"}"), ten = t.find("cpu=\"10\"}");
  ASSERT_NE(ten, std::string::npos);
  EXPECT_LT(one, two);
  EXPECT_LT(two, ten);
}

TEST(PrometheusFile, BrokerDownIsZero) {
  testing::TempDir dir;
  auto p = open_in(dir);
  ASSERT_TRUE(p);
  p->set_broker_up(false);
  EXPECT_NE(p->text().find("\nperf_persistent_broker_up 0\n"), std::string::npos);
}

TEST(PrometheusFile, OpenRefusesNamesTheCollectorIgnores) {
  testing::TempDir dir;
  for (const char* name : {"metrics.txt", ".hidden.prom", "prom"}) {
    PrometheusOptions o;
    o.path = dir.path(name);
    auto p = PrometheusFile::open(o);
    ASSERT_FALSE(p.ok()) << name;
    EXPECT_EQ(p.error().kind(), ErrorKind::kUsage) << name;
    EXPECT_NE(p.error().message().find(".prom"), std::string::npos) << p.error().message();
  }
}

TEST(PrometheusFile, OpenNamesADirectoryItCannotWrite) {
  testing::TempDir dir;
  PrometheusOptions o;
  o.path = dir.path("missing/perf-persistent.prom");
  auto p = PrometheusFile::open(o);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind(), ErrorKind::kOutput);
  EXPECT_NE(p.error().message().find(dir.path("missing")), std::string::npos)
      << p.error().message();

  dir.write("file", "");
  o.path = dir.path("file/perf-persistent.prom");
  p = PrometheusFile::open(o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find(dir.path("file")), std::string::npos) << p.error().message();
}

TEST(PrometheusFile, WriteFailureIsAnOutputErrorNamingTheFile) {
  testing::TempDir dir;
  dir.mkdir("d");
  PrometheusOptions o;
  o.path = dir.path("d/x.prom");
  o.start_wall_ns = kStartNs;
  auto p = PrometheusFile::open(o);
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(rmdir(dir.path("d").c_str()), 0);
  Status s = (*p)->tick(0, false);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kOutput);
  EXPECT_NE(s.error().message().find(o.path), std::string::npos) << s.error().message();
}

TEST(PrometheusLabels, EscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(escape_label_value("plain"), "plain");
}

}  // namespace
}  // namespace pp::watch

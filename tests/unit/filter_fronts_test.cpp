// One filter language, two front ends: `top --filter` and `watch --match`
// decide alike. The same raw mce_record samples (Debian 6.1's layout, the
// fixture's format) go through top's model, as top's session hands them
// in, and through the decoding watch's watcher does (the record's JSON, as
// every sink and trigger sees it); each expression must take the same
// samples in both. Then the program itself: both commands accept the
// expression, and refuse a broken one with the same message.
#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "base/json.h"
#include "mce/decode.h"
#include "report/trace_decoder.h"
#include "report/trace_report.h"
#include "report/tracing_data.h"
#include "sys/perf_abi_sample.h"
#include "sys/tree.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"
#include "top/model.h"
#include "watch/match.h"
#include "watch/record.h"

namespace pp::testing {
namespace {

constexpr uint64_t kMceId = 113;  // the fixture's events/mce/mce_record/id
constexpr uint64_t kSampleType =
    PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;

struct Check {
  uint8_t bank;
  uint64_t status;
  uint32_t cpu;
  const char* error_class;  // what mce/ calls its MCA error code
};

// Banks and error classes of every kind, two of them uncorrected.
constexpr Check kChecks[] = {
    {7, 0x9000000000000091, 0, "memory-controller"},  // bank 7
    {1, 0x9000000000000134, 1, "cache"},              // L1 data load
    {3, 0xbd0000000000017a, 0, "cache"},              // L3 writeback, action optional
    {4, 0x9000000000000091, 1, "memory-controller"},  // neither
    {7, 0xbe00000000000e0b, 1, "simple"},             // bank 7, fatal I/O error
    {2, 0x0000000000000000, 0, "simple"},             // no error
    {5, 0x9000000000000011, 1, "tlb"},                // neither
    {9, 0x9000000000000c0f, 0, "bus"},                // neither
};

// What `error_class ~ cache || bank == 7` takes of kChecks.
constexpr bool kCacheOrBank7[] = {true, true, true, false, true, false, false, false};

template <typename T>
void put(std::vector<uint8_t>& b, size_t offset, T v) {
  std::memcpy(b.data() + offset, &v, sizeof(T));
}

std::vector<uint8_t> mce_payload(const Check& c) {
  std::vector<uint8_t> b(107, 0);
  put<uint16_t>(b, 0, uint16_t(kMceId));
  put<uint64_t>(b, 8, 0x1000c14);  // mcgcap: SER_P, CMCI_P, TES_P
  put<uint64_t>(b, 16, 0x5);       // mcgstatus: RIPV MCIP
  put<uint64_t>(b, 24, c.status);
  put<uint64_t>(b, 32, 0x1234f000);  // addr
  put<uint32_t>(b, 88, c.cpu);
  put<uint8_t>(b, 105, c.bank);
  return b;
}

sys::EventAttr mce_attr() {
  sys::EventAttr a;
  a.attr.type = PERF_TYPE_TRACEPOINT;
  a.attr.size = sizeof(perf_event_attr);
  a.attr.config = kMceId;
  a.attr.sample_type = kSampleType;
  return a;
}

class FilterFronts : public ::testing::Test {
 protected:
  void SetUp() override {
    sys::Tree tree(fixtures_dir() + "/tracefs-debian-6.1");
    std::vector<report::Tracepoint> tps = {{"mce", "mce_record", kMceId}};
    auto built = report::build_tracing_data(tree, tps, 4096);
    ASSERT_TRUE(built.ok()) << built.error().message();
    auto parsed = report::parse_tracing_data(*built);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message();
    auto d = report::TraceDecoder::create(*parsed, /*plugins=*/false);
    ASSERT_TRUE(d.ok()) << d.error().message();
    decoder_ = std::move(*d);
  }

  // top: the model counts a sample in its tables when the filter takes it.
  Result<std::vector<bool>> top_takes(const std::string& expr) {
    top::TopEvent e;
    e.text = "persistent/mce_record/";
    e.name = "mce:mce_record";
    e.attr = mce_attr();
    e.kind = top::top_kind_for(e.attr, e.name);
    e.cpus = {0, 1};
    top::TopModel model({e}, decoder_.get(), nullptr);
    PP_RETURN_IF_ERROR(model.set_filter(expr));
    std::vector<bool> taken;
    for (const Check& c : kChecks) {
      uint64_t before = model.json(top::TopView{})["events"][0]["counted"].get<uint64_t>();
      sys::Sample s;
      s.pid = s.tid = 0;
      s.time = 1;
      s.cpu = c.cpu;
      std::vector<uint8_t> raw = sys::pad_raw(mce_payload(c));
      s.raw = raw;
      std::vector<uint8_t> record;
      sys::encode_sample(e.attr.attr, s, PERF_RECORD_MISC_KERNEL, record);
      model.records(0, int(c.cpu), record);
      taken.push_back(model.json(top::TopView{})["events"][0]["counted"].get<uint64_t>() ==
                      before + 1);
    }
    return taken;
  }

  // watch: the record's JSON as the watcher builds it from a sample.
  nlohmann::ordered_json watch_record(const Check& c) const {
    std::vector<uint8_t> raw = mce_payload(c);
    const report::TraceEvent* te = decoder_->event_of(raw);
    EXPECT_NE(te, nullptr);
    watch::WatchRecord r;
    r.event = "mce_record";
    r.tracepoint = te->name;
    r.time = 1;
    r.cpu = int32_t(c.cpu);
    r.pid = r.tid = 0;
    r.fields = report::fields_json(*te, raw);
    r.mce = mce::decode_mce(report::mce_registers(*te, raw), mce::CpuVendor::kUnknown,
                            mce::MceOrigin::kTracepoint);
    r.key = "k";
    return watch::record_json(r);
  }

  Result<std::vector<bool>> watch_takes(const std::string& expr) {
    PP_ASSIGN_OR_RETURN(filter::Expression match, watch::parse_match(expr));
    std::vector<bool> taken;
    for (const Check& c : kChecks)
      taken.push_back(watch::record_matches(match, watch_record(c)));
    return taken;
  }

  std::unique_ptr<report::TraceDecoder> decoder_;
};

TEST_F(FilterFronts, TheRecordsAreWhatTheTableSays) {
  for (const Check& c : kChecks) {
    nlohmann::ordered_json j = watch_record(c);
    EXPECT_EQ(j["mce"]["error_class"], c.error_class) << j.dump();
    EXPECT_EQ(j["mce"]["bank"], c.bank) << j.dump();
  }
}

TEST_F(FilterFronts, CacheOrBankSevenTakesTheSameSamplesInBoth) {
  const std::string expr = "error_class ~ cache || bank == 7";
  auto top = top_takes(expr);
  ASSERT_TRUE(top.ok()) << top.error().message();
  auto watch = watch_takes(expr);
  ASSERT_TRUE(watch.ok()) << watch.error().message();
  std::vector<bool> expected(std::begin(kCacheOrBank7), std::end(kCacheOrBank7));
  EXPECT_EQ(*top, expected);
  EXPECT_EQ(*watch, expected);
  // top's alias says the same.
  auto alias = top_takes("class ~ cache || bank == 7");
  ASSERT_TRUE(alias.ok()) << alias.error().message();
  EXPECT_EQ(*alias, expected);
}

TEST_F(FilterFronts, EveryExpressionBothUnderstandDecidesAlike) {
  const char* expressions[] = {
      "bank == 7",
      "bank != 7",
      "!(bank == 7)",
      "error_class == cache",
      "error_class ~ '*cache'",
      "error_class ~ memory || error_class ~ tlb",
      "severity >= ucna",
      "severity == corrected && bank < 5",
      "severity ~ rr",
      "status > 0x9000000000000100",
      "status == 0xbe00000000000e0b",
      "status ~ 0x9",
      "status ~ '*e0b'",
      "status_bits ~ PCC",
      "status_bits != UC",
      "kernel_severity >= ar",
      "addr == 0x1234f000 && cpu == 1",
      "addr ~ 1234f",
      "(bank >= 3 && bank <= 7) || cpu == 1 && !(error_class == simple)",
      "mcgcap == 0x1000c14 && mcgstatus == 5",
      "",
  };
  for (const char* expr : expressions) {
    auto top = top_takes(expr);
    ASSERT_TRUE(top.ok()) << expr << ": " << top.error().message();
    auto watch = watch_takes(expr);
    ASSERT_TRUE(watch.ok()) << expr << ": " << watch.error().message();
    EXPECT_EQ(*top, *watch) << expr;
  }
}

TEST_F(FilterFronts, BothRefuseTheSameMistakesTheSameWay) {
  for (const char* expr : {"error_class ~ cache | bank == 7", "bank = 7", "(bank == 7",
                           "severity >= awful", "error_class ~ 'cache"}) {
    auto top = top_takes(expr);
    auto watch = watch_takes(expr);
    ASSERT_FALSE(top.ok()) << expr;
    ASSERT_FALSE(watch.ok()) << expr;
    // "--filter '...': at column N: ..." and "--match '...': at column N: ...".
    std::string top_message = top.error().message(), watch_message = watch.error().message();
    EXPECT_EQ(top_message.substr(std::strlen("--filter")),
              watch_message.substr(std::strlen("--match")));
  }
}

// The program, in a private run directory with no broker: with the
// expression fine, top stops at the broker (status 8) and watch --once
// reads only the kernel's logs (none); with it broken, both stop at the
// expression (usage, 1) before asking anyone.
class FilterFrontsCli : public ::testing::Test {
 protected:
  FilterFrontsCli() { dir_.mkdir("run"); }

  CommandResult top(const std::string& expr) {
    return run_pp({"top", "--stdio", "--run-dir", dir_.path("run"), "--filter", expr});
  }
  CommandResult watch(const std::string& expr) {
    return run_pp({"watch", "--once", "--no-db", "--no-harvest", "--run-dir", dir_.path("run"),
                   "--exec", "true", "--match", expr});
  }

  TempDir dir_;
};

TEST_F(FilterFrontsCli, BothCommandsAcceptTheExpression) {
  const std::string expr = "error_class ~ cache || bank == 7";
  CommandResult t = top(expr);
  EXPECT_EQ(t.status, exit_status_of(ErrorKind::kBrokerDown)) << t.err;
  EXPECT_NE(t.err.find("the broker is not running"), std::string::npos) << t.err;
  EXPECT_EQ(t.err.find("--filter"), std::string::npos) << t.err;
  // --once without a broker reads only the kernel's logs (here none), and
  // says so: the trigger was taken.
  CommandResult w = watch(expr);
  EXPECT_EQ(w.status, 0) << w.err;
  EXPECT_NE(w.err.find("the broker is not running"), std::string::npos) << w.err;
  EXPECT_EQ(w.err.find("--match"), std::string::npos) << w.err;
}

TEST_F(FilterFrontsCli, BothCommandsRefuseABrokenOneAlike) {
  const std::string expr = "error_class ~ cache | bank == 7";
  const std::string said =
      " 'error_class ~ cache | bank == 7': at column 21: expected '&&', '||' or the end\n"
      "  error_class ~ cache | bank == 7\n"
      "                      ^\n";
  CommandResult t = top(expr);
  EXPECT_EQ(t.status, exit_status_of(ErrorKind::kUsage)) << t.err;
  EXPECT_NE(t.err.find("--filter" + said), std::string::npos) << t.err;
  CommandResult w = watch(expr);
  EXPECT_EQ(w.status, exit_status_of(ErrorKind::kUsage)) << w.err;
  EXPECT_NE(w.err.find("--match" + said), std::string::npos) << w.err;
}

}  // namespace
}  // namespace pp::testing

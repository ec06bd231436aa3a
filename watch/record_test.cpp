// RecordJson: the text written straight from a live record's payload is
// dump_json(record_json()) of the same record with its fields decoded into
// a tree, byte for byte, for every shape of the record's own keys and of the
// fields (signed and unsigned numbers, pointers, char arrays with odd
// bytes, dynamic strings); the tree is made only when asked for.
#include "watch/record.h"

#include <cstring>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "base/json.h"
#include "report/trace_decoder.h"
#include "report/trace_report.h"
#include "report/tracing_data.h"
#include "sys/tree.h"
#include "tests/support/temp_dir.h"

namespace pp::watch {
namespace {

template <typename T>
void put(std::vector<uint8_t>& b, size_t offset, T v) {
  std::memcpy(b.data() + offset, &v, sizeof(T));
}

class RecordJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("events/header_page", "");
    dir_.write("events/header_event", "");
    dir_.write("events/x/y/format",
               "name: y\nID: 900\nformat:\n"
               "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
               "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
               "\tfield:int value;\toffset:8;\tsize:4;\tsigned:1;\n"
               "\tfield:char name[8];\toffset:12;\tsize:8;\tsigned:0;\n"
               "\tfield:void * where;\toffset:24;\tsize:8;\tsigned:0;\n"
               "\tfield:u64 big;\toffset:32;\tsize:8;\tsigned:0;\n"
               "\tfield:__data_loc char[] msg;\toffset:40;\tsize:4;\tsigned:0;\n\n"
               "print fmt: \"%d\", REC->value\n");
    dir_.write("events/x/y/id", "900\n");
    sys::Tree tree(dir_.path());
    std::vector<report::Tracepoint> tps = {{"x", "y", 900}};
    auto built = report::build_tracing_data(tree, tps, 4096);
    ASSERT_TRUE(built.ok()) << built.error().message();
    auto parsed = report::parse_tracing_data(*built);
    ASSERT_TRUE(parsed.ok()) << parsed.error().message();
    auto d = report::TraceDecoder::create(*parsed, /*plugins=*/false);
    ASSERT_TRUE(d.ok()) << d.error().message();
    decoder_ = std::move(*d);
    event_ = decoder_->event(900);
    ASSERT_NE(event_, nullptr);
  }

  std::vector<uint8_t> payload(int32_t value, std::string_view name, std::string_view msg) {
    std::vector<uint8_t> raw(44 + msg.size() + 1, 0);
    put<uint16_t>(raw, 0, 900);
    put<int32_t>(raw, 4, 77);
    put<int32_t>(raw, 8, value);
    std::memcpy(raw.data() + 12, name.data(), std::min<size_t>(name.size(), 8));
    put<uint64_t>(raw, 24, 0xffff8880deadbeefULL);
    put<uint64_t>(raw, 32, ~0ULL);
    put<uint32_t>(raw, 40, uint32_t((msg.size() + 1) << 16 | 44));
    std::memcpy(raw.data() + 44, msg.data(), msg.size());
    return raw;
  }

  pp::testing::TempDir dir_;
  std::unique_ptr<report::TraceDecoder> decoder_;
  const report::TraceEvent* event_ = nullptr;
};

TEST_F(RecordJsonTest, TextFromThePayloadIsTheTreesDump) {
  std::vector<WatchRecord> records;
  WatchRecord r;
  r.event = "ev";
  r.tracepoint = "x:y";
  r.time = 123456789;
  r.wall_ns = 1796356800123456789ull;
  r.cpu = 1;
  r.pid = r.tid = 77;
  r.comm = "perf";
  r.key = "live:boot:ev:1:123456789";
  records.push_back(r);
  r.time = 0;  // no time, no wall time, unknown CPU and pid, no comm, no event
  r.wall_ns = 0;
  r.cpu = -1;
  r.pid = r.tid = -1;
  r.comm = "";
  r.event = "";
  records.push_back(r);
  r.comm = "bad\xff\"q\\\x01";  // odd bytes in the record's own strings
  r.key = "k\xfe";
  records.push_back(r);
  std::vector<std::vector<uint8_t>> payloads = {
      payload(-7, "abc", "hello"), payload(0, "12345678", ""),
      payload(2147483647, "x\xff\x01\"", "tab\there \xc3\xa9 \xfe")};
  for (const WatchRecord& base : records) {
    for (const auto& raw : payloads) {
      ASSERT_TRUE(decoder_->check(*event_, raw).ok());
      WatchRecord tree_made = base;
      tree_made.fields = report::fields_json(*event_, raw);
      std::string expected = dump_json(record_json(tree_made));
      RecordJson streamed(base, *event_, raw);
      EXPECT_EQ(streamed.text(), expected);
      EXPECT_EQ(dump_json(streamed.tree()), expected);
      EXPECT_EQ(RecordJson(tree_made).text(), expected);
    }
  }
}

TEST_F(RecordJsonTest, MachineCheckTextIsTheTreesDump) {
  WatchRecord r;
  r.event = "mce_record";
  r.tracepoint = "mce:mce_record";
  r.time = 5;
  r.cpu = 0;
  r.pid = r.tid = 0;
  r.key = "mce:1";
  mce::MceRegisters regs;
  regs.status = 0xbd000000000000c2;
  regs.bank = 9;
  r.mce = mce::decode_mce(regs);
  auto raw = payload(1, "a", "b");
  WatchRecord tree_made = r;
  tree_made.fields = report::fields_json(*event_, raw);
  RecordJson json(r, *event_, raw);
  EXPECT_EQ(json.text(), dump_json(record_json(tree_made)));
  EXPECT_NE(json.text().find("\"mce\":{"), std::string::npos);
}

}  // namespace
}  // namespace pp::watch

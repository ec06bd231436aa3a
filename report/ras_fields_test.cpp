// The RAS tracepoints' records as the kernel lays them out, by the real
// formats (tests/fixtures/tracefs-debian-6.1/events/ras/*/format, Debian
// 12's 6.1 kernel; tests/fixtures/tracefs-6.18/events/ras/, a 6.18 kernel;
// tests/fixtures/tracefs-debian-6.12/events/cxl/, Debian 12's 6.12 kernel),
// through the decoder libtraceevent builds from them, ras_fields() and
// mce/'s decoders; and the same records through their stored JSON
// (fields_json(), ras_fields_from_json()), as watch's history keeps them.
#include <cstring>
#include <gtest/gtest.h>
#include <sstream>

#include "base/json.h"
#include "mce/ras_events.h"
#include "report/trace_decoder.h"
#include "report/trace_report.h"
#include "report/tracing_data.h"
#include "tests/support/test_env.h"

namespace pp::report {
namespace {

std::unique_ptr<TraceDecoder> decoder_of(const std::string& tracefs, const char* system,
                                         const char* name, uint64_t id) {
  sys::Tree tree(testing::fixtures_dir() + "/" + tracefs);
  std::vector<Tracepoint> tps = {{system, name, id}};
  auto built = build_tracing_data(tree, tps, 4096);
  EXPECT_TRUE(built.ok()) << built.error().message();
  if (!built.ok())
    return nullptr;
  auto parsed = parse_tracing_data(*built);
  EXPECT_TRUE(parsed.ok()) << parsed.error().message();
  auto d = TraceDecoder::create(*parsed, /*plugins=*/false);
  EXPECT_TRUE(d.ok()) << d.error().message();
  return d.ok() ? std::move(*d) : nullptr;
}

template <typename T>
void put(Bytes& b, size_t offset, T v) {
  if (b.size() < offset + sizeof(T))
    b.resize(offset + sizeof(T));
  std::memcpy(b.data() + offset, &v, sizeof(T));
}

// A __data_loc (offset | length << 16) at `loc` for bytes appended to `b`.
void add_dynamic(Bytes& b, size_t loc, const std::vector<uint8_t>& bytes) {
  size_t offset = b.size();
  b.insert(b.end(), bytes.begin(), bytes.end());
  put<uint32_t>(b, loc, uint32_t(bytes.size() << 16 | offset));
}
void add_string(Bytes& b, size_t loc, const std::string& text) {
  std::vector<uint8_t> bytes(text.begin(), text.end());
  bytes.push_back(0);
  add_dynamic(b, loc, bytes);
}

// The record decoded twice, from the payload and from its stored JSON
// fields; both must agree, unless `stored_whole` is false: a field the
// stored JSON cuts (see ArmEventOf618WithRawSections).
mce::RasDecoded decode_both(const TraceDecoder& d, uint64_t id, const Bytes& raw,
                            bool stored_whole = true) {
  const TraceEvent* e = d.event(int(id));
  EXPECT_NE(e, nullptr);
  if (!e)
    return {};
  EXPECT_TRUE(d.check(*e, raw).ok());
  auto live = mce::decode_ras_event(e->name, ras_fields(*e, raw));
  EXPECT_TRUE(live.has_value()) << e->name;
  if (!live)
    return {};
  auto stored = mce::decode_ras_event(e->name, mce::ras_fields_from_json(fields_json(*e, raw)));
  EXPECT_TRUE(stored.has_value());
  if (stored && stored_whole) {
    EXPECT_EQ(dump_json(stored->json), dump_json(live->json)) << e->name;
    EXPECT_EQ(stored->lines, live->lines) << e->name;
  }
  return *live;
}

std::string text_of(const mce::RasDecoded& d) {
  std::string out;
  mce::print_ras_text(d, out);
  return out;
}

// aer_event (6.1): __data_loc dev_name @8, u32 status @12, u8 severity
// @16, u8 tlp_header_valid @17, u32 tlp_header[4] @20; id 1224. The record
// the QEMU test's `pcie_aer_inject_error rng0 COMP_TIME` gives.
TEST(RasFields, AerEventOf61UncorrectedNonFatalCompletionTimeout) {
  auto d = decoder_of("tracefs-debian-6.1", "ras", "aer_event", 1224);
  ASSERT_TRUE(d);
  Bytes b(36, 0);
  put<uint16_t>(b, 0, 1224);
  put<uint32_t>(b, 12, 1u << 14);
  put<uint8_t>(b, 16, 0);
  add_string(b, 8, "0000:01:00.0");
  mce::RasDecoded r = decode_both(*d, 1224, b);
  EXPECT_EQ(r.severity, mce::MceSeverity::kUncorrected);
  EXPECT_EQ(r.where, "0000:01:00.0");
  EXPECT_EQ(dump_json(r.json),
            R"({"source":"aer","severity":"uncorrected","aer_severity":"non-fatal",)"
            R"("device":"0000:01:00.0","status":"0x00004000","status_bits":["Completion Timeout"],)"
            R"("tlp_header":null})");
  EXPECT_EQ(text_of(r),
            "PCIe AER uncorrected (non-fatal) on 0000:01:00.0: Completion Timeout\n"
            "  status 0x00004000, TLP header not available\n");
}

TEST(RasFields, AerEventFatalWithTlpHeaderAndCorrectedBits) {
  auto d = decoder_of("tracefs-debian-6.1", "ras", "aer_event", 1224);
  ASSERT_TRUE(d);
  Bytes b(36, 0);
  put<uint16_t>(b, 0, 1224);
  put<uint32_t>(b, 12, (1u << 12) | (1u << 18));  // Poisoned TLP, Malformed TLP
  put<uint8_t>(b, 16, 1);
  put<uint8_t>(b, 17, 1);
  put<uint32_t>(b, 20, 0x4a000001);
  put<uint32_t>(b, 24, 0x0100000f);
  put<uint32_t>(b, 28, 0xfebf1000);
  put<uint32_t>(b, 32, 0);
  add_string(b, 8, "0000:3b:00.0");
  mce::RasDecoded r = decode_both(*d, 1224, b);
  EXPECT_EQ(r.severity, mce::MceSeverity::kFatal);
  EXPECT_EQ(r.json["aer_severity"], "fatal");
  EXPECT_EQ(dump_json(r.json["status_bits"]), R"(["Poisoned TLP","Malformed TLP"])");
  EXPECT_EQ(dump_json(r.json["tlp_header"]),
            R"(["0x4a000001","0x0100000f","0xfebf1000","0x00000000"])");

  // Severity 2 reads the same bits from the correctable table.
  put<uint32_t>(b, 12, 1u | (1u << 6) | (1u << 2));
  put<uint8_t>(b, 16, 2);
  put<uint8_t>(b, 17, 0);
  mce::RasDecoded c = decode_both(*d, 1224, b);
  EXPECT_EQ(c.severity, mce::MceSeverity::kCorrected);
  EXPECT_EQ(c.json["aer_severity"], "corrected");
  EXPECT_EQ(dump_json(c.json["status_bits"]), R"(["Receiver Error","bit 2","Bad TLP"])");
  EXPECT_TRUE(c.json["tlp_header"].is_null());
}

// memory_failure_event (6.1): unsigned long pfn @8, int type @16, int
// result @20; id 1223.
TEST(RasFields, MemoryFailureEventOf61) {
  auto d = decoder_of("tracefs-debian-6.1", "ras", "memory_failure_event", 1223);
  ASSERT_TRUE(d);
  Bytes b(24, 0);
  put<uint16_t>(b, 0, 1223);
  put<uint64_t>(b, 8, 0x12345);
  put<int32_t>(b, 16, 13);  // dirty LRU page
  put<int32_t>(b, 20, 3);   // Recovered
  mce::RasDecoded r = decode_both(*d, 1223, b);
  EXPECT_EQ(r.severity, mce::MceSeverity::kUncorrected);
  EXPECT_EQ(dump_json(r.json),
            R"({"source":"memory_failure","severity":"uncorrected","pfn":"0x12345",)"
            R"("address":"0x12345000","page_type":"dirty LRU page","result":"Recovered"})");
  EXPECT_EQ(text_of(r), "memory failure at pfn 0x12345 (dirty LRU page): Recovered\n");
  put<int32_t>(b, 16, -1);
  put<int32_t>(b, 20, 9);
  mce::RasDecoded odd = decode_both(*d, 1223, b);
  EXPECT_EQ(odd.json["page_type"], "unknown (-1)");
  EXPECT_EQ(odd.json["result"], "unknown (9)");
}

// arm_event (6.1): u64 mpidr @8, u64 midr @16, u32 running_state @24, u32
// psci_state @28, u8 affinity @32; id 1226. No severity: uncorrected.
TEST(RasFields, ArmEventOf61) {
  auto d = decoder_of("tracefs-debian-6.1", "ras", "arm_event", 1226);
  ASSERT_TRUE(d);
  Bytes b(36, 0);
  put<uint16_t>(b, 0, 1226);
  put<uint64_t>(b, 8, 0x81000100ULL);  // Aff2 0, Aff1 1, Aff0 0
  put<uint64_t>(b, 16, 0x413fd0c1);    // Arm, variant 3, part 0xd0c (Neoverse N1), rev 1
  put<uint32_t>(b, 24, 1);
  put<uint8_t>(b, 32, 2);
  mce::RasDecoded r = decode_both(*d, 1226, b);
  EXPECT_EQ(r.severity, mce::MceSeverity::kUncorrected);
  EXPECT_TRUE(r.json["cper_severity"].is_null());
  EXPECT_EQ(r.json["implementer"], "Arm");
  EXPECT_EQ(r.json["part"], "0xd0c");
  EXPECT_EQ(r.json["variant"], 3);
  EXPECT_EQ(dump_json(r.json["affinity"]), "[0,0,1,0]");
  EXPECT_FALSE(r.json.contains("error_info"));
}

// arm_event (6.18) adds the raw sections (u32 pei_len @36, __data_loc u8[]
// pei_buf @40, ctx @44/48, oem @52/56), u8 sev @60 and int cpu @64; id
// 2205. A section's bytes beyond its length are not shown. libtraceevent
// takes a u8[] for a string: its bytes are read whole, NULs included.
TEST(RasFields, ArmEventOf618WithRawSections) {
  auto d = decoder_of("tracefs-6.18", "ras", "arm_event", 2205);
  ASSERT_TRUE(d);
  Bytes b(68, 0);
  put<uint16_t>(b, 0, 2205);
  put<uint64_t>(b, 8, 0x80000003ULL);
  put<uint64_t>(b, 16, 0x481fd010);  // HiSilicon
  put<uint8_t>(b, 60, 2);            // corrected
  put<int32_t>(b, 64, 3);
  put<uint32_t>(b, 36, 4);
  add_dynamic(b, 40, {0x00, 0x20, 0x04, 0x02, 0xff});  // one byte past pei_len
  put<uint32_t>(b, 44, 0);
  add_dynamic(b, 48, {});
  put<uint32_t>(b, 52, 2);
  add_dynamic(b, 56, {0xde, 0xad});
  // The stored JSON keeps a __data_loc u8[] as the string libtraceevent
  // takes it for, cut at its first NUL: error_info, stored, is "".
  mce::RasDecoded r = decode_both(*d, 2205, b, /*stored_whole=*/false);
  EXPECT_EQ(r.severity, mce::MceSeverity::kCorrected);
  EXPECT_EQ(r.json["cper_severity"], "corrected");
  EXPECT_EQ(r.json["cpu"], 3);
  EXPECT_EQ(r.json["implementer"], "HiSilicon");
  EXPECT_EQ(r.json["error_info"], "00200402");
  EXPECT_EQ(r.json["context_info"], "");
  EXPECT_EQ(r.json["vendor_info"], "dead");
  EXPECT_EQ(text_of(r),
            "ARM processor error corrected on cpu 3\n"
            "  MPIDR 0x80000003 (affinity level 0), MIDR 0x481fd010 (HiSilicon part 0xd01)\n"
            "  error info (4 bytes): 00200402\n"
            "  vendor info (2 bytes): dead\n");
}

// non_standard_event: char sec_type[16] @8, char fru_id[16] @24,
// __data_loc fru_text @40, u8 sev @44, u32 len @48, __data_loc u8[] buf
// @52; ids 1225 (6.1) and 2204 (6.18). The GUIDs hold NULs: the decoding
// of the payload keeps them whole.
TEST(RasFields, NonStandardEventOf61And618) {
  for (auto [root, id] : {std::pair{"tracefs-debian-6.1", 1225}, std::pair{"tracefs-6.18", 2204}}) {
    SCOPED_TRACE(root);
    auto d = decoder_of(root, "ras", "non_standard_event", uint64_t(id));
    ASSERT_TRUE(d);
    Bytes b(56, 0);
    put<uint16_t>(b, 0, uint16_t(id));
    const uint8_t sec[16] = {0x9a, 0x78, 0x56, 0x34, 0x12, 0x00, 0xbc, 0xde,
                             0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
    std::memcpy(b.data() + 8, sec, 16);
    for (int i = 0; i < 16; i++)
      b[24 + size_t(i)] = uint8_t(0xa0 + i);
    put<uint8_t>(b, 44, 0);  // recoverable
    put<uint32_t>(b, 48, 3);
    add_string(b, 40, "DIMM A1");
    add_dynamic(b, 52, {0x01, 0x02, 0x03});
    const TraceEvent* e = d->event(id);
    ASSERT_NE(e, nullptr);
    auto r = mce::decode_ras_event(e->name, ras_fields(*e, b));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->severity, mce::MceSeverity::kUncorrected);
    EXPECT_EQ(r->json["cper_severity"], "recoverable");
    EXPECT_EQ(r->json["section_type"], "9a785634-1200-bcde-0102-030405060708");
    EXPECT_EQ(r->json["fru_id"], "a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
    EXPECT_EQ(r->json["fru_text"], "DIMM A1");
    EXPECT_EQ(r->json["data"], "010203");
    EXPECT_EQ(r->where, "DIMM A1");
  }
}

// extlog_mem_event (6.1): u32 err_seq @8, u8 etype @12, u8 sev @13, u64 pa
// @16, u8 pa_mask_lsb @24, guid_t fru_id @25, __data_loc fru_text @44,
// struct cper_mem_err_compact data @48 (55 bytes); id 1228.
TEST(RasFields, ExtlogMemEventOf61WithCompactLocation) {
  auto d = decoder_of("tracefs-debian-6.1", "ras", "extlog_mem_event", 1228);
  ASSERT_TRUE(d);
  Bytes b(104, 0);
  put<uint16_t>(b, 0, 1228);
  put<uint32_t>(b, 8, 7);
  put<uint8_t>(b, 12, 2);  // single-bit ECC
  put<uint8_t>(b, 13, 2);  // corrected
  put<uint64_t>(b, 16, 0x1f2e3d4c0);
  put<uint8_t>(b, 24, 6);
  const uint8_t fru[16] = {0x33, 0x22, 0x11, 0x00, 0x55, 0x44, 0x77, 0x66,
                           0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
  std::memcpy(b.data() + 25, fru, 16);
  // node 1, card 2, module 3, row 0x1234 with row extension 2 (bit 17),
  // column 0x80, rank 1, bank group 2 and address 5, chip id 3.
  uint64_t valid = (1u << 3) | (1u << 4) | (1u << 5) | (1u << 8) | (1u << 9) | (1u << 15) |
                   (1u << 18) | (1u << 19) | (1u << 20) | (1u << 21);
  put<uint64_t>(b, 48, valid);
  put<uint16_t>(b, 56, 1);
  put<uint16_t>(b, 58, 2);
  put<uint16_t>(b, 60, 3);
  put<uint16_t>(b, 62, 0x0205);
  put<uint16_t>(b, 66, 0x1234);
  put<uint16_t>(b, 68, 0x80);
  put<uint16_t>(b, 96, 1);
  put<uint8_t>(b, 102, uint8_t(3 << 5 | 2));
  add_string(b, 44, "CPU0_DIMM_B2");
  // Its guid_t and struct fields are stored as their bytes: the stored
  // record decodes to the same location and FRU.
  mce::RasDecoded r = decode_both(*d, 1228, b);
  EXPECT_EQ(r.severity, mce::MceSeverity::kCorrected);
  EXPECT_EQ(r.json["error_type"], "single-bit ECC");
  EXPECT_EQ(r.json["address"], "0x1f2e3d4c0");
  EXPECT_EQ(r.json["fru_id"], "00112233-4455-6677-8899-aabbccddeeff");
  EXPECT_EQ(dump_json(r.json["location"]),
            R"({"node":1,"card":2,"module":3,"bank_group":2,"bank_address":5,"row":135732,)"
            R"("column":128,"rank":1,"chip_id":3})");
  EXPECT_EQ(text_of(r),
            "eMCA memory error corrected: single-bit ECC at 0x1f2e3d4c0 (mask lsb 6) "
            "on CPU0_DIMM_B2\n"
            "  location: node 1, card 2, module 3, bank_group 2, bank_address 5, row 135732, "
            "column 128, rank 1, chip_id 3\n"
            "  FRU 00112233-4455-6677-8899-aabbccddeeff\n");
}

// A record the report prints: its decoding after the print format's line,
// and under "ras" in --json.
TEST(RasFields, ReportPrintsTheDecodingInTextAndJson) {
  auto d = decoder_of("tracefs-debian-6.1", "ras", "aer_event", 1224);
  ASSERT_TRUE(d);
  Bytes b(36, 0);
  put<uint16_t>(b, 0, 1224);
  put<uint32_t>(b, 12, 1u << 14);
  add_string(b, 8, "0000:01:00.0");
  for (bool json : {false, true}) {
    ReportOptions options;
    options.json = json;
    std::ostringstream out, err;
    TraceReport report(options, *d, out, err);
    ASSERT_TRUE(report.start(std::nullopt).ok());
    sys::Sample s;
    s.raw = b;
    s.time = 1000;
    report.sample(s, "test", 0);
    ASSERT_TRUE(report.finish().ok());
    if (json)
      EXPECT_NE(out.str().find(R"("ras":{"source":"aer","severity":"uncorrected")"),
                std::string::npos)
          << out.str();
    else
      EXPECT_NE(out.str().find("\n  PCIe AER uncorrected (non-fatal) on 0000:01:00.0: "
                               "Completion Timeout\n"),
                std::string::npos)
          << out.str();
  }
}

// The CXL events as Debian 12's 6.12 kernel traces them
// (tests/fixtures/tracefs-debian-6.12/events/cxl/*/format). Each record is
// laid out by its format: every field is written at the offset and in the
// size the format file gives (TraceEvent::field()), so a decoder that reads
// a field the kernel does not have, or reads it as another size, fails here.
class CxlRecord {
 public:
  CxlRecord(const TraceDecoder& d, uint64_t id) : event_(d.event(int(id))) {
    EXPECT_NE(event_, nullptr) << "no cxl event of id " << id << " in the fixture";
    if (!event_)
      return;
    bytes_.assign(event_->min_size, 0);
    put<uint16_t>(bytes_, 0, uint16_t(id));
  }
  CxlRecord& number(std::string_view name, uint64_t v) {
    const TraceField* f = field(name);
    if (f && f->size <= 8)
      std::memcpy(bytes_.data() + f->offset, &v, f->size);  // little-endian: the low bytes
    else if (f)
      ADD_FAILURE() << name << " is " << f->size << " bytes, not an integer";
    return *this;
  }
  CxlRecord& text(std::string_view name, const std::string& value) {
    if (const TraceField* f = field(name); f && f->kind == FieldKind::kDynString)
      add_string(bytes_, f->offset, value);
    else if (f)
      ADD_FAILURE() << name << " is not a __data_loc string";
    return *this;
  }
  const TraceEvent* event() const { return event_; }
  const Bytes& bytes() const { return bytes_; }

 private:
  const TraceField* field(std::string_view name) {
    const TraceField* f = event_ ? event_->field(name) : nullptr;
    if (!f)
      ADD_FAILURE() << (event_ ? event_->name : "?") << " has no field " << name;
    return f;
  }
  const TraceEvent* event_;
  Bytes bytes_;
};

// The ids of the fixture's id files.
constexpr uint64_t kCxlPoison = 1294, kCxlMemoryModule = 1295, kCxlDram = 1296,
                   kCxlGeneralMedia = 1297, kCxlGenericEvent = 1298, kCxlOverflow = 1299,
                   kCxlAerCorrectable = 1300, kCxlAerUncorrectable = 1301;

std::unique_ptr<TraceDecoder> cxl_decoder(const char* name, uint64_t id) {
  return decoder_of("tracefs-debian-6.12", "cxl", name, id);
}

TEST(RasFields, CxlAerUncorrectableErrorOf612) {
  auto d = cxl_decoder("cxl_aer_uncorrectable_error", kCxlAerUncorrectable);
  ASSERT_TRUE(d);
  CxlRecord r(*d, kCxlAerUncorrectable);
  ASSERT_TRUE(r.event());
  EXPECT_EQ(r.event()->field("header_log")->size, 512u) << "u32 header_log[128]";
  r.text("memdev", "mem0")
      .text("host", "0000:0d:00.0")
      .number("serial", 0x1122334455667788)
      .number("status", (1u << 7) | (1u << 10))  // Memory Data ECC, Poison Received
      .number("first_error", 1u << 10);          // a mask: Poison Received came first
  mce::RasDecoded x = decode_both(*d, kCxlAerUncorrectable, r.bytes());
  EXPECT_EQ(x.severity, mce::MceSeverity::kUncorrected);
  EXPECT_EQ(x.where, "mem0");
  EXPECT_EQ(dump_json(x.json),
            R"({"source":"cxl","event":"cxl_aer_uncorrectable_error","severity":"uncorrected",)"
            R"("memdev":"mem0","host":"0000:0d:00.0","serial":"0x1122334455667788",)"
            R"("status":"0x00000480","status_bits":["Memory Data ECC","Poison Received"],)"
            R"("first_error":"0x00000400","first_error_bits":["Poison Received"]})");
  EXPECT_EQ(text_of(x),
            "CXL cxl_aer_uncorrectable_error uncorrected on mem0: Memory Data ECC, Poison "
            "Received\n");
}

TEST(RasFields, CxlAerCorrectableErrorOf612) {
  auto d = cxl_decoder("cxl_aer_correctable_error", kCxlAerCorrectable);
  ASSERT_TRUE(d);
  CxlRecord r(*d, kCxlAerCorrectable);
  r.text("memdev", "mem1")
      .text("host", "0000:0e:00.0")
      .number("serial", 7)
      .number("status", 1u << 6);
  mce::RasDecoded x = decode_both(*d, kCxlAerCorrectable, r.bytes());
  EXPECT_EQ(x.severity, mce::MceSeverity::kCorrected);
  EXPECT_EQ(dump_json(x.json["status_bits"]), R"(["Physical Layer Error"])");
  EXPECT_EQ(x.json["serial"], "0x7");
  EXPECT_FALSE(x.json.contains("first_error"));
}

// General media and DRAM event records: the log gives the severity; the
// memory event type, transaction and descriptor say what happened; the
// DPA's flag bits are a field of their own in 6.12 (dpa_flags), dpa is the
// address alone.
TEST(RasFields, CxlGeneralMediaAndDramOf612) {
  struct Case {
    const char* name;
    uint64_t id;
  };
  for (Case c : {Case{"cxl_general_media", kCxlGeneralMedia}, Case{"cxl_dram", kCxlDram}}) {
    SCOPED_TRACE(c.name);
    auto d = cxl_decoder(c.name, c.id);
    ASSERT_TRUE(d);
    CxlRecord r(*d, c.id);
    r.text("memdev", "mem2")
        .text("host", "0000:0f:00.0")
        .text("region_name", "region0")
        .number("log", 2)  // failure
        .number("serial", 0xabc)
        .number("dpa", 0x40000)
        .number("dpa_flags", 1)  // volatile
        .number("hpa", 0x2080040000)
        .number("descriptor", 1)        // Uncorrectable Event
        .number("type", 0)              // ECC Error
        .number("transaction_type", 1)  // Host Read
        .number("channel", 3)
        .number("rank", 1);
    mce::RasDecoded x = decode_both(*d, c.id, r.bytes());
    EXPECT_EQ(x.severity, mce::MceSeverity::kUncorrected);
    EXPECT_EQ(dump_json(x.json),
              std::string(R"({"source":"cxl","event":")") + c.name +
                  R"(","log":"failure","severity":"uncorrected","memdev":"mem2",)"
                  R"("host":"0000:0f:00.0","serial":"0xabc",)"
                  R"("error_type":"ECC Error","transaction":"Host Read",)"
                  R"("descriptor":["Uncorrectable Event"],"dpa":"0x40000","hpa":"0x2080040000"})");
    EXPECT_EQ(text_of(x), std::string("CXL ") + c.name +
                              " uncorrected on mem2: ECC Error, Host Read, Uncorrectable Event\n"
                              "  device physical address 0x40000\n");
  }
}

TEST(RasFields, CxlMemoryModuleAndGenericEventOf612) {
  auto d = cxl_decoder("cxl_memory_module", kCxlMemoryModule);
  ASSERT_TRUE(d);
  CxlRecord r(*d, kCxlMemoryModule);
  r.text("memdev", "mem3").text("host", "0000:10:00.0").number("log", 1).number("event_type", 3);
  mce::RasDecoded x = decode_both(*d, kCxlMemoryModule, r.bytes());
  EXPECT_EQ(x.severity, mce::MceSeverity::kCorrected);
  EXPECT_EQ(x.json["log"], "warning");
  EXPECT_EQ(x.json["module_event"], "Temperature Change");
  EXPECT_EQ(text_of(x), "CXL cxl_memory_module corrected on mem3: Temperature Change\n");

  auto g = cxl_decoder("cxl_generic_event", kCxlGenericEvent);
  ASSERT_TRUE(g);
  CxlRecord gr(*g, kCxlGenericEvent);
  gr.text("memdev", "mem3").text("host", "0000:10:00.0").number("log", 3);
  mce::RasDecoded y = decode_both(*g, kCxlGenericEvent, gr.bytes());
  EXPECT_EQ(y.severity, mce::MceSeverity::kFatal);
  EXPECT_EQ(y.json["log"], "fatal");
  EXPECT_EQ(text_of(y), "CXL cxl_generic_event fatal on mem3\n");
}

TEST(RasFields, CxlPoisonOf612) {
  auto d = cxl_decoder("cxl_poison", kCxlPoison);
  ASSERT_TRUE(d);
  CxlRecord r(*d, kCxlPoison);
  r.text("memdev", "mem4")
      .text("host", "0000:11:00.0")
      .text("region", "")
      .number("trace_type", 0)  // list
      .number("source", 2)      // internal
      .number("hpa", ~0ull)
      .number("dpa", 0x1000)
      .number("dpa_length", 64);
  mce::RasDecoded x = decode_both(*d, kCxlPoison, r.bytes());
  EXPECT_EQ(x.severity, mce::MceSeverity::kUncorrected);
  EXPECT_EQ(x.json["dpa"], "0x1000");
  EXPECT_EQ(x.json["dpa_length"], 64);
  EXPECT_FALSE(x.json.contains("hpa")) << "all ones: the kernel found no region to map it";
  EXPECT_EQ(x.json["poison_trace"], "list");
  EXPECT_EQ(x.json["poison_source"], "internal");
  EXPECT_EQ(text_of(x),
            "CXL cxl_poison uncorrected on mem4: poison list, source internal\n"
            "  device physical address 0x1000\n");
}

// cxl_overflow says records were lost, not an error: the format is there,
// and it is not decoded as one.
TEST(RasFields, CxlOverflowOf612IsNotDecoded) {
  auto d = cxl_decoder("cxl_overflow", kCxlOverflow);
  ASSERT_TRUE(d);
  const TraceEvent* e = d->event(int(kCxlOverflow));
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->name, "cxl:cxl_overflow");
  EXPECT_FALSE(e->is_ras);
  EXPECT_FALSE(mce::decode_ras_event(e->name, {}).has_value());
}

}  // namespace
}  // namespace pp::report

// The RAS decoders from fields alone (the tracepoint formats' own tests are
// report/ras_fields_test.cpp): the AER bit tables end to end, the CXL
// events by field name (no fixture kernel of ours has them), what a stored
// record's JSON gives back, and records with fields missing or malformed.
#include "mce/ras_events.h"

#include <algorithm>
#include <gtest/gtest.h>

#include "base/json.h"
#include "mce/aer.h"

namespace pp::mce {
namespace {

RasFields fields_of(std::string_view json_text) {
  auto parsed = parse_json(json_text, "test fields");
  EXPECT_TRUE(parsed.ok());
  return ras_fields_from_json(nlohmann::ordered_json::parse(dump_json(*parsed)));
}

TEST(Aer, EveryNamedBitOfBothTables) {
  std::vector<std::string> un = aer_status_bits(0xffffffff, false);
  ASSERT_EQ(un.size(), 32u);
  EXPECT_EQ(un[0], "Undefined");
  EXPECT_EQ(un[1], "bit 1");
  EXPECT_EQ(un[4], "Data Link Protocol Error");
  EXPECT_EQ(un[5], "Surprise Down Error");
  EXPECT_EQ(un[12], "Poisoned TLP");
  EXPECT_EQ(un[14], "Completion Timeout");
  EXPECT_EQ(un[20], "Unsupported Request Error");
  EXPECT_EQ(un[26], "Poisoned TLP Egress Blocked");
  std::vector<std::string> co = aer_status_bits(0xffff, true);
  ASSERT_EQ(co.size(), 16u);
  EXPECT_EQ(co[0], "Receiver Error");
  EXPECT_EQ(co[6], "Bad TLP");
  EXPECT_EQ(co[7], "Bad DLLP");
  EXPECT_EQ(co[8], "REPLAY_NUM Rollover");
  EXPECT_EQ(co[12], "Replay Timer Timeout");
  EXPECT_EQ(co[13], "Advisory Non-Fatal Error");
  EXPECT_EQ(co[15], "Header Log Overflow");
  EXPECT_TRUE(aer_status_bits(0, false).empty());
}

TEST(Aer, SeverityScaleSharedWithMachineChecks) {
  EXPECT_EQ(aer_common_severity(AerSeverity::kCorrected), MceSeverity::kCorrected);
  EXPECT_EQ(aer_common_severity(AerSeverity::kNonFatal), MceSeverity::kUncorrected);
  EXPECT_EQ(aer_common_severity(AerSeverity::kFatal), MceSeverity::kFatal);
  // Ranked as the machine checks are: a fatal AER error outranks a corrected one.
  EXPECT_GT(mce_severity_rank("fatal"), mce_severity_rank("uncorrected"));
  EXPECT_EQ(cper_common_severity(0), MceSeverity::kUncorrected);
  EXPECT_EQ(cper_common_severity(1), MceSeverity::kFatal);
  EXPECT_EQ(cper_common_severity(2), MceSeverity::kCorrected);
  EXPECT_EQ(cper_common_severity(3), MceSeverity::kCorrected);
  EXPECT_EQ(cper_severity_name(3), "informational");
  EXPECT_EQ(cper_severity_name(9), "unknown");
}

TEST(RasEvents, AerFromStoredJsonWithTlpHeader) {
  // What fields_json() writes: u32 array elements as numbers.
  auto d = decode_ras_event("ras:aer_event",
                            fields_of(R"({"dev_name":"0000:00:1c.0","status":16384,"severity":0,)"
                                      R"("tlp_header_valid":1,"tlp_header":[1,2,3,4]})"));
  ASSERT_TRUE(d);
  EXPECT_EQ(dump_json(d->json["tlp_header"]),
            R"(["0x00000001","0x00000002","0x00000003","0x00000004"])");
  EXPECT_EQ(d->lines[1],
            "status 0x00004000, TLP header 0x00000001 0x00000002 0x00000003 0x00000004");
}

TEST(RasEvents, AerUnknownSeverityAndMissingFieldsStillDecode) {
  auto d = decode_ras_event("ras:aer_event", fields_of(R"({"severity":7,"tlp_header_valid":1})"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->json["aer_severity"], "unknown (7)");
  EXPECT_EQ(d->severity, MceSeverity::kUncorrected);
  EXPECT_TRUE(d->json["tlp_header"].is_null());  // valid, but no words
  EXPECT_EQ(d->lines[0],
            "PCIe AER uncorrected (unknown (7)) on an unnamed device: no status bit set");
}

// A device name is whatever the kernel was given: the text form escapes
// control characters; the JSON keeps the bytes (as JSON escapes).
TEST(RasEvents, TextEscapesWhatADeviceNamed) {
  RasFields f;
  f["dev_name"].text = "0000:01:00.0\x1b[2J\n";
  f["severity"].number = 2;
  auto d = decode_ras_event("ras:aer_event", f);
  ASSERT_TRUE(d);
  std::string out;
  print_ras_text(*d, out);
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;
  EXPECT_EQ(d->json["device"], "0000:01:00.0\x1b[2J\n");
}

TEST(RasEvents, CxlAerUncorrectableByFieldNames) {
  auto d = decode_ras_event("cxl:cxl_aer_uncorrectable_error",
                            fields_of(R"({"memdev":"mem0","host":"0000:0d:00.0",)"
                                      R"("serial":"0x1122","status":1152,"first_error":128})"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->severity, MceSeverity::kUncorrected);
  EXPECT_EQ(d->where, "mem0");
  EXPECT_EQ(dump_json(d->json["status_bits"]), R"(["Memory Data ECC","Poison Received"])");
  EXPECT_EQ(d->json["serial"], "0x1122");
  EXPECT_EQ(d->json["first_error"], "0x00000080");
  auto c = decode_ras_event("cxl:cxl_aer_correctable_error",
                            fields_of(R"({"memdev":"mem1","status":64})"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->severity, MceSeverity::kCorrected);
  EXPECT_EQ(dump_json(c->json["status_bits"]), R"(["Physical Layer Error"])");
}

TEST(RasEvents, CxlEventRecordSeverityFromItsLog) {
  auto fatal = decode_ras_event("cxl:cxl_general_media",
                                fields_of(R"({"memdev":"mem0","log":3,"dpa":"0x4000"})"));
  ASSERT_TRUE(fatal);
  EXPECT_EQ(fatal->severity, MceSeverity::kFatal);
  EXPECT_EQ(fatal->json["log"], "fatal");
  EXPECT_EQ(fatal->json["dpa"], "0x4000");
  auto warn = decode_ras_event("cxl:cxl_dram", fields_of(R"({"log":1})"));
  ASSERT_TRUE(warn);
  EXPECT_EQ(warn->severity, MceSeverity::kCorrected);
  auto poison = decode_ras_event("cxl:cxl_poison", fields_of(R"({"memdev":"mem2"})"));
  ASSERT_TRUE(poison);
  EXPECT_EQ(poison->severity, MceSeverity::kUncorrected);
}

TEST(RasEvents, OnlyTheRasEventsAreDecoded) {
  EXPECT_FALSE(decode_ras_event("mce:mce_record", {}));
  EXPECT_FALSE(decode_ras_event("ras:mc_event", {}));
  EXPECT_FALSE(decode_ras_event("sched:sched_switch", {}));
  EXPECT_FALSE(decode_ras_event("cxl:cxl_overflow", {}));
  for (std::string_view tp : ras_tracepoints())
    EXPECT_EQ(is_ras_event(tp), tp != "mce:mce_record" && tp != "ras:mc_event") << tp;
}

TEST(RasEvents, ExtlogWithShortCompactDataHasNoLocation) {
  auto d = decode_ras_event("ras:extlog_mem_event",
                            fields_of(R"({"sev":1,"etype":3,"pa":"0x1000","data":[1,2,3]})"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->severity, MceSeverity::kFatal);
  EXPECT_EQ(d->json["error_type"], "multi-bit ECC");
  EXPECT_TRUE(d->json["location"].is_null());
  EXPECT_EQ(d->json["fru_id"], "");
}

TEST(RasEvents, GuidText) {
  std::vector<uint64_t> b;
  for (uint64_t i = 0; i < 16; i++)
    b.push_back(i);
  EXPECT_EQ(guid_text(b, false), "00010203-0405-0607-0809-0a0b0c0d0e0f");
  EXPECT_EQ(guid_text(b, true), "03020100-0504-0706-0809-0a0b0c0d0e0f");
  b.pop_back();
  EXPECT_EQ(guid_text(b, true), "");
}

}  // namespace
}  // namespace pp::mce

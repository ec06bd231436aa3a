// EDAC's ras:mc_event records and log lines into one EdacError: the
// numbers of a composed label, the words of the drivers' detail, the DIMM
// label from sysfs when the record has none. Field values follow the
// tracepoint's format (tests/fixtures/tracefs-debian-6.1/events/ras/mc_event/format).
#include "mce/edac.h"

#include <gtest/gtest.h>

namespace pp::mce {
namespace {

TEST(Edac, McEventWithSkxDetailGivesTheWholeLocation) {
  McEventFields f;
  f.error_type = 0;
  f.msg = "memory read error";
  f.label = "CPU_SrcID#0_MC#0_Chan#1_DIMM#0";
  f.error_count = 1;
  f.mc_index = 0;
  f.top_layer = 0;
  f.middle_layer = 1;
  f.lower_layer = 0;
  f.address = 0x8a6c1a00;
  f.grain_bits = 5;
  f.syndrome = 0;
  f.driver_detail = "err_code:0x0000:0x009f socket:0 imc:0 rank:3 bg:2 ba:1 row:0x1d26 col:0x140";
  EdacError e = decode_mc_event(f);
  EXPECT_EQ(e.type, EdacErrorType::kCorrected);
  EXPECT_EQ(e.grain, 32u);
  EXPECT_EQ(e.top_layer, 0);
  EXPECT_EQ(e.middle_layer, 1);
  EXPECT_EQ(e.location.address, 0x8a6c1a00u);
  EXPECT_EQ(e.location.page, 0x8a6c1u);
  EXPECT_EQ(e.location.socket, 0u);
  EXPECT_EQ(e.location.controller, 0u);
  EXPECT_EQ(e.location.channel, 1u);
  EXPECT_EQ(e.location.slot, 0u);
  EXPECT_EQ(e.location.rank, 3u);
  EXPECT_EQ(e.location.bank_group, 2u);
  EXPECT_EQ(e.location.bank, 1u);
  EXPECT_EQ(e.location.row, 0x1d26u);
  EXPECT_EQ(e.location.column, 0x140u);
  EXPECT_EQ(e.location.label, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
  nlohmann::json j = edac_json(e);
  EXPECT_EQ(j["type"], "corrected");
  EXPECT_EQ(j["layers"], nlohmann::json::parse("[0,1,0]"));
  EXPECT_EQ(j["address"], "0x8a6c1a00");
}

TEST(Edac, SysfsLabelFillsAnUnknownLabel) {
  McEventFields f;
  f.label = "unknown memory";
  f.mc_index = 1;
  f.top_layer = 1;
  f.middle_layer = 0;
  EdacLabels labels;
  labels[{1, edac_label_key_of_location("channel 1 slot 0 ")}] = {"CPU1_DIMM_B1",
                                                                  "channel 1 slot 0 "};
  EXPECT_EQ(edac_label_key_of_location("csrow 3 channel 0"), "3:0");
  EdacError e = decode_mc_event(f, &labels);
  EXPECT_EQ(e.label, "CPU1_DIMM_B1");
  EXPECT_EQ(e.location.label, "CPU1_DIMM_B1");
  // A label the record has is kept.
  f.label = "DIMM_A1";
  EXPECT_EQ(decode_mc_event(f, &labels).label, "DIMM_A1");
}

TEST(Edac, StoredFieldsReadBackWithHexOrNumbers) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(
      R"({"error_type":1,"msg":"m","label":"mc#0csrow#2channel#0","error_count":3,)"
      R"("mc_index":0,"top_layer":2,"middle_layer":0,"lower_layer":-1,"address":"0x7d41b7940",)"
      R"("grain_bits":6,"syndrome":0,"driver_detail":""})");
  McEventFields f = mc_event_fields_from_json(j);
  EXPECT_EQ(f.error_type, 1u);
  EXPECT_EQ(f.error_count, 3u);
  EXPECT_EQ(f.address, 0x7d41b7940);
  EXPECT_EQ(f.lower_layer, -1);
  EdacError e = decode_mc_event(f);
  EXPECT_EQ(e.type, EdacErrorType::kUncorrected);
  EXPECT_EQ(e.lower_layer, std::nullopt);
  EXPECT_EQ(e.location.controller, 0u);
  EXPECT_EQ(e.location.chip_select, 2u);
  EXPECT_EQ(e.location.channel, 0u);
}

TEST(Edac, LogLinesThatAreNoErrorsAreNotRead) {
  EXPECT_FALSE(parse_edac_log_line("EDAC MC0: Giving out device to module skx_edac"));
  EXPECT_FALSE(parse_edac_log_line("EDAC MC: UMC0 chip selects:"));
  EXPECT_FALSE(parse_edac_log_line("EDAC MC0: 1 CE memory read error"));  // no " on "
  auto e = parse_edac_log_line(
      "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (channel:0 slot:0 "
      "page:0xe16677 offset:0x0 grain:32 -  err_code:0000:009f socket:0 imc:0 rank:0 bg:0 ba:3 "
      "row:dad3 col:3c0)");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, EdacErrorType::kUncorrected);
  EXPECT_EQ(e->location.row, 0xdad3u);  // skx_edac before 5.x printed %x
  EXPECT_EQ(e->location.column, 0x3c0u);
  EXPECT_EQ(e->location.bank, 3u);
  EXPECT_EQ(e->location.address, 0xe16677000u);
}

}  // namespace
}  // namespace pp::mce

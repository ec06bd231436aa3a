// The one JSON writer of a MemoryLocation, which a machine check's decode,
// an EDAC error and a fault all print through.
#include "mce/location.h"

#include <gtest/gtest.h>

#include "mce/decode.h"
#include "mce/edac.h"

namespace pp::mce {
namespace {

TEST(MemoryLocationJson, EveryFieldByItsDocumentedKeyAndType) {
  MemoryLocation l;
  l.socket = 0;
  l.controller = 1;
  l.channel = 2;
  l.slot = 0;
  l.rank = 3;
  l.subrank = 1;
  l.bank_group = 2;
  l.bank = 1;
  l.row = 0x1d26;
  l.column = 0x140;
  l.device = 5;
  l.chip_select = 4;
  l.address = 0x8a6c1a00;
  l.page = 0x8a6c1;
  l.label = "CPU0_DIMM_A1";
  l.ecc_mode = 8;
  l.transient = false;
  EXPECT_EQ(memory_location_json(l).dump(),
            R"({"address":"0x8a6c1a00","bank":1,"bank_group":2,"channel":2,"chip_select":4,)"
            R"("column":320,"controller":1,"device":5,"ecc_mode":8,"label":"CPU0_DIMM_A1",)"
            R"("page":"0x8a6c1","rank":3,"row":7462,"slot":0,"socket":0,"subrank":1,)"
            R"("transient":false})");
  EXPECT_EQ(memory_location_json(MemoryLocation{}).dump(), "{}");
}

// A label is whatever bytes sysfs or a log gave; the JSON stays valid UTF-8
// whichever record carries it (dump() throws on invalid UTF-8).
TEST(MemoryLocationJson, ALabelThatIsNotUtf8IsEscapedInEveryWriter) {
  MemoryLocation l;
  l.label = "DIMM_\xff\xfe";
  EXPECT_EQ(memory_location_json(l)["label"], "DIMM_\\xff\\xfe");

  MceDecoded d = decode_mce(MceRegisters{});
  d.location = l;
  EXPECT_EQ(mce_json(d)["location"]["label"], "DIMM_\\xff\\xfe");
  EXPECT_NO_THROW((void)mce_json(d).dump());

  EdacError e;
  e.location = l;
  EXPECT_EQ(edac_json(e)["location"]["label"], "DIMM_\\xff\\xfe");
}

}  // namespace
}  // namespace pp::mce

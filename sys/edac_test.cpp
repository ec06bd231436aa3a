// EDAC's DIMM labels from a fake sysfs tree.
#include "sys/edac.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace pp::sys {
namespace {

TEST(EdacSysfs, LabelsAndLocationsOfEveryDimm) {
  testing::TempDir dir;
  dir.write("devices/system/edac/mc/mc0/dimm0/dimm_label", "CPU0_DIMM_A1\n");
  dir.write("devices/system/edac/mc/mc0/dimm0/dimm_location", "channel 0 slot 0 \n");
  dir.write("devices/system/edac/mc/mc0/dimm3/dimm_label", "CPU0_DIMM_B1\n");
  dir.write("devices/system/edac/mc/mc0/dimm3/dimm_location", "channel 1 slot 0 \n");
  dir.write("devices/system/edac/mc/mc1/rank2/dimm_label", "mc#1csrow#2channel#0\n");
  dir.write("devices/system/edac/mc/mc1/rank2/dimm_location", "csrow 2 channel 0 \n");
  dir.write("devices/system/edac/mc/mc1/ce_count", "0\n");
  dir.write("devices/system/edac/mc/power/control", "auto\n");
  dir.write("devices/system/edac/mc/mc1/dimm9/dimm_label", "no location file\n");
  auto dimms = read_edac_dimms(Tree(dir.path()));
  ASSERT_TRUE(dimms.ok()) << dimms.error().message();
  ASSERT_EQ(dimms->size(), 3u);
  EXPECT_EQ((*dimms)[0].mc, 0u);
  EXPECT_EQ((*dimms)[0].name, "dimm0");
  EXPECT_EQ((*dimms)[0].label, "CPU0_DIMM_A1");
  EXPECT_EQ((*dimms)[1].location, "channel 1 slot 0");
  EXPECT_EQ((*dimms)[2].mc, 1u);
  EXPECT_EQ((*dimms)[2].name, "rank2");
  EXPECT_EQ((*dimms)[2].location, "csrow 2 channel 0");
}

TEST(EdacSysfs, NoEdacIsNoDimm) {
  testing::TempDir dir;
  dir.write("devices/system/cpu/online", "0-1\n");
  auto dimms = read_edac_dimms(Tree(dir.path()));
  ASSERT_TRUE(dimms.ok());
  EXPECT_TRUE(dimms->empty());
}

}  // namespace
}  // namespace pp::sys

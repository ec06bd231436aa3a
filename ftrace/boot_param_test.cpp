#include "ftrace/boot_param.h"

#include <gtest/gtest.h>

namespace pp::ftrace {
namespace {

TEST(BootInstances, FindsBootMappedAndPlainInstances) {
  auto found = boot_instances(
      "BOOT_IMAGE=/vmlinuz root=/dev/vda1 memmap=12M$0x10000000 "
      "trace_instance=boot_mapped^traceoff@0x10000000:12M panic=1 "
      "trace_instance=plain,sched:sched_switch "
      "\"trace_instance=lab^traceoff^traceprintk@trace,irq:*\" -- trace_instance=init\n");
  ASSERT_EQ(found.size(), 3U);
  EXPECT_EQ(found[0].name, "boot_mapped");
  EXPECT_EQ(found[0].flags, std::vector<std::string>{"traceoff"});
  EXPECT_EQ(found[0].memory, "0x10000000:12M");
  EXPECT_TRUE(found[0].boot_mapped());
  EXPECT_EQ(found[1].name, "plain");
  EXPECT_FALSE(found[1].boot_mapped());
  EXPECT_EQ(found[2].name, "lab");
  EXPECT_EQ(found[2].flags, (std::vector<std::string>{"traceoff", "traceprintk"}));
  EXPECT_EQ(found[2].memory, "trace");
}

TEST(BootInstances, NoneOrMalformed) {
  EXPECT_TRUE(boot_instances("").empty());
  EXPECT_TRUE(boot_instances("root=/dev/sda trace_buf_size=1M").empty());
  EXPECT_TRUE(boot_instances("trace_instance= trace_instance=^x@1:2").empty());
  EXPECT_TRUE(boot_instances("xtrace_instance=a@1:2").empty());
}

TEST(BootInstances, BootMappedNamesLeaveThePlainOnesOut) {
  EXPECT_EQ(boot_mapped_names("trace_instance=plain,sched:sched_switch "
                              "trace_instance=bb^traceoff@0x10000000:12M trace_instance=lab@trace"),
            (std::vector<std::string>{"bb", "lab"}));
  EXPECT_TRUE(boot_mapped_names("root=/dev/vda trace_instance=plain").empty());
}

TEST(BootInstances, LastBootInfoSaysWhoseBufferItIs) {
  EXPECT_TRUE(holds_previous_boot("text delta:\t-268435456\n"));
  EXPECT_FALSE(holds_previous_boot("# Current\n"));
}

}  // namespace
}  // namespace pp::ftrace

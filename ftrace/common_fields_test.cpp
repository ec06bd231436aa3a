#include "ftrace/common_fields.h"

#include <cstring>
#include <gtest/gtest.h>
#include <vector>

namespace pp::ftrace {
namespace {

TEST(CommonFields, PidFieldFromTheFormatAndItsDefaults) {
  PidField f = common_pid_field(
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:int common_pid;\toffset:12;\tsize:4;\tsigned:1;\n");
  EXPECT_EQ(f.offset, 12u);
  PidField none = common_pid_field("name: x\n");
  EXPECT_EQ(none.offset, 4u) << "struct trace_entry's place";
  PidField odd = common_pid_field("\tfield:short common_pid;\toffset:8;\tsize:2;\tsigned:1;\n");
  EXPECT_EQ(odd.offset, 4u) << "a size the reader does not take is ignored";
  PidField far = common_pid_field("\tfield:int common_pid;\toffset:99999;\tsize:4;\n");
  EXPECT_EQ(far.offset, 4u);
}

TEST(CommonFields, FindFieldReadsTheLineOfItsDeclarator) {
  constexpr char kPrint[] =
      "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
      "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
      "\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;\n";
  auto buf = find_field(kPrint, "buf[]");
  ASSERT_TRUE(buf.has_value());
  EXPECT_EQ(buf->offset, 16u);
  EXPECT_EQ(buf->size, 0u);
  EXPECT_EQ(find_field(kPrint, "ip")->offset, 8u);
  EXPECT_FALSE(find_field(kPrint, "common_pid").has_value());
  // The numbers of its own line only, never the next line's.
  EXPECT_FALSE(
      find_field("\tfield:char buf[];\n\tfield:int x;\toffset:4;\tsize:4;\n", "buf[]").has_value());
}

TEST(CommonFields, RecordPidNeverReadsPastTheRecord) {
  std::vector<uint8_t> record(8, 0);
  int32_t pid = 4242;
  std::memcpy(record.data() + 4, &pid, 4);
  EXPECT_EQ(record_pid(record, PidField{}), 4242);
  EXPECT_EQ(record_pid(std::span<const uint8_t>(record.data(), 7), PidField{}), -1);
}

}  // namespace
}  // namespace pp::ftrace

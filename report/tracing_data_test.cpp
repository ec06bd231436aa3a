// HEADER_TRACING_DATA against bytes computed by hand from perf's layout, on
// fake tracefs trees and on the real Debian 6.1 snapshot in shared/fixtures.
#include "report/tracing_data.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"
#include "tests/support/test_env.h"

namespace pp::report {
namespace {

std::string fixture_tracefs() {
  return testing::fixtures_dir() + "/tracefs-debian-6.1";
}

void le32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; i++)
    b.push_back(uint8_t(v >> (8 * i)));
}
void le64(Bytes& b, uint64_t v) {
  for (int i = 0; i < 8; i++)
    b.push_back(uint8_t(v >> (8 * i)));
}
void add(Bytes& b, std::string_view s) {
  b.insert(b.end(), s.begin(), s.end());
}

const char* const kFormatA =
    "name: a\nID: 7\nformat:\n\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n";
const char* const kFormatB = "name: b\nID: 9\nformat:\n";
const char* const kFormatC = "name: c\nID: 11\nformat:\n";

class FakeTracefs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("events/header_page", "HP");
    dir_.write("events/header_event", "HEV");
    dir_.write("events/s1/a/format", kFormatA);
    dir_.write("events/s1/a/id", "7\n");
    dir_.write("events/s2/b/format", kFormatB);
    dir_.write("events/s2/b/id", "9\n");
    dir_.write("events/s1/c/format", kFormatC);
    dir_.write("events/s1/c/id", "11\n");
  }
  sys::Tree tree() const { return sys::Tree(dir_.path()); }

  testing::TempDir dir_;
};

TEST_F(FakeTracefs, BytesAreExactlyPerfsLayout) {
  std::vector<Tracepoint> tps = {{"s1", "a", 7}, {"s2", "b", 9}, {"s1", "c", 11}};
  auto data = build_tracing_data(tree(), tps, 4096);
  ASSERT_TRUE(data.ok()) << data.error().message();

  Bytes expected = {0x17, 0x08, 0x44};
  add(expected, "tracing");
  add(expected, std::string_view("0.6\0", 4));
  expected.push_back(0);  // little-endian
  expected.push_back(8);  // sizeof(long)
  le32(expected, 4096);
  add(expected, std::string_view("header_page\0", 12));
  le64(expected, 2);
  add(expected, "HP");
  add(expected, std::string_view("header_event\0", 13));
  le64(expected, 3);
  add(expected, "HEV");
  le32(expected, 0);  // no ftrace events
  le32(expected, 2);  // systems, in order of first appearance
  add(expected, std::string_view("s1\0", 3));
  le32(expected, 2);
  le64(expected, std::string_view(kFormatA).size());
  add(expected, kFormatA);
  le64(expected, std::string_view(kFormatC).size());
  add(expected, kFormatC);
  add(expected, std::string_view("s2\0", 3));
  le32(expected, 1);
  le64(expected, std::string_view(kFormatB).size());
  add(expected, kFormatB);
  le32(expected, 0);  // kallsyms
  le32(expected, 0);  // printk_formats (absent)
  le64(expected, 0);  // saved_cmdlines (absent)
  EXPECT_EQ(*data, expected);

  auto parsed = parse_tracing_data(*data);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->version, "0.6");
  EXPECT_EQ(parsed->page_size, 4096u);
  EXPECT_EQ(parsed->long_size, 8);
  EXPECT_EQ(parsed->header_page, "HP");
  EXPECT_EQ(parsed->header_event, "HEV");
  EXPECT_EQ(parsed->event_names(), (std::vector<std::string>{"s1:a", "s1:c", "s2:b"}));
  EXPECT_EQ(parsed->size, expected.size());
}

TEST_F(FakeTracefs, PrintkFormatsAndSavedCmdlinesAreCarried) {
  dir_.write("printk_formats", "0xffffffff81000000 : \"hello\"\n");
  dir_.write("saved_cmdlines", "1 init\n");
  std::vector<Tracepoint> tps = {{"s1", "a", 7}};
  auto data = build_tracing_data(tree(), tps, 4096);
  ASSERT_TRUE(data.ok()) << data.error().message();
  auto parsed = parse_tracing_data(*data);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->printk_formats, "0xffffffff81000000 : \"hello\"\n");
  EXPECT_EQ(parsed->saved_cmdlines, "1 init\n");
}

TEST_F(FakeTracefs, DuplicatesAreWrittenOnce) {
  std::vector<Tracepoint> tps = {{"s1", "a", 7}, {"s1", "a", 7}};
  auto data = build_tracing_data(tree(), tps, 4096);
  ASSERT_TRUE(data.ok());
  auto parsed = parse_tracing_data(*data);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->event_names(), std::vector<std::string>{"s1:a"});
}

TEST_F(FakeTracefs, FtraceEventsGoToTheirOwnList) {
  dir_.write("events/ftrace/print/format", "name: print\nID: 5\nformat:\n");
  dir_.write("events/ftrace/print/id", "5\n");
  std::vector<Tracepoint> tps = {{"ftrace", "print", 5}, {"s1", "a", 7}};
  auto data = build_tracing_data(tree(), tps, 4096);
  ASSERT_TRUE(data.ok()) << data.error().message();
  auto parsed = parse_tracing_data(*data);
  ASSERT_TRUE(parsed.ok());
  ASSERT_EQ(parsed->ftrace_formats.size(), 1u);
  ASSERT_EQ(parsed->systems.size(), 1u);
  EXPECT_EQ(parsed->event_names(), (std::vector<std::string>{"ftrace:print", "s1:a"}));
}

TEST_F(FakeTracefs, FormatWhoseIdDiffersFromTheAttrIsRefused) {
  std::vector<Tracepoint> tps = {{"s1", "a", 8}};
  auto data = build_tracing_data(tree(), tps, 4096);
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.error().code(), EINVAL);
  EXPECT_NE(data.error().message().find("has ID 7, but the event was opened with config 8"),
            std::string::npos)
      << data.error().message();
}

TEST_F(FakeTracefs, MissingHeaderPageIsAnError) {
  testing::TempDir empty;
  empty.write("events/s1/a/format", kFormatA);
  std::vector<Tracepoint> tps = {{"s1", "a", 7}};
  auto data = build_tracing_data(sys::Tree(empty.path()), tps, 4096);
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.error().message().find("header_page"), std::string::npos)
      << data.error().message();
}

TEST_F(FakeTracefs, FindTracepointByHintOrByScanning) {
  auto hinted = find_tracepoint(tree(), 9, "s2:b");
  ASSERT_TRUE(hinted.ok()) << hinted.error().message();
  EXPECT_EQ(*hinted, (Tracepoint{"s2", "b", 9}));
  auto scanned = find_tracepoint(tree(), 11, "persistent/whatever/");
  ASSERT_TRUE(scanned.ok()) << scanned.error().message();
  EXPECT_EQ(*scanned, (Tracepoint{"s1", "c", 11}));
  auto wrong_hint = find_tracepoint(tree(), 7, "s2:b");
  ASSERT_TRUE(wrong_hint.ok());
  EXPECT_EQ(*wrong_hint, (Tracepoint{"s1", "a", 7}));
  auto missing = find_tracepoint(tree(), 12345, "");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ENOENT);
  EXPECT_NE(missing.error().message().find("12345"), std::string::npos);
}

TEST(TracingData, MceRecordFromTheDebianSnapshot) {
  sys::Tree tracefs(fixture_tracefs());
  auto tp = find_tracepoint(tracefs, 113, "mce:mce_record");
  ASSERT_TRUE(tp.ok()) << tp.error().message();
  std::vector<Tracepoint> tps = {*tp};
  auto data = build_tracing_data(tracefs, tps, 4096);
  ASSERT_TRUE(data.ok()) << data.error().message();
  auto parsed = parse_tracing_data(*data);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message();
  EXPECT_EQ(parsed->event_names(), std::vector<std::string>{"mce:mce_record"});
  ASSERT_EQ(parsed->systems.size(), 1u);
  EXPECT_NE(parsed->systems[0].formats[0].find("field:u8 cpuvendor;\toffset:106;"),
            std::string::npos);
  EXPECT_NE(parsed->header_page.find("field: u64 timestamp"), std::string::npos);
}

TEST(TracingData, EveryTruncationIsRejected) {
  testing::TempDir dir;
  dir.write("events/header_page", "HP");
  dir.write("events/header_event", "HE");
  dir.write("events/s/e/format", "name: e\nID: 1\nformat:\n");
  std::vector<Tracepoint> tps = {{"s", "e", 1}};
  auto data = build_tracing_data(sys::Tree(dir.path()), tps, 4096);
  ASSERT_TRUE(data.ok());
  for (size_t n = 0; n < data->size(); n++) {
    auto parsed = parse_tracing_data({data->data(), n});
    EXPECT_FALSE(parsed.ok()) << "accepted the first " << n << " of " << data->size() << " bytes";
  }
  EXPECT_TRUE(parse_tracing_data(*data).ok());
}

TEST(TracingData, BadMagicIsRejected) {
  Bytes bad = {0x17, 0x08, 0x45, 't', 'r', 'a', 'c', 'i', 'n', 'g'};
  auto parsed = parse_tracing_data(bad);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message().find("magic"), std::string::npos);
}

TEST(TracingData, FormatIdLine) {
  auto id = format_id("name: x\nID: 305\nformat:\n");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 305u);
  EXPECT_FALSE(format_id("name: x\nformat:\n").ok());
}

}  // namespace
}  // namespace pp::report

#include "ftrace/ring_page.h"

#include <cstring>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <string>
#include <vector>

#include "ftrace/testing/page_builder.h"
#include "tests/support/test_env.h"

namespace pp::ftrace {
namespace {

using testing::PageBuilder;

// A file under tests/fixtures, whole; empty when missing.
std::string fixture(const std::string& relative) {
  return pp::testing::read_fixture(relative);
}

RingLayout fixture_layout(const std::string& tree) {
  std::string page = fixture(tree + "/events/header_page");
  std::string event = fixture(tree + "/events/header_event");
  EXPECT_FALSE(page.empty() || event.empty()) << tree;
  auto layout = parse_ring_layout(page, event);
  EXPECT_TRUE(layout.ok()) << layout.error().message();
  return layout.ok() ? *layout : RingLayout{};
}

TEST(RingLayout, ReadFromEveryFixtureKernel) {
  for (const char* tree : {"tracefs-6.18", "tracefs-debian-6.12", "tracefs-debian-6.1"}) {
    RingLayout l = fixture_layout(tree);
    EXPECT_EQ(l.timestamp_offset, 0U) << tree;
    EXPECT_EQ(l.commit_offset, 8U) << tree;
    EXPECT_EQ(l.commit_size, 8U) << tree;
    EXPECT_EQ(l.data_offset, 16U) << tree;
    EXPECT_EQ(l.page_size(), 4096U) << tree;
    EXPECT_EQ(l.padding_type, 29U) << tree;
    EXPECT_EQ(l.time_extend_type, 30U) << tree;
    EXPECT_EQ(l.time_stamp_type, 31U) << tree;
    EXPECT_EQ(l.data_max_type_len, 28U) << tree;
  }
}

TEST(RingLayout, FollowsTheFilesNotConstants) {
  // An 8 KiB sub-buffer (buffer_subbuf_size_kb) and a 32-bit kernel's commit.
  const char* page =
      "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
      "\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n"
      "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
      "\tfield: char data;\toffset:12;\tsize:8180;\tsigned:0;\n";
  auto layout = parse_ring_layout(page, fixture("tracefs-6.18/events/header_event"));
  ASSERT_TRUE(layout.ok()) << layout.error().message();
  EXPECT_EQ(layout->commit_size, 4U);
  EXPECT_EQ(layout->data_offset, 12U);
  EXPECT_EQ(layout->page_size(), 8192U);

  PageBuilder b(*layout, 1000);
  b.record(5, {7, 0, 1, 2});
  RingRead read;
  ASSERT_TRUE(read_ring_pages(b.bytes(), *layout, 0, read).ok());
  ASSERT_EQ(read.records.size(), 1U);
  EXPECT_EQ(read.records[0].timestamp, 1005U);
  EXPECT_EQ(read.records[0].event_id, 7);
}

struct BadHeader {
  const char* name;
  const char* page;
  const char* event;
  const char* message;
};

constexpr char kPage[] =
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
    "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
constexpr char kEvent[] =
    "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n"
    "\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n"
    "\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

TEST(RingLayout, RefusesHeadersItCannotFollow) {
  const BadHeader cases[] = {
      {"no data", "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n", kEvent,
       "lacks one of the fields"},
      {"commit size 2",
       "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
       "\tfield: local_t commit;\toffset:8;\tsize:2;\tsigned:1;\n"
       "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n",
       kEvent, "commit has size 2"},
      {"overlap",
       "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
       "\tfield: local_t commit;\toffset:12;\tsize:8;\tsigned:1;\n"
       "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n",
       kEvent, "overlaps data"},
      {"huge page",
       "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
       "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
       "\tfield: char data;\toffset:16;\tsize:99999999999;\tsigned:0;\n",
       kEvent, "no page of at most 1 MiB"},
      {"garbage line", "hello\n", kEvent, "line 1 is no field line"},
      {"bad offset", "\tfield: u64 timestamp;\toffset:x;\tsize:8;\n", kEvent, "line 1:"},
      {"no padding", kPage, "\ttype_len : 5 bits\n\ttime_delta : 27 bits\n", "lacks 'padding'"},
      {"6-bit type", kPage,
       "\ttype_len : 6 bits\n\ttime_delta : 26 bits\n\tpadding : type == 29\n"
       "\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len == 28\n",
       "not 5+27"},
      {"type inside data", kPage,
       "\ttype_len : 5 bits\n\ttime_delta : 27 bits\n\tpadding : type == 20\n"
       "\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len == 28\n",
       "type 20 is no special type"},
  };
  for (const BadHeader& c : cases) {
    auto layout = parse_ring_layout(c.page, c.event);
    ASSERT_FALSE(layout.ok()) << c.name;
    EXPECT_NE(layout.error().message().find(c.message), std::string::npos)
        << c.name << ": " << layout.error().message();
  }
}

class RingPages : public ::testing::Test {
 protected:
  RingLayout layout_ = fixture_layout("tracefs-6.18");
};

TEST_F(RingPages, ReadsAPageOfTheRealKernel) {
  // tests/fixtures/README.md says how it was taken and what it holds.
  std::string text = fixture("ftrace-pages/linux-6.18-cpu0-sched_switch.raw");
  ASSERT_EQ(text.size(), 4096U);
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  RingRead read;
  Status s = read_ring_pages(bytes, layout_, 0, read);
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_EQ(read.records.size(), 27U);
  int switches = 0, getppids = 0;
  uint64_t last = 0;
  for (const RingRecord& r : read.records) {
    switches += r.event_id == 372;
    getppids += r.event_id == 305;
    EXPECT_GE(r.timestamp, last);
    last = r.timestamp;
  }
  EXPECT_EQ(switches, 26);
  EXPECT_EQ(getppids, 1);
  EXPECT_EQ(read.records.front().timestamp, 42594266644116U);
  EXPECT_EQ(read.records.back().timestamp, 42594300418969U);
  EXPECT_EQ(read.records.front().payload.size(), 64U);  // sched_switch: 64 bytes
}

TEST_F(RingPages, EveryEventKindKeepsTheClock) {
  PageBuilder b(layout_, 1'000'000);
  b.record(10, {1, 0, 0xaa, 0xbb});                          // small: 1,000,010
  b.padding(7, 12);                                          // discarded: +7
  b.padding(1, 8);                                           // discarded, delta 0 marked 1
  b.time_extend(uint64_t(1) << 30);                          // +2^30
  b.record(0, {2, 0, 1, 2, 3, 4, 5, 6});                     // 1,000,017 + 2^30
  b.big_record(3, std::vector<uint8_t>(200, 0x11), 0x0203);  // +3, type_len 0
  b.time_stamp(5'000'000'000);                               // absolute
  b.record(4, {9, 0, 0, 0});                                 // 5,000,000,004
  b.end_padding();
  RingRead read;
  Status s = read_ring_pages(b.bytes(), layout_, 3, read);
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_EQ(read.records.size(), 4U);
  EXPECT_EQ(read.pages, 1U);
  EXPECT_EQ(read.records[0].timestamp, 1'000'010U);
  EXPECT_EQ(read.records[0].event_id, 1);
  EXPECT_EQ(read.records[0].cpu, 3U);
  EXPECT_EQ(read.records[0].payload.size(), 4U);
  EXPECT_EQ(read.records[0].payload[2], 0xaa);
  EXPECT_EQ(read.records[1].timestamp, 1'000'017U + (uint64_t(1) << 30));
  EXPECT_EQ(read.records[1].event_id, 2);
  EXPECT_EQ(read.records[1].payload.size(), 8U);
  EXPECT_EQ(read.records[2].timestamp, 1'000'020U + (uint64_t(1) << 30));
  EXPECT_EQ(read.records[2].event_id, 0x0203);
  EXPECT_EQ(read.records[2].payload.size(), 200U);
  EXPECT_EQ(read.records[3].timestamp, 5'000'000'004U);
  EXPECT_EQ(read.records[3].event_id, 9);
  EXPECT_EQ(read.missed_events, 0U);
  EXPECT_EQ(read.pages_after_loss, 0U);
}

TEST_F(RingPages, AnAbsoluteStampTakesItsTopBitsFromTheClock) {
  // 59 bits stored; a clock past 2^59 lends its top bits, and a stamp below
  // the clock's low bits has wrapped into the next 2^59.
  const uint64_t top = uint64_t(3) << 59;
  PageBuilder b(layout_, top + 1000);
  b.time_stamp(500);
  b.record(0, {1, 0, 0, 0});
  RingRead read;
  ASSERT_TRUE(read_ring_pages(b.bytes(), layout_, 0, read).ok());
  ASSERT_EQ(read.records.size(), 1U);
  EXPECT_EQ(read.records[0].timestamp, top + (uint64_t(1) << 59) + 500);
}

TEST_F(RingPages, LossesAreCountedStoredOrNot) {
  PageBuilder stored(layout_, 10);
  stored.record(1, {1, 0, 0, 0});
  stored.missed(/*count=*/42);
  PageBuilder flagged(layout_, 20);
  flagged.record(1, {1, 0, 0, 0});
  flagged.missed(std::nullopt);
  std::vector<uint8_t> pages = stored.bytes();
  pages.insert(pages.end(), flagged.bytes().begin(), flagged.bytes().end());
  RingRead read;
  Status s = read_ring_pages(pages, layout_, 1, read);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(read.pages, 2U);
  EXPECT_EQ(read.records.size(), 2U);
  EXPECT_EQ(read.records[1].timestamp, 21U);
  EXPECT_EQ(read.missed_events, 42U);
  EXPECT_EQ(read.pages_after_loss, 2U);
  EXPECT_EQ(read.losses_uncounted, 1U) << "the flagged page's count was not stored";
}

TEST_F(RingPages, AnEmptyPageHoldsNothing) {
  PageBuilder b(layout_, 5);
  RingRead read;
  ASSERT_TRUE(read_ring_pages(b.bytes(), layout_, 0, read).ok());
  EXPECT_TRUE(read.records.empty());
  EXPECT_EQ(read.pages, 1U);
}

struct BadPage {
  const char* name;
  void (*build)(PageBuilder&);
  const char* message;
};

TEST_F(RingPages, RefusesPagesThatBreakTheRules) {
  const BadPage cases[] = {
      {"commit past the page", [](PageBuilder& b) { b.set_length(5000); },
       "byte 4104: commit says 5000 bytes of data, more than the page's 4080"},
      {"header cut", [](PageBuilder& b) { b.set_length(2); },
       "byte 4112: an event header runs past the data's end at byte 4114"},
      {"record past the data",
       [](PageBuilder& b) {
         b.record(0, {1, 0, 0, 0, 0, 0, 0, 0});
         b.set_length(8);
       },
       "byte 4112: a record of 8 bytes runs past the data's end"},
      {"big record too long",
       [](PageBuilder& b) {
         b.big_record(0, std::vector<uint8_t>(16, 0), 1);
         b.set_length(12);
       },
       "runs past the data's end or is shorter"},
      {"big record without payload", [](PageBuilder& b) { b.raw_event(0, 0, 4); },
       "too short for its event id"},
      {"padding past the data", [](PageBuilder& b) { b.raw_event(29, 1, 4000); },
       "padding of 4000 bytes runs past"},
      {"extend cut",
       [](PageBuilder& b) {
         b.time_extend(1);
         b.set_length(4);
       },
       "a type 30 event's 8 bytes run past"},
      {"stored count without room",
       [](PageBuilder& b) {
         b.set_length(4080);
         b.set_flags(3U << 30);
       },
       "has no room after the data"},
      {"stored without loss", [](PageBuilder& b) { b.set_flags(1U << 30); },
       "flagged without a loss"},
  };
  for (const BadPage& c : cases) {
    PageBuilder b(layout_, 0);
    c.build(b);
    std::vector<uint8_t> pages = PageBuilder(layout_, 0).bytes();  // a good page first
    pages.insert(pages.end(), b.bytes().begin(), b.bytes().end());
    RingRead read;
    Status s = read_ring_pages(pages, layout_, 2, read);
    ASSERT_FALSE(s.ok()) << c.name;
    const std::string& m = s.error().message();
    EXPECT_NE(m.find("CPU 2, page 1"), std::string::npos) << c.name << ": " << m;
    EXPECT_NE(m.find(c.message), std::string::npos) << c.name << ": " << m;
    EXPECT_EQ(read.pages, 1U) << c.name;
  }
}

TEST_F(RingPages, RefusesAPartialPage) {
  std::vector<uint8_t> bytes = PageBuilder(layout_, 0).bytes();
  bytes.resize(4000);
  RingRead read;
  Status s = read_ring_pages(bytes, layout_, 0, read);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("4000 bytes are not whole pages of 4096"), std::string::npos)
      << s.error().message();
}

}  // namespace
}  // namespace pp::ftrace

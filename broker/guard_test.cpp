// The broker's check of its events against a fake kernel: each tampering a
// holder of the fd can do is found, said, and undone where the kernel allows.
#include "broker/guard.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <gtest/gtest.h>
#include <thread>

#include "sys/testing/fake_kernel.h"
#include "sys/unix_socket.h"

namespace pp::broker {
namespace {

constexpr uint64_t kTracepoint = 305;

class GuardTest : public ::testing::Test {
 protected:
  GuardTest() {
    sys::EventAttr attr;
    attr.attr.size = sizeof(perf_event_attr);
    attr.attr.type = PERF_TYPE_TRACEPOINT;
    attr.attr.config = kTracepoint;
    attr.attr.sample_period = 1;
    attr.attr.sample_type = PERF_SAMPLE_RAW;
    attr.attr.write_backward = 1;
    attr_ = guarded_attr(attr);
    auto opened = persistent::open_per_cpu(kernel_, attr_, {0}, 4, guarded_filter(attr_, ""), "tp");
    EXPECT_TRUE(opened.ok()) << opened.error().message();
    buffer_ = std::move(opened->buffers[0]);
  }
  // later_ms: how much later than now the check believes it runs, as if the
  // broker's next round came then.
  std::vector<std::string> check(int64_t later_ms = 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count() +
                  later_ms * 1000000;
    return check_buffer(kernel_, buffer_, attr_, persistent::Layout::kBackward, true, false, state_,
                        now);
  }
  void emit(int n) {
    for (int i = 0; i < n; i++)
      kernel_.emit(0, {PERF_TYPE_TRACEPOINT, kTracepoint}, {.raw = std::vector<uint8_t>(12, 1)});
  }

  sys::testing::FakeKernel kernel_{{.cpus = 1}};
  sys::EventAttr attr_;
  persistent::CpuBuffer buffer_;
  GuardState state_;
};

TEST_F(GuardTest, TheAttrAndFilterLeaveNoRoomToAHolder) {
  EXPECT_TRUE(attr_.attr.read_format & PERF_FORMAT_TOTAL_TIME_ENABLED);
  EXPECT_EQ(kernel_.filter(buffer_.fd.get()), kPassAllFilter);
  auto dup = sys::duplicate(buffer_.fd.get());
  ASSERT_TRUE(dup.ok());
  Status set = sys::set_filter(kernel_, buffer_.fd.get(), "common_pid == 1");
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.error().code(), EEXIST);
  EXPECT_EQ(*sys::has_filter(kernel_, buffer_.fd.get()), true);
  sys::EventAttr samples_read = attr_;
  samples_read.attr.read_format = 0;
  samples_read.attr.sample_type |= PERF_SAMPLE_READ;
  EXPECT_EQ(guarded_attr(samples_read).attr.read_format, 0u) << "would change the sample layout";
}

TEST_F(GuardTest, HealthyEventHasNothingToSay) {
  EXPECT_TRUE(check().empty()) << "the first check only looks";
  emit(10);
  EXPECT_TRUE(check().empty());
  EXPECT_TRUE(check().empty());
}

// How many times the checks since clear_calls() set the event's period.
size_t periods_set(const sys::testing::FakeKernel& kernel) {
  return size_t(std::count_if(kernel.calls().begin(), kernel.calls().end(), [](const auto& call) {
    return call.kind == sys::testing::KernelCall::Kind::kIoctl &&
           call.request == PERF_EVENT_IOC_PERIOD;
  }));
}

// Setting the period restarts the count towards the next sample: a check
// that sees every sample written leaves it alone.
TEST_F(GuardTest, APeriodAsTheBrokerSetItIsLeftAlone) {
  (void)check();
  emit(20);
  kernel_.clear_calls();
  EXPECT_TRUE(check().empty());
  EXPECT_TRUE(check().empty());
  EXPECT_EQ(periods_set(kernel_), 0u) << kernel_.render_calls();
}

TEST_F(GuardTest, ADisabledEventIsReEnabled) {
  (void)check();
  ASSERT_TRUE(sys::disable_event(kernel_, buffer_.fd.get()).ok());
  emit(5);
  EXPECT_EQ(kernel_.count(buffer_.fd.get()), 0u);
  kernel_.clear_calls();
  std::vector<std::string> found = check(200);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("disabled for about"), std::string::npos) << found[0];
  EXPECT_NE(found[0].find("re-enabled"), std::string::npos) << found[0];
  EXPECT_EQ(periods_set(kernel_), 1u) << "a REFRESH limit's event counts again only then";
  emit(5);
  EXPECT_EQ(kernel_.count(buffer_.fd.get()), 5u) << "counting again";
  EXPECT_TRUE(check().empty());
}

TEST_F(GuardTest, ADisableUndoneByItsHolderIsStillSaid) {
  (void)check();
  ASSERT_TRUE(sys::disable_event(kernel_, buffer_.fd.get()).ok());
  ASSERT_TRUE(sys::enable_event(kernel_, buffer_.fd.get()).ok());
  std::vector<std::string> found = check(200);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("then enabled again by a holder"), std::string::npos) << found[0];
}

TEST_F(GuardTest, PausedOutputIsResumed) {
  (void)check();
  ASSERT_TRUE(kernel_.ioctl(buffer_.fd.get(), PERF_EVENT_IOC_PAUSE_OUTPUT, 1).ok());
  emit(5);
  std::vector<std::string> found = check();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("5 samples dropped by the kernel while the buffer's output was paused"),
            std::string::npos)
      << found[0];
  auto* page = reinterpret_cast<const perf_event_mmap_page*>(buffer_.mapping.data());
  uint64_t head = sys::load_data_head(page);
  emit(1);
  EXPECT_NE(sys::load_data_head(page), head) << "records are written again";
}

// PERF_EVENT_IOC_PERIOD raised so that some samples still come: the count
// against the samples written shows it, and the period is set back.
TEST_F(GuardTest, ARaisedPeriodIsSeenAndSetBack) {
  (void)check();
  uint64_t raised = 50;
  ASSERT_TRUE(kernel_.ioctl_ptr(buffer_.fd.get(), PERF_EVENT_IOC_PERIOD, &raised).ok());
  emit(200);
  std::vector<std::string> found = check();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("196 of 200 samples not written"), std::string::npos) << found[0];
  EXPECT_NE(found[0].find("period set back to 1"), std::string::npos) << found[0];
  emit(10);
  EXPECT_TRUE(check().empty()) << "every sample written again";
}

// A pause too short for a check to see the event stand still: output is
// resumed at every check whatever it found, and the samples lost are said.
TEST_F(GuardTest, OutputIsResumedAtEveryCheck) {
  (void)check();
  ASSERT_TRUE(kernel_.ioctl(buffer_.fd.get(), PERF_EVENT_IOC_PAUSE_OUTPUT, 1).ok());
  (void)check();
  auto* page = reinterpret_cast<const perf_event_mmap_page*>(buffer_.mapping.data());
  uint64_t head = sys::load_data_head(page);
  emit(1);
  EXPECT_NE(sys::load_data_head(page), head) << "resumed by a check that found nothing";
}

// A context stream has no samples to count: no finding for it.
TEST_F(GuardTest, AContextStreamIsCheckedForItsEnablingOnly) {
  std::vector<std::string> found =
      check_buffer(kernel_, buffer_, attr_, persistent::Layout::kBackward, true, true, state_, 1);
  EXPECT_TRUE(found.empty());
  ASSERT_TRUE(sys::disable_event(kernel_, buffer_.fd.get()).ok());
  emit(5);
  found = check_buffer(kernel_, buffer_, attr_, persistent::Layout::kBackward, true, true, state_,
                       300'000'000);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("re-enabled"), std::string::npos) << found[0];
}

TEST_F(GuardTest, ResetAndAScribbledHeadAreNoted) {
  emit(3);
  (void)check();
  ASSERT_TRUE(kernel_.ioctl(buffer_.fd.get(), PERF_EVENT_IOC_RESET, 0).ok());
  std::vector<std::string> found = check();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("reset"), std::string::npos) << found[0];
  // A writable mapping of the same buffer, as a holder may make.
  auto writable = kernel_.mmap(buffer_.fd.get(), buffer_.mapping.size(), PROT_READ | PROT_WRITE);
  ASSERT_TRUE(writable.ok()) << writable.error().message();
  auto* page = const_cast<perf_event_mmap_page*>(
      reinterpret_cast<const perf_event_mmap_page*>(writable->data()));
  sys::store_data_head(page, 0x3e88000000000000ull);
  found = check();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("data_head"), std::string::npos) << found[0];
}

// The schedule: nothing handed out, never due; a hand-out, due within the
// shortest interval; each clean check doubles it up to the longest; a
// finding brings it back. Due times sit on multiples of the interval.
TEST(GuardScheduleTest, IdleUntilAHandOutThenBacksOffAndTightens) {
  GuardSchedule s;
  EXPECT_FALSE(s.active());
  EXPECT_FALSE(s.due(1'000'000));
  s.relax(1'000, kGuardMaxIntervalMs);
  EXPECT_FALSE(s.active()) << "a clean check of nothing starts nothing";

  s.tighten(1'010, kGuardIntervalMs);
  EXPECT_EQ(s.interval_ms, 250);
  EXPECT_EQ(s.due_ms, 1'250);
  EXPECT_FALSE(s.due(1'249));
  EXPECT_TRUE(s.due(1'250));

  std::vector<int> intervals;
  int64_t now = 1'250;
  for (int i = 0; i < 8; i++) {
    s.relax(now, kGuardMaxIntervalMs);
    intervals.push_back(s.interval_ms);
    EXPECT_GT(s.due_ms, now);
    EXPECT_LE(s.due_ms - now, s.interval_ms);
    EXPECT_EQ(s.due_ms % s.interval_ms, 0);
    now = s.due_ms;
  }
  EXPECT_EQ(intervals, (std::vector<int>{500, 1000, 2000, 4000, 8000, 10000, 10000, 10000}));

  // A new hand-out or a finding: 250 ms again, and the next check within it.
  s.tighten(now + 3, kGuardIntervalMs);
  EXPECT_EQ(s.interval_ms, 250);
  EXPECT_LE(s.due_ms - (now + 3), 250);
}

}  // namespace
}  // namespace pp::broker

#include "sys/shared_ring.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <gtest/gtest.h>
#include <utility>

#include "sys/kernel.h"
#include "sys/ring_writer.h"

namespace pp::sys {
namespace {

short revents(int fd) {
  pollfd p{fd, POLLIN, 0};
  EXPECT_GE(::poll(&p, 1, 0), 0);
  return p.revents;
}

// What the writer writes, a reader's mapping sees; and a reader's
// descriptor lets it read and nothing else.
TEST(SharedRing, AReaderMapsWhatTheWriterWroteAndCannotWrite) {
  const size_t page = page_size();
  auto ring = SharedRing::create("perf-persistent:test/cpu0", 4 * page);
  ASSERT_TRUE(ring.ok()) << ring.error().message();
  EXPECT_EQ(ring->mmap_bytes(), 5 * page);
  RingWriter writer(ring->memory(), ring->data_offset(), ring->data_size(), RingLayout::kBackward,
                    true);
  const uint8_t record[16] = {1, 0, 0, 0, 0, 0, 16, 0, 0xaa};
  ASSERT_TRUE(writer.write(record));

  auto fd = ring->reader_fd();
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  void* at = ::mmap(nullptr, ring->mmap_bytes(), PROT_READ, MAP_SHARED, fd->get(), 0);
  ASSERT_NE(at, MAP_FAILED) << errno;
  const auto* control = static_cast<const perf_event_mmap_page*>(at);
  EXPECT_EQ(control->data_offset, page);
  EXPECT_EQ(control->data_size, 4 * page);
  EXPECT_EQ(control->data_head, uint64_t(-16));
  EXPECT_EQ(static_cast<const uint8_t*>(at)[page + 4 * page - 16 + 8], 0xaa);
  ::munmap(at, ring->mmap_bytes());

  EXPECT_EQ(::mmap(nullptr, ring->mmap_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd->get(), 0),
            MAP_FAILED)
      << "a reader's descriptor maps read-only";
  EXPECT_LT(::write(fd->get(), record, sizeof(record)), 0);
  EXPECT_NE(::ftruncate(fd->get(), 0), 0) << "nor resizes it";
}

TEST(SharedRing, RefusesADataAreaThatIsNoPowerOfTwoOfPages) {
  EXPECT_FALSE(SharedRing::create("x", 3 * page_size()).ok());
  EXPECT_FALSE(SharedRing::create("x", 64).ok());
}

// A reader polls a hangup pipe's end in place of a memory file, which is
// always readable: nothing while the pipe lives, POLLHUP once it is gone,
// whoever held it and however it was moved.
TEST(HangupPipe, PollsNothingWhileItLivesAndHangsUpWhenGone) {
  auto made = HangupPipe::create();
  ASSERT_TRUE(made.ok()) << made.error().message();
  auto first = made->reader_fd();
  ASSERT_TRUE(first.ok()) << first.error().message();
  EXPECT_EQ(revents(first->get()), 0);

  HangupPipe moved = std::move(*made);
  auto second = moved.reader_fd();
  ASSERT_TRUE(second.ok()) << second.error().message();
  EXPECT_EQ(revents(first->get()), 0) << "moved, not closed";
  EXPECT_FALSE(made->reader_fd().ok()) << "the moved-from pipe hands out nothing";

  moved = HangupPipe();
  EXPECT_TRUE(revents(first->get()) & POLLHUP);
  EXPECT_TRUE(revents(second->get()) & POLLHUP);
}

}  // namespace
}  // namespace pp::sys

#include "sys/child.h"

#include <poll.h>
#include <signal.h>

#include <gtest/gtest.h>

namespace pp::sys {
namespace {

TEST(Child, ExitStatusAndPidfd) {
  auto child = Child::spawn({"sh", "-c", "exit 7"});
  ASSERT_TRUE(child.ok()) << child.error().message();
  pollfd p = {child->pidfd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "the pidfd must poll readable when the child exits";
  auto status = child->wait();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(*status, 7);
  EXPECT_TRUE(child->exited());
  EXPECT_TRUE(child->reaped());
  EXPECT_EQ(*child->wait(), 7) << "a second wait returns the same status";
}

TEST(Child, ExecFailureIsAnErrorNotAStatus) {
  auto child = Child::spawn({"/nonexistent/command", "x"});
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.error().code(), ENOENT);
  EXPECT_EQ(child.error().message(),
            "cannot run '/nonexistent/command': No such file or directory");
}

TEST(Child, SignalledChildReportsSignal) {
  auto child = Child::spawn({"sleep", "30"});
  ASSERT_TRUE(child.ok());
  EXPECT_FALSE(child->exited());
  ASSERT_TRUE(child->kill(SIGKILL).ok());
  pollfd p = {child->pidfd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  EXPECT_TRUE(child->exited()) << "exited, not yet reaped";
  EXPECT_FALSE(child->reaped());
  EXPECT_EQ(*child->wait(), 128 + SIGKILL);
}

TEST(Child, BlockedSignalsAreUnblockedInTheChild) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ASSERT_EQ(::sigprocmask(SIG_BLOCK, &block, &old), 0);
  auto child = Child::spawn({"sleep", "30"});
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(child.ok());
  ASSERT_TRUE(child->kill(SIGTERM).ok());
  EXPECT_EQ(*child->wait(), 128 + SIGTERM) << "SIGTERM must reach the command";
}

TEST(Child, DestructorStopsARunningChild) {
  pid_t pid;
  {
    auto child = Child::spawn({"sleep", "30"});
    ASSERT_TRUE(child.ok());
    pid = child->pid();
  }
  EXPECT_EQ(::kill(pid, 0), -1);
  EXPECT_EQ(errno, ESRCH) << "the child must be gone and reaped";
}

}  // namespace
}  // namespace pp::sys

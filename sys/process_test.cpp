#include "sys/process.h"

#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace pp::sys {
namespace {

constexpr const char* kRootStatus =
    "Name:\tbash\nUmask:\t0022\nState:\tS (sleeping)\nPid:\t42\n"
    "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n"
    "CapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n";

TEST(ProcessStatus, ParsesUidsAndCapabilities) {
  auto root = parse_process_status(kRootStatus);
  ASSERT_TRUE(root.ok()) << root.error().message();
  EXPECT_EQ(root->real_uid, 0u);
  EXPECT_EQ(root->effective_uid, 0u);
  EXPECT_TRUE(root->has_capability(kCapPerfmon));
  EXPECT_TRUE(root->may_use_persistent_events());

  auto nobody =
      parse_process_status("Uid:\t65534\t65534\t65534\t65534\nCapEff:\t0000000000000000\n");
  ASSERT_TRUE(nobody.ok());
  EXPECT_EQ(nobody->effective_uid, 65534u);
  EXPECT_FALSE(nobody->perfmon_capable());
  EXPECT_FALSE(nobody->may_use_persistent_events());
}

TEST(ProcessStatus, PerfmonOrSysAdminIsEnoughWithoutRoot) {
  // CAP_PERFMON is bit 38; CAP_SYS_ADMIN bit 21.
  auto perfmon = parse_process_status("Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000004000000000\n");
  ASSERT_TRUE(perfmon.ok());
  EXPECT_TRUE(perfmon->has_capability(kCapPerfmon));
  EXPECT_TRUE(perfmon->may_use_persistent_events());
  auto admin = parse_process_status("Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000200000\n");
  ASSERT_TRUE(admin.ok());
  EXPECT_TRUE(admin->may_use_persistent_events());
  auto other = parse_process_status("Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0000000000000400\n");
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(other->may_use_persistent_events()) << "CAP_NET_BIND_SERVICE is not enough";
}

TEST(ProcessStatus, SetuidProgramIsJudgedByItsEffectiveUid) {
  auto s = parse_process_status("Uid:\t1000\t0\t0\t0\nCapEff:\t0000000000000000\n");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->real_uid, 1000u);
  EXPECT_TRUE(s->may_use_persistent_events());
  EXPECT_TRUE(s->set_user_id());
}

// The broker refuses a set-user-ID program (its rights are the file
// owner's): effective or saved uid not the real one.
TEST(ProcessStatus, SetUserIdIsAnyUidNotTheRealOne) {
  for (const char* uids : {"1000\t0\t0\t0", "1000\t1000\t0\t1000", "0\t1000\t1000\t1000"})
    EXPECT_TRUE(
        parse_process_status("Uid:\t" + std::string(uids) + "\nCapEff:\t0\n")->set_user_id())
        << uids;
  auto plain = parse_process_status("Uid:\t1000\t1000\t1000\t1000\nCapEff:\t0\n");
  EXPECT_FALSE(plain->set_user_id());
  EXPECT_EQ(plain->saved_uid, 1000u);
}

// `unshare -U -r` as uid 65534: CapEff is full, but in a namespace of its
// own. The uid map tells (readable by anyone), and the ns link where the
// reader may follow it.
TEST(UserNamespace, AnotherNamespaceIsTold) {
  testing::TempDir proc;
  proc.write("self/uid_map", "         0          0 4294967295\n");
  proc.mkdir("self/ns");
  ASSERT_EQ(::symlink("user:[4026531837]", proc.path("self/ns/user").c_str()), 0);
  Tree tree(proc.path());
  proc.write("42/uid_map", "         0          0 4294967295\n");
  proc.mkdir("42/ns");
  ASSERT_EQ(::symlink("user:[4026531837]", proc.path("42/ns/user").c_str()), 0);
  auto same = user_namespace_difference(tree, 42);
  ASSERT_TRUE(same.ok()) << same.error().message();
  EXPECT_EQ(*same, "");

  proc.write("43/uid_map", "         0      65534          1\n");
  auto mapped = user_namespace_difference(tree, 43);
  ASSERT_TRUE(mapped.ok());
  EXPECT_NE(mapped->find("its uid map is '0 65534 1', not '0 0 4294967295'"), std::string::npos)
      << *mapped;

  // The whole identity map in a child namespace (only a process with
  // CAP_SETUID in the parent can write it): the link tells.
  proc.write("44/uid_map", "0 0 4294967295\n");
  proc.mkdir("44/ns");
  ASSERT_EQ(::symlink("user:[4026532174]", proc.path("44/ns/user").c_str()), 0);
  auto linked = user_namespace_difference(tree, 44);
  ASSERT_TRUE(linked.ok());
  EXPECT_NE(linked->find("its user namespace is user:[4026532174]"), std::string::npos) << *linked;

  // A link the reader may not follow (ptrace rules): the map alone decides.
  proc.write("45/uid_map", "0 0 4294967295\n");
  auto unreadable = user_namespace_difference(tree, 45);
  ASSERT_TRUE(unreadable.ok());
  EXPECT_EQ(*unreadable, "");

  auto gone = user_namespace_difference(tree, 46);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code(), ESRCH);
}

TEST(UserNamespace, AKernelWithoutUserNamespacesHasOne) {
  testing::TempDir proc;
  auto none = user_namespace_difference(Tree(proc.path()), 42);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");
}

TEST(UserNamespace, ThisProcessIsInItsOwn) {
  auto self = user_namespace_difference(Tree(kDefaultProcRoot), ::getpid());
  ASSERT_TRUE(self.ok()) << self.error().message();
  EXPECT_EQ(*self, "");
}

TEST(ProcessStatus, MalformedFilesAreClearErrors) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"", "without a Uid line"},
      {"Uid:\t0\t0\t0\t0\n", "without a CapEff line"},
      {"Uid:\tx\t0\nCapEff:\t0\n", "bad Uid line"},
      {"Uid:\t0\nCapEff:\t0\n", "bad Uid line"},
      {"Uid:\t0\t0\t0\t0\nCapEff:\tzz\n", "bad CapEff line"},
      {"Uid:\t0\t0\t0\t0\nCapEff:\t1ffffffffffffffffff\n", "bad CapEff line"},
  };
  for (const Case& c : cases) {
    auto s = parse_process_status(c.text);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.error().code(), EINVAL);
    EXPECT_NE(s.error().message().find(c.expect), std::string::npos) << s.error().message();
  }
}

TEST(ProcessStatus, ReadsThroughAFakeProcTree) {
  testing::TempDir proc;
  proc.write("42/status", kRootStatus);
  auto s = read_process_status(Tree(proc.path()), 42);
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE(s->may_use_persistent_events());
  auto gone = read_process_status(Tree(proc.path()), 43);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code(), ESRCH);
  proc.write("44/status", "Uid:\t0\t0\t0\t0\n");
  auto bad = read_process_status(Tree(proc.path()), 44);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find(proc.path("44/status")), std::string::npos);
}

TEST(ProcessStatus, ReadsThisProcess) {
  auto s = read_process_status(Tree(kDefaultProcRoot), ::getpid());
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_EQ(s->effective_uid, ::geteuid());
}

TEST(Process, RunAndWaitReportsExitStatusAndSignals) {
  auto ok = run_and_wait({"/bin/sh", "-c", "exit 0"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 0);
  auto three = run_and_wait({"/bin/sh", "-c", "exit 3"});
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(*three, 3);
  auto killed = run_and_wait({"/bin/sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(*killed, 128 + SIGKILL);
  auto missing = run_and_wait({"/nonexistent/program"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/program"), std::string::npos);
}

TEST(Process, SelfExecutableIsThisTestBinary) {
  auto self = self_executable();
  ASSERT_TRUE(self.ok());
  EXPECT_NE(self->find("unit_tests"), std::string::npos) << *self;
}

TEST(Process, ProcessExists) {
  EXPECT_TRUE(process_exists(::getpid()));
  EXPECT_FALSE(process_exists(0));
  EXPECT_FALSE(process_exists(-1));
}

TEST(LockFile, SecondHolderIsRefusedWithTheFirstPid) {
  testing::TempDir dir;
  std::string path = dir.path("broker.lock");
  {
    auto first = LockFile::acquire(path);
    ASSERT_TRUE(first.ok()) << first.error().message();
    auto second = LockFile::acquire(path);
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.error().code(), EBUSY);
    EXPECT_NE(second.error().message().find("pid " + std::to_string(::getpid())), std::string::npos)
        << second.error().message();
  }
  auto again = LockFile::acquire(path);
  EXPECT_TRUE(again.ok()) << "the lock outlived its holder";
}

TEST(SignalFd, DeliversABlockedSignalAsData) {
  auto fd = SignalFd::open({SIGUSR1});
  ASSERT_TRUE(fd.ok()) << fd.error().message();
  auto none = fd->read();
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), EAGAIN);
  ASSERT_EQ(::kill(::getpid(), SIGUSR1), 0);
  auto sig = fd->read();
  ASSERT_TRUE(sig.ok()) << sig.error().message();
  EXPECT_EQ(*sig, SIGUSR1);
}

bool blocked(int signal) {
  sigset_t mask;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return sigismember(&mask, signal) == 1;
}

// A test that ran a recorder in this process left SIGTERM blocked for every
// child forked after it: closing the fd gives back the mask it found, and a
// signal left unread does not kill the process on the way.
TEST(SignalFd, ClosingUnblocksWhatItBlockedAndDropsWhatIsPending) {
  ASSERT_FALSE(blocked(SIGUSR2));
  {
    auto fd = SignalFd::open({SIGUSR2});
    ASSERT_TRUE(fd.ok()) << fd.error().message();
    EXPECT_TRUE(blocked(SIGUSR2));
    SignalFd moved = std::move(*fd);
    ASSERT_EQ(::kill(::getpid(), SIGUSR2), 0);
  }
  EXPECT_FALSE(blocked(SIGUSR2));
  sigset_t pending;
  ASSERT_EQ(::sigpending(&pending), 0);
  EXPECT_FALSE(sigismember(&pending, SIGUSR2));

  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &usr1, &old), 0);
  { ASSERT_TRUE(SignalFd::open({SIGUSR1}).ok()); }
  EXPECT_TRUE(blocked(SIGUSR1)) << "blocked before the fd: left blocked";
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// The capability a level asks: either at the kernel's levels, CAP_SYS_ADMIN
// alone at the distributions' 3; CAP_PERFMON is bit 38, CAP_SYS_ADMIN 21.
TEST(PerfCapableAt, Level3AsksForCapSysAdmin) {
  constexpr uint64_t kPerfmon = uint64_t(1) << 38, kAdmin = uint64_t(1) << 21;
  for (std::optional<long> level :
       {std::optional<long>(), std::optional<long>(-1), std::optional<long>(2)}) {
    EXPECT_TRUE(perf_capable_at(kPerfmon, level));
    EXPECT_TRUE(perf_capable_at(kAdmin, level));
    EXPECT_FALSE(perf_capable_at(0, level));
  }
  EXPECT_FALSE(perf_capable_at(kPerfmon, 3));
  EXPECT_TRUE(perf_capable_at(kAdmin, 3));
  EXPECT_TRUE(perf_capable_at(kAdmin | kPerfmon, 4));
}

}  // namespace
}  // namespace pp::sys

namespace pp::sys {
namespace {

// perf's comm, and Debian's versioned binary's; never our own.
TEST(PerfParent, PerfAndItsVersionedBinaryArePerfNothingElse) {
  EXPECT_TRUE(is_perf_comm("perf"));
  EXPECT_TRUE(is_perf_comm("perf_6.1"));
  EXPECT_FALSE(is_perf_comm("perf-persisten"));
  EXPECT_FALSE(is_perf_comm("perfect"));
  EXPECT_FALSE(is_perf_comm("bash"));
  EXPECT_FALSE(is_perf_comm(""));
}

}  // namespace
}  // namespace pp::sys

#include "persistent/run_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <gtest/gtest.h>

#include "persistent/broker_client.h"
#include "sys/tree.h"
#include "tests/support/temp_dir.h"

namespace pp::persistent {
namespace {

EventInfo event(uint64_t id, std::string name) {
  EventInfo e;
  e.id = id;
  e.name = std::move(name);
  e.event = "syscalls:sys_enter_getppid";
  e.cpus = {0, 1};
  e.pages = 128;
  e.page_size = 4096;
  e.created = e.buffer_start = 1700000000;
  return e;
}

TEST(Registry, StateRoundTripsWithoutCounts) {
  RegistryState state;
  state.next_id = 5;
  state.events = {event(1, "a"), event(4, "4")};
  state.events[0].counts = std::vector<CpuCount>{{0, 9}};
  state.events[0].readers = 1;
  std::string text = encode_state(state);
  EXPECT_EQ(text.find("counts"), std::string::npos) << "counts are not state";
  auto back = decode_state(text, "state.json");
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(back->next_id, 5u);
  ASSERT_EQ(back->events.size(), 2u);
  EXPECT_EQ(back->events[0].name, "a");
  EXPECT_EQ(back->events[1].name, "4");
}

TEST(Registry, InconsistentStateIsRefused) {
  auto bad = [](RegistryState s) { return decode_state(encode_state(s), "/run/x/state.json"); };
  RegistryState twice_id;
  twice_id.next_id = 3;
  twice_id.events = {event(1, "a"), event(1, "b")};
  auto r = bad(twice_id);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("id 1 twice"), std::string::npos);

  RegistryState twice_name;
  twice_name.next_id = 3;
  twice_name.events = {event(1, "a"), event(2, "a")};
  r = bad(twice_name);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("'a' twice"), std::string::npos);

  RegistryState ahead;
  ahead.next_id = 2;
  ahead.events = {event(2, "a")};
  r = bad(ahead);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("not below next_id"), std::string::npos);

  RegistryState bad_name;
  bad_name.next_id = 9;
  bad_name.events = {event(1, "../../etc")};
  r = bad(bad_name);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("invalid name"), std::string::npos);

  auto version = decode_state("{\"version\": 2, \"next_id\": 1, \"events\": []}", "s");
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.error().message().find("state version 2"), std::string::npos);
  auto garbage = decode_state("\x01\x02", "/run/x/state.json");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().message().find("/run/x/state.json"), std::string::npos);
}

TEST(Registry, SaveAndLoadThroughTheRunDirectory) {
  testing::TempDir tmp;
  RunDir dir(tmp.path("run"));
  auto empty = load_state(dir);
  ASSERT_TRUE(empty.ok()) << "a missing state file is an empty registry";
  EXPECT_TRUE(empty->events.empty());
  EXPECT_EQ(empty->next_id, 1u);
  ASSERT_TRUE(dir.prepare().ok());
  RegistryState state;
  state.next_id = 2;
  state.events = {event(1, "a")};
  ASSERT_TRUE(save_state(dir, state).ok());
  struct stat st;
  ASSERT_EQ(::stat(dir.state().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto back = load_state(dir);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->events.size(), 1u);
}

TEST(Registry, PrepareMakesA0700DirectoryAndRefusesSharedOnes) {
  testing::TempDir tmp;
  RunDir dir(tmp.path("a/b/run/"));
  EXPECT_EQ(dir.root(), tmp.path("a/b/run"));
  ASSERT_TRUE(dir.prepare().ok());
  struct stat st;
  ASSERT_EQ(::stat(dir.root().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(dir.prepare().ok()) << "an existing private one is fine";

  ASSERT_EQ(::chmod(dir.root().c_str(), 0777), 0);
  Status s = dir.prepare();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), EPERM);
  EXPECT_NE(s.error().message().find("mode 0777"), std::string::npos) << s.error().message();
  EXPECT_NE(s.error().message().find("--run-dir"), std::string::npos);

  tmp.write("file", "x");
  Status f = RunDir(tmp.path("file")).prepare();
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().code(), ENOTDIR);
}

TEST(Registry, PublishesTheKernelsSysfsLayout) {
  testing::TempDir tmp;
  RunDir dir(tmp.path("run"));
  ASSERT_TRUE(dir.prepare().ok());
  ASSERT_TRUE(dir.publish_pmu().ok());
  ASSERT_TRUE(dir.publish_event("mce_record", 106).ok());
  ASSERT_TRUE(dir.publish_event("7", 7).ok());
  sys::Tree pmu(dir.pmu());
  EXPECT_EQ(*pmu.read("type"), "4294901760\n");
  EXPECT_EQ(*pmu.read("format/persistent"), "attr5:23\n");
  EXPECT_EQ(*pmu.read("events/mce_record"), "persistent,config=106\n");
  EXPECT_EQ(*pmu.read("events/7"), "persistent,config=7\n");
  EXPECT_FALSE(dir.publish_event("../escape", 1).ok()) << "a name is never a path";

  ASSERT_TRUE(dir.unpublish_event("7").ok());
  // Each event is published under its name and under its id.
  EXPECT_EQ(*pmu.list("events"), (std::vector<std::string>{"106", "mce_record"}));
  ASSERT_TRUE(dir.publish_pmu().ok());
  EXPECT_TRUE(pmu.list("events")->empty()) << "a fresh publication starts empty";
  ASSERT_TRUE(dir.publish_event("x", 1).ok());
  ASSERT_TRUE(dir.unpublish_all().ok());
  EXPECT_TRUE(pmu.list("events")->empty());
}

}  // namespace
}  // namespace pp::persistent

namespace pp::persistent {
namespace {

TEST(RunDirChecks, RefusesLinksOpenModesAndOtherOwnersSayingTheFix) {
  ::pp::testing::TempDir tmp;
  std::string dir = tmp.path("run");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  EXPECT_TRUE(RunDir(dir).prepare().ok());
  struct Case {
    mode_t mode;
    const char* fix;
  } modes[] = {{0777, "has mode 0777"},
               {0775, "has mode 0775"},
               {0730, "has mode 0730"},
               {0702, "has mode 0702"}};
  // Open for reading or searching only (a plain `mkdir`): tightened, not
  // refused, since no one else could have put anything in it.
  for (mode_t open : {0711, 0755, 0750, 0701}) {
    ASSERT_EQ(::chmod(dir.c_str(), open), 0);
    Status s = RunDir(dir).prepare();
    EXPECT_TRUE(s.ok()) << std::oct << open << ": " << s.error().message();
    struct stat st;
    ASSERT_EQ(::lstat(dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u) << std::oct << open;
  }
  // Writable by others: refused, saying the fix.
  for (const Case& c : modes) {
    ASSERT_EQ(::chmod(dir.c_str(), c.mode), 0);
    Status s = RunDir(dir).prepare();
    ASSERT_FALSE(s.ok()) << std::oct << c.mode;
    EXPECT_EQ(s.error().code(), EPERM);
    EXPECT_NE(s.error().message().find(c.fix), std::string::npos) << s.error().message();
    EXPECT_NE(s.error().message().find("chmod 0700 " + dir), std::string::npos)
        << s.error().message();
  }
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);

  std::string link = tmp.path("link");
  ASSERT_EQ(::symlink(dir.c_str(), link.c_str()), 0);
  Status linked = RunDir(link).prepare();
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.error().message().find("the run directory " + link + " is a symbolic link"),
            std::string::npos)
      << linked.error().message();

  auto info = sys::path_info(dir);
  ASSERT_TRUE(info.ok()) << info.error().message();
  Status other = check_run_dir(dir, *info, info->uid + 1);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code(), EPERM);
  EXPECT_NE(other.error().message().find("belongs to uid " + std::to_string(info->uid)),
            std::string::npos)
      << other.error().message();
  EXPECT_NE(other.error().message().find("chown"), std::string::npos);
  if (::geteuid() == 0) {  // a real chown needs root
    ASSERT_EQ(::chown(dir.c_str(), 1, -1), 0);
    Status chowned = RunDir(dir).prepare();
    EXPECT_FALSE(chowned.ok());
    ASSERT_EQ(::chown(dir.c_str(), 0, -1), 0);
  }
}

// A socket under a directory another user may write is theirs to replace:
// they rename the broker's run directory away and put one of theirs in its
// place. The client looks at every directory above the run directory, as
// named and as its links resolve, before it sends anything.
TEST(RunDirChecks, AClientRefusesARunDirectoryUnderADirectoryAnotherUserMayWrite) {
  ::pp::testing::TempDir tmp;
  std::string shared = tmp.path("shared"), run = tmp.path("shared/run");
  ASSERT_EQ(::mkdir(shared.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(run.c_str(), 0700), 0);
  const uid_t self = ::geteuid();
  Status fine = check_run_dir_parents(run, self);
  ASSERT_TRUE(fine.ok()) << fine.error().message();
  EXPECT_TRUE(check_run_dir_parents(run + "/", self).ok());

  for (mode_t mode : {0777, 0775, 0757, 0722}) {
    ASSERT_EQ(::chmod(shared.c_str(), mode), 0);
    Status s = check_run_dir_parents(run, self);
    ASSERT_FALSE(s.ok()) << std::oct << mode;
    EXPECT_EQ(s.error().code(), EPERM);
    char shown[8];
    std::snprintf(shown, sizeof(shown), "%04o", unsigned(mode));
    EXPECT_EQ(s.error().message(), shared + ", above the run directory " + run + ", has mode " +
                                       shown +
                                       ": another user could put a run directory and socket of "
                                       "theirs in place of the broker's, so it is not asked: "
                                       "'chmod go-w " +
                                       shared + "', or give another run directory with --run-dir");
  }
  // Sticky, as /tmp: others may add names but not rename ours; only root's.
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  EXPECT_EQ(check_run_dir_parents(run, self).ok(), self == 0);

  // Through a link: the directory it resolves to is looked at too.
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);
  std::string link = tmp.path("link");
  ASSERT_EQ(::symlink(shared.c_str(), link.c_str()), 0);
  Status linked = check_run_dir_parents(link + "/run", self);
  ASSERT_FALSE(linked.ok());
  EXPECT_EQ(linked.error().message().rfind(
                shared + ", above the run directory " + link + "/run, has mode 0777", 0),
            0u)
      << linked.error().message();

  // The client refuses before it connects: EPERM, not "not running".
  auto connection = BrokerConnection::connect(RunDir(run), 1000);
  ASSERT_FALSE(connection.ok());
  EXPECT_EQ(connection.error().code(), EPERM) << connection.error().message();
  ASSERT_EQ(::chmod(shared.c_str(), 0755), 0);
  connection = BrokerConnection::connect(RunDir(run), 1000);
  ASSERT_FALSE(connection.ok());
  EXPECT_EQ(connection.error().code(), ECONNREFUSED) << connection.error().message();

  // Another user's directory, however closed.
  if (self == 0) {  // a real chown needs root
    ASSERT_EQ(::chown(shared.c_str(), 65534, -1), 0);
    Status theirs = check_run_dir_parents(run, self);
    ASSERT_FALSE(theirs.ok());
    EXPECT_EQ(theirs.error().code(), EPERM);
    EXPECT_EQ(theirs.error().message().rfind(shared + ", above the run directory " + run +
                                                 ", belongs to uid 65534, neither root nor uid 0",
                                             0),
              0u)
        << theirs.error().message();
    ASSERT_EQ(::chown(shared.c_str(), 0, -1), 0);
  } else {
    Status theirs = check_run_dir_parents(run, self + 1);
    ASSERT_FALSE(theirs.ok());
    EXPECT_NE(theirs.error().message().find("belongs to uid " + std::to_string(self)),
              std::string::npos)
        << theirs.error().message();
  }
}

// The broker asks of the directories above its run directory what its
// clients ask, before it keeps a registry or a socket there.
TEST(RunDirChecks, TheBrokerRefusesARunDirectoryUnderADirectoryAnotherUserMayWrite) {
  ::pp::testing::TempDir tmp;
  std::string shared = tmp.path("shared"), run = tmp.path("shared/run");
  ASSERT_EQ(::mkdir(shared.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 0777), 0);  // past the umask
  Status s = RunDir(run).prepare();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), EPERM);
  EXPECT_EQ(s.error().message(), shared + ", above the run directory " + run +
                                     ", has mode 0777: another user could put a run directory "
                                     "and socket of theirs in place of the broker's, so the "
                                     "broker keeps nothing under it: 'chmod go-w " +
                                     shared + "', or give another run directory with --run-dir");
  ASSERT_EQ(::chmod(shared.c_str(), 0755), 0);
  Status fine = RunDir(run).prepare();
  EXPECT_TRUE(fine.ok()) << fine.error().message();
}

TEST(RunDirChecks, AnEventIsPublishedByNameAndByIdAndUnpublishedWhole) {
  ::pp::testing::TempDir tmp;
  RunDir dir(tmp.path("run"));
  ASSERT_TRUE(dir.prepare().ok());
  ASSERT_TRUE(dir.publish_pmu().ok());
  ASSERT_TRUE(dir.publish_event("ctxsw", 3).ok());
  ASSERT_TRUE(dir.publish_event("9", 9).ok());
  sys::Tree events(dir.pmu() + "/events");
  EXPECT_EQ(*events.read("ctxsw"), "persistent,config=3\n");
  EXPECT_EQ(*events.read("3"), "persistent,config=3\n");
  EXPECT_EQ(*events.read("9"), "persistent,config=9\n");
  ASSERT_TRUE(dir.unpublish_event("ctxsw").ok());
  EXPECT_EQ(*events.list(""), (std::vector<std::string>{"9"}));
}

TEST(RunDirChecks, StateWithNextIdZeroIsRefused) {
  auto state = decode_state("{\"version\": 1, \"next_id\": 0, \"events\": []}", "s.json");
  ASSERT_FALSE(state.ok());
  EXPECT_NE(state.error().message().find("next_id 0"), std::string::npos);
}

}  // namespace
}  // namespace pp::persistent

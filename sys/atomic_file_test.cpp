#include "sys/atomic_file.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "sys/tree.h"
#include "tests/support/temp_dir.h"

namespace pp::sys {
namespace {

std::vector<std::string> names_in(const std::string& dir) {
  auto names = Tree(dir).list("");
  return names.ok() ? *names : std::vector<std::string>{};
}

TEST(AtomicFile, WritesReplacesAndLeavesNoTemporary) {
  testing::TempDir dir;
  std::string path = dir.path("state.json");
  ASSERT_TRUE(write_file_atomically(path, "one", 0600).ok());
  EXPECT_EQ(*Tree(dir.path()).read("state.json"), "one");
  ASSERT_TRUE(write_file_atomically(path, "two, longer", 0600).ok());
  EXPECT_EQ(*Tree(dir.path()).read("state.json"), "two, longer");
  EXPECT_EQ(names_in(dir.path()), std::vector<std::string>{"state.json"});
}

// The temporary is hidden beside the file, and known as one by its name.
TEST(AtomicFile, TemporariesAreHiddenBesideTheFile) {
  std::string pid = std::to_string(getpid());
  EXPECT_EQ(temporary_of("/run/pp/state.json"), "/run/pp/.state.json.tmp." + pid);
  EXPECT_EQ(temporary_of("x.prom"), ".x.prom.tmp." + pid);
  EXPECT_TRUE(is_temporary_name(".state.json.tmp.4242"));
  EXPECT_TRUE(is_temporary_name(".x.prom.tmp.1"));
  EXPECT_FALSE(is_temporary_name("state.json.tmp.4242"));  // not ours: no dot
  EXPECT_FALSE(is_temporary_name(".notes.tmp.txt"));
  EXPECT_FALSE(is_temporary_name(".tmp.12"));
  EXPECT_FALSE(is_temporary_name(".x.tmp."));
}

TEST(AtomicFile, ModeIsExactWhateverTheUmask) {
  testing::TempDir dir;
  mode_t old = ::umask(0);
  Status s = write_file_atomically(dir.path("a"), "x", 0600);
  ::umask(077);
  Status t = write_file_atomically(dir.path("b"), "x", 0644);
  ::umask(old);
  ASSERT_TRUE(s.ok() && t.ok());
  struct stat st;
  ASSERT_EQ(::stat(dir.path("a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(::stat(dir.path("b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
}

TEST(AtomicFile, FailureKeepsTheOldContent) {
  testing::TempDir dir;
  std::string path = dir.path("state.json");
  ASSERT_TRUE(write_file_atomically(path, "old", 0600).ok());
  // A directory where the file should go cannot be replaced by rename.
  testing::TempDir other;
  other.mkdir("d/inner");
  Status s = write_file_atomically(other.path("d"), "new", 0600);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find(other.path("d")), std::string::npos) << s.error().message();
  EXPECT_EQ(names_in(other.path()), std::vector<std::string>{"d"}) << "temporary left behind";
  EXPECT_EQ(*Tree(dir.path()).read("state.json"), "old");
}

TEST(AtomicFile, MissingDirectoryIsAClearError) {
  Status s = write_file_atomically("/nonexistent-pp-dir/state.json", "x", 0600);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ENOENT);
  EXPECT_NE(s.error().message().find("/nonexistent-pp-dir/.state.json.tmp."), std::string::npos);
}

TEST(AtomicFile, RemoveIsDurableAndToleratesMissing) {
  testing::TempDir dir;
  dir.write("f", "x");
  EXPECT_TRUE(remove_file_durably(dir.path("f")).ok());
  EXPECT_FALSE(Tree(dir.path()).exists("f"));
  EXPECT_TRUE(remove_file_durably(dir.path("f")).ok());
}

TEST(AtomicFile, MakeDirectoriesCreatesParentsAndRefusesFiles) {
  testing::TempDir dir;
  ASSERT_TRUE(make_directories(dir.path("a/b/c"), 0700).ok());
  EXPECT_TRUE(Tree(dir.path()).is_directory("a/b/c"));
  EXPECT_TRUE(make_directories(dir.path("a/b/c"), 0700).ok()) << "existing is fine";
  dir.write("file", "x");
  Status s = make_directories(dir.path("file"), 0700);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ENOTDIR);
}

}  // namespace
}  // namespace pp::sys

namespace pp::sys {
namespace {

TEST(AtomicFile, UnsyncedReplacementIsStillAtomicAndClean) {
  testing::TempDir dir;
  std::string path = dir.path("events/x");
  dir.mkdir("events");
  ASSERT_TRUE(write_file_atomically(path, "persistent,config=1\n", 0644, Durability::kNoSync).ok());
  EXPECT_EQ(*Tree(dir.path()).read("events/x"), "persistent,config=1\n");
  EXPECT_EQ(*Tree(dir.path()).list("events"), std::vector<std::string>{"x"});
  ASSERT_TRUE(remove_file_durably(path, Durability::kNoSync).ok());
  EXPECT_TRUE(Tree(dir.path()).list("events")->empty());
  EXPECT_TRUE(sync_directory(dir.path("events")).ok());
  EXPECT_FALSE(sync_directory(dir.path("nope")).ok());
}

TEST(AtomicFile, RemoveTreeRemovesEverythingAndFollowsNoLink) {
  pp::testing::TempDir dir;
  dir.write("victim/keep", "x");
  dir.write("t/a/b/c", "1");
  dir.write("t/d", "2");
  ASSERT_EQ(::symlink(dir.path("victim").c_str(), dir.path("t/link").c_str()), 0);
  ASSERT_TRUE(remove_tree(dir.path("t")).ok());
  EXPECT_FALSE(Tree(dir.path()).exists("t"));
  EXPECT_TRUE(Tree(dir.path()).exists("victim/keep")) << "a link is removed, not followed";
  EXPECT_TRUE(remove_tree(dir.path("t")).ok()) << "a missing path is no error";
  dir.write("from/x", "1");
  ASSERT_TRUE(rename_path(dir.path("from"), dir.path("to")).ok());
  EXPECT_TRUE(Tree(dir.path()).exists("to/x"));
  Status s = rename_path(dir.path("from"), dir.path("to2"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("cannot rename"), std::string::npos);
}

}  // namespace
}  // namespace pp::sys

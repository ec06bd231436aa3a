// sys::FileMap: a regular file's bytes as they are on disk, nothing for
// what cannot be mapped (the caller reads it instead), and errors that name
// the path.
#include "sys/file_map.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <string>

#include "tests/support/temp_dir.h"

namespace pp::sys {
namespace {

std::string text_of(const FileMap& map) {
  return std::string(reinterpret_cast<const char*>(map.bytes().data()), map.bytes().size());
}

TEST(FileMap, MapsARegularFileWhole) {
  testing::TempDir dir;
  std::string content(100000, 'x');
  content[0] = '\0';
  content[99999] = '\xff';
  dir.write("data", content);
  auto map = FileMap::open(dir.path("data"));
  ASSERT_TRUE(map.ok()) << map.error().message();
  ASSERT_TRUE(map->has_value());
  EXPECT_EQ(text_of(**map), content);
  // Moved, the bytes stay where they are; the moved-from map is empty.
  const uint8_t* at = (*map)->bytes().data();
  FileMap moved = std::move(**map);
  EXPECT_EQ(moved.bytes().data(), at);
  EXPECT_TRUE((*map)->bytes().empty());
  EXPECT_EQ(text_of(moved), content);
}

TEST(FileMap, AnEmptyFileIsEmpty) {
  testing::TempDir dir;
  dir.write("empty", "");
  auto map = FileMap::open(dir.path("empty"));
  ASSERT_TRUE(map.ok()) << map.error().message();
  ASSERT_TRUE(map->has_value());
  EXPECT_TRUE((*map)->bytes().empty());
}

TEST(FileMap, AFifoIsLeftToTheCallerToRead) {
  testing::TempDir dir;
  std::string fifo = dir.path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // O_RDONLY on a FIFO with no writer would block: open a writer first.
  int writer = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(writer, 0);
  auto map = FileMap::open(fifo);
  ::close(writer);
  ASSERT_TRUE(map.ok()) << map.error().message();
  EXPECT_FALSE(map->has_value());
}

TEST(FileMap, AMissingFileIsAnErrorNamingIt) {
  testing::TempDir dir;
  auto map = FileMap::open(dir.path("missing.data"));
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.error().code(), ENOENT);
  EXPECT_NE(map.error().message().find(dir.path("missing.data")), std::string::npos)
      << map.error().message();
}

}  // namespace
}  // namespace pp::sys

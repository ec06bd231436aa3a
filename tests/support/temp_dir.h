// A temporary directory removed (recursively) when the object goes, with
// helpers to lay out fake sysfs and tracefs trees in it.
#pragma once

#include <string>
#include <string_view>

namespace pp::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string path(std::string_view relative) const;

  // Writes `content` to `relative`, creating the directories on the way.
  void write(std::string_view relative, std::string_view content) const;
  void mkdir(std::string_view relative) const;

 private:
  std::string path_;
};

}  // namespace pp::testing

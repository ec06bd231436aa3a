// A regular file mapped read-only, whole: for readers of files of a
// hundred megabytes and more (report's perf.data), which then parse the page
// cache in place instead of copying the file into memory first.
//
//   PP_ASSIGN_OR_RETURN(std::optional<FileMap> map, FileMap::open(path));
//   if (!map) ...                      // a FIFO, /dev/stdin: read it instead
//   std::span<const uint8_t> bytes = map->bytes();
//
// The file must not shrink while it is mapped: a read past its new end is a
// SIGBUS (perf report, which maps perf.data too, has the same rule).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/result.h"

namespace pp::sys {

class FileMap {
 public:
  // Maps the file at `path`; nullopt when it is not a regular file (a pipe,
  // a terminal, a device), which cannot be mapped and must be read. Errors
  // say what failed on the path: open (ENOENT, EACCES...), fstat, mmap.
  static Result<std::optional<FileMap>> open(const std::string& path);

  FileMap() = default;
  ~FileMap() { reset(); }
  FileMap(FileMap&& other) noexcept;
  FileMap& operator=(FileMap&& other) noexcept;
  FileMap(const FileMap&) = delete;
  FileMap& operator=(const FileMap&) = delete;

  // The file's bytes as they were mapped (empty for an empty file).
  std::span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  FileMap(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  void reset();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace pp::sys

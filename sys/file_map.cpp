#include "sys/file_map.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <utility>

#include "sys/fd.h"

namespace pp::sys {

Result<std::optional<FileMap>> FileMap::open(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd)
    return error_from_errno(errno, "cannot open " + path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0)
    return error_from_errno(errno, "cannot stat " + path);
  if (!S_ISREG(st.st_mode))
    return std::optional<FileMap>();
  if (st.st_size == 0)
    return std::optional<FileMap>(FileMap());
  size_t size = size_t(st.st_size);
  void* at = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (at == MAP_FAILED)
    return error_from_errno(errno, "cannot map " + path);
  // Read front to back once, then in time order: the kernel reads ahead.
  (void)::madvise(at, size, MADV_WILLNEED);
  return std::optional<FileMap>(FileMap(static_cast<const uint8_t*>(at), size));
}

FileMap::FileMap(FileMap&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

FileMap& FileMap::operator=(FileMap&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void FileMap::reset() {
  if (data_)
    ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace pp::sys

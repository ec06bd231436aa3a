#include "sys/shared_ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "sys/kernel.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010  // include/uapi/linux/fcntl.h, Linux 5.1
#endif

namespace pp::sys {

SharedRing::~SharedRing() {
  if (memory_)
    ::munmap(memory_, bytes_);
}

SharedRing::SharedRing(SharedRing&& other) noexcept
    : fd_(std::move(other.fd_)),
      memory_(std::exchange(other.memory_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      data_offset_(std::exchange(other.data_offset_, 0)),
      sealed_for_writes_(std::exchange(other.sealed_for_writes_, false)) {}

SharedRing& SharedRing::operator=(SharedRing&& other) noexcept {
  if (this != &other) {
    if (memory_)
      ::munmap(memory_, bytes_);
    fd_ = std::move(other.fd_);
    memory_ = std::exchange(other.memory_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    data_offset_ = std::exchange(other.data_offset_, 0);
    sealed_for_writes_ = std::exchange(other.sealed_for_writes_, false);
  }
  return *this;
}

Result<SharedRing> SharedRing::create(const std::string& name, size_t data_size) {
  const size_t page = page_size();
  if (data_size < page || (data_size & (data_size - 1)) != 0)
    return Error(EINVAL,
                 "a shared ring's data area must be a power of two of at least a page, "
                 "not " +
                     std::to_string(data_size) + " bytes");
  SharedRing ring;
  ring.fd_ = Fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!ring.fd_)
    return error_from_errno(errno, "cannot create the shared ring '" + name + "' (memfd_create)");
  ring.bytes_ = page + data_size;
  ring.data_offset_ = page;
  if (::ftruncate(ring.fd_.get(), off_t(ring.bytes_)) != 0)
    return error_from_errno(errno, "cannot size the shared ring '" + name + "' to " +
                                       std::to_string(ring.bytes_) + " bytes");
  void* at = ::mmap(nullptr, ring.bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, ring.fd_.get(), 0);
  if (at == MAP_FAILED)
    return error_from_errno(errno, "cannot map the shared ring '" + name + "'");
  ring.memory_ = static_cast<uint8_t*>(at);
  // The writer's own mapping was made before the seal: it stays writable.
  ring.sealed_for_writes_ = ::fcntl(ring.fd_.get(), F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == 0;
  if (::fcntl(ring.fd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
    return error_from_errno(errno, "cannot seal the shared ring '" + name + "'");
  return ring;
}

Result<Fd> SharedRing::reader_fd() const {
  if (!fd_)
    return Error(EBADF, "the shared ring is closed");
  if (sealed_for_writes_) {
    Fd copy(::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 3));
    if (!copy)
      return error_from_errno(errno, "cannot duplicate the shared ring's descriptor");
    return copy;
  }
  // A read-only open of the same memory: PROT_WRITE on it is refused.
  std::string path = "/proc/self/fd/" + std::to_string(fd_.get());
  Fd copy(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!copy)
    return error_from_errno(errno, "cannot reopen the shared ring read-only (" + path + ")");
  return copy;
}

Result<HangupPipe> HangupPipe::create() {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0)
    return error_from_errno(errno,
                            "cannot make the pipe that tells a shared ring's readers it "
                            "is gone (pipe2)");
  HangupPipe pipe;
  pipe.read_ = Fd(ends[0]);
  pipe.write_ = Fd(ends[1]);
  return pipe;
}

Result<Fd> HangupPipe::reader_fd() const {
  if (!read_)
    return Error(EBADF, "the hangup pipe is closed");
  Fd copy(::fcntl(read_.get(), F_DUPFD_CLOEXEC, 3));
  if (!copy)
    return error_from_errno(errno, "cannot duplicate the hangup pipe's reader end");
  return copy;
}

}  // namespace pp::sys

// Move-only owner of a file descriptor.
#pragma once

#include <utility>

namespace pp::sys {

class Kernel;

// Owns one fd and closes it exactly once. An fd that came from a Kernel
// (perf_event_open on the fake kernel, say) is closed through that Kernel,
// so a fake sees every close the code makes.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd, Kernel* kernel = nullptr) : fd_(fd), kernel_(kernel) {}
  ~Fd() { reset(); }

  Fd(Fd&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), kernel_(std::exchange(other.kernel_, nullptr)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
      kernel_ = std::exchange(other.kernel_, nullptr);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  explicit operator bool() const { return valid(); }

  // Gives up ownership without closing.
  int release() {
    kernel_ = nullptr;
    return std::exchange(fd_, -1);
  }
  // Closes the fd now (if any).
  void reset();

 private:
  int fd_ = -1;
  Kernel* kernel_ = nullptr;
};

}  // namespace pp::sys

#include "sys/fd.h"

#include <unistd.h>

#include "sys/kernel.h"

namespace pp::sys {

void Fd::reset() {
  if (fd_ < 0)
    return;
  if (kernel_)
    kernel_->close(fd_);
  else
    ::close(fd_);
  fd_ = -1;
  kernel_ = nullptr;
}

}  // namespace pp::sys

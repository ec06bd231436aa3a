#include "sys/ras_daemon.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "sys/tree.h"

namespace pp::sys {

Result<Fd> open_ras_daemon_active(const std::string& sysfs_root) {
  std::string path = Tree(sysfs_root).path(kRasDaemonActive);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    return errorf(ErrorKind::kRefused, err,
                  "cannot open %s: %s; the kernel emits ras:extlog_mem_event only while it is "
                  "held open (%s)",
                  path.c_str(), std::strerror(err),
                  err == ENOENT ? "mount debugfs at /sys/kernel/debug, on a kernel with CONFIG_RAS"
                                : "run the broker as root");
  }
  return Fd(fd);
}

}  // namespace pp::sys

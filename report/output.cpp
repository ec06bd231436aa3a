#include "report/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

#include "sys/fd.h"

namespace pp::report {
namespace {

// The iovecs still to write after `done` bytes of `parts`.
std::vector<iovec> remaining_parts(std::span<const iovec> parts, uint64_t done) {
  std::vector<iovec> out;
  for (const iovec& part : parts) {
    if (done >= part.iov_len) {
      done -= part.iov_len;
      continue;
    }
    out.push_back({static_cast<char*>(part.iov_base) + done, part.iov_len - done});
    done = 0;
  }
  return out;
}

// Calls `call(iov, iovcnt, done)` until every byte is written, advancing
// through `parts` after short writes; IOV_MAX at a time.
template <typename Call>
Status write_all(std::span<const iovec> parts, uint64_t* written, uint64_t* calls,
                 const std::string& name, Call call) {
  const uint64_t total = total_size(parts);
  uint64_t done = 0;
  while (done < total) {
    std::vector<iovec> rest = remaining_parts(parts, done);
    int count = int(std::min<size_t>(rest.size(), IOV_MAX));
    ssize_t n = call(rest.data(), count, done);
    (*calls)++;
    if (n < 0) {
      if (errno == EINTR)
        continue;
      int err = errno;
      if (written)
        *written = done;
      if (err == ENOSPC || err == EDQUOT)
        return errorf(ErrorKind::kOutput, err,
                      "no space left writing %s (%llu of %llu bytes of this write made it); "
                      "free some space or write elsewhere with -o",
                      name.c_str(), static_cast<unsigned long long>(done),
                      static_cast<unsigned long long>(total));
      if (err == EPIPE)
        return errorf(ErrorKind::kOutput, err, "the reader of %s went away (broken pipe)",
                      name.c_str());
      return error_from_errno(err, "writing " + name).with_kind(ErrorKind::kOutput);
    }
    if (n == 0) {
      if (written)
        *written = done;
      return errorf(ErrorKind::kOutput, EIO, "writing %s: the file system accepted no bytes",
                    name.c_str());
    }
    done += uint64_t(n);
  }
  if (written)
    *written = done;
  return ok_status();
}

class FileOutput final : public Output {
 public:
  FileOutput(sys::Fd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}

  const std::string& name() const override { return name_; }
  bool seekable() const override { return true; }

  Status write_at(uint64_t offset, std::span<const iovec> parts, uint64_t* written) override {
    return write_all(parts, written, &write_calls_, name_,
                     [&](const iovec* iov, int count, uint64_t done) {
                       return ::pwritev(fd_.get(), iov, count, off_t(offset + done));
                     });
  }

  Status append(std::span<const iovec> parts) override {
    return write_all(
        parts, nullptr, &write_calls_, name_,
        [&](const iovec* iov, int count, uint64_t) { return ::writev(fd_.get(), iov, count); });
  }

  Status reserve(uint64_t offset, uint64_t length) override {
    if (length == 0)
      return ok_status();
    for (;;) {
      if (::fallocate(fd_.get(), FALLOC_FL_KEEP_SIZE, off_t(offset), off_t(length)) == 0)
        return ok_status();
      if (errno == EINTR)
        continue;
      int err = errno == ENOTSUP ? EOPNOTSUPP : errno;
      return error_from_errno(err, "reserving space in " + name_).with_kind(ErrorKind::kOutput);
    }
  }

  Status truncate(uint64_t size) override {
    if (::ftruncate(fd_.get(), off_t(size)) != 0)
      return error_from_errno(errno, "truncating " + name_).with_kind(ErrorKind::kOutput);
    return ok_status();
  }

 private:
  sys::Fd fd_;
  std::string name_;
};

class StreamOutput final : public Output {
 public:
  StreamOutput(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  // Owns the fd (a FIFO or device opened by path).
  StreamOutput(sys::Fd owned, std::string name)
      : fd_(owned.get()), owned_(std::move(owned)), name_(std::move(name)) {}

  const std::string& name() const override { return name_; }
  bool seekable() const override { return false; }

  Status write_at(uint64_t, std::span<const iovec>, uint64_t*) override { return not_seekable(); }
  Status reserve(uint64_t, uint64_t) override { return not_seekable(); }
  Status truncate(uint64_t) override { return not_seekable(); }

  Status append(std::span<const iovec> parts) override {
    return write_all(
        parts, nullptr, &write_calls_, name_,
        [&](const iovec* iov, int count, uint64_t) { return ::writev(fd_, iov, count); });
  }

 private:
  Status not_seekable() const {
    return errorf(ErrorKind::kOutput, ESPIPE, "%s is a stream: it cannot be written at an offset",
                  name_.c_str());
  }

  int fd_;
  sys::Fd owned_;
  std::string name_;
};

}  // namespace

Result<std::unique_ptr<Output>> create_file_output(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return errorf(ErrorKind::kOutput, EISDIR, "%s is a directory; name a file to write with -o",
                    path.c_str());
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
      std::string old = path + ".old";
      if (::rename(path.c_str(), old.c_str()) != 0)
        return error_from_errno(errno, "cannot rename " + path + " to " + old)
            .with_kind(ErrorKind::kOutput);
    }
  }
  sys::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd)
    return error_from_errno(errno, "cannot create " + path).with_kind(ErrorKind::kOutput);
  // A FIFO or a device named by path (/dev/stdout, a named pipe) can only
  // be appended to: perf's pipe mode, as perf record does for a FIFO.
  if (::fstat(fd.get(), &st) != 0)
    return error_from_errno(errno, "cannot stat " + path).with_kind(ErrorKind::kOutput);
  if (!S_ISREG(st.st_mode))
    return std::unique_ptr<Output>(new StreamOutput(std::move(fd), path));
  return std::unique_ptr<Output>(new FileOutput(std::move(fd), path));
}

uint64_t total_size(std::span<const iovec> parts) {
  uint64_t n = 0;
  for (const iovec& part : parts)
    n += part.iov_len;
  return n;
}

std::unique_ptr<Output> stream_output(int fd, std::string name) {
  return std::make_unique<StreamOutput>(fd, std::move(name));
}

}  // namespace pp::report

#include "sys/testing/fake_systemd.h"

#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "sys/unix_socket.h"

namespace pp::sys::testing {
namespace {

// systemd's same_fd(): two descriptors of one open file.
bool same_file(int a, int b) {
  pid_t self = ::getpid();
  return ::syscall(SYS_kcmp, self, self, KCMP_FILE, a, b) == 0;
}

}  // namespace

Result<Fd> FakeSystemd::copy(int fd) const {
  return options_.duplicate ? options_.duplicate(fd) : duplicate(fd);
}

Status FakeSystemd::notify(const std::string& state) {
  std::lock_guard lock(mutex_);
  if (!options_.notifying)
    return ok_status();
  messages_.push_back(state);
  if (state.rfind("FDSTOREREMOVE=1\nFDNAME=", 0) == 0) {
    std::string name = state.substr(std::string("FDSTOREREMOVE=1\nFDNAME=").size());
    std::erase_if(store_, [&](const NamedFd& f) { return f.name == name; });
  }
  return ok_status();
}

Status FakeSystemd::store_fd(const std::string& name, int fd) {
  if (!valid_fd_name(name))
    return Error(EINVAL, "'" + name + "' is not a valid FDNAME");
  std::lock_guard lock(mutex_);
  if (!options_.notifying)
    return ok_status();
  messages_.push_back("FDSTORE=1\nFDPOLL=0\nFDNAME=" + name);
  for (const NamedFd& f : store_)
    if (same_file(f.fd.get(), fd)) {
      duplicates_++;
      return ok_status();
    }
  PP_ASSIGN_OR_RETURN(Fd kept, copy(fd));
  store_.push_back({name, std::move(kept)});
  return ok_status();
}

Status FakeSystemd::remove_fds(const std::string& name) {
  return notify("FDSTOREREMOVE=1\nFDNAME=" + name);
}

Result<std::vector<NamedFd>> FakeSystemd::take_listen_fds() {
  std::lock_guard lock(mutex_);
  std::vector<NamedFd> out;
  for (const NamedFd& f : store_) {
    PP_ASSIGN_OR_RETURN(Fd fd, copy(f.fd.get()));
    out.push_back({f.name, std::move(fd)});
  }
  std::mt19937 random(options_.shuffle_seed + takes_++);
  std::shuffle(out.begin(), out.end(), random);
  return out;
}

Result<bool> FakeSystemd::unit_installed(const std::string& unit) {
  return options_.installed_units.count(unit) > 0;
}

Status FakeSystemd::start_unit(const std::string& unit) {
  {
    std::lock_guard lock(mutex_);
    started_.push_back(unit);
  }
  return options_.on_start_unit ? options_.on_start_unit(unit) : ok_status();
}

std::vector<std::string> FakeSystemd::messages() const {
  std::lock_guard lock(mutex_);
  return messages_;
}

size_t FakeSystemd::count(const std::string& state) const {
  std::lock_guard lock(mutex_);
  return size_t(std::count(messages_.begin(), messages_.end(), state));
}

void FakeSystemd::clear_messages() {
  std::lock_guard lock(mutex_);
  messages_.clear();
}

std::vector<std::string> FakeSystemd::stored_names() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  for (const NamedFd& f : store_)
    names.push_back(f.name);
  return names;
}

size_t FakeSystemd::stored() const {
  std::lock_guard lock(mutex_);
  return store_.size();
}

size_t FakeSystemd::duplicates_ignored() const {
  std::lock_guard lock(mutex_);
  return duplicates_;
}

std::vector<std::string> FakeSystemd::units_started() const {
  std::lock_guard lock(mutex_);
  return started_;
}

Result<Fd> FakeSystemd::stored_copy(const std::string& name) const {
  std::lock_guard lock(mutex_);
  for (const NamedFd& f : store_)
    if (f.name == name)
      return copy(f.fd.get());
  return Error(ENOENT, "no fd named " + name + " in the fake store");
}

void FakeSystemd::add_to_store(const std::string& name, Fd fd) {
  std::lock_guard lock(mutex_);
  store_.push_back({name, std::move(fd)});
}

void FakeSystemd::release_store() {
  std::lock_guard lock(mutex_);
  store_.clear();
}

}  // namespace pp::sys::testing

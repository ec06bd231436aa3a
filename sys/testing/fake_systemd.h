// A fake systemd for tests (sys/systemd.h): it records every notification,
// and keeps a file-descriptor store as systemd 252 does: FDSTORE=1 keeps a
// copy of the fd under its FDNAME unless the same open file is stored
// already (then the new copy is ignored, a duplicate), FDSTOREREMOVE=1 drops
// every fd of a name, and a restarted service gets copies of all of them
// back (take_listen_fds()) in an order that is not the order they came in.
//
//   sys::testing::FakeKernel kernel;
//   sys::testing::FakeSystemd systemd({.duplicate = [&](int fd) { return kernel.duplicate(fd); }});
//   config.systemd = &systemd;                // a broker notifies and stores
//   ... restart the broker: it takes the stored fds back ...
//   EXPECT_EQ(systemd.stored_names(), ...);
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "sys/systemd.h"

namespace pp::sys::testing {

struct FakeSystemdOptions {
  bool notifying = true;       // $NOTIFY_SOCKET is set
  uint64_t watchdog_usec = 0;  // WatchdogSec=, 0 for none
  bool booted = true;          // PID 1 is systemd
  std::set<std::string> installed_units{};
  // What start_unit() does (e.g. start a broker); ok when empty.
  std::function<Status(const std::string& unit)> on_start_unit{};
  // How the store copies an fd (systemd dup()s what it receives); a fake
  // kernel's fds need the fake's own duplicate(). sys::duplicate() when empty.
  std::function<Result<Fd>(int fd)> duplicate{};
  // The order take_listen_fds() hands the fds out in: a permutation drawn
  // from this seed, so tests can check that names, not positions, count.
  uint32_t shuffle_seed = 1;
};

class FakeSystemd final : public Systemd {
 public:
  explicit FakeSystemd(FakeSystemdOptions options = {}) : options_(std::move(options)) {}

  bool notifying() const override { return options_.notifying; }
  Status notify(const std::string& state) override;
  Status store_fd(const std::string& name, int fd) override;
  Status remove_fds(const std::string& name) override;
  uint64_t watchdog_usec() override { return options_.watchdog_usec; }
  Result<std::vector<NamedFd>> take_listen_fds() override;
  bool booted() override { return options_.booted; }
  Result<bool> unit_installed(const std::string& unit) override;
  Status start_unit(const std::string& unit) override;

  // Every notification so far, in order (FDSTORE ones included, as
  // "FDSTORE=1\nFDPOLL=0\nFDNAME=<name>").
  std::vector<std::string> messages() const;
  size_t count(const std::string& state) const;  // how many were exactly `state`
  void clear_messages();
  // The store: each fd's name, in the order they were stored.
  std::vector<std::string> stored_names() const;
  size_t stored() const;
  // How many FDSTORE=1 copies were ignored as duplicates.
  size_t duplicates_ignored() const;
  std::vector<std::string> units_started() const;

  // A copy of the first stored fd named `name` (ENOENT when none), e.g. to
  // map a buffer as a keeper would.
  Result<Fd> stored_copy(const std::string& name) const;
  // Adds an fd to the store as if a service had stored it (a stale fd, a
  // second fd under a name), bypassing the duplicate check.
  void add_to_store(const std::string& name, Fd fd);
  // What `systemctl stop` does: the store is released.
  void release_store();
  void set_watchdog_usec(uint64_t usec) { options_.watchdog_usec = usec; }

 private:
  Result<Fd> copy(int fd) const;

  FakeSystemdOptions options_;
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
  std::vector<NamedFd> store_;
  size_t duplicates_ = 0;
  uint32_t takes_ = 0;
  std::vector<std::string> started_;
};

}  // namespace pp::sys::testing

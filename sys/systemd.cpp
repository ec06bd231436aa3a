#include "sys/systemd.h"

#include <fcntl.h>

#include <cstdlib>
#include <cstring>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

namespace pp::sys {
namespace {

class RealSystemd final : public Systemd {
 public:
  bool notifying() const override {
    const char* socket = std::getenv("NOTIFY_SOCKET");
    return socket && *socket;
  }

  Status notify(const std::string& state) override {
    if (!notifying())
      return ok_status();
    int r = sd_notify(0, state.c_str());
    if (r < 0)
      return error_from_errno(-r, "sd_notify(\"" + first_line(state) + "\")");
    return ok_status();
  }

  Status store_fd(const std::string& name, int fd) override {
    if (!valid_fd_name(name))
      return Error(EINVAL, "'" + name + "' is not a valid FDNAME");
    if (!notifying())
      return ok_status();
    std::string state = "FDSTORE=1\nFDPOLL=0\nFDNAME=" + name;
    int r = sd_pid_notify_with_fds(0, 0, state.c_str(), &fd, 1);
    if (r < 0)
      return error_from_errno(-r, "storing fd '" + name + "' in the service's fd store");
    return ok_status();
  }

  Status remove_fds(const std::string& name) override {
    if (!valid_fd_name(name))
      return Error(EINVAL, "'" + name + "' is not a valid FDNAME");
    return notify("FDSTOREREMOVE=1\nFDNAME=" + name);
  }

  uint64_t watchdog_usec() override {
    uint64_t usec = 0;
    return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
  }

  Result<std::vector<NamedFd>> take_listen_fds() override {
    char** names = nullptr;
    int n = sd_listen_fds_with_names(1, &names);
    if (n < 0)
      return error_from_errno(-n, "sd_listen_fds_with_names");
    std::vector<NamedFd> fds;
    for (int i = 0; i < n; i++) {
      int fd = SD_LISTEN_FDS_START + i;
      (void)::fcntl(fd, F_SETFD, FD_CLOEXEC);
      fds.push_back({names && names[i] ? names[i] : "", Fd(fd)});
    }
    if (names) {
      for (int i = 0; names[i]; i++)
        std::free(names[i]);
      std::free(static_cast<void*>(names));
    }
    return fds;
  }

  bool booted() override { return sd_booted() > 0; }

  Result<bool> unit_installed(const std::string& unit) override {
    Bus bus;
    PP_RETURN_IF_ERROR(bus.open());
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message* reply = nullptr;
    int r = sd_bus_call_method(bus.get(), kDestination, kPath, kManager, "GetUnitFileState", &error,
                               &reply, "s", unit.c_str());
    bool known = r >= 0;
    bool missing = r < 0 && sd_bus_error_has_name(&error, "org.freedesktop.systemd1.NoSuchUnit");
    std::string why = r < 0 ? bus_error_text(error, r) : "";
    sd_bus_error_free(&error);
    sd_bus_message_unref(reply);
    if (known || missing)
      return known;
    return Error(-r, "asking systemd about " + unit + ": " + why);
  }

  Status start_unit(const std::string& unit) override {
    Bus bus;
    PP_RETURN_IF_ERROR(bus.open());
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message* reply = nullptr;
    int r = sd_bus_call_method(bus.get(), kDestination, kPath, kManager, "StartUnit", &error,
                               &reply, "ss", unit.c_str(), "replace");
    std::string why = r < 0 ? bus_error_text(error, r) : "";
    sd_bus_error_free(&error);
    sd_bus_message_unref(reply);
    if (r < 0)
      return Error(-r, "asking systemd to start " + unit + ": " + why + " (try 'systemctl start " +
                           unit + "' and 'journalctl -u " + unit + "')");
    return ok_status();
  }

 private:
  static constexpr const char* kDestination = "org.freedesktop.systemd1";
  static constexpr const char* kPath = "/org/freedesktop/systemd1";
  static constexpr const char* kManager = "org.freedesktop.systemd1.Manager";

  // The system bus, closed when it goes.
  class Bus {
   public:
    Bus() = default;
    ~Bus() { sd_bus_flush_close_unref(bus_); }
    Bus(const Bus&) = delete;
    Bus& operator=(const Bus&) = delete;
    Status open() {
      int r = sd_bus_open_system(&bus_);
      if (r < 0)
        return error_from_errno(-r, "cannot reach systemd over the system bus");
      return ok_status();
    }
    sd_bus* get() const { return bus_; }

   private:
    sd_bus* bus_ = nullptr;
  };

  static std::string bus_error_text(const sd_bus_error& error, int r) {
    if (error.message)
      return error.message;
    return std::strerror(-r);
  }

  static std::string first_line(const std::string& state) {
    return state.substr(0, state.find('\n'));
  }
};

}  // namespace

bool valid_fd_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxFdNameLength)
    return false;
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f || c == ':')
      return false;
  }
  return true;
}

Systemd& real_systemd() {
  static RealSystemd systemd;
  return systemd;
}

}  // namespace pp::sys

#include "persistent/limits.h"

#include <algorithm>

namespace pp::persistent {
namespace {

Status check_length(const char* field, const char* option, size_t length, size_t limit) {
  if (length <= limit)
    return ok_status();
  return errorf(ErrorKind::kUsage, EINVAL,
                "the %s is %zu bytes, over the limit of %zu for a persistent event (%s); "
                "shorten it",
                field, length, limit, option);
}

}  // namespace

Status check_create_limits(const CreateRequest& request) {
  PP_RETURN_IF_ERROR(
      check_length("event string", "-e", request.event.size(), kMaxEventStringBytes));
  PP_RETURN_IF_ERROR(check_length("filter", "--filter", request.filter.size(), kMaxFilterBytes));
  PP_RETURN_IF_ERROR(check_length("CPU list", "-C", request.cpus.size(), kMaxCpuListBytes));
  return ok_status();
}

std::string describe_fd_use(const FdRoom& room) {
  size_t needed = room.cpus + room.context_cpus;
  std::string limit =
      std::to_string(room.usage.limit) + " (RLIMIT_NOFILE" +
      (room.usage.hard_limit >= 0 ? ", hard limit " + std::to_string(room.usage.hard_limit)
                                  : std::string()) +
      ")";
  long wanted = sys::suggested_fd_limit(room.usage, needed + kFdReserve + room.client_room);
  std::string advice =
      !room.service.empty()
          ? sys::limit_nofile_advice(room.service, wanted)
          : "start the broker with a higher limit ('ulimit -n " + std::to_string(wanted) +
                "' in its shell first; the broker raises its soft limit to the hard one)";
  return "the broker holds " + std::to_string(room.usage.open) + " fds of its limit of " + limit +
         " for " + std::to_string(room.events) + " event" + (room.events == 1 ? "" : "s") +
         " (each takes one fd per CPU, and each context stream one per CPU), keeping " +
         std::to_string(kFdReserve) + " free for clients and its own files" +
         (room.client_room ? " and " + std::to_string(room.client_room) +
                                 " for the connections it may still accept"
                           : std::string()) +
         "; " + advice + ", or kill events you no longer need ('perf persistent kill')";
}

Status check_fd_room(const FdRoom& room) {
  size_t needed = room.cpus + room.context_cpus;
  if (room.usage.limit <= 0 ||
      room.usage.open + needed + kFdReserve + room.client_room <= size_t(room.usage.limit))
    return ok_status();
  std::string what = std::to_string(room.cpus) + " file descriptor" + (room.cpus == 1 ? "" : "s") +
                     " (one per CPU, " + std::to_string(room.cpus) + " CPU" +
                     (room.cpus == 1 ? "" : "s") + ")";
  if (room.context_cpus)
    what += " and " + std::to_string(room.context_cpus) + " for its context stream";
  return errorf(EMFILE, "cannot create '%s': it needs %s, and %s", room.event.c_str(), what.c_str(),
                describe_fd_use(room).c_str());
}

}  // namespace pp::persistent

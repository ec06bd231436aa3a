#include "persistent/limits.h"

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

}  // namespace pp::persistent

#include "base/result.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

namespace pp {
namespace {

__attribute__((format(printf, 1, 0))) std::string vformat(const char* format, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string message(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0)
    std::vsnprintf(message.data(), message.size() + 1, format, ap);
  return message;
}

}  // namespace

std::optional<ErrorKind> kind_from_name(std::string_view name) {
  for (const ErrorKindInfo& info : kErrorKinds)
    if (info.name == name)
      return info.kind;
  return std::nullopt;
}

Error usage_error(std::string message) {
  return Error(ErrorKind::kUsage, EINVAL, std::move(message));
}

Error not_found_error(std::string message) {
  return Error(ErrorKind::kNotFound, ENOENT, std::move(message));
}

Error name_taken_error(std::string message) {
  return Error(ErrorKind::kNameTaken, EEXIST, std::move(message));
}

Error internal_error(std::string message) {
  return Error(ErrorKind::kInternal, EINVAL, std::move(message));
}

Error Error::with_context(std::string_view context) const& {
  return Error(kind_, code_, std::string(context) + ": " + message_);
}

Error Error::with_context(std::string_view context) && {
  message_.insert(0, std::string(context) + ": ");
  return std::move(*this);
}

Error errorf(int code, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  std::string message = vformat(format, ap);
  va_end(ap);
  return Error(code, std::move(message));
}

Error errorf(ErrorKind kind, int code, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  std::string message = vformat(format, ap);
  va_end(ap);
  return Error(kind, code, std::move(message));
}

Error error_from_errno(int err, std::string_view what) {
  std::string message(what);
  message += ": ";
  message += std::strerror(err);
  return Error(err, std::move(message));
}

std::string errno_name(int err) {
  // strerrorname_np is glibc 2.32+; Debian 12 has 2.36.
  if (const char* name = strerrordesc_np(err) ? strerrorname_np(err) : nullptr)
    return name;
  return "E" + std::to_string(err);
}

int errno_from_name(std::string_view name) {
  for (int err = 1; err < 4096; err++)
    if (strerrordesc_np(err) && name == strerrorname_np(err))
      return err;
  if (name.size() > 1 && name[0] == 'E' && name.find_first_not_of("0123456789", 1) == name.npos &&
      name.size() < 6)
    return std::stoi(std::string(name.substr(1)));
  return 0;
}

}  // namespace pp

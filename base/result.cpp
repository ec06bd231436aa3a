#include "base/result.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace pp {

Error Error::with_context(std::string_view context) const& {
  return Error(code_, std::string(context) + ": " + message_);
}

Error Error::with_context(std::string_view context) && {
  message_.insert(0, std::string(context) + ": ");
  return std::move(*this);
}

Error errorf(int code, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  va_list copy;
  va_copy(copy, ap);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string message(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0)
    std::vsnprintf(message.data(), message.size() + 1, format, ap);
  va_end(ap);
  return Error(code, std::move(message));
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

}  // namespace pp

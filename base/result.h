// The result type every fallible function in perf-persistent returns.
//
// A function that can fail returns Result<T> (a value or an Error) or Status
// (Result<void>). An Error carries an errno-like code (EINVAL, ENOENT, EACCES,
// ...) and a message written for the user: what failed, on what, and what to
// try. Exceptions never cross a module boundary; main() alone turns an Error
// into an exit code.
//
//   Result<uint64_t> parse_id(std::string_view text);
//
//   PP_ASSIGN_OR_RETURN(uint64_t id, parse_id(argv[1]));
//   PP_RETURN_IF_ERROR(backend.kill(id));
#pragma once

#include <cerrno>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace pp {

class Error {
 public:
  Error(int code, std::string message) : code_(code), message_(std::move(message)) {}

  // errno-like: EINVAL, ENOENT, EACCES, ... Never 0.
  int code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with what the caller was doing: "reading
  // /sys/.../type: No such file or directory".
  Error with_context(std::string_view context) const&;
  Error with_context(std::string_view context) &&;

 private:
  int code_;
  std::string message_;
};

// printf-style constructor for an Error.
Error errorf(int code, const char* format, ...) __attribute__((format(printf, 2, 3)));

// An Error for a failed system call: "<what>: <strerror(err)>", code err.
Error error_from_errno(int err, std::string_view what);

// The symbolic name of an errno value ("ENOENT"), or "E<number>" when unknown.
std::string errno_name(int err);

template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::decay_t<T>, Error>, "Result<Error> is meaningless");

 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return !error_.has_value(); }
  explicit operator bool() const { return ok(); }

  const Error& error() const& { return *error_; }
  Error&& error() && { return std::move(*error_); }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

inline Status ok_status() {
  return {};
}

}  // namespace pp

#define PP_CONCAT_INNER_(a, b) a##b
#define PP_CONCAT_(a, b) PP_CONCAT_INNER_(a, b)

// Returns the Error of `expr` (a Status or Result) from the enclosing function.
#define PP_RETURN_IF_ERROR(expr)            \
  do {                                      \
    auto pp_status_ = (expr);               \
    if (!pp_status_.ok())                   \
      return std::move(pp_status_).error(); \
  } while (0)

// Evaluates `expr` (a Result<T>); on error returns it, else moves the value
// into `lhs`, which may be a declaration: PP_ASSIGN_OR_RETURN(auto fd, open()).
#define PP_ASSIGN_OR_RETURN(lhs, expr) \
  PP_ASSIGN_OR_RETURN_IMPL_(PP_CONCAT_(pp_result_, __LINE__), lhs, expr)
#define PP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok())                                  \
    return std::move(tmp).error();                \
  lhs = std::move(tmp).value()

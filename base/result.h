// The result type every fallible function in perf-persistent returns.
//
// A function that can fail returns Result<T> (a value or an Error) or Status
// (Result<void>). An Error carries a kind (what sort of failure it is: that
// alone decides a command's exit status, exit_status_of() below), an
// errno-like code (EINVAL, ENOENT, EACCES, ...) and a message written for the
// user: what failed, on what, and what to try. The code and the message are
// detail; nothing reads an exit status off the code. Exceptions never cross a
// module boundary; main() alone turns an Error into an exit code.
//
// Error(code, message) is a refusal by the system, the kernel or the broker,
// so a failed syscall needs no kind; every other kind is said where the error
// is made:
//
//   return usage_error("give at least one event with -e <event>");
//   return not_found_error("no persistent event 'ctxsw'; see 'perf persistent list'");
//   return Error(ErrorKind::kOutput, errno, "writing perf.data: ...");
//
//   Result<uint64_t> parse_id(std::string_view text);
//
//   PP_ASSIGN_OR_RETURN(uint64_t id, parse_id(argv[1]));
//   PP_RETURN_IF_ERROR(backend.kill(id));
#pragma once

#include <cerrno>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace pp {

// What sort of failure an Error is. Each kind has a stable name (JSON
// "kind") and one exit status, in kErrorKinds below, the one table of exit
// statuses; Documentation/perf-persistent.txt (EXIT STATUS) says the same.
enum class ErrorKind {
  kUsage,       // a bad option, event string, name, CPU list; a malformed request
  kRefused,     // the kernel, the system or the broker refused (errno explained)
  kNameTaken,   // the name is in use
  kNotFound,    // no such persistent event (or not on that CPU)
  kOutput,      // writing the output failed (a file that cannot be created, a full disk)
  kCommand,     // record's COMMAND could not be run (or itself exited 127)
  kInternal,    // a bug: something this program should never do
  kBrokerDown,  // the broker that holds the persistent events is not running
  kConfig,      // the broker's config file cannot be read or parsed
};

struct ErrorKindInfo {
  ErrorKind kind;
  std::string_view name;
  int exit_status;
};

// 0 is success. No status is 127: perf's dispatcher reads a 127 from
// perf-<cmd> as "not a perf-command".
inline constexpr ErrorKindInfo kErrorKinds[] = {
    {ErrorKind::kUsage, "usage", 1},          {ErrorKind::kRefused, "refused", 2},
    {ErrorKind::kNameTaken, "name-taken", 3}, {ErrorKind::kNotFound, "not-found", 4},
    {ErrorKind::kOutput, "output", 5},        {ErrorKind::kCommand, "command", 6},
    {ErrorKind::kInternal, "internal", 7},    {ErrorKind::kBrokerDown, "broker-down", 8},
    {ErrorKind::kConfig, "config", 9},
};

// The table is in the enum's order, so a kind is its own index; the build
// checks that, and that no status is 0, 127 or taken twice.
constexpr bool error_kinds_are_well_formed() {
  for (size_t i = 0; i < std::size(kErrorKinds); i++) {
    if (size_t(kErrorKinds[i].kind) != i)
      return false;
    int status = kErrorKinds[i].exit_status;
    if (status <= 0 || status == 127)
      return false;
    for (size_t j = 0; j < i; j++)
      if (kErrorKinds[j].exit_status == status)
        return false;
  }
  return std::size(kErrorKinds) == size_t(ErrorKind::kConfig) + 1;
}
static_assert(error_kinds_are_well_formed());

constexpr const ErrorKindInfo& kind_info(ErrorKind kind) {
  return kErrorKinds[size_t(kind)];
}

// "usage", "refused", "name-taken", "not-found", "output", "command", "internal".
constexpr std::string_view kind_name(ErrorKind kind) {
  return kind_info(kind).name;
}
// The exit status a command ends with when it fails with `kind`.
constexpr int exit_status_of(ErrorKind kind) {
  return kind_info(kind).exit_status;
}
// The kind kind_name() names, or nullopt.
std::optional<ErrorKind> kind_from_name(std::string_view name);

class Error {
 public:
  // A refusal by the system, the kernel or the broker (kind kRefused).
  Error(int code, std::string message)
      : kind_(ErrorKind::kRefused), code_(code), message_(std::move(message)) {}
  Error(ErrorKind kind, int code, std::string message)
      : kind_(kind), code_(code), message_(std::move(message)) {}

  ErrorKind kind() const { return kind_; }
  // errno-like: EINVAL, ENOENT, EACCES, ... Never 0. Detail for the message.
  int code() const { return code_; }
  const std::string& message() const { return message_; }

  // The same error as another kind, for a caller that knows better what the
  // failure means to its user: a parse error in an event string the user
  // typed is a usage error wherever the parser was called from.
  Error with_kind(ErrorKind kind) const& { return Error(kind, code_, message_); }
  Error with_kind(ErrorKind kind) && {
    kind_ = kind;
    return std::move(*this);
  }

  // Prefixes the message with what the caller was doing: "reading
  // /sys/.../type: No such file or directory".
  Error with_context(std::string_view context) const&;
  Error with_context(std::string_view context) &&;

 private:
  ErrorKind kind_;
  int code_;
  std::string message_;
};

// Short factories for the kinds other than kRefused, with the code each
// usually carries.
Error usage_error(std::string message);       // EINVAL
Error not_found_error(std::string message);   // ENOENT
Error name_taken_error(std::string message);  // EEXIST
Error internal_error(std::string message);    // EINVAL

// printf-style constructors for an Error: a refusal, or of `kind`.
Error errorf(int code, const char* format, ...) __attribute__((format(printf, 2, 3)));
Error errorf(ErrorKind kind, int code, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

// An Error for a failed system call: "<what>: <strerror(err)>", code err.
Error error_from_errno(int err, std::string_view what);

// The symbolic name of an errno value ("ENOENT"), or "E<number>" when unknown.
std::string errno_name(int err);
// The errno value errno_name() gives `name` for, or 0.
int errno_from_name(std::string_view name);

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

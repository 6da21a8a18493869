// kiln error types and the one family of check macros every layer uses.
#pragma once

#include <exception>
#include <sstream>
#include <string>
#include <utility>

namespace kiln {

/// Which Python exception an error becomes at the boundary.
/// See Note [Errors cross into Python by kind].
enum class ErrorKind {
  Runtime,         // RuntimeError
  Value,           // ValueError
  Type,            // TypeError
  Index,           // IndexError
  NotImplemented,  // NotImplementedError
  OutOfMemory,     // kiln.OutOfMemoryError (a RuntimeError)
};

/// Every error kiln raises. `what()` is the user-facing message; file and
/// line are kept separately so messages stay clean.
class Error : public std::exception {
 public:
  Error(ErrorKind kind, std::string msg, const char* file = nullptr, int line = 0)
      : kind_(kind), msg_(std::move(msg)), file_(file), line_(line) {}

  [[nodiscard]] const char* what() const noexcept override { return msg_.c_str(); }
  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }
  [[nodiscard]] const std::string& message() const noexcept { return msg_; }
  [[nodiscard]] const char* file() const noexcept { return file_; }
  [[nodiscard]] int line() const noexcept { return line_; }

 private:
  ErrorKind kind_;
  std::string msg_;
  const char* file_;
  int line_;
};

namespace detail {

/// Concatenates any streamable values into one string.
template <typename... Args>
std::string str(const Args&... args) {
  if constexpr (sizeof...(Args) == 0) {
    return std::string();
  } else {
    std::ostringstream os;
    (os << ... << args);
    return os.str();
  }
}

[[noreturn]] void throw_error(ErrorKind kind, const char* file, int line, std::string msg);

}  // namespace detail
}  // namespace kiln

// Note [Errors cross into Python by kind]
// ---------------------------------------
// C++ code raises kiln::Error through the macros below and never names a
// Python exception. The boundary (python/csrc/Exceptions.h) maps ErrorKind to
// RuntimeError, ValueError, TypeError, IndexError, NotImplementedError or
// kiln.OutOfMemoryError, so a check written once in the core reaches Python as
// the exception type PyTorch would raise, with the same text. Messages name the
// op, the shapes and the dtypes involved.

#define KILN_CHECK_KIND_(kind, cond, ...)                                           \
  do {                                                                               \
    if (!(cond)) [[unlikely]] {                                                      \
      ::kiln::detail::throw_error(kind, __FILE__, __LINE__, ::kiln::detail::str(__VA_ARGS__)); \
    }                                                                                \
  } while (false)

/// RuntimeError unless `cond` holds: KILN_CHECK(n >= 0, "negative size ", n).
#define KILN_CHECK(cond, ...) KILN_CHECK_KIND_(::kiln::ErrorKind::Runtime, cond, __VA_ARGS__)
#define KILN_CHECK_VALUE(cond, ...) KILN_CHECK_KIND_(::kiln::ErrorKind::Value, cond, __VA_ARGS__)
#define KILN_CHECK_TYPE(cond, ...) KILN_CHECK_KIND_(::kiln::ErrorKind::Type, cond, __VA_ARGS__)
#define KILN_CHECK_INDEX(cond, ...) KILN_CHECK_KIND_(::kiln::ErrorKind::Index, cond, __VA_ARGS__)
#define KILN_CHECK_NOT_IMPLEMENTED(cond, ...) \
  KILN_CHECK_KIND_(::kiln::ErrorKind::NotImplemented, cond, __VA_ARGS__)

/// Unconditional error of a given kind: KILN_FAIL(Value, "unknown dtype ", name).
#define KILN_FAIL(kind, ...) \
  ::kiln::detail::throw_error(::kiln::ErrorKind::kind, __FILE__, __LINE__, ::kiln::detail::str(__VA_ARGS__))

/// A broken invariant inside kiln (a bug in kiln, not in the caller's input).
#define KILN_INTERNAL_ASSERT(cond, ...)                                                   \
  KILN_CHECK_KIND_(::kiln::ErrorKind::Runtime, cond, "INTERNAL ASSERT FAILED at ", __FILE__, \
                   ":", __LINE__, ": " #cond " ", ##__VA_ARGS__)

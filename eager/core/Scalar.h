// Scalar: a number passed by value to an op (alpha=2, fill values, Python numbers).
#pragma once

#include <cstdint>
#include <ostream>
#include <type_traits>

#include "eager/core/DType.h"

namespace kiln {

/// A tagged double, int64 or bool. Its category (not its precision) is what
/// type promotion looks at, as PyTorch does for Python scalars.
class Scalar {
 public:
  enum class Kind : int8_t { Bool, Int, Double };

  Scalar() : Scalar(int64_t{0}) {}
  Scalar(double v) : kind_(Kind::Double) { v_.d = v; }            // NOLINT
  Scalar(float v) : Scalar(static_cast<double>(v)) {}             // NOLINT
  Scalar(bool v) : kind_(Kind::Bool) { v_.i = v ? 1 : 0; }        // NOLINT
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int) {                                // NOLINT
    v_.i = static_cast<int64_t>(v);
  }
  Scalar(Half v) : Scalar(static_cast<double>(static_cast<float>(v))) {}      // NOLINT
  Scalar(BFloat16 v) : Scalar(static_cast<double>(static_cast<float>(v))) {}  // NOLINT

  [[nodiscard]] Kind kind() const { return kind_; }
  [[nodiscard]] bool is_floating_point() const { return kind_ == Kind::Double; }
  [[nodiscard]] bool is_integral() const { return kind_ == Kind::Int; }
  [[nodiscard]] bool is_bool() const { return kind_ == Kind::Bool; }

  [[nodiscard]] double to_double() const {
    return kind_ == Kind::Double ? v_.d : static_cast<double>(v_.i);
  }
  [[nodiscard]] int64_t to_int64() const {
    return kind_ == Kind::Double ? static_cast<int64_t>(v_.d) : v_.i;
  }
  [[nodiscard]] bool to_bool() const { return kind_ == Kind::Double ? v_.d != 0.0 : v_.i != 0; }

  /// The value converted to a C++ element type (float16/bfloat16 round through float).
  template <typename T>
  [[nodiscard]] T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return to_bool();
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(to_int64());
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      return T(static_cast<float>(to_double()));
    } else {
      return static_cast<T>(to_double());
    }
  }

  /// The dtype a tensor made from this scalar alone would have.
  [[nodiscard]] DType natural_dtype() const {
    switch (kind_) {
      case Kind::Bool:
        return DType::Bool;
      case Kind::Int:
        return DType::Int64;
      case Kind::Double:
        return default_dtype();
    }
    return DType::Float32;
  }

 private:
  Kind kind_;
  union {
    double d;
    int64_t i;
  } v_;
};

inline std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool:
      return os << (s.to_bool() ? "True" : "False");
    case Scalar::Kind::Int:
      return os << s.to_int64();
    case Scalar::Kind::Double:
      return os << s.to_double();
  }
  return os;
}

}  // namespace kiln

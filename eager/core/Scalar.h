// Scalar: a number passed by value to an op (alpha=2, fill values, Python numbers).
#pragma once

#include <complex>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>

#include "eager/core/DType.h"
#include "eager/core/Error.h"

namespace kiln {

/// A tagged bool, int64, double or complex<double>. Its category (not its
/// precision) is what type promotion looks at, as PyTorch does for Python scalars.
///
/// A complex Scalar read as a real number (to_double, to<float>, ...) must have
/// no imaginary part: "value cannot be converted to type float without
/// overflow", PyTorch's words, otherwise. That is the check that stops
/// `float_tensor.fill_(1j)` from silently dropping the imaginary part.
class Scalar {
 public:
  enum class Kind : int8_t { Bool, Int, Double, Complex };

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
  template <typename T>
  Scalar(std::complex<T> v) : kind_(Kind::Complex), imag_(static_cast<double>(v.imag())) {  // NOLINT
    v_.d = static_cast<double>(v.real());
  }

  [[nodiscard]] Kind kind() const { return kind_; }
  [[nodiscard]] bool is_floating_point() const { return kind_ == Kind::Double; }
  [[nodiscard]] bool is_integral() const { return kind_ == Kind::Int; }
  [[nodiscard]] bool is_bool() const { return kind_ == Kind::Bool; }
  [[nodiscard]] bool is_complex() const { return kind_ == Kind::Complex; }

  /// The real value; a complex Scalar must have no imaginary part.
  [[nodiscard]] double to_double() const {
    if (kind_ == Kind::Complex) check_real(cpp_type_name(DType::Float64));
    return kind_ == Kind::Double || kind_ == Kind::Complex ? v_.d : static_cast<double>(v_.i);
  }
  [[nodiscard]] int64_t to_int64() const {
    if (kind_ == Kind::Complex) check_real(cpp_type_name(DType::Int64));
    return kind_ == Kind::Double || kind_ == Kind::Complex ? static_cast<int64_t>(v_.d) : v_.i;
  }
  [[nodiscard]] bool to_bool() const {
    if (kind_ == Kind::Complex) return v_.d != 0.0 || imag_ != 0.0;
    return kind_ == Kind::Double ? v_.d != 0.0 : v_.i != 0;
  }
  /// Any kind as a complex number (a real one has imaginary part 0).
  [[nodiscard]] std::complex<double> to_complex_double() const {
    if (kind_ == Kind::Complex) return {v_.d, imag_};
    return {kind_ == Kind::Double ? v_.d : static_cast<double>(v_.i), 0.0};
  }

  /// Whether the value equals the real number `v` (exactly, in any kind).
  [[nodiscard]] bool equals(double v) const {
    switch (kind_) {
      case Kind::Complex: return v_.d == v && imag_ == 0.0;
      case Kind::Double: return v_.d == v;
      default: return static_cast<double>(v_.i) == v;
    }
  }

  /// The value converted to a C++ element type (float16/bfloat16 round through float).
  template <typename T>
  [[nodiscard]] T to() const {
    if constexpr (is_complex_v<T>) {
      using V = typename T::value_type;
      const std::complex<double> c = to_complex_double();
      return T(static_cast<V>(c.real()), static_cast<V>(c.imag()));
    } else if constexpr (std::is_same_v<T, bool>) {
      return to_bool();
    } else {
      if (kind_ == Kind::Complex) check_real(cpp_type_name(dtype_of<T>()));
      if constexpr (std::is_integral_v<T>) {
        return static_cast<T>(to_int64());
      } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        return T(static_cast<float>(to_double()));
      } else {
        return static_cast<T>(to_double());
      }
    }
  }

  /// This value with its sign flipped: the same kind, except that a bool negates as an int
  /// (-True is -1); integers in two's complement without signed overflow (-INT64_MIN wraps).
  [[nodiscard]] Scalar negated() const {
    switch (kind_) {
      case Kind::Complex: return Scalar(-to_complex_double());
      case Kind::Double: return Scalar(-v_.d);
      case Kind::Bool:
      case Kind::Int: return Scalar(static_cast<int64_t>(0 - static_cast<uint64_t>(v_.i)));
    }
    return *this;
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
      case Kind::Complex:
        return to_complex_type(default_dtype());
    }
    return DType::Float32;
  }

 private:
  void check_real(std::string_view type) const {
    KILN_CHECK(imag_ == 0.0, "value cannot be converted to type ", type, " without overflow");
  }

  Kind kind_;
  union {
    double d;  // Double, and Complex's real part
    int64_t i;
  } v_;
  double imag_ = 0.0;  // Complex only
};

inline std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool:
      return os << (s.to_bool() ? "True" : "False");
    case Scalar::Kind::Int:
      return os << s.to_int64();
    case Scalar::Kind::Double:
      return os << s.to_double();
    case Scalar::Kind::Complex: {
      const std::complex<double> c = s.to_complex_double();
      return os << '(' << c.real() << (c.imag() < 0 ? "" : "+") << c.imag() << "j)";
    }
  }
  return os;
}

}  // namespace kiln

// Binary arithmetic loops, compiled per CPU capability: add (and sub), mul,
// the three divisions, remainder, fmod, maximum, minimum, fmax, fmin.
// float/double run on Vec, integers through cpu_kernel (written so the
// compiler vectorises them), float16/bfloat16 compute in float.
// See Note [Scalar and Vec agree] (vec/VecBinary.h).
#include <cmath>
#include <type_traits>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/PointwiseLoops.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "eager/kernels/cpu/pointwise/BinaryOpsStubs.h"
#include "eager/kernels/cpu/vec/VecBinary.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

/// A float lambda as a float16/bfloat16 one: arguments widened, the result rounded once.
template <typename T, typename F>
auto in_float(const F& f) {
  return [f](T a, T b) -> T { return T(f(static_cast<float>(a), static_cast<float>(b))); };
}

// Note [CPU scalars at opmath precision]
// ---------------------------------------
// PyTorch's CPU mul, true division, div(rounding_mode='trunc'/'floor') and floor_divide read a
// CPU-scalar second operand (a 0-dim or 1-element tensor, TensorIterator's is_scalar) of a
// float16/bfloat16 op at float precision, from the value the caller passed, before its conversion
// to the op's dtype (BinaryOpsKernel.cpp's `iter.original_scalar_value<opmath_t>(2)`): float16
// 2.5 / int32(-82871) is -3.0e-05 there, where rounding the divisor to float16 first gives
// 2.5 / -inf = -0. The CPU scalar as first operand, and the other ops (add, sub, remainder, ...),
// read the converted value. A Python number is such a CPU scalar too (PyTorch's wrapped number is a
// double tensor): scalar_operand (BinaryOps.cpp) makes it in float32 beside a float16/bfloat16
// tensor, so float16 x * 1.1 multiplies by float(1.1), not by float16(1.1) = 1.0996; codegen's
// PointwiseMath reads mul's and the divisions' Scalar and 1-element tensor operands the same way
// (its Note [Pointwise math matches eager]).

/// A float16/bfloat16 loop of `f(x, b)` with b the CPU-scalar second operand read at float
/// precision (Note [CPU scalars at opmath precision]); false when input 1 is not a CPU scalar.
template <typename T, typename F>
bool run_with_opmath_scalar(TensorIterator& iter, const F& f) {
  if (!iter.is_cpu_scalar_input(1)) return false;
  const float b = iter.original_scalar_input(1).to<float>();
  cpu_kernel(iter, [b, f](T x, T) -> T { return T(f(static_cast<float>(x), b)); });
  return true;
}

// --- add, mul, div --------------------------------------------------------------------

void add_kernel(TensorIterator& iter, const Scalar& alpha) {
  visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      const T a = alpha.to<T>();
      cpu_kernel(iter, [a](T x, T y) -> T { return x + a * y; });
    } else if constexpr (std::is_same_v<T, bool>) {
      const bool a = alpha.to<bool>();
      cpu_kernel(iter, [a](bool x, bool y) -> bool { return x || (a && y); });
    } else if constexpr (is_reduced_float_v<T>) {
      const float a = alpha.to<float>();
      cpu_kernel(iter, in_float<T>([a](float x, float y) { return x + a * y; }));
    } else if constexpr (std::is_floating_point_v<T>) {
      const T a = alpha.to<T>();
      if (a == T(1)) {
        binary_kernel_vec_streaming<T>(iter, [](T x, T y) -> T { return x + y; },
                                       [](Vec<T> x, Vec<T> y) { return x + y; });
      } else if (a == T(-1)) {  // sub: x + (-1) * y is exactly x - y
        binary_kernel_vec_streaming<T>(iter, [](T x, T y) -> T { return x - y; },
                                       [](Vec<T> x, Vec<T> y) { return x - y; });
      } else {
        binary_kernel_vec_streaming<T>(iter, [a](T x, T y) -> T { return x + a * y; },
                                       [a](Vec<T> x, Vec<T> y) { return x + Vec<T>::splat(a) * y; });
      }
    } else {
      const T a = alpha.to<T>();
      if (a == T(1)) {
        cpu_kernel(iter, [](T x, T y) -> T { return wrapping_add(x, y); });
      } else {
        cpu_kernel(iter, [a](T x, T y) -> T { return wrapping_add(x, wrapping_mul(a, y)); });
      }
    }
  });
}

void mul_kernel(TensorIterator& iter) {
  visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      cpu_kernel(iter, [](T x, T y) -> T { return x * y; });
    } else if constexpr (std::is_same_v<T, bool>) {
      cpu_kernel(iter, [](bool x, bool y) -> bool { return x && y; });
    } else if constexpr (is_reduced_float_v<T>) {
      const auto f = [](float x, float y) { return x * y; };
      if (!run_with_opmath_scalar<T>(iter, f)) cpu_kernel(iter, in_float<T>(f));
    } else if constexpr (std::is_floating_point_v<T>) {
      binary_kernel_vec_streaming<T>(iter, [](T x, T y) -> T { return x * y; },
                                     [](Vec<T> x, Vec<T> y) { return x * y; });
    } else {
      cpu_kernel(iter, [](T x, T y) -> T { return wrapping_mul(x, y); });
    }
  });
}

/// True division: the common dtype is always floating (integers were promoted).
void div_true_kernel(TensorIterator& iter) {
  visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      cpu_kernel(iter, [](T x, T y) -> T { return x / y; });
    } else if constexpr (is_reduced_float_v<T>) {
      const auto f = [](float x, float y) { return x / y; };
      if (!run_with_opmath_scalar<T>(iter, f)) cpu_kernel(iter, in_float<T>(f));
    } else if constexpr (std::is_floating_point_v<T>) {
      binary_kernel_vec_streaming<T>(iter, [](T x, T y) -> T { return x / y; },
                                     [](Vec<T> x, Vec<T> y) { return x / y; });
    } else {
      fail_not_implemented("div_true_cpu", iter.common_dtype());
    }
  });
}

// --- integer division rules -------------------------------------------------------------
// PyTorch raises RuntimeError "ZeroDivisionError" for an integer division by
// zero (from inside the loop, as here). INT_MIN / -1 traps on x86 (SIGFPE, a
// crash in PyTorch 2.13); kiln returns the two's-complement result, INT_MIN.

template <typename T>
void check_divisor(T b) {
  KILN_CHECK(b != T(0), "ZeroDivisionError");
}

template <typename T>
T div_trunc_integer(T a, T b) {
  check_divisor(b);
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrapping_neg(a);
  }
  return static_cast<T>(a / b);
}

template <typename T>
T div_floor_integer(T a, T b) {
  check_divisor(b);
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrapping_neg(a);
    if ((a < 0) != (b < 0)) {
      const T quot = static_cast<T>(a / b);
      const T rem = static_cast<T>(a % b);
      return rem != 0 ? static_cast<T>(quot - 1) : quot;
    }
  }
  return static_cast<T>(a / b);
}

/// Python's floor division of floats (PyTorch's c10::div_floor_floating).
template <typename T>
T div_floor_floating(T a, T b) {
  if (b == 0) return a / b;  // IEEE: inf, -inf or nan
  const T mod = std::fmod(a, b);
  T div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= T(1);
  if (div == 0) return std::copysign(T(0), a / b);
  T floordiv = std::floor(div);
  if (div - floordiv > T(0.5)) floordiv += T(1);
  return floordiv;
}

template <typename T>
T remainder_integer(T a, T b) {
  check_divisor(b);
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
    T r = static_cast<T>(a % b);
    if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  } else {
    return static_cast<T>(a % b);
  }
}

template <typename T>
T remainder_floating(T a, T b) {
  T mod = std::fmod(a, b);
  if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;
  return mod;
}

template <typename T>
T fmod_integer(T a, T b) {
  check_divisor(b);
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
  }
  return static_cast<T>(a % b);
}

/// Runs an integer rule, a floating rule (in float for float16/bfloat16), or
/// PyTorch's NotImplementedError for bool under `name`.
/// `opmath_scalar`: a float16/bfloat16 loop reads a CPU-scalar divisor at float precision (Note [CPU
/// scalars at opmath precision]; the divisions, not remainder or fmod).
template <typename IntegerRule, typename FloatRule>
void integer_or_floating(TensorIterator& iter, const char* name, const IntegerRule& integer_rule,
                         const FloatRule& float_rule, bool opmath_scalar = false) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      fail_not_implemented(name, DType::Bool);
    } else if constexpr (is_reduced_float_v<T>) {
      const auto f = [&](float x, float y) { return float_rule(x, y); };
      if (!(opmath_scalar && run_with_opmath_scalar<T>(iter, f))) cpu_kernel(iter, in_float<T>(f));
    } else if constexpr (std::is_floating_point_v<T>) {
      cpu_kernel(iter, [&](T x, T y) -> T { return float_rule(x, y); });
    } else {
      cpu_kernel(iter, [&](T x, T y) -> T { return integer_rule(x, y); });
    }
  });
}

void div_trunc_kernel(TensorIterator& iter) {
  integer_or_floating(
      iter, "div_trunc_cpu", [](auto a, auto b) { return div_trunc_integer(a, b); },
      [](auto a, auto b) { return std::trunc(a / b); }, /*opmath_scalar=*/true);
}

void div_floor_kernel(TensorIterator& iter) {
  integer_or_floating(
      iter, "div_floor_cpu", [](auto a, auto b) { return div_floor_integer(a, b); },
      [](auto a, auto b) { return div_floor_floating(a, b); }, /*opmath_scalar=*/true);
}

void remainder_kernel(TensorIterator& iter) {
  integer_or_floating(
      iter, "remainder_cpu", [](auto a, auto b) { return remainder_integer(a, b); },
      [](auto a, auto b) { return remainder_floating(a, b); });
}

void fmod_kernel(TensorIterator& iter) {
  integer_or_floating(
      iter, "fmod_cpu", [](auto a, auto b) { return fmod_integer(a, b); },
      [](auto a, auto b) { return std::fmod(a, b); });
}

// --- maximum, minimum, fmax, fmin ---------------------------------------------------------

/// maximum (is_max) or minimum: bool as or/and, integers exactly, floats NaN-propagating.
void max_min_kernel(TensorIterator& iter, bool is_max) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      if (is_max) {
        cpu_kernel(iter, [](bool a, bool b) -> bool { return a || b; });
      } else {
        cpu_kernel(iter, [](bool a, bool b) -> bool { return a && b; });
      }
    } else if constexpr (is_reduced_float_v<T>) {
      if (is_max) {
        cpu_kernel(iter, in_float<T>([](float a, float b) { return max_propagate_nan(a, b); }));
      } else {
        cpu_kernel(iter, in_float<T>([](float a, float b) { return min_propagate_nan(a, b); }));
      }
    } else if constexpr (std::is_floating_point_v<T>) {
      if (is_max) {
        cpu_kernel_vec(iter, [](T a, T b) -> T { return max_propagate_nan(a, b); },
                       [](Vec<T> a, Vec<T> b) { return vmaximum(a, b); });
      } else {
        cpu_kernel_vec(iter, [](T a, T b) -> T { return min_propagate_nan(a, b); },
                       [](Vec<T> a, Vec<T> b) { return vminimum(a, b); });
      }
    } else {
      if (is_max) {
        cpu_kernel(iter, [](T a, T b) -> T { return a > b ? a : b; });
      } else {
        cpu_kernel(iter, [](T a, T b) -> T { return a < b ? a : b; });
      }
    }
  });
}

void maximum_kernel(TensorIterator& iter) { max_min_kernel(iter, true); }
void minimum_kernel(TensorIterator& iter) { max_min_kernel(iter, false); }

/// fmax/fmin ignore a NaN when the other operand is a number; on integers and bool they are maximum/minimum.
void fmax_fmin_kernel(TensorIterator& iter, bool is_max) {
  if (!is_floating_point(iter.common_dtype())) return max_min_kernel(iter, is_max);
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T>) {
      if (is_max) {
        cpu_kernel(iter, in_float<T>([](float a, float b) { return std::fmax(a, b); }));
      } else {
        cpu_kernel(iter, in_float<T>([](float a, float b) { return std::fmin(a, b); }));
      }
    } else if constexpr (std::is_floating_point_v<T>) {
      if (is_max) {
        cpu_kernel(iter, [](T a, T b) -> T { return std::fmax(a, b); });
      } else {
        cpu_kernel(iter, [](T a, T b) -> T { return std::fmin(a, b); });
      }
    }
  });
}

void fmax_kernel(TensorIterator& iter) { fmax_fmin_kernel(iter, true); }
void fmin_kernel(TensorIterator& iter) { fmax_fmin_kernel(iter, false); }

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(add_stub, &KILN_CPU_NS::add_kernel);
KILN_REGISTER_DISPATCH(mul_stub, &KILN_CPU_NS::mul_kernel);
KILN_REGISTER_DISPATCH(div_true_stub, &KILN_CPU_NS::div_true_kernel);
KILN_REGISTER_DISPATCH(div_trunc_stub, &KILN_CPU_NS::div_trunc_kernel);
KILN_REGISTER_DISPATCH(div_floor_stub, &KILN_CPU_NS::div_floor_kernel);
KILN_REGISTER_DISPATCH(remainder_stub, &KILN_CPU_NS::remainder_kernel);
KILN_REGISTER_DISPATCH(fmod_stub, &KILN_CPU_NS::fmod_kernel);
KILN_REGISTER_DISPATCH(maximum_stub, &KILN_CPU_NS::maximum_kernel);
KILN_REGISTER_DISPATCH(minimum_stub, &KILN_CPU_NS::minimum_kernel);
KILN_REGISTER_DISPATCH(fmax_stub, &KILN_CPU_NS::fmax_kernel);
KILN_REGISTER_DISPATCH(fmin_stub, &KILN_CPU_NS::fmin_kernel);

}  // namespace kiln::native

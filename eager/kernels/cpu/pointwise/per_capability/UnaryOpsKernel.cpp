// Unary pointwise loops, compiled per CPU capability: the float ops (exp, log,
// trigonometric, sigmoid, erf, ...), the same-dtype ops (neg, abs, sign,
// rounding, square), the predicates, round.decimals, nan_to_num and logit.
// float/double run on Vec with SLEEF's 1-ulp functions, float16/bfloat16
// compute in float Vec, integers through cpu_kernel (written so the compiler
// vectorises them). See Note [Scalar and Vec agree] (vec/VecBinary.h).
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/PointwiseLoops.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "eager/kernels/cpu/pointwise/UnaryOpsStubs.h"
#include "eager/kernels/cpu/vec/VecBinary.h"
#include "eager/kernels/cpu/vec/VecUnary.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

/// Runs a floating op (the iterator's common dtype is floating: integers were promoted).
template <typename VFn>
void floating_kernel(TensorIterator& iter, const char* name, const VFn& vfn) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (!floating_unary_vec<T>(iter, vfn)) fail_not_implemented(name, iter.common_dtype());
  });
}

// --- ops of the default float dtype ----------------------------------------------------------

/// erfinv has no SLEEF function: M. Giles' single-precision approximation
/// ("Approximating the erfinv function", 2010), then two Newton steps on
/// erf(x) - y in T, which bring double to full precision.
template <typename T>
T erfinv_scalar(T y) {
  if (!(y > T(-1) && y < T(1))) {
    if (y == T(1)) return std::numeric_limits<T>::infinity();
    if (y == T(-1)) return -std::numeric_limits<T>::infinity();
    return std::numeric_limits<T>::quiet_NaN();
  }
  if (y == T(0)) return y;  // keeps the sign of zero
  const double yd = static_cast<double>(y);
  double w = -std::log((1.0 - yd) * (1.0 + yd));
  double p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double x = p * yd;
  constexpr double kTwoOverSqrtPi = 1.1283791670955126;
  for (int step = 0; step < 2; ++step) x -= (std::erf(x) - yd) / (kTwoOverSqrtPi * std::exp(-x * x));
  return static_cast<T>(x);
}

void erfinv_kernel(TensorIterator& iter) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T>) {
      cpu_kernel(iter, [](T x) -> T { return T(erfinv_scalar(static_cast<float>(x))); });
    } else if constexpr (std::is_floating_point_v<T>) {
      cpu_kernel(iter, [](T x) -> T { return erfinv_scalar(x); });
    } else {
      fail_not_implemented("erfinv_cpu", iter.common_dtype());
    }
  });
}

/// SLEEF's sinh/cosh overflow to inf past |x| = 88.5 (float) / 709 (double),
/// short of where the results do; there e^|x| / 2 is computed as
/// (e^(|x|/2) / 2) * e^(|x|/2), which stays finite as long as the result does.
template <typename V>
V vcosh_sinh_wide(V ax) {
  using L = lane_t<V>;
  const V h = vexp(ax * vconst<L>(0.5));
  return (h * vconst<L>(0.5)) * h;
}
template <typename V>
V vcosh_full(V x) {
  using L = lane_t<V>;
  const V ax = vfabs(x);
  const V limit = vconst<L>(sizeof(L) == 4 ? 88.0 : 709.0);
  return select<L>(ax.v > limit.v, vcosh_sinh_wide(ax), vcosh(x));
}
template <typename V>
V vsinh_full(V x) {
  using L = lane_t<V>;
  const V ax = vfabs(x);
  const V limit = vconst<L>(sizeof(L) == 4 ? 88.0 : 709.0);
  const V wide = vcosh_sinh_wide(ax);
  return select<L>(ax.v > limit.v, select<L>(x.v < V::splat(0).v, -wide, wide), vsinh(x));
}

#define KILN_FLOAT_KERNEL_(op, body)                                                                 \
  void op##_kernel(TensorIterator& iter) {                                                           \
    floating_kernel(iter, #op "_cpu", [](auto x) { using V = decltype(x); (void)sizeof(V); return body; }); \
  }
KILN_FLOAT_KERNEL_(reciprocal, V::splat(1) / x)
KILN_FLOAT_KERNEL_(sqrt, vsqrt(x))
KILN_FLOAT_KERNEL_(rsqrt, V::splat(1) / vsqrt(x))
KILN_FLOAT_KERNEL_(exp, vexp(x))
KILN_FLOAT_KERNEL_(exp2, vexp2(x))
KILN_FLOAT_KERNEL_(expm1, vexpm1(x))
KILN_FLOAT_KERNEL_(log, vlog(x))
KILN_FLOAT_KERNEL_(log2, vlog2(x))
KILN_FLOAT_KERNEL_(log10, vlog10(x))
KILN_FLOAT_KERNEL_(log1p, vlog1p(x))
KILN_FLOAT_KERNEL_(sin, vsin(x))
KILN_FLOAT_KERNEL_(cos, vcos(x))
KILN_FLOAT_KERNEL_(tan, vtan(x))
KILN_FLOAT_KERNEL_(asin, vasin(x))
KILN_FLOAT_KERNEL_(acos, vacos(x))
KILN_FLOAT_KERNEL_(atan, vatan(x))
KILN_FLOAT_KERNEL_(sinh, vsinh_full(x))
KILN_FLOAT_KERNEL_(cosh, vcosh_full(x))
KILN_FLOAT_KERNEL_(asinh, vasinh(x))
KILN_FLOAT_KERNEL_(acosh, vacosh(x))
KILN_FLOAT_KERNEL_(atanh, vatanh(x))
KILN_FLOAT_KERNEL_(tanh, vtanh(x))
KILN_FLOAT_KERNEL_(sigmoid, V::splat(1) / (V::splat(1) + vexp(-x)))
KILN_FLOAT_KERNEL_(erf, verf(x))
KILN_FLOAT_KERNEL_(erfc, verfc(x))
#undef KILN_FLOAT_KERNEL_

// --- ops that keep the input's dtype -----------------------------------------------------------

/// A same-dtype op: `vfn` on floating dtypes, `int_fn` (a scalar lambda) on integers and bool.
template <typename VFn, typename IntFn>
void same_dtype_kernel(TensorIterator& iter, const VFn& vfn, const IntFn& int_fn) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T> || std::is_floating_point_v<T>) {
      floating_unary_vec<T>(iter, vfn);
    } else if constexpr (std::is_same_v<T, bool>) {
      cpu_kernel(iter, [](bool x) -> bool { return x; });  // sign; the op's checks reject the others on bool
    } else {
      cpu_kernel(iter, [&](T x) -> T { return int_fn(x); });
    }
  });
}

/// sign as 1, 0 or -1 (NaN gives 0, -0.0 gives 0), for floats lane by lane.
template <typename V>
V vsign(V x) {
  using T = std::remove_reference_t<decltype(x.v[0])>;
  const V one = V::splat(T(1));
  const V zero = V::splat(T(0));
  return select<T>(x.v > zero.v, one, select<T>(x.v < zero.v, -one, zero));
}

template <typename T>
T integer_abs(T x) {
  if constexpr (std::is_signed_v<T>) {
    return x < 0 ? wrapping_neg(x) : x;
  } else {
    return x;
  }
}

template <typename T>
T integer_sign(T x) {
  return static_cast<T>((T(0) < x) - (x < T(0)));
}

void neg_kernel(TensorIterator& iter) {
  if (is_complex(iter.common_dtype())) {
    visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_complex_v<T>) cpu_kernel(iter, [](T x) -> T { return -x; });
    });
    return;
  }
  same_dtype_kernel(iter, [](auto x) { return -x; }, [](auto x) { return wrapping_neg(x); });
}
void abs_kernel(TensorIterator& iter) {
  same_dtype_kernel(iter, [](auto x) { return vfabs(x); }, [](auto x) { return integer_abs(x); });
}
void sign_kernel(TensorIterator& iter) {
  same_dtype_kernel(iter, [](auto x) { return vsign(x); }, [](auto x) { return integer_sign(x); });
}
void floor_kernel(TensorIterator& iter) {
  same_dtype_kernel(iter, [](auto x) { return vfloor(x); }, [](auto x) { return x; });
}
void ceil_kernel(TensorIterator& iter) {
  same_dtype_kernel(iter, [](auto x) { return vceil(x); }, [](auto x) { return x; });
}
void round_kernel(TensorIterator& iter) {
  same_dtype_kernel(iter, [](auto x) { return vrint(x); }, [](auto x) { return x; });
}
void trunc_kernel(TensorIterator& iter) {
  same_dtype_kernel(iter, [](auto x) { return vtrunc(x); }, [](auto x) { return x; });
}
void frac_kernel(TensorIterator& iter) {
  same_dtype_kernel(iter, [](auto x) { return x - vtrunc(x); }, [](auto x) { return x; });
}
void square_kernel(TensorIterator& iter) {
  same_dtype_kernel(iter, [](auto x) { return x * x; }, [](auto x) { return wrapping_mul(x, x); });
}

/// round(x, decimals): half to even at 10^-decimals, as PyTorch computes it.
void round_decimals_kernel(TensorIterator& iter, int64_t decimals) {
  const bool negative = decimals < 0;
  const int64_t digits = negative ? -decimals : decimals;
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T> || std::is_floating_point_v<T>) {
      using M = opmath_t<T>;
      const M ten_pow = static_cast<M>(std::pow(10.0, static_cast<double>(digits)));
      cpu_kernel(iter, [ten_pow, negative](T a) -> T {
        const M x = static_cast<M>(a);
        return T(negative ? std::nearbyint(x / ten_pow) * ten_pow : std::nearbyint(x * ten_pow) / ten_pow);
      });
    } else {
      fail_not_implemented("round_cpu", iter.common_dtype());
    }
  });
}

// --- predicates -----------------------------------------------------------------------------------

/// Writes pred(x) as bool for every element; integers and bool through `int_pred`,
/// complex numbers (where complex_pred is given) through `complex_pred`.
template <typename FloatPred, typename IntPred, typename ComplexPred = std::nullptr_t>
void predicate_kernel(TensorIterator& iter, const FloatPred& float_pred, const IntPred& int_pred,
                      const ComplexPred& complex_pred = nullptr) {
  auto run = [&](auto tag) {
    using T = decltype(tag);
    for_each_row(iter, [&](char* const* data, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const T x = load_at<T>(data[1], s[1], i);
        bool r;
        if constexpr (is_complex_v<T>) {
          r = complex_pred(x);
        } else if constexpr (is_reduced_float_v<T>) {
          r = float_pred(static_cast<float>(x));
        } else if constexpr (std::is_floating_point_v<T>) {
          r = float_pred(x);
        } else {
          r = int_pred(x);
        }
        data[0][i * s[0]] = r;
      }
    });
  };
  if constexpr (std::is_same_v<ComplexPred, std::nullptr_t>) {
    visit_dtype(iter.dtype(1), run);
  } else {
    visit_dtype_and_complex(iter.dtype(1), run);
  }
}

void isnan_kernel(TensorIterator& iter) {
  predicate_kernel(iter, [](auto x) { return x != x; }, [](auto) { return false; },
                   [](auto z) { return std::isnan(z.real()) || std::isnan(z.imag()); });
}
void isinf_kernel(TensorIterator& iter) {
  predicate_kernel(iter, [](auto x) { return std::isinf(x); }, [](auto) { return false; },
                   [](auto z) { return std::isinf(z.real()) || std::isinf(z.imag()); });
}
void isfinite_kernel(TensorIterator& iter) {
  predicate_kernel(iter, [](auto x) { return std::isfinite(x); }, [](auto) { return true; },
                   [](auto z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); });
}
void isposinf_kernel(TensorIterator& iter) {
  predicate_kernel(iter, [](auto x) { return std::isinf(x) && x > 0; }, [](auto) { return false; });
}
void isneginf_kernel(TensorIterator& iter) {
  predicate_kernel(iter, [](auto x) { return std::isinf(x) && x < 0; }, [](auto) { return false; });
}
void signbit_kernel(TensorIterator& iter) {
  predicate_kernel(iter, [](auto x) { return std::signbit(x); }, [](auto x) {
    if constexpr (std::is_signed_v<decltype(x)>) {
      return x < 0;
    } else {
      return false;
    }
  });
}

// --- nan_to_num, logit ------------------------------------------------------------------------------

/// The largest finite value of a floating type (float16: 65504, bfloat16: 3.3895e38).
template <typename T>
T largest_finite() {
  if constexpr (std::is_same_v<T, Half>) {
    return T(65504.0f);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return T(3.38953139e38f);
  } else {
    return std::numeric_limits<T>::max();
  }
}

void nan_to_num_kernel(TensorIterator& iter, double nan, std::optional<double> posinf, std::optional<double> neginf) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T> || std::is_floating_point_v<T>) {
      const T nan_value = static_cast<T>(nan);
      const T pos_value = posinf ? static_cast<T>(*posinf) : largest_finite<T>();
      const T neg_value = neginf ? static_cast<T>(*neginf) : T(-static_cast<opmath_t<T>>(largest_finite<T>()));
      cpu_kernel(iter, [=](T a) -> T {
        const opmath_t<T> x = static_cast<opmath_t<T>>(a);
        if (x != x) return nan_value;
        if (std::isinf(x)) return x > 0 ? pos_value : neg_value;
        return a;
      });
    } else {
      cpu_kernel(iter, [](T a) -> T { return a; });
    }
  });
}

void logit_kernel(TensorIterator& iter, std::optional<double> eps) {
  const double e = eps.value_or(-1.0);
  if (iter.common_dtype() == DType::Float16 || iter.common_dtype() == DType::BFloat16) {
    // PyTorch rounds x / (1 - x) to float16/bfloat16 before the log; so does kiln, to agree with it.
    visit_dtype(iter.common_dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (is_reduced_float_v<T>) {
        cpu_kernel(iter, [e](T a) -> T {
          float x = static_cast<float>(a);
          if (e >= 0) x = x < static_cast<float>(e) ? static_cast<float>(e) : (x > 1.0f - static_cast<float>(e) ? 1.0f - static_cast<float>(e) : x);
          const T ratio(x / (1.0f - x));
          return T(lane0([](Vec<float> v) { return vlog(v); }, static_cast<float>(ratio)));
        });
      }
    });
    return;
  }
  floating_kernel(iter, "logit_cpu", [e](auto x) {
    using V = decltype(x);
    using T = std::remove_reference_t<decltype(x.v[0])>;
    const V one = V::splat(T(1));
    if (e < 0) return vlog(x / (one - x));
    const V lo = V::splat(static_cast<T>(e));
    const V hi = V::splat(static_cast<T>(1.0 - e));
    const V clamped = select<T>(x.v < lo.v, lo, select<T>(x.v > hi.v, hi, x));
    return vlog(clamped / (one - clamped));
  });
}

}  // namespace
}  // namespace KILN_CPU_NS

#define KILN_REGISTER_UNARY_(op) KILN_REGISTER_DISPATCH(op##_stub, &KILN_CPU_NS::op##_kernel);
KILN_FORALL_UNARY_FLOAT_OPS(KILN_REGISTER_UNARY_)
KILN_FORALL_UNARY_SAME_DTYPE_OPS(KILN_REGISTER_UNARY_)
KILN_FORALL_UNARY_PREDICATES(KILN_REGISTER_UNARY_)
#undef KILN_REGISTER_UNARY_
KILN_REGISTER_DISPATCH(round_decimals_stub, &KILN_CPU_NS::round_decimals_kernel);
KILN_REGISTER_DISPATCH(nan_to_num_stub, &KILN_CPU_NS::nan_to_num_kernel);
KILN_REGISTER_DISPATCH(logit_stub, &KILN_CPU_NS::logit_kernel);

}  // namespace kiln::native

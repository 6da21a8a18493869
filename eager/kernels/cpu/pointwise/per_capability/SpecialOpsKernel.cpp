// Loops of the special-function ops (lgamma, digamma, polygamma, sinc,
// deg2rad, rad2deg) and the two-argument float ops (atan2, hypot, logaddexp,
// logaddexp2, copysign, nextafter, xlogy, heaviside), compiled per CPU
// capability. atan2, hypot and copysign run on SLEEF's vector functions; the
// rest are scalar (SpecialFunctions.h). float16/bfloat16 compute in float,
// except nextafter, which steps in the type's own bits.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/PointwiseLoops.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "eager/kernels/cpu/pointwise/SpecialFunctions.h"
#include "eager/kernels/cpu/pointwise/SpecialOpsStubs.h"
#include "eager/kernels/cpu/vec/VecBinary.h"
#include "eager/kernels/cpu/vec/VecUnary.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

/// A scalar float/double function over a floating iterator (integers were promoted).
template <typename Fn>
void floating_scalar_kernel(TensorIterator& iter, const char* name, const Fn& fn) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T>) {
      cpu_kernel(iter, [&](T x) -> T { return T(fn(static_cast<float>(x))); });
    } else if constexpr (std::is_floating_point_v<T>) {
      cpu_kernel(iter, [&](T x) -> T { return fn(x); });
    } else {
      fail_not_implemented(name, iter.common_dtype());
    }
  });
}

/// The same for two inputs.
template <typename Fn>
void floating_scalar_kernel2(TensorIterator& iter, const char* name, const Fn& fn) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T>) {
      cpu_kernel(iter, [&](T a, T b) -> T { return T(fn(static_cast<float>(a), static_cast<float>(b))); });
    } else if constexpr (std::is_floating_point_v<T>) {
      cpu_kernel(iter, [&](T a, T b) -> T { return fn(a, b); });
    } else {
      fail_not_implemented(name, iter.common_dtype());
    }
  });
}

/// A SLEEF vector function of two arguments over a floating iterator.
template <typename VFn>
void floating_vec_kernel2(TensorIterator& iter, const char* name, const VFn& vfn) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (!floating_binary_vec<T>(iter, vfn)) fail_not_implemented(name, iter.common_dtype());
  });
}

// --- one input --------------------------------------------------------------------------

float lgamma_of(float x) {
  int sign = 0;
  return lgammaf_r(x, &sign);  // the reentrant form: std::lgamma writes the global signgam
}
double lgamma_of(double x) {
  int sign = 0;
  return lgamma_r(x, &sign);
}

void lgamma_kernel(TensorIterator& iter) {
  floating_scalar_kernel(iter, "lgamma_cpu", [](auto x) { return lgamma_of(x); });
}

void digamma_kernel(TensorIterator& iter) {
  floating_scalar_kernel(iter, "digamma_cpu", [](auto x) { return special::digamma(x); });
}

void polygamma_kernel(TensorIterator& iter, int64_t n) {
  floating_scalar_kernel(iter, "polygamma_cpu", [n](auto x) { return special::polygamma(n, x); });
}

/// sin(pi x) / (pi x), 1 at 0 (PyTorch computes pi x once, in the input's precision).
void sinc_kernel(TensorIterator& iter) {
  floating_scalar_kernel(iter, "sinc_cpu", [](auto x) {
    using T = decltype(x);
    if (x == T(0)) return T(1);
    const T product = special::kPi<T> * x;
    return std::sin(product) / product;
  });
}

/// x * (pi / 180) with the factor rounded to the dtype first, as PyTorch's mul by a wrapped number.
void deg2rad_kernel(TensorIterator& iter) {
  floating_scalar_kernel(iter, "deg2rad_cpu", [](auto x) {
    using T = decltype(x);
    return x * static_cast<T>(0.017453292519943295);
  });
}
void rad2deg_kernel(TensorIterator& iter) {
  floating_scalar_kernel(iter, "rad2deg_cpu", [](auto x) {
    using T = decltype(x);
    return x * static_cast<T>(57.295779513082323);
  });
}

// --- two inputs -------------------------------------------------------------------------

void atan2_kernel(TensorIterator& iter) {
  floating_vec_kernel2(iter, "atan2_cpu", [](auto a, auto b) { return vatan2(a, b); });
}
void hypot_kernel(TensorIterator& iter) {
  floating_vec_kernel2(iter, "hypot_cpu", [](auto a, auto b) { return vhypot(a, b); });
}
void copysign_kernel(TensorIterator& iter) {
  floating_vec_kernel2(iter, "copysign_cpu", [](auto a, auto b) { return vcopysign(a, b); });
}

/// log(e^a + e^b) without overflow: max + log1p(exp(-|a - b|)); equal infinities stay themselves.
void logaddexp_kernel(TensorIterator& iter) {
  floating_scalar_kernel2(iter, "logaddexp_cpu", [](auto a, auto b) {
    if (std::isinf(a) && a == b) return a;
    const auto m = std::fmax(a, b);
    return std::isnan(a) || std::isnan(b) ? a + b : m + std::log1p(std::exp(-std::fabs(a - b)));
  });
}

/// log2(2^a + 2^b): max + log1p(2^-|a - b|) / ln 2.
void logaddexp2_kernel(TensorIterator& iter) {
  floating_scalar_kernel2(iter, "logaddexp2_cpu", [](auto a, auto b) {
    using T = decltype(a);
    if (std::isinf(a) && a == b) return a;
    const T m = std::fmax(a, b);
    return std::isnan(a) || std::isnan(b) ? a + b
                                          : m + std::log1p(std::exp2(-std::fabs(a - b))) * T(1.4426950408889634);
  });
}

/// x * log(y), 0 where x is 0 (unless y is NaN). float16/bfloat16 round log(y)
/// to their type before the product, as PyTorch's loop (in the type) does.
template <typename T, typename Compute>
Compute xlogy_of(Compute x, Compute y) {
  if (std::isnan(y)) return std::numeric_limits<Compute>::quiet_NaN();
  if (x == Compute(0)) return Compute(0);
  return x * static_cast<Compute>(static_cast<T>(std::log(y)));
}

void xlogy_kernel(TensorIterator& iter) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T>) {
      cpu_kernel(iter, [](T x, T y) -> T { return T(xlogy_of<T, float>(static_cast<float>(x), static_cast<float>(y))); });
    } else if constexpr (std::is_floating_point_v<T>) {
      cpu_kernel(iter, [](T x, T y) -> T { return xlogy_of<T, T>(x, y); });
    } else {
      fail_not_implemented("xlogy_cpu", iter.common_dtype());
    }
  });
}

template <typename T>
T reduced_nextafter(T from, T to) {
  const float f = static_cast<float>(from);
  const float t = static_cast<float>(to);
  const uint16_t bits = special::nextafter_bits<uint16_t>(from.bits, to.bits, std::isnan(f), std::isnan(t), f == t,
                                                          f == 0.0f, t > f);
  return T::from_bits(bits);
}

void nextafter_kernel(TensorIterator& iter) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T>) {
      cpu_kernel(iter, [](T a, T b) -> T { return reduced_nextafter(a, b); });
    } else if constexpr (std::is_floating_point_v<T>) {
      cpu_kernel(iter, [](T a, T b) -> T { return std::nextafter(a, b); });
    } else {
      fail_not_implemented("nextafter_cpu", iter.common_dtype());
    }
  });
}

/// 0 for x < 0, values for x == 0, 1 for x > 0 (NaN gives 0, as PyTorch's); any dtype.
void heaviside_kernel(TensorIterator& iter) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      cpu_kernel(iter, [](bool x, bool v) -> bool { return x || v; });
    } else if constexpr (is_reduced_float_v<T>) {
      cpu_kernel(iter, [](T x, T v) -> T {
        const float f = static_cast<float>(x);
        return f == 0.0f ? v : T(f > 0.0f ? 1.0f : 0.0f);
      });
    } else {
      cpu_kernel(iter, [](T x, T v) -> T { return x == T(0) ? v : static_cast<T>(x > T(0)); });
    }
  });
}

}  // namespace
}  // namespace KILN_CPU_NS

#define KILN_REGISTER_SPECIAL_(op) KILN_REGISTER_DISPATCH(op##_stub, &KILN_CPU_NS::op##_kernel);
KILN_FORALL_SPECIAL_UNARY_OPS(KILN_REGISTER_SPECIAL_)
KILN_FORALL_SPECIAL_BINARY_OPS(KILN_REGISTER_SPECIAL_)
#undef KILN_REGISTER_SPECIAL_
KILN_REGISTER_DISPATCH(polygamma_stub, &KILN_CPU_NS::polygamma_kernel);

}  // namespace kiln::native

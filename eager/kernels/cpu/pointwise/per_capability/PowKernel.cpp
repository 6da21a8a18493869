// pow loops, compiled per CPU capability: Tensor ** Tensor and Tensor ** Scalar
// with PyTorch's special exponents (0.5: sqrt, -0.5: rsqrt, -1: reciprocal,
// 2, 3, -2: products), SLEEF's pow for float/double, exact integer powers.
// See Note [Scalar and Vec agree] (vec/VecBinary.h).
#include <cmath>
#include <type_traits>

#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "eager/kernels/cpu/pointwise/BinaryOpsStubs.h"
#include "eager/kernels/cpu/vec/VecBinary.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

/// a ** b for integers, as PyTorch's powi: negative exponents give 0 except for
/// bases 1 and -1; products wrap.
template <typename T>
T powi(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b < 0) {
      if (a == 1) return T(1);
      if (a == -1) return (b & 1) ? T(-1) : T(1);
      return T(0);
    }
  }
  T result = 1;
  T base = a;
  auto e = static_cast<std::make_unsigned_t<T>>(b);
  while (e != 0) {
    if (e & 1) result = wrapping_mul(result, base);
    e >>= 1;
    base = wrapping_mul(base, base);
  }
  return result;
}

template <typename T>
Vec<T> vpow_of(Vec<T> a, Vec<T> b) {
  return vpow(a, b);
}

void pow_tensor_tensor_kernel(TensorIterator& iter) {
  visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      cpu_kernel(iter, [](T a, T b) -> T { return std::pow(a, b); });
    } else if constexpr (std::is_same_v<T, bool>) {
      fail_not_implemented("pow", DType::Bool);
    } else if constexpr (is_reduced_float_v<T>) {
      cpu_kernel(iter, [](T a, T b) -> T { return T(std::pow(static_cast<float>(a), static_cast<float>(b))); });
    } else if constexpr (std::is_floating_point_v<T>) {
      cpu_kernel_vec(iter, [](T a, T b) -> T { return lane0(vpow_of<T>, a, b); },
                     [](Vec<T> a, Vec<T> b) { return vpow(a, b); });
    } else {
      cpu_kernel(iter, [](T a, T b) -> T { return powi(a, b); });
    }
  });
}

/// a ** exp for the exponents PyTorch computes without pow (sqrt, rsqrt,
/// reciprocal, products): they differ from pow at -inf and -0.0.
template <typename T>
T pow_special(T a, T exp) {
  if (exp == T(0.5)) return std::sqrt(a);
  if (exp == T(-0.5)) return T(1) / std::sqrt(a);
  if (exp == T(-1)) return T(1) / a;
  if (exp == T(2)) return a * a;
  if (exp == T(3)) return a * a * a;
  return T(1) / (a * a);  // -2
}

/// float/double base with a scalar exponent: the special exponents first.
template <typename T>
void pow_floating_scalar(TensorIterator& iter, T exp) {
  if (exp == T(0.5)) {
    cpu_kernel_vec(iter, [](T a) -> T { return std::sqrt(a); }, [](Vec<T> a) { return vsqrt(a); });
  } else if (exp == T(-0.5)) {
    cpu_kernel_vec(iter, [](T a) -> T { return T(1) / std::sqrt(a); },
                   [](Vec<T> a) { return Vec<T>::splat(T(1)) / vsqrt(a); });
  } else if (exp == T(-1)) {
    cpu_kernel_vec(iter, [](T a) -> T { return T(1) / a; }, [](Vec<T> a) { return Vec<T>::splat(T(1)) / a; });
  } else if (exp == T(2)) {
    cpu_kernel_vec(iter, [](T a) -> T { return a * a; }, [](Vec<T> a) { return a * a; });
  } else if (exp == T(3)) {
    cpu_kernel_vec(iter, [](T a) -> T { return a * a * a; }, [](Vec<T> a) { return a * a * a; });
  } else if (exp == T(-2)) {
    cpu_kernel_vec(iter, [](T a) -> T { return T(1) / (a * a); },
                   [](Vec<T> a) { return Vec<T>::splat(T(1)) / (a * a); });
  } else {
    const Vec<T> e = Vec<T>::splat(exp);
    cpu_kernel_vec(iter, [exp](T a) -> T { return lane0(vpow_of<T>, a, exp); },
                   [e](Vec<T> a) { return vpow(a, e); });
  }
}

/// complex base, scalar exponent: PyTorch's special exponents as products and roots, else std::pow.
template <typename T>
void pow_complex_scalar(TensorIterator& iter, const Scalar& exp_scalar) {
  if (exp_scalar.equals(0.5)) return cpu_kernel(iter, [](T a) -> T { return std::sqrt(a); });
  if (exp_scalar.equals(2.0)) return cpu_kernel(iter, [](T a) -> T { return a * a; });
  if (exp_scalar.equals(3.0)) return cpu_kernel(iter, [](T a) -> T { return a * a * a; });
  if (exp_scalar.equals(-0.5)) return cpu_kernel(iter, [](T a) -> T { return T(1) / std::sqrt(a); });
  if (exp_scalar.equals(-1.0)) return cpu_kernel(iter, [](T a) -> T { return T(1) / a; });
  if (exp_scalar.equals(-2.0)) return cpu_kernel(iter, [](T a) -> T { return T(1) / (a * a); });
  const T exp = exp_scalar.to<T>();
  cpu_kernel(iter, [exp](T a) -> T { return std::pow(a, exp); });
}

void pow_tensor_scalar_kernel(TensorIterator& iter, const Scalar& exp_scalar) {
  visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      pow_complex_scalar<T>(iter, exp_scalar);
    } else if constexpr (std::is_same_v<T, bool>) {
      fail_not_implemented("pow", DType::Bool);
    } else if constexpr (is_reduced_float_v<T>) {
      // PyTorch rounds the exponent to the tensor's type first, then computes in
      // float; bfloat16 (not float16) also takes the special exponents.
      const float exp = static_cast<float>(exp_scalar.to<T>());
      if constexpr (std::is_same_v<T, BFloat16>) {
        if (exp == 0.5f || exp == -0.5f || exp == -1.0f || exp == 2.0f || exp == 3.0f || exp == -2.0f) {
          return cpu_kernel(iter, [exp](T a) -> T { return T(pow_special(static_cast<float>(a), exp)); });
        }
      }
      cpu_kernel(iter, [exp](T a) -> T { return T(std::pow(static_cast<float>(a), exp)); });
    } else if constexpr (std::is_floating_point_v<T>) {
      pow_floating_scalar<T>(iter, exp_scalar.to<T>());
    } else {
      const T exp = exp_scalar.to<T>();
      if (exp == T(2)) {
        cpu_kernel(iter, [](T a) -> T { return wrapping_mul(a, a); });
      } else {
        cpu_kernel(iter, [exp](T a) -> T { return powi(a, exp); });
      }
    }
  });
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(pow_tensor_tensor_stub, &KILN_CPU_NS::pow_tensor_tensor_kernel);
KILN_REGISTER_DISPATCH(pow_tensor_scalar_stub, &KILN_CPU_NS::pow_tensor_scalar_kernel);

}  // namespace kiln::native

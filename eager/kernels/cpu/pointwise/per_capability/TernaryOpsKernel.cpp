// Loops of where, clamp, lerp, addcmul, addcdiv and masked_fill, compiled per
// CPU capability. float/double run on Vec (where through its own row loop:
// its condition is bool), integers through cpu_kernel, float16/bfloat16 in
// float. See Note [Scalar and Vec agree] (vec/VecBinary.h).
#include <algorithm>
#include <type_traits>

#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "eager/kernels/cpu/pointwise/TernaryOpsStubs.h"
#include "eager/kernels/cpu/vec/VecBinary.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

template <typename T>
inline constexpr bool is_vec_float_v = std::is_same_v<T, float> || std::is_same_v<T, double>;

// --- where ---------------------------------------------------------------------------------

/// out = c ? a : b over float/double rows, a Vec at a time where the row is
/// dense (each input dense or broadcast).
template <typename T>
void where_floating(TensorIterator& iter) {
  for_each_row(iter, [](char* const* data, const int64_t* s, int64_t n) {
    constexpr int64_t W = Vec<T>::size;
    const char* c = data[1];
    const char* a = data[2];
    const char* b = data[3];
    const auto dense_or_broadcast = [](int64_t stride, int64_t item) { return stride == 0 || stride == item; };
    int64_t i = 0;
    if (s[0] == sizeof(T) && dense_or_broadcast(s[1], 1) && dense_or_broadcast(s[2], sizeof(T)) &&
        dense_or_broadcast(s[3], sizeof(T))) {
      T* out = reinterpret_cast<T*>(data[0]);
      const vec_mask_t<T> broadcast_mask = vec_mask_t<T>{} - static_cast<int>(load_at<bool>(c, 0, 0));
      for (; i + W <= n; i += W) {
        const vec_mask_t<T> mask = s[1] == 0 ? broadcast_mask : load_bool_mask<T>(reinterpret_cast<const bool*>(c) + i);
        const Vec<T> r{mask ? load_vec_at<T>(a, s[2], i).v : load_vec_at<T>(b, s[3], i).v};
        r.storeu(out + i);
      }
    }
    for (; i < n; ++i) {
      const T v = load_at<bool>(c, s[1], i) ? load_at<T>(a, s[2], i) : load_at<T>(b, s[3], i);
      std::memcpy(data[0] + i * s[0], &v, sizeof(T));
    }
  });
}

void where_kernel(TensorIterator& iter) {
  visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_vec_float_v<T>) {
      where_floating<T>(iter);
    } else {
      cpu_kernel(iter, [](bool c, T a, T b) -> T { return c ? a : b; });
    }
  });
}

// --- clamp ---------------------------------------------------------------------------------

template <typename T>
T clamp_value(T a, T lo, T hi) {
  if constexpr (std::is_floating_point_v<T>) {
    return min_propagate_nan(max_propagate_nan(a, lo), hi);
  } else {
    return std::min(std::max(a, lo), hi);
  }
}

void clamp_kernel(TensorIterator& iter) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      fail_not_implemented("clamp_cpu", DType::Bool);
    } else if constexpr (is_reduced_float_v<T>) {
      cpu_kernel(iter, [](T a, T lo, T hi) -> T {
        return T(clamp_value(static_cast<float>(a), static_cast<float>(lo), static_cast<float>(hi)));
      });
    } else if constexpr (is_vec_float_v<T>) {
      cpu_kernel_vec(iter, [](T a, T lo, T hi) -> T { return clamp_value(a, lo, hi); },
                     [](Vec<T> a, Vec<T> lo, Vec<T> hi) { return vminimum(vmaximum(a, lo), hi); });
    } else {
      cpu_kernel(iter, [](T a, T lo, T hi) -> T { return clamp_value(a, lo, hi); });
    }
  });
}

void clamp_scalar_kernel(TensorIterator& iter, const Scalar& min, const Scalar& max) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      fail_not_implemented("clamp_scalar_cpu", DType::Bool);
    } else {
      const T lo = checked_scalar_to<T>(min), hi = checked_scalar_to<T>(max);
      if constexpr (is_reduced_float_v<T>) {
        const float flo = lo, fhi = hi;
        cpu_kernel(iter, [flo, fhi](T a) -> T { return T(clamp_value(static_cast<float>(a), flo, fhi)); });
      } else if constexpr (is_vec_float_v<T>) {
        const Vec<T> vlo = Vec<T>::splat(lo), vhi = Vec<T>::splat(hi);
        cpu_kernel_vec(iter, [lo, hi](T a) -> T { return clamp_value(a, lo, hi); },
                       [vlo, vhi](Vec<T> a) { return vminimum(vmaximum(a, vlo), vhi); });
      } else {
        cpu_kernel(iter, [lo, hi](T a) -> T { return clamp_value(a, lo, hi); });
      }
    }
  });
}

/// One-sided clamp: `a < lo ? lo : a` (min) or `hi < a ? hi : a` (max), as std::max/std::min; NaN stays NaN.
void clamp_one_side_kernel(TensorIterator& iter, const Scalar& bound, bool is_min) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      fail_not_implemented(is_min ? "clamp_min_scalar_cpu" : "clamp_max_scalar_cpu", DType::Bool);
    } else {
      using M = opmath_t<T>;
      const M b = static_cast<M>(checked_scalar_to<T>(bound));
      if constexpr (is_vec_float_v<T>) {
        const Vec<T> vb = Vec<T>::splat(b);
        if (is_min) {
          cpu_kernel_vec(iter, [b](T a) -> T { return a < b ? b : a; },
                         [vb](Vec<T> a) { return Vec<T>{a.v < vb.v ? vb.v : a.v}; });
        } else {
          cpu_kernel_vec(iter, [b](T a) -> T { return b < a ? b : a; },
                         [vb](Vec<T> a) { return Vec<T>{vb.v < a.v ? vb.v : a.v}; });
        }
      } else if (is_min) {
        cpu_kernel(iter, [b](T a) -> T { return static_cast<M>(a) < b ? T(b) : a; });
      } else {
        cpu_kernel(iter, [b](T a) -> T { return b < static_cast<M>(a) ? T(b) : a; });
      }
    }
  });
}

void clamp_min_scalar_kernel(TensorIterator& iter, const Scalar& min) { clamp_one_side_kernel(iter, min, true); }
void clamp_max_scalar_kernel(TensorIterator& iter, const Scalar& max) { clamp_one_side_kernel(iter, max, false); }

// --- lerp ----------------------------------------------------------------------------------

/// PyTorch's lerp, in the form its vector code takes: self + w * (end - self)
/// for |w| < 0.5, else end - (end - self) * (1 - w), as one expression.
template <typename T>
T lerp_value(T self, T end, T w) {
  bool small;
  if constexpr (is_complex_v<T>) {
    small = std::abs(w) < typename T::value_type(0.5);  // |w|, as PyTorch's complex lerp
  } else {
    small = (w < T(0) ? -w : w) < T(0.5);
  }
  const T coeff = small ? w : w - T(1);
  const T base = small ? self : end;
  return coeff * (end - self) + base;
}

template <typename T>
Vec<T> lerp_vec(Vec<T> self, Vec<T> end, Vec<T> w) {
  const auto abs_w = w.v < T(0) ? -w.v : w.v;
  const auto small = abs_w < T(0.5);
  const auto coeff = small ? w.v : w.v - T(1);
  const auto base = small ? self.v : end.v;
  return {coeff * (end.v - self.v) + base};
}

void lerp_scalar_kernel(TensorIterator& iter, const Scalar& weight) {
  visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      const T w = weight.to<T>();
      cpu_kernel(iter, [w](T s, T e) -> T { return lerp_value(s, e, w); });
    } else if constexpr (is_reduced_float_v<T>) {
      const float w = checked_scalar_to<float>(weight);
      cpu_kernel(iter, [w](T s, T e) -> T { return T(lerp_value(static_cast<float>(s), static_cast<float>(e), w)); });
    } else if constexpr (is_vec_float_v<T>) {
      const T w = checked_scalar_to<T>(weight);
      const Vec<T> vw = Vec<T>::splat(w);
      cpu_kernel_vec(iter, [w](T s, T e) -> T { return lerp_value(s, e, w); },
                     [vw](Vec<T> s, Vec<T> e) { return lerp_vec(s, e, vw); });
    } else {
      fail_not_implemented("lerp_kernel_scalar", iter.common_dtype());
    }
  });
}

void lerp_tensor_kernel(TensorIterator& iter) {
  visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      cpu_kernel(iter, [](T s, T e, T w) -> T { return lerp_value(s, e, w); });
    } else if constexpr (is_reduced_float_v<T>) {
      cpu_kernel(iter, [](T s, T e, T w) -> T {
        return T(lerp_value(static_cast<float>(s), static_cast<float>(e), static_cast<float>(w)));
      });
    } else if constexpr (is_vec_float_v<T>) {
      cpu_kernel_vec(iter, [](T s, T e, T w) -> T { return lerp_value(s, e, w); },
                     [](Vec<T> s, Vec<T> e, Vec<T> w) { return lerp_vec(s, e, w); });
    } else {
      fail_not_implemented("lerp_kernel_tensor", iter.common_dtype());
    }
  });
}

// --- addcmul, addcdiv ------------------------------------------------------------------------

void addcmul_kernel(TensorIterator& iter, const Scalar& value) {
  visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      const T v = value.to<T>();
      cpu_kernel(iter, [v](T s, T a, T b) -> T { return s + v * a * b; });
    } else if constexpr (std::is_same_v<T, bool>) {
      fail_not_implemented("addcmul_cpu_out", DType::Bool);
    } else if constexpr (is_reduced_float_v<T>) {
      const float v = checked_scalar_to<float>(value);
      cpu_kernel(iter, [v](T s, T a, T b) -> T {
        return T(static_cast<float>(s) + v * static_cast<float>(a) * static_cast<float>(b));
      });
    } else if constexpr (is_vec_float_v<T>) {
      const T v = checked_scalar_to<T>(value);
      const Vec<T> vv = Vec<T>::splat(v);
      cpu_kernel_vec(iter, [v](T s, T a, T b) -> T { return s + v * a * b; },
                     [vv](Vec<T> s, Vec<T> a, Vec<T> b) { return s + vv * a * b; });
    } else {
      const T v = checked_scalar_to<T>(value);
      cpu_kernel(iter, [v](T s, T a, T b) -> T { return wrapping_add(s, wrapping_mul(wrapping_mul(v, a), b)); });
    }
  });
}

/// Integer operands never reach here (addcdiv refuses integer division first).
void addcdiv_kernel(TensorIterator& iter, const Scalar& value) {
  visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_complex_v<T>) {
      const T v = value.to<T>();
      cpu_kernel(iter, [v](T s, T a, T b) -> T { return s + v * a / b; });
    } else if constexpr (is_reduced_float_v<T>) {
      const float v = checked_scalar_to<float>(value);
      cpu_kernel(iter, [v](T s, T a, T b) -> T {
        return T(static_cast<float>(s) + v * static_cast<float>(a) / static_cast<float>(b));
      });
    } else if constexpr (is_vec_float_v<T>) {
      const T v = checked_scalar_to<T>(value);
      const Vec<T> vv = Vec<T>::splat(v);
      cpu_kernel_vec(iter, [v](T s, T a, T b) -> T { return s + v * a / b; },
                     [vv](Vec<T> s, Vec<T> a, Vec<T> b) { return s + vv * a / b; });
    } else {
      fail_not_implemented("addcdiv_cpu_out", iter.common_dtype());
    }
  });
}

// --- masked_fill -------------------------------------------------------------------------------

void masked_fill_kernel(TensorIterator& iter, const Scalar& value) {
  visit_dtype_and_complex(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T v = checked_scalar_to<T>(value);
    cpu_kernel(iter, [v](T self, bool mask) -> T { return mask ? v : self; });
  });
}

}  // namespace
}  // namespace KILN_CPU_NS

KILN_REGISTER_DISPATCH(where_stub, &KILN_CPU_NS::where_kernel);
KILN_REGISTER_DISPATCH(clamp_stub, &KILN_CPU_NS::clamp_kernel);
KILN_REGISTER_DISPATCH(clamp_scalar_stub, &KILN_CPU_NS::clamp_scalar_kernel);
KILN_REGISTER_DISPATCH(clamp_min_scalar_stub, &KILN_CPU_NS::clamp_min_scalar_kernel);
KILN_REGISTER_DISPATCH(clamp_max_scalar_stub, &KILN_CPU_NS::clamp_max_scalar_kernel);
KILN_REGISTER_DISPATCH(lerp_scalar_stub, &KILN_CPU_NS::lerp_scalar_kernel);
KILN_REGISTER_DISPATCH(lerp_tensor_stub, &KILN_CPU_NS::lerp_tensor_kernel);
KILN_REGISTER_DISPATCH(addcmul_stub, &KILN_CPU_NS::addcmul_kernel);
KILN_REGISTER_DISPATCH(addcdiv_stub, &KILN_CPU_NS::addcdiv_kernel);
KILN_REGISTER_DISPATCH(masked_fill_stub, &KILN_CPU_NS::masked_fill_kernel);

}  // namespace kiln::native

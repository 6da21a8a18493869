// Helpers of the unary pointwise loops and activations (kernels/UnaryOpsKernel.cpp,
// kernels/ActivationKernel.cpp): the SLEEF functions Vec.h does not wrap, lane
// selects, and three loops over a Vec function of one argument: float/double
// on Vec (streaming stores for large outputs), float16/bfloat16 through float
// Vec. Only for files compiled per CPU capability.
// See Note [Scalar and Vec agree] (VecBinary.h): every scalar path here is the
// Vec function evaluated on a splatted value, so a result never depends on
// where a row was cut between the vector body and its tail.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/vec/Vec.h"
#include "eager/kernels/cpu/vec/VecBinary.h"
#include "eager/kernels/cpu/vec/VecTanh.h"

namespace kiln::native::KILN_CPU_NS {

// --- vector math beyond Vec.h's ----------------------------------------------------

// libmvec at AVX2, SLEEF elsewhere (Note [Vector math by measurement], Vec.h).
KILN_VEC_UNARY_MATH(vasin, asin, u10)
KILN_VEC_UNARY_MATH(vacos, acos, u10)
KILN_VEC_UNARY_MATH(vatan, atan, u10)
KILN_VEC_UNARY_MATH(vsinh, sinh, u10)
KILN_VEC_UNARY_MATH(vcosh, cosh, u10)
KILN_VEC_UNARY_MATH(vasinh, asinh, u10)
KILN_VEC_UNARY_MATH(vacosh, acosh, u10)
KILN_VEC_UNARY_MATH(vatanh, atanh, u10)
KILN_VEC_UNARY_MATH(verfc, erfc, u15)
KILN_VEC_UNARY_SLEEF(vfabs, fabs, )
KILN_VEC_UNARY_SLEEF(vfloor, floor, )
KILN_VEC_UNARY_SLEEF(vceil, ceil, )
KILN_VEC_UNARY_SLEEF(vtrunc, trunc, )
KILN_VEC_UNARY_SLEEF(vrint, rint, )  // round half to even, as std::nearbyint in the default mode

// --- lane selects ------------------------------------------------------------------------

/// mask ? a : b per lane (mask from a comparison of Vec<T>::v).
template <typename T>
Vec<T> select(vec_mask_t<T> mask, Vec<T> a, Vec<T> b) {
  return {mask ? a.v : b.v};
}

/// A value of type T as a Vec, for the constants of a formula.
template <typename T>
Vec<T> vconst(double x) {
  return Vec<T>::splat(static_cast<T>(x));
}

// --- loops ------------------------------------------------------------------------------------

/// cpu_kernel_vec over a Vec function of one Vec<T> (T float or double), the
/// scalar tail through lane0. Outputs of kStreamingBytes or more that are
/// dense, with a dense input of the same dtype, are written with streaming
/// stores (Note [Streaming stores], VecBinary.h).
template <typename T, typename VFn>
void unary_kernel_vec(TensorIterator& iter, const VFn& vfn) {
  const auto op = [&](T x) -> T { return lane0(vfn, x); };
  const auto vop = [&](Vec<T> x) { return vfn(x); };
  const bool big = iter.numel() * static_cast<int64_t>(sizeof(T)) >= kStreamingBytes;
  if (!big || iter.iteration_shape().size() != 1 || iter.dtype(0) != iter.dtype(1)) {
    cpu_kernel_vec(iter, op, vop);
    return;
  }
  for_each_row(iter, [&](char* const* data, const int64_t* s, int64_t n) {
    constexpr int64_t W = Vec<T>::size;
    T* out = reinterpret_cast<T*>(data[0]);
    int64_t i = 0;
    if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
      const T* in = reinterpret_cast<const T*>(data[1]);
      for (; i < n && reinterpret_cast<uintptr_t>(out + i) % kVecBytes != 0; ++i) out[i] = op(in[i]);
      for (; i + W <= n; i += W) stream_store(out + i, vop(Vec<T>::loadu(in + i)));
      _mm_sfence();  // order the streaming stores before the threads join
    }
    for (; i < n; ++i) {
      const T v = op(load_at<T>(data[1], s[1], i));
      std::memcpy(data[0] + i * s[0], &v, sizeof(T));
    }
  });
}

/// A float16/bfloat16 op through a Vec<float> function: each run of W elements
/// is widened, computed and rounded once (as PyTorch computes them in float).
template <typename T, typename VFn>
void reduced_float_unary_vec(TensorIterator& iter, const VFn& vfn) {
  for_each_row(iter, [&](char* const* data, const int64_t* s, int64_t n) {
    constexpr int64_t W = Vec<float>::size;
    float buf[W];
    for (int64_t i = 0; i < n; i += W) {
      const int64_t m = std::min(W, n - i);
      for (int64_t j = 0; j < m; ++j) buf[j] = static_cast<float>(load_at<T>(data[1], s[1], i + j));
      vfn(Vec<float>::loadu(buf, m)).storeu(buf);
      for (int64_t j = 0; j < m; ++j) {
        const T v(buf[j]);
        std::memcpy(data[0] + (i + j) * s[0], &v, sizeof(T));
      }
    }
  });
}

/// float/double on Vec, float16/bfloat16 through float: `vfn` is a generic
/// lambda over Vec<float> and Vec<double>. Returns false for other dtypes.
template <typename T, typename VFn>
bool floating_unary_vec(TensorIterator& iter, const VFn& vfn) {
  if constexpr (is_reduced_float_v<T>) {
    reduced_float_unary_vec<T>(iter, vfn);
    return true;
  } else if constexpr (std::is_floating_point_v<T>) {
    unary_kernel_vec<T>(iter, vfn);
    return true;
  } else {
    return false;
  }
}

/// The two-input form for the activations' backward ops (grad, input):
/// float/double on Vec, float16/bfloat16 through float Vec. Returns false for
/// other dtypes.
template <typename T, typename VFn>
bool floating_binary_vec(TensorIterator& iter, const VFn& vfn) {
  if constexpr (is_reduced_float_v<T>) {
    for_each_row(iter, [&](char* const* data, const int64_t* s, int64_t n) {
      constexpr int64_t W = Vec<float>::size;
      float a[W];
      float b[W];
      for (int64_t i = 0; i < n; i += W) {
        const int64_t m = std::min(W, n - i);
        for (int64_t j = 0; j < m; ++j) {
          a[j] = static_cast<float>(load_at<T>(data[1], s[1], i + j));
          b[j] = static_cast<float>(load_at<T>(data[2], s[2], i + j));
        }
        vfn(Vec<float>::loadu(a, m), Vec<float>::loadu(b, m)).storeu(a);
        for (int64_t j = 0; j < m; ++j) {
          const T v(a[j]);
          std::memcpy(data[0] + (i + j) * s[0], &v, sizeof(T));
        }
      }
    });
    return true;
  } else if constexpr (std::is_floating_point_v<T>) {
    cpu_kernel_vec(iter, [&](T a, T b) -> T { return lane0(vfn, a, b); },
                   [&](Vec<T> a, Vec<T> b) { return vfn(a, b); });
    return true;
  } else {
    return false;
  }
}

/// The element type of a Vec (inside generic lambdas over Vec<float> and Vec<double>).
template <typename V>
using lane_t = std::remove_cv_t<std::remove_reference_t<decltype(std::declval<V>().v[0])>>;

}  // namespace kiln::native::KILN_CPU_NS

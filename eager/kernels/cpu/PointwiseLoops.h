// The pointwise loops over Vec functions, for files compiled per CPU
// capability: a binary loop with streaming stores for large outputs, and the
// unary (and activation-backward binary) loops on float/double Vec, with
// float16/bfloat16 through float Vec. Built on Loops.h's cpu_kernel_vec and
// for_each_row and on vec/'s primitives.
// See Note [Scalar and Vec agree] (vec/VecBinary.h): every scalar path here is the
// Vec function evaluated on a splatted value (or the Vec lambda's scalar twin),
// so a result never depends on where a row was cut between the vector body and
// its tail; and Note [Streaming stores] (vec/VecBinary.h).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "eager/kernels/TensorIterator.h"
#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/vec/StreamingThreshold.h"
#include "eager/kernels/cpu/vec/Vec.h"
#include "eager/kernels/cpu/vec/VecBinary.h"

namespace kiln::native::KILN_CPU_NS {

// --- binary ------------------------------------------------------------------------------

/// cpu_kernel_vec for a float/double binary op whose output is large, dense
/// and of the inputs' dtype: dense or broadcast inputs, Vec at a time, written
/// with non-temporal stores (after an aligning scalar prologue). Other shapes
/// and small outputs take cpu_kernel_vec.
template <typename T, typename Op, typename VOp>
void binary_kernel_vec_streaming(TensorIterator& iter, const Op& op, const VOp& vop) {
  const bool big = iter.numel() * static_cast<int64_t>(sizeof(T)) >= kStreamingBytes;
  if (!big || iter.iteration_shape().size() != 1 || iter.dtype(0) != iter.dtype(1)) {
    cpu_kernel_vec(iter, op, vop);
    return;
  }
  for_each_row(iter, [&](char* const* data, const int64_t* s, int64_t n) {
    constexpr int64_t W = Vec<T>::size;
    const auto dense_or_broadcast = [](int64_t stride) { return stride == 0 || stride == sizeof(T); };
    T* out = reinterpret_cast<T*>(data[0]);
    int64_t i = 0;
    if (s[0] == sizeof(T) && dense_or_broadcast(s[1]) && dense_or_broadcast(s[2])) {
      for (; i < n && reinterpret_cast<uintptr_t>(out + i) % kVecBytes != 0; ++i) {
        out[i] = op(load_at<T>(data[1], s[1], i), load_at<T>(data[2], s[2], i));
      }
      for (; i + W <= n; i += W) {
        const Vec<T> r = vop(load_vec_at<T>(data[1], s[1], i), load_vec_at<T>(data[2], s[2], i));
        stream_store(out + i, r);
      }
      _mm_sfence();  // order the streaming stores before the threads join
    }
    for (; i < n; ++i) {
      const T v = op(load_at<T>(data[1], s[1], i), load_at<T>(data[2], s[2], i));
      std::memcpy(data[0] + i * s[0], &v, sizeof(T));
    }
  });
}

// --- loops ------------------------------------------------------------------------------------

/// cpu_kernel_vec over a Vec function of one Vec<T> (T float or double), the
/// scalar tail through lane0. Outputs of kStreamingBytes or more that are
/// dense, with a dense input of the same dtype, are written with streaming
/// stores (Note [Streaming stores], vec/VecBinary.h).
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

}  // namespace kiln::native::KILN_CPU_NS

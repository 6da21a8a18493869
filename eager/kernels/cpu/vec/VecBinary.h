// Element primitives of the binary and ternary pointwise loops
// (pointwise/per_capability/): opmath types, wrapping integer arithmetic,
// NaN-propagating maximum/minimum, masks between Vec lanes and bool bytes,
// loads from strided rows and non-temporal stores. The loops themselves are
// ../Loops.h and ../PointwiseLoops.h. Only for files compiled per CPU capability.
//
// Note [Scalar and Vec agree]
// ---------------------------
// cpu_kernel_vec runs the Vec lambda over whole vectors and the scalar lambda
// over the leftover elements of each row, and where a row is cut depends on how
// the work is split between threads. So every scalar lambda here computes
// exactly what its Vec lambda computes lane by lane (the same operations in
// the same order, no fused multiply-add on one side only), or it evaluates the
// Vec function on a splatted value (lane0) where the vector code calls SLEEF:
// results then never depend on kiln.set_num_threads. (GCC contracts a multiply
// that feeds an add into one FMA in the AVX2 and AVX-512 builds, in the scalar
// and the Vec lambda alike, so the builds for different CPUs may differ in the
// last bit there, as PyTorch's do; one build always agrees with itself.)
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "eager/core/Half.h"
#include "eager/kernels/cpu/vec/Vec.h"

namespace kiln::native::KILN_CPU_NS {

// --- element types ---------------------------------------------------------------

template <typename T>
inline constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// The type a loop computes T in: float for float16/bfloat16 (PyTorch's opmath_type).
template <typename T>
using opmath_t = std::conditional_t<is_reduced_float_v<T>, float, T>;

/// Integer arithmetic that wraps instead of overflowing (signed overflow is
/// undefined behaviour; PyTorch's results are the two's-complement ones).
template <typename T>
T wrapping_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T>
T wrapping_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <typename T>
T wrapping_mul(T a, T b) {
  // Through unsigned int at least, so int8/int16 products do not promote to signed int.
  using U = std::common_type_t<std::make_unsigned_t<T>, unsigned int>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
template <typename T>
T wrapping_neg(T a) {
  return wrapping_sub(T(0), a);
}

// --- maximum and minimum ---------------------------------------------------------

/// NaN-propagating maximum, as PyTorch's vectorised maximum: `a > b ? a : b`, NaN when either is NaN.
template <typename T>
T max_propagate_nan(T a, T b) {
  const T r = a > b ? a : b;
  return a != a ? a : r;
}
template <typename T>
T min_propagate_nan(T a, T b) {
  const T r = a < b ? a : b;
  return a != a ? a : r;
}
template <typename T>
Vec<T> vmaximum(Vec<T> a, Vec<T> b) {
  const auto r = a.v > b.v ? a.v : b.v;
  return {a.v != a.v ? a.v : r};
}
template <typename T>
Vec<T> vminimum(Vec<T> a, Vec<T> b) {
  const auto r = a.v < b.v ? a.v : b.v;
  return {a.v != a.v ? a.v : r};
}

/// A Vec function of two arguments evaluated on one element (see Note [Scalar and Vec agree]).
template <typename T, typename VFn>
T lane0(const VFn& fn, T a, T b) {
  return fn(Vec<T>::splat(a), Vec<T>::splat(b)).v[0];
}
template <typename T, typename VFn>
T lane0(const VFn& fn, T a) {
  return fn(Vec<T>::splat(a)).v[0];
}

// --- masks: Vec lanes <-> bool bytes -------------------------------------------------

/// The comparison result type of Vec<T>: a signed integer per lane, -1 (true) or 0.
template <typename T>
struct VecMask;
template <>
struct VecMask<float> {
  typedef int32_t type __attribute__((vector_size(kVecBytes)));
};
template <>
struct VecMask<double> {
  typedef int64_t type __attribute__((vector_size(kVecBytes)));
};
template <typename T>
using vec_mask_t = typename VecMask<T>::type;

/// One byte per lane of Vec<T>.
template <typename T>
struct VecLaneBytes {
  typedef int8_t type __attribute__((vector_size(Vec<T>::size)));
};

/// Vec<T>::size bools as a lane mask.
template <typename T>
vec_mask_t<T> load_bool_mask(const bool* p) {
  typename VecLaneBytes<T>::type bytes;
  std::memcpy(&bytes, p, sizeof(bytes));
  return __builtin_convertvector(bytes, vec_mask_t<T>) != 0;
}

/// Writes a lane mask as Vec<T>::size bools (0 or 1).
template <typename T>
void store_mask_as_bools(vec_mask_t<T> mask, bool* p) {
  using Bytes = typename VecLaneBytes<T>::type;
  const Bytes one = Bytes{} + 1;
  const Bytes bytes = __builtin_convertvector(mask, Bytes) & one;
  std::memcpy(p, &bytes, sizeof(bytes));
}

// --- loads from strided rows ------------------------------------------------------------

/// The element at index i of a row operand with byte stride `stride` (0: broadcast).
template <typename T>
T load_at(const char* p, int64_t stride, int64_t i) {
  T v;
  std::memcpy(&v, p + i * stride, sizeof(T));
  return v;
}

/// Vec<T> of the W elements from index i, or the broadcast element when stride is 0.
template <typename T>
Vec<T> load_vec_at(const char* p, int64_t stride, int64_t i) {
  return stride == 0 ? Vec<T>::splat(load_at<T>(p, 0, 0)) : Vec<T>::loadu(p + i * stride);
}

// --- streaming stores for outputs bigger than the caches -------------------------------

// Note [Streaming stores]
// -----------------------
// A store to a line that is not in the cache first reads it (read for
// ownership): an elementwise op writing an output far bigger than the last-level
// cache moves a third more memory than it reads and writes (a + b moves 4, not
// 3, times the output). Non-temporal stores skip that read and do not evict the
// inputs. They only pay off when the output cannot stay cached anyway, so only
// outputs of kStreamingBytes or more take them; smaller ones stay in cache for
// the next op. Results are unchanged (the same scalar and Vec lambdas run).
// (kStreamingBytes is vec/StreamingThreshold.h's, shared with the layout copies;
// the loops that take these stores are ../PointwiseLoops.h's.)

/// A non-temporal store of a whole Vec to a kVecBytes-aligned address.
inline void stream_store(float* p, Vec<float> v) {
#if defined(__AVX512F__)
  _mm512_stream_ps(p, reinterpret_cast<__m512>(v.v));
#elif defined(__AVX2__)
  _mm256_stream_ps(p, reinterpret_cast<__m256>(v.v));
#else
  _mm_stream_ps(p, reinterpret_cast<__m128>(v.v));
#endif
}
inline void stream_store(double* p, Vec<double> v) {
#if defined(__AVX512F__)
  _mm512_stream_pd(p, reinterpret_cast<__m512d>(v.v));
#elif defined(__AVX2__)
  _mm256_stream_pd(p, reinterpret_cast<__m256d>(v.v));
#else
  _mm_stream_pd(p, reinterpret_cast<__m128d>(v.v));
#endif
}

}  // namespace kiln::native::KILN_CPU_NS

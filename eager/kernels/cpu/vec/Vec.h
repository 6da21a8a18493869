// Vec<T>: a SIMD register of T as wide as this build's instruction set
// (16 bytes baseline, 32 AVX2, 64 AVX-512), on GCC vector extensions, with
// vector math from SLEEF (1-ulp "u10" variants, as PyTorch uses).
// Only for files compiled per capability; see Note [One kernel source,
// several instruction sets] (eager/kernels/cpu/CpuCapability.h).
#pragma once

#include <sleef.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#ifndef KILN_CPU_NS
#error "Vec.h is only for kernel files compiled per CPU capability (eager/kernels/cpu/kernels/)"
#endif

namespace kiln::native::KILN_CPU_NS {

#if defined(__AVX512F__)
inline constexpr int64_t kVecBytes = 64;
#elif defined(__AVX2__)
inline constexpr int64_t kVecBytes = 32;
#else
inline constexpr int64_t kVecBytes = 16;
#endif

template <typename T>
struct Vec {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, "Vec holds numbers");
  typedef T Native __attribute__((vector_size(kVecBytes)));
  static constexpr int64_t size = kVecBytes / static_cast<int64_t>(sizeof(T));

  Native v;

  static Vec loadu(const void* p) {
    Vec r;
    std::memcpy(&r.v, p, sizeof(Native));
    return r;
  }
  /// Loads `count` < size elements; the rest are zero.
  static Vec loadu(const void* p, int64_t count) {
    Vec r{};
    std::memcpy(&r.v, p, static_cast<size_t>(count) * sizeof(T));
    return r;
  }
  static Vec splat(T x) {
    Vec r;
    r.v = x - Native{};  // not `Native{} + x`: +0.0 + -0.0 is +0.0, and the sign of zero matters (1 / x, pow)
    return r;
  }
  void storeu(void* p) const { std::memcpy(p, &v, sizeof(Native)); }
  void storeu(void* p, int64_t count) const { std::memcpy(p, &v, static_cast<size_t>(count) * sizeof(T)); }

  friend Vec operator+(Vec a, Vec b) { return {a.v + b.v}; }
  friend Vec operator-(Vec a, Vec b) { return {a.v - b.v}; }
  friend Vec operator*(Vec a, Vec b) { return {a.v * b.v}; }
  friend Vec operator/(Vec a, Vec b) { return {a.v / b.v}; }
  friend Vec operator-(Vec a) { return {-a.v}; }
};

template <typename T>
Vec<T> maximum(Vec<T> a, Vec<T> b) {
  return {a.v > b.v ? a.v : b.v};
}
template <typename T>
Vec<T> minimum(Vec<T> a, Vec<T> b) {
  return {a.v < b.v ? a.v : b.v};
}
/// a * b + c
template <typename T>
Vec<T> fmadd(Vec<T> a, Vec<T> b, Vec<T> c) {
  return {a.v * b.v + c.v};
}

// --- SLEEF math ----------------------------------------------------------------
// SLEEF's names carry the lane count and the ISA: Sleef_expf16_u10avx512f.

#if defined(__AVX512F__)
#define KILN_SLEEF_F(fn, acc) Sleef_##fn##f16_##acc##avx512f
#define KILN_SLEEF_D(fn, acc) Sleef_##fn##d8_##acc##avx512f
#elif defined(__AVX2__)
#define KILN_SLEEF_F(fn, acc) Sleef_##fn##f8_##acc##avx2
#define KILN_SLEEF_D(fn, acc) Sleef_##fn##d4_##acc##avx2
#else
#define KILN_SLEEF_F(fn, acc) Sleef_##fn##f4_##acc##sse2
#define KILN_SLEEF_D(fn, acc) Sleef_##fn##d2_##acc##sse2
#endif

#define KILN_VEC_UNARY_MATH(name, fn, acc)                                            \
  inline Vec<float> name(Vec<float> a) { return {KILN_SLEEF_F(fn, acc)(a.v)}; }       \
  inline Vec<double> name(Vec<double> a) { return {KILN_SLEEF_D(fn, acc)(a.v)}; }

KILN_VEC_UNARY_MATH(vexp, exp, u10)
KILN_VEC_UNARY_MATH(vexp2, exp2, u10)
KILN_VEC_UNARY_MATH(vexpm1, expm1, u10)
KILN_VEC_UNARY_MATH(vlog, log, u10)
KILN_VEC_UNARY_MATH(vlog2, log2, u10)
KILN_VEC_UNARY_MATH(vlog10, log10, u10)
KILN_VEC_UNARY_MATH(vlog1p, log1p, u10)
KILN_VEC_UNARY_MATH(vsin, sin, u10)
KILN_VEC_UNARY_MATH(vcos, cos, u10)
KILN_VEC_UNARY_MATH(vtan, tan, u10)
KILN_VEC_UNARY_MATH(verf, erf, u10)
KILN_VEC_UNARY_MATH(vsqrt, sqrt, u05)

#define KILN_VEC_BINARY_MATH(name, fn, acc)                                                              \
  inline Vec<float> name(Vec<float> a, Vec<float> b) { return {KILN_SLEEF_F(fn, acc)(a.v, b.v)}; }       \
  inline Vec<double> name(Vec<double> a, Vec<double> b) { return {KILN_SLEEF_D(fn, acc)(a.v, b.v)}; }

KILN_VEC_BINARY_MATH(vpow, pow, u10)
KILN_VEC_BINARY_MATH(vfmod, fmod, )

#undef KILN_VEC_UNARY_MATH
#undef KILN_VEC_BINARY_MATH

}  // namespace kiln::native::KILN_CPU_NS

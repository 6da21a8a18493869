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
#error "Vec.h is only for kernel files compiled per CPU capability (eager/kernels/cpu/*/per_capability/)"
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

// --- vector math: SLEEF, and glibc's libmvec in the AVX2 build -------------------
// SLEEF's names carry the lane count and the ISA: Sleef_expf16_u10avx512f.
// libmvec's follow the x86 vector ABI: _ZGVdN8v_expf is the AVX2 ("d"),
// unmasked ("N"), 8-lane, one-vector-argument ("v") expf. Which library serves
// which function in which build is Note [Vector math by measurement]
// (eager/kernels/README.md has the table).

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

// Note [Vector math by measurement]
// ---------------------------------
// The issue asks for SLEEF or libmvec, chosen by measurement, and the answer
// depends on the CPU. On AMD znver5 (AVX-512) SLEEF's 1-ulp functions were as
// fast or faster, so the AVX-512 build uses SLEEF. On AMD znver3 (AVX2 only)
// Debian's SLEEF 3.5.1 AVX2 entry points ran 1.5-5x slower than glibc 2.36's
// libmvec AVX2 ones for every function below (exp 0.89 vs 0.46 ns/element,
// erf 4.7 vs 0.97, sin 1.24 vs 0.45; table in eager/kernels/README.md), whose
// errors stay within 3.6 ulp (float) / 3.3 ulp (double): under a tenth of
// torch.testing's float32 rtol of 1.3e-6. So the AVX2 build takes these from
// libmvec, and keeps SLEEF where SLEEF measured faster (double exp2, tanh) and
// for what libmvec lacks. The baseline (SSE) build keeps SLEEF throughout.
// NaN, +-inf, +-0 and subnormal inputs were checked to give C's answers.
#if defined(__AVX2__) && !defined(__AVX512F__)
#define KILN_USE_MVEC 1
#define KILN_MVEC_DECLARE(fn)                                      \
  extern "C" Vec<float>::Native _ZGVdN8v_##fn##f(Vec<float>::Native); \
  extern "C" Vec<double>::Native _ZGVdN4v_##fn(Vec<double>::Native);
#define KILN_MVEC_F(fn, acc) _ZGVdN8v_##fn##f
#define KILN_MVEC_D(fn, acc) _ZGVdN4v_##fn
#else
#define KILN_USE_MVEC 0
#define KILN_MVEC_DECLARE(fn)
#define KILN_MVEC_F(fn, acc) KILN_SLEEF_F(fn, acc)
#define KILN_MVEC_D(fn, acc) KILN_SLEEF_D(fn, acc)
#endif

/// A float and a double overload of `name`, from SLEEF (`acc` its accuracy
/// suffix) in every build.
#define KILN_VEC_UNARY_SLEEF(name, fn, acc)                                           \
  inline Vec<float> name(Vec<float> a) { return {KILN_SLEEF_F(fn, acc)(a.v)}; }       \
  inline Vec<double> name(Vec<double> a) { return {KILN_SLEEF_D(fn, acc)(a.v)}; }

/// The same from libmvec in the AVX2 build, from SLEEF elsewhere.
#define KILN_VEC_UNARY_MATH(name, fn, acc)                                            \
  KILN_MVEC_DECLARE(fn)                                                               \
  inline Vec<float> name(Vec<float> a) { return {KILN_MVEC_F(fn, acc)(a.v)}; }        \
  inline Vec<double> name(Vec<double> a) { return {KILN_MVEC_D(fn, acc)(a.v)}; }

KILN_VEC_UNARY_MATH(vexp, exp, u10)
KILN_VEC_UNARY_MATH(vexpm1, expm1, u10)
KILN_VEC_UNARY_MATH(vlog, log, u10)
KILN_VEC_UNARY_MATH(vlog2, log2, u10)
KILN_VEC_UNARY_MATH(vlog10, log10, u10)
KILN_VEC_UNARY_MATH(vlog1p, log1p, u10)
KILN_VEC_UNARY_MATH(vsin, sin, u10)
KILN_VEC_UNARY_MATH(vcos, cos, u10)
KILN_VEC_UNARY_MATH(vtan, tan, u10)
KILN_VEC_UNARY_MATH(verf, erf, u10)
KILN_VEC_UNARY_SLEEF(vsqrt, sqrt, u05)

// exp2: libmvec's float is faster at AVX2 (0.45 vs 0.60 ns), SLEEF's double (1.52 vs 1.79).
KILN_MVEC_DECLARE(exp2)
inline Vec<float> vexp2(Vec<float> a) { return {KILN_MVEC_F(exp2, u10)(a.v)}; }
inline Vec<double> vexp2(Vec<double> a) { return {KILN_SLEEF_D(exp2, u10)(a.v)}; }

#define KILN_VEC_BINARY_MATH(name, fn, acc)                                                              \
  inline Vec<float> name(Vec<float> a, Vec<float> b) { return {KILN_SLEEF_F(fn, acc)(a.v, b.v)}; }       \
  inline Vec<double> name(Vec<double> a, Vec<double> b) { return {KILN_SLEEF_D(fn, acc)(a.v, b.v)}; }

KILN_VEC_BINARY_MATH(vpow, pow, u10)
KILN_VEC_BINARY_MATH(vfmod, fmod, )
KILN_VEC_BINARY_MATH(vatan2, atan2, u10)
KILN_VEC_BINARY_MATH(vhypot, hypot, u05)
KILN_VEC_BINARY_MATH(vcopysign, copysign, )

#undef KILN_VEC_BINARY_MATH

}  // namespace kiln::native::KILN_CPU_NS

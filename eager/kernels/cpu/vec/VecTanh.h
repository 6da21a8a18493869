// vtanh: float tanh from Eigen at AVX-512 and AVX2, SLEEF's 3.5-ulp tanh
// otherwise (and for double). Only for files compiled per CPU capability.
//
// Note [float tanh]
// -----------------
// At 16M float32 elements on one thread SLEEF's u35 tanh ran at 0.5-0.65 of
// the memory-copy bandwidth measured beside it: tanh was compute-bound. Measured
// on AMD znver5 (16M floats, best of 25 interleaved, streaming stores; max
// error over every 5th float in [0, 10) against double tanh):
//
//   candidate                          fraction of copy bw   max ulp   max rel. error
//   SLEEF tanhf16_u35avx512f           0.50-0.54             2.86      2.5e-7
//   SLEEF tanhf16_u10avx512f           0.16                  1.00
//   glibc 2.36 libmvec _ZGVeN16v_tanhf 0.55-0.70             1.37      1.1e-7
//   glibc 2.36 libmvec _ZGVdN8v_tanhf  0.28 (AVX2)           1.02
//   Eigen 3.4 ptanh<Packet16f>         0.99                  4.72      2.9e-7
//
// And on AMD znver3 (AVX2 only; 4096 floats in L1, best of 20, ns/element):
// SLEEF tanhf8_u35avx2 1.03-1.31 (2.6 ulp), libmvec _ZGVdN8v_tanhf 1.06-1.32
// (1.0 ulp), Eigen ptanh<Packet8f> 0.43 (4.6 ulp); at 16M the SLEEF one ran
// at 0.54-0.59 of the copy bandwidth.
//
// Eigen's rational approximation (a 13/6 odd/even pair on the input clamped to
// |x| < 7.999, x itself below 4e-4) is memory-bound; its relative error is that
// of SLEEF u35 (the extra ulps are where tanh is near +-1 and an ulp is half
// as wide), far inside torch.testing's float32 rtol of 1.3e-6. NaN stays NaN,
// +-inf gives +-1, -0 stays -0.
//
// Eigen is a header-only template library, so the AVX-512 and AVX2 builds
// would each instantiate the same inline templates (Packet8f helpers exist in
// both) compiled for different instruction sets, and the linker keeps one
// copy: an AVX-512 body could then run on an AVX2-only CPU. So each build
// includes Eigen under its own namespace name (kiln_eigen_cpu_avx2, ...): the
// `Eigen` macro below renames every `namespace Eigen` in the headers, and no
// symbol is shared between builds. No other kiln file includes Eigen.
#pragma once

#include "eager/kernels/cpu/vec/Vec.h"

#if defined(__AVX512F__) || defined(__AVX2__)
#define KILN_EIGEN_NS_(ns) kiln_eigen_##ns
#define KILN_EIGEN_NS(ns) KILN_EIGEN_NS_(ns)
#define Eigen KILN_EIGEN_NS(KILN_CPU_NS)
#include <Eigen/Core>
#undef Eigen
#define KILN_EIGEN KILN_EIGEN_NS(KILN_CPU_NS)
#endif

namespace kiln::native::KILN_CPU_NS {

#if defined(__AVX512F__)
inline Vec<float> vtanh(Vec<float> a) {
  return {::KILN_EIGEN::internal::ptanh<::KILN_EIGEN::internal::Packet16f>(a.v)};
}
#elif defined(__AVX2__)
inline Vec<float> vtanh(Vec<float> a) {
  return {::KILN_EIGEN::internal::ptanh<::KILN_EIGEN::internal::Packet8f>(a.v)};
}
#else
inline Vec<float> vtanh(Vec<float> a) { return {KILN_SLEEF_F(tanh, u35)(a.v)}; }
#endif
inline Vec<double> vtanh(Vec<double> a) { return {KILN_SLEEF_D(tanh, u35)(a.v)}; }

}  // namespace kiln::native::KILN_CPU_NS

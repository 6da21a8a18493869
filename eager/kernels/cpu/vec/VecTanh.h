// vtanh: float tanh from Eigen at AVX-512, SLEEF's 3.5-ulp tanh otherwise
// (and for double). Only for files compiled per CPU capability.
//
// Note [float tanh]
// -----------------
// At 16M float32 elements on one thread SLEEF's u35 tanh ran at 0.5-0.65 of
// the memory-copy bandwidth measured beside it: tanh was compute-bound. Measured
// on this machine (AMD znver5, 16M floats, best of 25 interleaved, streaming
// stores; max error over every 5th float in [0, 10) against double tanh):
//
//   candidate                          fraction of copy bw   max ulp   max rel. error
//   SLEEF tanhf16_u35avx512f           0.50-0.54             2.86      2.5e-7
//   SLEEF tanhf16_u10avx512f           0.16                  1.00
//   glibc 2.36 libmvec _ZGVeN16v_tanhf 0.55-0.70             1.37      1.1e-7
//   glibc 2.36 libmvec _ZGVdN8v_tanhf  0.28 (AVX2)           1.02
//   Eigen 3.4 ptanh<Packet16f>         0.99                  4.72      2.9e-7
//
// Eigen's rational approximation (a 13/6 odd/even pair on the input clamped to
// |x| < 7.999, x itself below 4e-4) is memory-bound; its relative error is that
// of SLEEF u35 (the extra ulps are where tanh is near +-1 and an ulp is half
// as wide), far inside torch.testing's float32 rtol of 1.3e-6. NaN stays NaN,
// +-inf gives +-1, -0 stays -0. Only the AVX-512 build uses it: Packet16f
// exists only there, so no Eigen template is instantiated by two capability
// builds with different instruction sets (which the linker could merge).
#pragma once

#include "eager/kernels/cpu/vec/Vec.h"

#if defined(__AVX512F__)
#include <Eigen/Core>
#endif

namespace kiln::native::KILN_CPU_NS {

#if defined(__AVX512F__)
inline Vec<float> vtanh(Vec<float> a) { return {Eigen::internal::ptanh<Eigen::internal::Packet16f>(a.v)}; }
#else
inline Vec<float> vtanh(Vec<float> a) { return {KILN_SLEEF_F(tanh, u35)(a.v)}; }
#endif
inline Vec<double> vtanh(Vec<double> a) { return {KILN_SLEEF_D(tanh, u35)(a.v)}; }

}  // namespace kiln::native::KILN_CPU_NS

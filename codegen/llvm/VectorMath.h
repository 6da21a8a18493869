// Which vector math function a kernel calls for a floating function, per
// host ISA: the ones the eager kernels call (eager/kernels/cpu/vec/Vec.h), so
// compiled and eager results agree. See Note [Compiled vector math].
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "codegen/KernelIR.h"

namespace kiln::codegen {

// Note [Compiled vector math]
// ---------------------------
// The eager kernels' AVX2 build takes exp, expm1, log, log2, log10, log1p,
// sin, cos, tan, erf, erfc, asin, acos, atan, sinh, cosh, asinh, acosh, atanh
// and float exp2 from glibc's libmvec (_ZGVdN8v_expf, _ZGVdN4v_exp), pow,
// atan2, hypot and double exp2 from SLEEF; the AVX-512 build takes them all
// from SLEEF's avx512f functions, the baseline build from SLEEF's sse2 ones,
// at eager's accuracies (u10; erfc u15, hypot u05, double tanh u35) (Note
// [Vector math by measurement], eager/kernels/cpu/vec/Vec.h). Generated kernels call
// the same functions with the same lane count, and evaluate a row's tail as a
// masked full vector, so a compiled exp is bit-identical to eager's. Float
// tanh is not a call: eager's is Eigen's rational approximation (vec/VecTanh.h),
// which the math table writes out as kernel IR (codegen/PointwiseMath.cpp,
// eigen_tanh_float), so it vectorises inline and agrees bit for bit on FMA
// hosts. Double tanh calls SLEEF's 3.5-ulp tanh, as eager does; the 1-ulp float
// tanh is still mapped for other users of ExprOp::Tanh.

/// Vector lanes a kernel computes with on this host: 16 (AVX-512), 8 (AVX2), 4.
[[nodiscard]] int host_vector_lanes();

struct VectorMathFunction {
  std::string symbol;  // "_ZGVdN8v_expf"
  int lanes = 0;       // its vector width
};

/// The function for `op` (Exp, ..., Erfc, Pow, Atan2, Hypot) on `dtype` (Float32 or Float64).
[[nodiscard]] VectorMathFunction vector_math_function(ExprOp op, DType dtype);

/// Every symbol vector_math_function may name on this host, with its address (for the JIT).
[[nodiscard]] std::vector<std::pair<std::string, void*>> vector_math_symbols();

}  // namespace kiln::codegen

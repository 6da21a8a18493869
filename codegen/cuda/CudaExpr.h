// Kernel-IR expressions printed as CUDA C statements, and the prelude of
// device helpers they call (conversions, wrapping integer arithmetic, the
// float16/bfloat16 rounding). Shared by the fused kernels (CudaKernelSource.h)
// and the eager pointwise kernels generated from the same table
// (CudaEagerPointwise.h). See Note [CUDA C from the kernel IR].
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "codegen/KernelIR.h"

namespace kiln::codegen::cuda {

// Note [CUDA C from the kernel IR]
// --------------------------------
// Every Expr becomes one `const T vN = ...;` statement in its register type:
// float for float32, float16 and bfloat16 (the half types are floats in
// registers, rounded where the IR has a Cast, as codegen/llvm), double, bool,
// and the C integer types. Memory holds bool as a byte and the half types as
// 16-bit words (PTX cvt for float16, round-to-nearest-even bit arithmetic for
// bfloat16, the same NaN quieting as codegen/llvm).
// - Floating Add/Sub/Mul/Div/Sqrt/Fma print as the CUDA intrinsics with an
//   explicit rounding mode (__fadd_rn, __fmul_rn, __fmaf_rn, ...), which NVRTC
//   never contracts into an FMA (its default is --fmad=true): the only fused
//   multiply-adds are the IR's Fma exprs, as on an AVX2/AVX-512 host. So the
//   arithmetic, comparisons, casts, rounding, NaN rules, Fmod and Copysign are
//   bit-identical to the CPU kernels (no flush-to-zero: NVRTC's default).
// - Integer Add/Sub/Mul/Neg wrap (computed in unsigned long long); shift
//   amounts are taken modulo the width as in the IR; float -> integer casts
//   reproduce x86's cvtt (out of range or NaN gives the int32/int64 minimum,
//   narrower types keep its low bits) instead of CUDA's saturating cvt.
// - The transcendental functions (Exp, Log, Sin, Tanh for float64, Erf, Pow,
//   Atan2, Hypot, ...) call CUDA's libdevice functions (expf, logf, ...). They
//   are not bit-exact with the CPU's vector math (SLEEF/libmvec): the CUDA C
//   Programming Guide bounds them at 1-4 ulp for float (expf 2, logf 1, sinf/
//   cosf 2, tanf 4, powf 4, erff 2, ...) and 1-2 ulp for double, the CPU's at
//   1 ulp (SLEEF u10) or 4 ulp (libmvec), so a CUDA result is within about
//   8 ulp of the CPU's per call: tests compare transcendental results with
//   rtol 1e-5 (float32), 1e-13 (float64), and one ulp of the dtype for
//   float16/bfloat16 (rounding may land on either side). Float tanh is the
//   table's own rational function (Note [float tanh]), so it is bit-exact.
// Row kernels add their sums in another order than the CPU's
// (Note [CUDA row kernels], CudaKernelSource.h).

/// The type an expr of `d` computes in ("float" for the half types).
[[nodiscard]] const char* register_type(DType d);
/// The type an element of `d` has in memory ("unsigned short" for the half types).
[[nodiscard]] const char* memory_type(DType d);

/// The device helpers every generated module starts with (namespace kcg).
[[nodiscard]] const std::string& cuda_prelude();

/// `raw` (an element of `d` as read from memory) in its register type.
[[nodiscard]] std::string load_value(DType d, const std::string& raw);
/// `value` (a register value of `d`) as the memory element of `d`.
[[nodiscard]] std::string store_value(DType d, const std::string& value);
/// `value` (a register value of `from`) converted to `to`, with the IR's Cast semantics.
[[nodiscard]] std::string cast_value(const std::string& value, DType from, DType to);

/// Prints exprs of one kernel as statements. `name(i)` is how expr i is
/// referred to (it may already be computed in an outer scope); `load(input)`
/// the expression reading input `input` in its memory type; `divide_by(b)`
/// a reciprocal to multiply by instead of dividing by expr b, or "".
struct ExprPrinter {
  const Kernel& k;
  std::function<std::string(int32_t)> name;
  std::function<std::string(int32_t)> load;
  std::function<std::string(int32_t)> divide_by = [](int32_t) { return std::string(); };

  /// `const T name(i) = ...;` for expr i (not a Reduce*).
  [[nodiscard]] std::string statement(int32_t i) const;
  /// The right-hand side alone.
  [[nodiscard]] std::string value(int32_t i) const;
};

/// A constant of `d` as a CUDA literal (exact: hex floats, bit patterns for inf and NaN).
[[nodiscard]] std::string literal(DType d, double fvalue, int64_t ivalue);

}  // namespace kiln::codegen::cuda

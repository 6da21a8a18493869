// The vector math table of generated kernels (Note [Compiled vector math]).
#include "codegen/llvm/VectorMath.h"

#include <algorithm>

#include "codegen/llvm/HostInfo.h"
#include "eager/core/Error.h"

// Only the addresses are taken, so one placeholder signature serves every function.
// Functions the eager AVX2 build takes from libmvec (both precisions), SLEEF u10 elsewhere.
#define KILN_MVEC_FUNCTIONS_(_) \
  _(exp) _(expm1) _(log) _(log2) _(log10) _(log1p) _(sin) _(cos) _(tan) _(erf) _(asin) _(acos) _(atan) _(sinh) \
  _(cosh) _(asinh) _(acosh) _(atanh)
#define KILN_DECLARE_MVEC_(fn)               \
  extern "C" void _ZGVdN8v_##fn##f();        \
  extern "C" void _ZGVdN4v_##fn();
#define KILN_DECLARE_SLEEF_(fn, acc)                   \
  extern "C" void Sleef_##fn##f16_##acc##avx512f();    \
  extern "C" void Sleef_##fn##d8_##acc##avx512f();     \
  extern "C" void Sleef_##fn##f8_##acc##avx2();        \
  extern "C" void Sleef_##fn##d4_##acc##avx2();        \
  extern "C" void Sleef_##fn##f4_##acc##sse2();        \
  extern "C" void Sleef_##fn##d2_##acc##sse2();
#define KILN_DECLARE_MVEC_AND_SLEEF_(fn) KILN_DECLARE_MVEC_(fn) KILN_DECLARE_SLEEF_(fn, u10)
KILN_MVEC_FUNCTIONS_(KILN_DECLARE_MVEC_AND_SLEEF_)
KILN_DECLARE_MVEC_(erfc)
KILN_DECLARE_SLEEF_(erfc, u15)
KILN_DECLARE_MVEC_(exp2)
KILN_DECLARE_SLEEF_(exp2, u10)
KILN_DECLARE_SLEEF_(tanh, u10)
KILN_DECLARE_SLEEF_(tanh, u35)
KILN_DECLARE_SLEEF_(pow, u10)
KILN_DECLARE_SLEEF_(atan2, u10)
KILN_DECLARE_SLEEF_(hypot, u05)
#undef KILN_DECLARE_MVEC_AND_SLEEF_
#undef KILN_DECLARE_SLEEF_
#undef KILN_DECLARE_MVEC_

namespace kiln::codegen {

namespace {
bool host_has(const char* feature) {
  const auto& f = host_info().features;
  return std::find(f.begin(), f.end(), feature) != f.end();
}

/// Where eager's AVX2 build takes `op` from (eager/kernels/cpu/vec/Vec.h, VecUnary.h, VecTanh.h): libmvec, or SLEEF.
bool from_libmvec(ExprOp op, bool f32) {
  switch (op) {
    case ExprOp::Tanh:  // float tanh is Eigen's (PointwiseMath), double SLEEF's
    case ExprOp::Pow:
    case ExprOp::Atan2:
    case ExprOp::Hypot: return false;
    case ExprOp::Exp2: return f32;  // double exp2 measured faster in SLEEF
    default: return true;
  }
}

/// SLEEF's accuracy suffix eager uses for `op`.
const char* sleef_accuracy(ExprOp op, bool f32) {
  if (op == ExprOp::Tanh && !f32) return "u35";
  if (op == ExprOp::Erfc) return "u15";
  if (op == ExprOp::Hypot) return "u05";
  return "u10";
}
}  // namespace

int host_vector_lanes() {
  static const int lanes = host_has("avx512f") ? 16 : host_has("avx2") && host_has("fma") ? 8 : 4;
  return lanes;
}

VectorMathFunction vector_math_function(ExprOp op, DType dtype) {
  KILN_CHECK(dtype == DType::Float32 || dtype == DType::Float64, "vector math of ", dtype);
  const std::string name = expr_op_name(op);
  const bool f32 = dtype == DType::Float32;
  const int lanes = host_vector_lanes();
  const int n = f32 ? lanes : lanes / 2;
  if (lanes == 8 && from_libmvec(op, f32)) {
    return {std::string(f32 ? "_ZGVdN8v_" : "_ZGVdN4v_") + name + (f32 ? "f" : ""), n};
  }
  const std::string isa = lanes == 16 ? "avx512f" : lanes == 8 ? "avx2" : "sse2";
  return {"Sleef_" + name + (f32 ? "f" : "d") + std::to_string(n) + "_" + sleef_accuracy(op, f32) + isa, n};
}

std::vector<std::pair<std::string, void*>> vector_math_symbols() {
  std::vector<std::pair<std::string, void*>> s;
  const auto add = [&](const char* name, void (*fn)()) { s.emplace_back(name, reinterpret_cast<void*>(fn)); };
#define KILN_ADD_MVEC_(fn)                       \
  add("_ZGVdN8v_" #fn "f", &_ZGVdN8v_##fn##f);  \
  add("_ZGVdN4v_" #fn, &_ZGVdN4v_##fn);
#define KILN_ADD_SLEEF_(fn, acc)                                                          \
  add("Sleef_" #fn "f16_" #acc "avx512f", &Sleef_##fn##f16_##acc##avx512f);               \
  add("Sleef_" #fn "d8_" #acc "avx512f", &Sleef_##fn##d8_##acc##avx512f);                 \
  add("Sleef_" #fn "f8_" #acc "avx2", &Sleef_##fn##f8_##acc##avx2);                       \
  add("Sleef_" #fn "d4_" #acc "avx2", &Sleef_##fn##d4_##acc##avx2);                       \
  add("Sleef_" #fn "f4_" #acc "sse2", &Sleef_##fn##f4_##acc##sse2);                       \
  add("Sleef_" #fn "d2_" #acc "sse2", &Sleef_##fn##d2_##acc##sse2);
#define KILN_ADD_MVEC_AND_SLEEF_(fn) KILN_ADD_MVEC_(fn) KILN_ADD_SLEEF_(fn, u10)
  KILN_MVEC_FUNCTIONS_(KILN_ADD_MVEC_AND_SLEEF_)
  KILN_ADD_MVEC_(erfc)
  KILN_ADD_SLEEF_(erfc, u15)
  KILN_ADD_MVEC_(exp2)
  KILN_ADD_SLEEF_(exp2, u10)
  KILN_ADD_SLEEF_(tanh, u10)
  KILN_ADD_SLEEF_(tanh, u35)
  KILN_ADD_SLEEF_(pow, u10)
  KILN_ADD_SLEEF_(atan2, u10)
  KILN_ADD_SLEEF_(hypot, u05)
#undef KILN_ADD_MVEC_AND_SLEEF_
#undef KILN_ADD_SLEEF_
#undef KILN_ADD_MVEC_
  return s;
}

}  // namespace kiln::codegen

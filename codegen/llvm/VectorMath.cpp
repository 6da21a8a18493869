// The vector math table of generated kernels (Note [Compiled vector math]).
#include "codegen/llvm/VectorMath.h"

#include <algorithm>

#include "codegen/llvm/HostInfo.h"
#include "eager/core/Error.h"

// Only the addresses are taken, so one placeholder signature serves every function.
#define KILN_MATH_FUNCTIONS_(_) \
  _(exp) _(expm1) _(log) _(log2) _(log10) _(log1p) _(sin) _(cos) _(tan) _(erf)
#define KILN_DECLARE_(fn)                                                                                  \
  extern "C" void _ZGVdN8v_##fn##f();                                                                      \
  extern "C" void _ZGVdN4v_##fn();                                                                         \
  extern "C" void Sleef_##fn##f16_u10avx512f();                                                           \
  extern "C" void Sleef_##fn##d8_u10avx512f();                                                            \
  extern "C" void Sleef_##fn##f4_u10sse2();                                                               \
  extern "C" void Sleef_##fn##d2_u10sse2();
KILN_MATH_FUNCTIONS_(KILN_DECLARE_)
#undef KILN_DECLARE_
extern "C" void Sleef_tanhf8_u10avx2();
extern "C" void Sleef_tanhd4_u35avx2();
extern "C" void Sleef_powf8_u10avx2();
extern "C" void Sleef_powd4_u10avx2();
extern "C" void Sleef_tanhf16_u10avx512f();
extern "C" void Sleef_tanhd8_u35avx512f();
extern "C" void Sleef_powf16_u10avx512f();
extern "C" void Sleef_powd8_u10avx512f();
extern "C" void Sleef_tanhf4_u10sse2();
extern "C" void Sleef_tanhd2_u35sse2();
extern "C" void Sleef_powf4_u10sse2();
extern "C" void Sleef_powd2_u10sse2();

namespace kiln::codegen {

namespace {
bool host_has(const char* feature) {
  const auto& f = host_info().features;
  return std::find(f.begin(), f.end(), feature) != f.end();
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
  if (lanes == 8 && op != ExprOp::Tanh && op != ExprOp::Pow) {
    return {std::string(f32 ? "_ZGVdN8v_" : "_ZGVdN4v_") + name + (f32 ? "f" : ""), n};
  }
  const std::string isa = lanes == 16 ? "avx512f" : lanes == 8 ? "avx2" : "sse2";
  const std::string accuracy = op == ExprOp::Tanh && !f32 ? "u35" : "u10";
  return {"Sleef_" + name + (f32 ? "f" : "d") + std::to_string(n) + "_" + accuracy + isa, n};
}

std::vector<std::pair<std::string, void*>> vector_math_symbols() {
  std::vector<std::pair<std::string, void*>> s;
  const auto add = [&](const char* name, void (*fn)()) { s.emplace_back(name, reinterpret_cast<void*>(fn)); };
  const int lanes = host_vector_lanes();
#define KILN_ADD_(fn)                                   \
  if (lanes == 8) {                                     \
    add("_ZGVdN8v_" #fn "f", &_ZGVdN8v_##fn##f);        \
    add("_ZGVdN4v_" #fn, &_ZGVdN4v_##fn);               \
  } else if (lanes == 16) {                             \
    add("Sleef_" #fn "f16_u10avx512f", &Sleef_##fn##f16_u10avx512f); \
    add("Sleef_" #fn "d8_u10avx512f", &Sleef_##fn##d8_u10avx512f);   \
  } else {                                              \
    add("Sleef_" #fn "f4_u10sse2", &Sleef_##fn##f4_u10sse2);         \
    add("Sleef_" #fn "d2_u10sse2", &Sleef_##fn##d2_u10sse2);         \
  }
  KILN_MATH_FUNCTIONS_(KILN_ADD_)
#undef KILN_ADD_
  if (lanes == 8) {
    add("Sleef_tanhf8_u10avx2", &Sleef_tanhf8_u10avx2);
    add("Sleef_tanhd4_u35avx2", &Sleef_tanhd4_u35avx2);
    add("Sleef_powf8_u10avx2", &Sleef_powf8_u10avx2);
    add("Sleef_powd4_u10avx2", &Sleef_powd4_u10avx2);
  } else if (lanes == 16) {
    add("Sleef_tanhf16_u10avx512f", &Sleef_tanhf16_u10avx512f);
    add("Sleef_tanhd8_u35avx512f", &Sleef_tanhd8_u35avx512f);
    add("Sleef_powf16_u10avx512f", &Sleef_powf16_u10avx512f);
    add("Sleef_powd8_u10avx512f", &Sleef_powd8_u10avx512f);
  } else {
    add("Sleef_tanhf4_u10sse2", &Sleef_tanhf4_u10sse2);
    add("Sleef_tanhd2_u35sse2", &Sleef_tanhd2_u35sse2);
    add("Sleef_powf4_u10sse2", &Sleef_powf4_u10sse2);
    add("Sleef_powd2_u10sse2", &Sleef_powd2_u10sse2);
  }
  return s;
}

}  // namespace kiln::codegen

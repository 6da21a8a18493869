// The pieces the pointwise math table's files share (PointwiseMath*.cpp):
// one op node being lowered (`Op`), the scalar-expression helpers, and the
// functions that add each family's entries to the table. Internal to codegen/.
// See Note [Pointwise math matches eager] (PointwiseMath.h).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/KernelIR.h"
#include "ir/Attribute.h"
#include "ir/Node.h"

namespace kiln::codegen::pointwise_math {

inline bool is_reduced(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
/// The dtype an op whose result is `t` computes in.
inline DType compute_of(DType t) { return is_reduced(t) ? DType::Float32 : t; }

/// One op node being lowered: its inputs' expressions and attributes.
struct Op {
  KernelBuilder& b;
  const ir::Node& n;
  const std::vector<int32_t>& in;
  DType out;

  [[nodiscard]] DType in_dtype(size_t i) const { return b.dtype(in[i]); }
  [[nodiscard]] const ir::Attribute* attr(std::string_view name) const { return n.attribute(name); }

  /// Scalar attribute `name` as a constant of `compute`; `round_through` (a
  /// float16/bfloat16 dtype, or `compute`) rounds it as a wrapped-number
  /// operand of that dtype. nullopt when absent or not representable.
  [[nodiscard]] std::optional<int32_t> scalar(std::string_view name, DType compute, DType round_through) const;
  /// Scalar attribute `name` as eager's `Scalar::to_double()`; nullopt when absent or not a number.
  [[nodiscard]] std::optional<double> number(std::string_view name) const;
  /// Input i converted to `compute`. An input of another dtype than a
  /// float16/bfloat16 result is rounded to that dtype first, as TensorIterator
  /// converts every input to the common dtype before the loop widens it.
  [[nodiscard]] int32_t x(size_t i, DType compute) const {
    if (is_reduced(out) && compute == DType::Float32 && in_dtype(i) != out) return b.cast(b.cast(in[i], out), compute);
    return b.cast(in[i], compute);
  }
  /// Input i as eager's float16/bfloat16 mul and divisions read their second operand: a 1-element
  /// CPU tensor at float precision from its own dtype (Note [CPU scalars at opmath precision],
  /// eager/kernels/cpu/pointwise/per_capability/BinaryOpsKernel.cpp), any other input as x(i).
  [[nodiscard]] int32_t x_opmath_scalar(size_t i, DType compute) const {
    if (!is_reduced(out) || compute != DType::Float32 || i >= n.inputs().size()) return x(i, compute);
    const ir::Type& type = n.input(i)->type();
    if (!type.is_tensor() || !type.tensor_type().sizes || !type.tensor_type().device.is_cpu()) return x(i, compute);
    for (const auto& size : *type.tensor_type().sizes) {
      if (!size.is_concrete() || size.value() != 1) return x(i, compute);
    }
    return b.cast(in[i], compute);
  }
  /// `r` (in the compute dtype) stored as the output dtype.
  [[nodiscard]] int32_t result(int32_t r) const { return b.cast(r, out); }
};

using Builder = std::function<std::optional<int32_t>(Op&)>;
using Table = std::map<std::string, Builder>;

/// Scalar expressions in one floating dtype, written as eager's Vec lambdas
/// are (`vconst<L>(v)` is `k(v)`: the double rounded to the dtype once).
struct Math {
  KernelBuilder& b;
  DType t;

  [[nodiscard]] int32_t k(double v) const;
  [[nodiscard]] int32_t add(int32_t x, int32_t y) const { return b.binary(ExprOp::Add, x, y); }
  [[nodiscard]] int32_t sub(int32_t x, int32_t y) const { return b.binary(ExprOp::Sub, x, y); }
  [[nodiscard]] int32_t mul(int32_t x, int32_t y) const { return b.binary(ExprOp::Mul, x, y); }
  [[nodiscard]] int32_t div(int32_t x, int32_t y) const { return b.binary(ExprOp::Div, x, y); }
  [[nodiscard]] int32_t neg(int32_t x) const { return b.unary(ExprOp::Neg, x); }
  /// x * y + z rounded once: where GCC contracts eager's `x * y + z` (Note [Contracted multiply-adds]).
  [[nodiscard]] int32_t fma(int32_t x, int32_t y, int32_t z) const { return b.fma(x, y, z); }
  [[nodiscard]] int32_t call(ExprOp f, int32_t x) const { return b.unary(f, x); }
  [[nodiscard]] int32_t select(int32_t c, int32_t x, int32_t y) const { return b.select(c, x, y); }
  [[nodiscard]] int32_t lt(int32_t x, int32_t y) const { return b.binary(ExprOp::Lt, x, y); }
  [[nodiscard]] int32_t le(int32_t x, int32_t y) const { return b.binary(ExprOp::Le, x, y); }
  [[nodiscard]] int32_t gt(int32_t x, int32_t y) const { return b.binary(ExprOp::Gt, x, y); }
  [[nodiscard]] int32_t ge(int32_t x, int32_t y) const { return b.binary(ExprOp::Ge, x, y); }
  [[nodiscard]] int32_t both(int32_t c, int32_t d) const { return b.binary(ExprOp::And, c, d); }
  [[nodiscard]] int32_t either(int32_t c, int32_t d) const { return b.binary(ExprOp::Or, c, d); }
  /// eager's vclamp: x < lo ? lo : (x > hi ? hi : x) (NaN stays NaN).
  [[nodiscard]] int32_t clamp(int32_t x, int32_t lo, int32_t hi) const {
    return select(lt(x, lo), lo, select(gt(x, hi), hi, x));
  }
  /// 1 / (1 + exp(-x)), eager's vsigmoid.
  [[nodiscard]] int32_t sigmoid(int32_t x) const { return div(k(1), add(k(1), call(ExprOp::Exp, neg(x)))); }
  /// eager's vtanh: Eigen's rational function for float, SLEEF's 3.5-ulp tanh for double.
  [[nodiscard]] int32_t tanh(int32_t x) const;
};

// Note [Contracted multiply-adds]
// -------------------------------
// The eager kernels' AVX2 and AVX-512 builds compile with -ffp-contract=fast,
// so GCC turns a multiply whose only user is an add or subtract into one fused
// multiply-add (`1 - y * y` becomes fnmadd(y, y, 1)). An entry reproduces that
// with Math::fma (ExprOp::Fma, rounded once on FMA hosts, as those builds);
// where an add has a product on both sides, the table test's random values
// settled which one GCC fused.

int32_t nan_propagating(KernelBuilder& b, ExprOp op, int32_t x, int32_t y);
/// float tanh as eager's Eigen one (Note [float tanh]).
int32_t eigen_tanh_float(KernelBuilder& b, int32_t a);

/// A floating function of one input (integer inputs compute in the floating output dtype).
Builder floating_unary(std::function<int32_t(const Math&, int32_t)> f);
Builder floating_unary(ExprOp e);

// The families' entries, one file each.
void add_activation_math(Table& t);  // PointwiseMathActivations.cpp
void add_unary_math(Table& t);       // PointwiseMathUnary.cpp
void add_binary_math(Table& t);      // PointwiseMathBinary.cpp

}  // namespace kiln::codegen::pointwise_math

// The pointwise math table: op name -> builder of the op's scalar expression.
// See Note [Pointwise math matches eager] (PointwiseMath.h).
#include "codegen/PointwiseMath.h"

#include "codegen/PointwiseMathOp.h"


#include <cmath>

#include "eager/core/Half.h"
#include "eager/dispatch/Dispatcher.h"
#include "ir/Attribute.h"

namespace kiln::codegen {

namespace pointwise_math {

std::optional<int32_t> Op::scalar(std::string_view name, DType compute, DType round_through) const {
  const ir::Attribute* a = attr(name);
  if (a == nullptr) return std::nullopt;
  double v = 0;
  switch (a->kind()) {
    case ir::Attribute::Kind::Bool: return b.constant_int(compute, a->to_bool() ? 1 : 0);
    case ir::Attribute::Kind::Int:
      if (!is_floating_point(compute)) return b.constant_int(compute, a->to_int());
      v = static_cast<double>(a->to_int());
      break;
    case ir::Attribute::Kind::Float:
      if (!is_floating_point(compute)) return std::nullopt;
      v = a->to_float();
      break;
    default: return std::nullopt;
  }
  if (round_through == DType::Float16) v = static_cast<float>(Half(static_cast<float>(v)));
  else if (round_through == DType::BFloat16) v = static_cast<float>(BFloat16(static_cast<float>(v)));
  else if (compute == DType::Float32) v = static_cast<float>(v);
  return b.constant(compute, v);
}

std::optional<double> Op::number(std::string_view name) const {
  const ir::Attribute* a = attr(name);
  if (a == nullptr) return std::nullopt;
  switch (a->kind()) {
    case ir::Attribute::Kind::Bool: return a->to_bool() ? 1.0 : 0.0;
    case ir::Attribute::Kind::Int: return static_cast<double>(a->to_int());
    case ir::Attribute::Kind::Float: return a->to_float();
    default: return std::nullopt;
  }
}

int32_t Math::k(double v) const { return b.constant(t, t == DType::Float32 ? static_cast<double>(static_cast<float>(v)) : v); }

/// float tanh as eager's (eager/kernels/cpu/vec/VecTanh.h, Note [float tanh]): Eigen 3.4's
/// generic_fast_tanh_float, a 13/6 odd/even rational function of x clamped to +-7.99881 (the FMA build's
/// bound), x itself below 4e-4; pmin/pmax keep NaN as std::min/std::max do, pmadd is an fma.
int32_t eigen_tanh_float(KernelBuilder& b, int32_t a) {
  const auto k = [&](double v) { return b.constant(DType::Float32, static_cast<float>(v)); };
  const int32_t hi = k(7.99881172180175781), lo = k(-7.99881172180175781);
  const int32_t upper = b.select(b.binary(ExprOp::Lt, hi, a), hi, a);                 // pmin(a, hi)
  const int32_t x = b.select(b.binary(ExprOp::Gt, lo, upper), lo, upper);             // pmax(., lo)
  const int32_t tiny = b.binary(ExprOp::Lt, b.unary(ExprOp::Abs, a), k(0.0004));
  const int32_t x2 = b.binary(ExprOp::Mul, x, x);
  int32_t p = b.fma(x2, k(-2.76076847742355e-16), k(2.00018790482477e-13));
  for (double c : {-8.60467152213735e-11, 5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
                   4.89352455891786e-03}) {
    p = b.fma(x2, p, k(c));
  }
  p = b.binary(ExprOp::Mul, x, p);
  int32_t q = b.fma(x2, k(1.19825839466702e-06), k(1.18534705686654e-04));
  q = b.fma(x2, q, k(2.26843463243900e-03));
  q = b.fma(x2, q, k(4.89352518554385e-03));
  return b.select(tiny, x, b.binary(ExprOp::Div, p, q));
}

int32_t Math::tanh(int32_t x) const { return t == DType::Float32 ? eigen_tanh_float(b, x) : b.unary(ExprOp::Tanh, x); }

int32_t nan_propagating(KernelBuilder& b, ExprOp op, int32_t x, int32_t y) {
  // eager's vmaximum/vminimum: a != a ? a : (a > b ? a : b)
  const ExprOp cmp = op == ExprOp::Maximum ? ExprOp::Gt : ExprOp::Lt;
  const int32_t pick = b.select(b.binary(cmp, x, y), x, y);
  if (!is_floating_point(b.dtype(x))) return pick;
  return b.select(b.binary(ExprOp::Ne, x, x), x, pick);
}

Builder floating_unary(std::function<int32_t(const Math&, int32_t)> f) {
  return [f = std::move(f)](Op& op) -> std::optional<int32_t> {
    if (!is_floating_point(op.out)) return std::nullopt;
    const DType c = compute_of(op.out);
    return op.result(f(Math{op.b, c}, op.x(0, c)));
  };
}
Builder floating_unary(ExprOp e) {
  return floating_unary([e](const Math& m, int32_t x) { return m.call(e, x); });
}

namespace {

int32_t one(KernelBuilder& b, int32_t like) { return b.constant(b.dtype(like), 1.0); }

/// Where an arithmetic op's operands come from: `other` the second input or a Scalar attribute; rsub
/// swaps them (rsub(self, other) is other - alpha * self).
enum class Operands : uint8_t { TensorOther, ScalarOther, SwappedTensor, SwappedScalar };

/// add/sub (alpha), mul, div.
Builder arithmetic(ExprOp e, Operands from) {
  return [e, from](Op& op) -> std::optional<int32_t> {
    if (op.out == DType::Bool || is_complex(op.out)) return std::nullopt;
    if (e == ExprOp::Div && !is_floating_point(op.out)) return std::nullopt;
    const DType c = compute_of(op.out);
    std::optional<int32_t> x, y;
    switch (from) {
      case Operands::TensorOther:  // mul and div read a 1-element divisor at float precision (x_opmath_scalar)
        x = op.x(0, c), y = e == ExprOp::Mul || e == ExprOp::Div ? op.x_opmath_scalar(1, c) : op.x(1, c);
        break;
      case Operands::ScalarOther:  // mul and div read the number at float precision, add/sub through the dtype
        x = op.x(0, c), y = op.scalar("other", c, e == ExprOp::Mul || e == ExprOp::Div ? c : op.out);
        break;
      case Operands::SwappedTensor: x = op.x(1, c), y = op.x(0, c); break;
      case Operands::SwappedScalar: x = op.scalar("other", c, op.out), y = op.x(0, c); break;
    }
    if (!x || !y) return std::nullopt;
    if (e == ExprOp::Add || e == ExprOp::Sub) {
      const std::optional<int32_t> alpha = op.scalar("alpha", c, c);
      if (!alpha) return std::nullopt;
      const ir::Attribute* a = op.attr("alpha");
      const bool alpha_one = (a->kind() == ir::Attribute::Kind::Int && a->to_int() == 1) ||
                             (a->kind() == ir::Attribute::Kind::Float && a->to_float() == 1.0) ||
                             (a->kind() == ir::Attribute::Kind::Bool && a->to_bool());
      // eager computes x + alpha * y (float16/bfloat16: always, in float), contracted to one fma where the
      // host has FMA; sub is add with -alpha (x + (-alpha) * y is exactly x - alpha * y unfused too).
      if (!alpha_one || is_reduced(op.out)) {
        if (!is_floating_point(c)) {
          y = op.b.binary(ExprOp::Mul, *alpha, *y);
        } else {
          const int32_t scaled = e == ExprOp::Sub ? op.b.unary(ExprOp::Neg, *alpha) : *alpha;
          return op.result(op.b.fma(scaled, *y, *x));
        }
      }
    }
    return op.result(op.b.binary(e, *x, *y));
  };
}

Builder max_min(ExprOp e) {
  return [e](Op& op) -> std::optional<int32_t> {
    if (op.out == DType::Bool || is_complex(op.out)) return std::nullopt;
    const DType c = compute_of(op.out);
    return op.result(nan_propagating(op.b, e, op.x(0, c), op.x(1, c)));
  };
}

/// eq/ne/lt/le/gt/ge: compute in the inputs' common dtype (equal dtypes only for
/// two tensors; a Scalar promotes by category as a wrapped number).
Builder comparison(ExprOp e, bool tensor_other) {
  return [e, tensor_other](Op& op) -> std::optional<int32_t> {
    if (op.out != DType::Bool) return std::nullopt;
    const DType self = op.in_dtype(0);
    if (is_complex(self)) return std::nullopt;
    if (tensor_other) {
      if (op.in_dtype(1) != self) return std::nullopt;
      const DType c = compute_of(self);
      return op.b.binary(e, op.x(0, c), op.x(1, c));
    }
    const ir::Attribute* a = op.attr("other");
    if (a == nullptr) return std::nullopt;
    DType c = compute_of(self);
    DType round_through = self;
    if (a->kind() == ir::Attribute::Kind::Float && !is_floating_point(self)) {
      c = DType::Float32;  // int tensor vs float scalar: the default float dtype
      round_through = c;
    } else if (a->kind() == ir::Attribute::Kind::Int && self == DType::Bool) {
      c = DType::Int64;
      round_through = c;
    } else if (a->kind() != ir::Attribute::Kind::Float && a->kind() != ir::Attribute::Kind::Int &&
               a->kind() != ir::Attribute::Kind::Bool) {
      return std::nullopt;
    }
    const std::optional<int32_t> y = op.scalar("other", c, round_through);
    if (!y) return std::nullopt;
    return op.b.binary(e, op.x(0, c), *y);
  };
}

/// clamp, clip, clamp_min, clamp_max with Scalar bounds ("min", "max"; an absent one is None).
std::optional<int32_t> clamp(Op& op) {
  if (op.out == DType::Bool || is_complex(op.out)) return std::nullopt;
  const DType c = compute_of(op.out);
  int32_t r = op.x(0, c);
  const ir::Attribute* lo = op.attr("min");
  const ir::Attribute* hi = op.attr("max");
  const bool has_lo = lo != nullptr && !lo->is_none(), has_hi = hi != nullptr && !hi->is_none();
  if (!has_lo && !has_hi) return std::nullopt;
  // A NaN bound makes every element NaN (eager fills the result).
  for (const ir::Attribute* a : {lo, hi}) {
    if (a != nullptr && a->kind() == ir::Attribute::Kind::Float && std::isnan(a->to_float())) {
      if (!is_floating_point(op.out)) return std::nullopt;
      return op.result(op.b.constant(c, a->to_float()));
    }
  }
  // Bounds are converted to the op's dtype (checked_scalar_to<T>), then to float for float16/bfloat16.
  if (has_lo) {
    const auto v = op.scalar("min", c, op.out);
    if (!v) return std::nullopt;
    r = !has_hi ? op.b.select(op.b.binary(ExprOp::Lt, r, *v), *v, r) : nan_propagating(op.b, ExprOp::Maximum, r, *v);
  }
  if (has_hi) {
    const auto v = op.scalar("max", c, op.out);
    if (!v) return std::nullopt;
    r = !has_lo ? op.b.select(op.b.binary(ExprOp::Lt, *v, r), *v, r) : nan_propagating(op.b, ExprOp::Minimum, r, *v);
  }
  return op.result(r);
}

std::optional<int32_t> pow_tensor_scalar(Op& op) {
  if (!is_floating_point(op.out) || !is_floating_point(op.in_dtype(0))) return std::nullopt;
  const ir::Attribute* a = op.attr("exponent");
  if (a == nullptr) return std::nullopt;
  double e = 0;
  if (a->kind() == ir::Attribute::Kind::Float) e = a->to_float();
  else if (a->kind() == ir::Attribute::Kind::Int) e = static_cast<double>(a->to_int());
  else return std::nullopt;
  if (is_reduced(op.out)) return std::nullopt;  // eager's float16 pow path differs; stays eager for now
  KernelBuilder& b = op.b;
  const DType c = op.out;
  const int32_t x = op.x(0, c);
  if (c == DType::Float32) e = static_cast<float>(e);
  // PowKernel.cpp's special exponents, then vpow.
  if (e == 0.5) return b.unary(ExprOp::Sqrt, x);
  if (e == -0.5) return b.binary(ExprOp::Div, one(b, x), b.unary(ExprOp::Sqrt, x));
  if (e == -1) return b.binary(ExprOp::Div, one(b, x), x);
  if (e == 1) return x;
  if (e == 2) return b.binary(ExprOp::Mul, x, x);
  if (e == 3) return b.binary(ExprOp::Mul, b.binary(ExprOp::Mul, x, x), x);
  if (e == -2) return b.binary(ExprOp::Div, one(b, x), b.binary(ExprOp::Mul, x, x));
  return b.binary(ExprOp::Pow, x, b.constant(c, e));
}

std::optional<int32_t> to_copy(Op& op) {
  const ir::Attribute* device = op.attr("device");
  const ir::Attribute* memory_format = op.attr("memory_format");
  if (device != nullptr && !device->is_none() && !(device->kind() == ir::Attribute::Kind::Device && device->to_device().is_cpu())) {
    return std::nullopt;
  }
  if (memory_format != nullptr && !memory_format->is_none()) return std::nullopt;
  if (is_complex(op.out) || is_complex(op.in_dtype(0))) return std::nullopt;
  return op.b.cast(op.in[0], op.out);
}

const Table& table() {
  static const Table t = [] {
    Table m;
    m["kiln::add.Tensor"] = arithmetic(ExprOp::Add, Operands::TensorOther);
    m["kiln::add.Scalar"] = arithmetic(ExprOp::Add, Operands::ScalarOther);
    m["kiln::sub.Tensor"] = arithmetic(ExprOp::Sub, Operands::TensorOther);
    m["kiln::sub.Scalar"] = arithmetic(ExprOp::Sub, Operands::ScalarOther);
    m["kiln::rsub.Tensor"] = arithmetic(ExprOp::Sub, Operands::SwappedTensor);
    m["kiln::rsub.Scalar"] = arithmetic(ExprOp::Sub, Operands::SwappedScalar);
    m["kiln::mul.Tensor"] = arithmetic(ExprOp::Mul, Operands::TensorOther);
    m["kiln::mul.Scalar"] = arithmetic(ExprOp::Mul, Operands::ScalarOther);
    m["kiln::div.Tensor"] = arithmetic(ExprOp::Div, Operands::TensorOther);
    m["kiln::div.Scalar"] = arithmetic(ExprOp::Div, Operands::ScalarOther);
    m["kiln::true_divide.Tensor"] = arithmetic(ExprOp::Div, Operands::TensorOther);
    m["kiln::true_divide.Scalar"] = arithmetic(ExprOp::Div, Operands::ScalarOther);
    m["kiln::maximum"] = max_min(ExprOp::Maximum);
    m["kiln::minimum"] = max_min(ExprOp::Minimum);
    m["kiln::clamp_min.Tensor"] = max_min(ExprOp::Maximum);
    m["kiln::clamp_max.Tensor"] = max_min(ExprOp::Minimum);
    const std::pair<const char*, ExprOp> comparisons[] = {{"eq", ExprOp::Eq}, {"ne", ExprOp::Ne}, {"lt", ExprOp::Lt},
                                                          {"le", ExprOp::Le}, {"gt", ExprOp::Gt}, {"ge", ExprOp::Ge}};
    for (const auto& [name, e] : comparisons) {
      m[std::string("kiln::") + name + ".Tensor"] = comparison(e, true);
      m[std::string("kiln::") + name + ".Scalar"] = comparison(e, false);
    }
    m["kiln::neg"] = [](Op& op) -> std::optional<int32_t> {
      if (op.out == DType::Bool || is_complex(op.out)) return std::nullopt;
      return op.result(op.b.unary(ExprOp::Neg, op.x(0, compute_of(op.out))));
    };
    m["kiln::abs"] = [](Op& op) -> std::optional<int32_t> {
      if (op.out == DType::Bool || is_complex(op.out) || op.in_dtype(0) != op.out) return std::nullopt;
      if (op.out == DType::UInt8) return op.in[0];  // unsigned: the identity
      return op.result(op.b.unary(ExprOp::Abs, op.x(0, compute_of(op.out))));
    };
    m["kiln::relu"] = [](Op& op) -> std::optional<int32_t> {
      if (op.out == DType::Bool || is_complex(op.out)) return std::nullopt;
      KernelBuilder& b = op.b;
      const int32_t x = op.x(0, compute_of(op.out));
      const int32_t zero = b.constant(b.dtype(x), 0.0);
      return op.result(b.select(b.binary(ExprOp::Lt, x, zero), zero, x));
    };
    m["kiln::sqrt"] = floating_unary(ExprOp::Sqrt);
    m["kiln::rsqrt"] = floating_unary([](const Math& m, int32_t x) { return m.div(m.k(1), m.call(ExprOp::Sqrt, x)); });
    m["kiln::reciprocal"] = floating_unary([](const Math& m, int32_t x) { return m.div(m.k(1), x); });
    m["kiln::exp"] = floating_unary(ExprOp::Exp);
    m["kiln::expm1"] = floating_unary(ExprOp::Expm1);
    m["kiln::log"] = floating_unary(ExprOp::Log);
    m["kiln::log2"] = floating_unary(ExprOp::Log2);
    m["kiln::log10"] = floating_unary(ExprOp::Log10);
    m["kiln::log1p"] = floating_unary(ExprOp::Log1p);
    m["kiln::sin"] = floating_unary(ExprOp::Sin);
    m["kiln::cos"] = floating_unary(ExprOp::Cos);
    m["kiln::tan"] = floating_unary(ExprOp::Tan);
    m["kiln::tanh"] = floating_unary([](const Math& m, int32_t x) { return m.tanh(x); });
    m["kiln::erf"] = floating_unary(ExprOp::Erf);
    m["kiln::sigmoid"] = floating_unary([](const Math& m, int32_t x) { return m.sigmoid(x); });
    m["kiln::silu"] = floating_unary([](const Math& m, int32_t x) {  // x / (1 + exp(-x))
      return m.div(x, m.add(m.k(1), m.call(ExprOp::Exp, m.neg(x))));
    });
    m["kiln::where.self"] = [](Op& op) -> std::optional<int32_t> {
      if (op.in_dtype(0) != DType::Bool || is_complex(op.out)) return std::nullopt;
      return op.b.select(op.in[0], op.b.cast(op.in[1], op.out), op.b.cast(op.in[2], op.out));
    };
    for (const char* name : {"kiln::clamp", "kiln::clip", "kiln::clamp_min", "kiln::clamp_max"}) m[name] = clamp;
    m["kiln::pow.Tensor_Scalar"] = pow_tensor_scalar;
    m["kiln::_to_copy"] = to_copy;
    add_activation_math(m);
    add_unary_math(m);
    add_binary_math(m);
    return m;
  }();
  return t;
}

}  // namespace
}  // namespace pointwise_math

using pointwise_math::table;

bool has_pointwise_math(const std::string& qualified_name) { return table().count(qualified_name) != 0; }

std::vector<std::string> pointwise_math_ops() {
  std::vector<std::string> names;
  for (const auto& [name, builder] : table()) names.push_back(name);
  return names;
}

std::optional<int32_t> build_pointwise_math(KernelBuilder& b, const ir::Node& n, const std::vector<int32_t>& inputs) {
  if (n.kind() != ir::NodeKind::Op || n.outputs().size() != 1) return std::nullopt;
  const auto it = table().find(n.op().name().str());
  if (it == table().end()) return std::nullopt;
  const ir::Type& type = n.output()->type();
  if (!type.is_tensor() || !type.tensor_type().dtype) return std::nullopt;
  pointwise_math::Op op{b, n, inputs, *type.tensor_type().dtype};
  if (is_complex(op.out)) return std::nullopt;
  std::optional<int32_t> r = it->second(op);
  if (r && b.dtype(*r) != op.out) r = b.cast(*r, op.out);
  return r;
}

}  // namespace kiln::codegen

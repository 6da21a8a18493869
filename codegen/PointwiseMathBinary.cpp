// The pointwise math of the two- and three-input ops beyond the basic table:
// floor division, remainder, fmod, copysign, atan2, hypot, fmax/fmin,
// heaviside, logical and bitwise ops, shifts, lerp, addcmul, addcdiv,
// masked_fill, the Scalar forms of where and clamp with tensor bounds, as
// eager/kernels/cpu/pointwise/per_capability/{BinaryOps,SpecialOps,LogicalOps,
// TernaryOps}Kernel.cpp compute them. See Note [Pointwise math matches eager].
#include <cmath>

#include "codegen/PointwiseMathOp.h"

namespace kiln::codegen::pointwise_math {

namespace {

/// Input i, or the Scalar attribute `name` when the node has no input i (the .Scalar overloads), in `c`,
/// rounded through the op's dtype as a wrapped number; `opmath_scalar` (the divisions): a 1-element tensor
/// input or the Scalar is read at float precision (Op::x_opmath_scalar; Note [CPU scalars at opmath precision]).
std::optional<int32_t> operand(const Op& op, size_t i, const char* name, DType c, bool opmath_scalar = false) {
  if (op.attr(name) != nullptr) return op.scalar(name, c, opmath_scalar ? c : op.out);
  if (i >= op.in.size()) return std::nullopt;
  return opmath_scalar ? op.x_opmath_scalar(i, c) : op.x(i, c);
}

/// A floating op of two operands (`self`, `other`; either may be a Scalar attribute); integer inputs
/// compute in the floating output dtype. `divides`: a division, whose tensor divisor eager reads at
/// float precision when it is one element (Note [CPU scalars at opmath precision]).
Builder floating_binary(std::function<int32_t(const Math&, int32_t, int32_t)> f, bool divides = false) {
  return [f = std::move(f), divides](Op& op) -> std::optional<int32_t> {
    if (!is_floating_point(op.out)) return std::nullopt;
    const DType c = compute_of(op.out);
    const bool scalar_self = op.attr("self") != nullptr;
    const auto x = scalar_self ? op.scalar("self", c, op.out) : std::optional<int32_t>(op.x(0, c));
    const auto y = operand(op, scalar_self ? 0 : 1, "other", c, divides && !scalar_self);
    if (!x || !y) return std::nullopt;
    return op.result(f(Math{op.b, c}, *x, *y));
  };
}
Builder floating_binary(ExprOp e) {
  return floating_binary([e](const Math& m, int32_t x, int32_t y) { return m.b.binary(e, x, y); });
}

/// Python's floor division of floats (eager's div_floor_floating).
int32_t floor_divide(const Math& m, int32_t a, int32_t b) {
  const int32_t zero = m.k(0), one = m.k(1);
  const int32_t quotient = m.div(a, b);
  const int32_t mod = m.b.binary(ExprOp::Fmod, a, b);
  int32_t div = m.div(m.sub(a, mod), b);
  const int32_t adjust = m.both(m.b.binary(ExprOp::Ne, mod, zero), m.b.binary(ExprOp::Ne, m.lt(b, zero), m.lt(mod, zero)));
  div = m.select(adjust, m.sub(div, one), div);
  const int32_t floordiv = m.call(ExprOp::Floor, div);
  const int32_t rounded = m.select(m.gt(m.sub(div, floordiv), m.k(0.5)), m.add(floordiv, one), floordiv);
  const int32_t r = m.select(m.b.binary(ExprOp::Eq, div, zero), m.b.binary(ExprOp::Copysign, zero, quotient), rounded);
  return m.select(m.b.binary(ExprOp::Eq, b, zero), quotient, r);
}

/// Python's remainder of floats: fmod, moved into the divisor's sign.
int32_t remainder(const Math& m, int32_t a, int32_t b) {
  const int32_t zero = m.k(0);
  const int32_t mod = m.b.binary(ExprOp::Fmod, a, b);
  const int32_t adjust = m.both(m.b.binary(ExprOp::Ne, mod, zero), m.b.binary(ExprOp::Ne, m.lt(b, zero), m.lt(mod, zero)));
  return m.select(adjust, m.add(mod, b), mod);
}

/// C's fmax/fmin as eager's loops compute them: a NaN operand yields the other; equal zeros give `a` in
/// float/double loops (`a >= b ? a : b`), `b` in the float16/bfloat16 ones (`a > b ? a : b`, as maxss),
/// measured by the table test; integers take the larger/smaller.
int32_t fmax_fmin(const Math& m, int32_t a, int32_t b, bool is_max, bool equal_gives_b) {
  const int32_t wins = equal_gives_b ? (is_max ? m.gt(a, b) : m.lt(a, b)) : (is_max ? m.ge(a, b) : m.le(a, b));
  const int32_t pick = m.select(wins, a, b);
  if (!is_floating_point(m.t)) return pick;
  return m.select(m.b.binary(ExprOp::Ne, a, a), b, m.select(m.b.binary(ExprOp::Ne, b, b), a, pick));
}

/// eager's lerp_value: |w| < 0.5 ? self + w (end - self) : end + (w - 1)(end - self), one fused multiply-add.
int32_t lerp(const Math& m, int32_t self, int32_t end, int32_t w) {
  const int32_t abs_w = m.select(m.lt(w, m.k(0)), m.neg(w), w);
  const int32_t small = m.lt(abs_w, m.k(0.5));
  const int32_t coeff = m.select(small, w, m.sub(w, m.k(1)));
  const int32_t base = m.select(small, self, end);
  return m.fma(coeff, m.sub(end, self), base);
}

/// The truth of a value as eager's logical ops see it: x != 0 (NaN is true).
int32_t truth(KernelBuilder& b, int32_t x) {
  if (b.dtype(x) == DType::Bool) return x;
  return b.binary(ExprOp::Ne, x, b.constant(b.dtype(x), 0));
}

/// logical_and/or/xor: Bool out; inputs of one dtype.
Builder logical(ExprOp e) {
  return [e](Op& op) -> std::optional<int32_t> {
    if (op.out != DType::Bool || op.in_dtype(0) != op.in_dtype(1) || is_complex(op.in_dtype(0))) return std::nullopt;
    return op.b.binary(e, truth(op.b, op.in[0]), truth(op.b, op.in[1]));
  };
}

/// bitwise_and/or/xor on integers and bool (`Tensor`, `Scalar` and `Scalar_Tensor` overloads).
Builder bitwise(ExprOp e) {
  return [e](Op& op) -> std::optional<int32_t> {
    if (is_floating_point(op.out)) return std::nullopt;
    const bool scalar_self = op.attr("self") != nullptr;
    const auto x = scalar_self ? op.scalar("self", op.out, op.out) : std::optional<int32_t>(op.x(0, op.out));
    const auto y = operand(op, scalar_self ? 0 : 1, "other", op.out);
    if (!x || !y) return std::nullopt;
    return op.b.binary(e, *x, *y);
  };
}

/// bitwise_left_shift / bitwise_right_shift on integers, as eager's shift_left/shift_right: a negative or
/// too large amount gives 0 (left) or the sign (right).
Builder shift(bool left) {
  return [left](Op& op) -> std::optional<int32_t> {
    const DType t = op.out;
    if (is_floating_point(t) || t == DType::Bool) return std::nullopt;
    const bool scalar_self = op.attr("self") != nullptr;
    const auto a = scalar_self ? op.scalar("self", t, t) : std::optional<int32_t>(op.x(0, t));
    const auto amount = operand(op, scalar_self ? 0 : 1, "other", t);
    if (!a || !amount) return std::nullopt;
    KernelBuilder& b = op.b;
    const int64_t bits = static_cast<int64_t>(itemsize(t)) * 8;
    const bool is_signed = t != DType::UInt8;
    const int64_t max_shift = left ? bits : bits - (is_signed ? 1 : 0);
    // amount < 0 (as the signed type) or >= max_shift: for uint8 both are `amount >= max_shift` unsigned.
    int32_t out_of_range = b.binary(ExprOp::Ge, *amount, b.constant_int(t, max_shift));
    if (is_signed) out_of_range = b.binary(ExprOp::Or, out_of_range, b.binary(ExprOp::Lt, *amount, b.constant_int(t, 0)));
    if (left) return b.select(out_of_range, b.constant_int(t, 0), b.binary(ExprOp::Shl, *a, *amount));
    if (!is_signed) return b.select(out_of_range, b.constant_int(t, 0), b.binary(ExprOp::Shr, *a, *amount));
    return b.binary(ExprOp::Shr, *a, b.select(out_of_range, b.constant_int(t, max_shift), *amount));
  };
}

/// where with a Scalar self and/or other: the Scalars converted to the result dtype.
Builder where_scalar(bool scalar_self, bool scalar_other) {
  return [scalar_self, scalar_other](Op& op) -> std::optional<int32_t> {
    if (op.in_dtype(0) != DType::Bool || op.out == DType::Bool) return std::nullopt;
    size_t next = 1;
    const auto value = [&](bool scalar, const char* name) -> std::optional<int32_t> {
      if (scalar) return op.scalar(name, compute_of(op.out), op.out);
      return op.b.cast(op.in[next++], op.out);
    };
    const auto a = value(scalar_self, "self");
    const auto b = value(scalar_other, "other");
    if (!a || !b) return std::nullopt;
    return op.b.select(op.in[0], op.result(*a), op.result(*b));
  };
}

}  // namespace

void add_binary_math(Table& t) {
  t["kiln::floor_divide"] = floating_binary(floor_divide, /*divides=*/true);
  t["kiln::floor_divide.Scalar"] = floating_binary(floor_divide, /*divides=*/true);
  t["kiln::remainder.Tensor"] = floating_binary(remainder);
  t["kiln::remainder.Scalar"] = floating_binary(remainder);
  t["kiln::remainder.Scalar_Tensor"] = floating_binary(remainder);
  t["kiln::fmod.Tensor"] = floating_binary(ExprOp::Fmod);
  t["kiln::fmod.Scalar"] = floating_binary(ExprOp::Fmod);
  t["kiln::copysign.Tensor"] = floating_binary(ExprOp::Copysign);
  t["kiln::copysign.Scalar"] = floating_binary(ExprOp::Copysign);
  // Tensor ** Tensor and Scalar ** Tensor: SLEEF's pow on float/double (float16/bfloat16 call the scalar
  // std::pow and integers multiply exactly in eager: they stay eager); 1 ** anything is 1.
  for (const char* name : {"kiln::pow.Tensor_Tensor", "kiln::pow.Scalar"}) {
    t[name] = [](Op& op) -> std::optional<int32_t> {
      const std::optional<double> base = op.number("self");
      if (base && *base == 1.0) return op.b.constant(compute_of(op.out), 1.0);
      if (op.out != DType::Float32 && op.out != DType::Float64) return std::nullopt;
      return floating_binary(ExprOp::Pow)(op);
    };
  }
  t["kiln::atan2"] = floating_binary(ExprOp::Atan2);
  t["kiln::hypot"] = floating_binary(ExprOp::Hypot);
  for (const bool is_max : {true, false}) {
    t[is_max ? "kiln::fmax" : "kiln::fmin"] = [is_max](Op& op) -> std::optional<int32_t> {
      if (op.out == DType::Bool) return std::nullopt;
      const DType c = compute_of(op.out);
      return op.result(fmax_fmin(Math{op.b, c}, op.x(0, c), op.x(1, c), is_max, is_reduced(op.out)));
    };
  }
  // div with rounding_mode: None is true division, "trunc" trunc(a / b), "floor" Python's floor division.
  for (const char* name : {"kiln::div.Tensor_mode", "kiln::div.Scalar_mode"}) {
    t[name] = [](Op& op) -> std::optional<int32_t> {
      const ir::Attribute* mode = op.attr("rounding_mode");
      if (mode == nullptr) return std::nullopt;
      if (mode->is_none()) {
        return floating_binary([](const Math& m, int32_t a, int32_t b) { return m.div(a, b); }, true)(op);
      }
      if (mode->kind() != ir::Attribute::Kind::Str) return std::nullopt;
      if (mode->to_str() == "trunc") {
        return floating_binary([](const Math& m, int32_t a, int32_t b) { return m.call(ExprOp::Trunc, m.div(a, b)); },
                               true)(op);
      }
      if (mode->to_str() == "floor") return floating_binary(floor_divide, true)(op);
      return std::nullopt;
    };
  }
  // heaviside: x == 0 ? values : (x > 0), NaN giving 0; bool as or.
  t["kiln::heaviside"] = [](Op& op) -> std::optional<int32_t> {
    if (op.in_dtype(0) != op.in_dtype(1)) return std::nullopt;
    if (op.out == DType::Bool) return op.b.binary(ExprOp::Or, op.in[0], op.in[1]);
    const DType c = compute_of(op.out);
    KernelBuilder& b = op.b;
    const int32_t x = op.x(0, c), v = op.x(1, c);
    const int32_t zero = b.constant(c, 0);
    return op.result(b.select(b.binary(ExprOp::Eq, x, zero), v,
                              b.select(b.binary(ExprOp::Gt, x, zero), b.constant(c, 1), zero)));
  };
  t["kiln::logical_and"] = logical(ExprOp::And);
  t["kiln::logical_or"] = logical(ExprOp::Or);
  t["kiln::logical_xor"] = logical(ExprOp::Xor);
  const std::pair<const char*, ExprOp> bitwise_ops[] = {
      {"and", ExprOp::And}, {"or", ExprOp::Or}, {"xor", ExprOp::Xor}};
  for (const auto& [name, e] : bitwise_ops) {
    for (const char* overload : {".Tensor", ".Scalar", ".Scalar_Tensor"}) {
      t[std::string("kiln::bitwise_") + name + overload] = bitwise(e);
    }
  }
  for (const char* overload : {".Tensor", ".Tensor_Scalar", ".Scalar_Tensor"}) {
    t[std::string("kiln::bitwise_left_shift") + overload] = shift(true);
    t[std::string("kiln::bitwise_right_shift") + overload] = shift(false);
  }
  t["kiln::lerp.Scalar"] = [](Op& op) -> std::optional<int32_t> {
    if (!is_floating_point(op.out)) return std::nullopt;
    const DType c = compute_of(op.out);
    const auto w = op.scalar("weight", c, c);  // checked_scalar_to<float> for float16/bfloat16: not rounded
    if (!w) return std::nullopt;
    return op.result(lerp(Math{op.b, c}, op.x(0, c), op.x(1, c), *w));
  };
  t["kiln::lerp.Tensor"] = [](Op& op) -> std::optional<int32_t> {
    if (!is_floating_point(op.out)) return std::nullopt;
    const DType c = compute_of(op.out);
    return op.result(lerp(Math{op.b, c}, op.x(0, c), op.x(1, c), op.x(2, c)));
  };
  // addcmul: self + value * t1 * t2, the last product fused into the add; integers wrap.
  t["kiln::addcmul"] = [](Op& op) -> std::optional<int32_t> {
    if (op.out == DType::Bool) return std::nullopt;
    const DType c = compute_of(op.out);
    const auto v = op.scalar("value", c, c);
    if (!v) return std::nullopt;
    const Math m{op.b, c};
    const int32_t product = m.mul(*v, op.x(1, c));
    if (!is_floating_point(c)) return op.result(m.add(op.x(0, c), m.mul(product, op.x(2, c))));
    return op.result(m.fma(product, op.x(2, c), op.x(0, c)));
  };
  t["kiln::addcdiv"] = [](Op& op) -> std::optional<int32_t> {
    if (!is_floating_point(op.out)) return std::nullopt;
    const DType c = compute_of(op.out);
    const auto v = op.scalar("value", c, c);
    if (!v) return std::nullopt;
    const Math m{op.b, c};
    return op.result(m.add(op.x(0, c), m.div(m.mul(*v, op.x(1, c)), op.x(2, c))));
  };
  t["kiln::masked_fill.Scalar"] = [](Op& op) -> std::optional<int32_t> {
    if (op.in_dtype(1) != DType::Bool || op.in_dtype(0) != op.out) return std::nullopt;
    const auto v = op.scalar("value", compute_of(op.out), op.out);
    if (!v) return std::nullopt;
    return op.b.select(op.in[1], op.result(*v), op.in[0]);
  };
  t["kiln::masked_fill.Tensor"] = [](Op& op) -> std::optional<int32_t> {
    if (op.in_dtype(1) != DType::Bool || op.in_dtype(0) != op.out || is_complex(op.in_dtype(2))) return std::nullopt;
    return op.b.select(op.in[1], op.b.cast(op.in[2], op.out), op.in[0]);
  };
  t["kiln::where.ScalarOther"] = where_scalar(false, true);
  t["kiln::where.ScalarSelf"] = where_scalar(true, false);
  t["kiln::where.Scalar"] = where_scalar(true, true);
  // clamp with tensor bounds (both given): maximum then minimum, NaN-propagating, in the common dtype.
  for (const char* name : {"kiln::clamp.Tensor", "kiln::clip.Tensor"}) {
    t[name] = [](Op& op) -> std::optional<int32_t> {
      if (op.in.size() != 3 || op.out == DType::Bool) return std::nullopt;
      const DType c = compute_of(op.out);
      const int32_t lo = nan_propagating(op.b, ExprOp::Maximum, op.x(0, c), op.x(1, c));
      return op.result(nan_propagating(op.b, ExprOp::Minimum, lo, op.x(2, c)));
    };
  }
}

}  // namespace kiln::codegen::pointwise_math

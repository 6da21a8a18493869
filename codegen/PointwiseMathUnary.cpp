// The pointwise math of the one-input ops beyond the basic table: rounding,
// sign, square, the predicates, nan_to_num, logit, logical/bitwise not and the
// transcendentals eager takes from its vector math, as
// eager/kernels/cpu/pointwise/per_capability/UnaryOpsKernel.cpp and
// SpecialOpsKernel.cpp compute them. See Note [Pointwise math matches eager].
#include <cmath>
#include <limits>

#include "codegen/PointwiseMathOp.h"
#include "eager/core/Half.h"

namespace kiln::codegen::pointwise_math {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// `v` converted to `t` as C++'s static_cast<T>(double) does, as a constant of compute_of(t).
int32_t constant_as(KernelBuilder& b, DType t, double v) {
  if (t == DType::Float16) v = static_cast<float>(Half(static_cast<float>(v)));
  else if (t == DType::BFloat16) v = static_cast<float>(BFloat16(static_cast<float>(v)));
  else if (t == DType::Float32) v = static_cast<float>(v);
  return b.constant(compute_of(t), v);
}

/// An op that keeps its input's dtype: `f` on floating dtypes (in the compute dtype), integers unchanged
/// (floor, ceil, round, trunc, frac); bool is an error in eager.
Builder same_dtype_rounding(std::function<int32_t(const Math&, int32_t)> f) {
  return [f = std::move(f)](Op& op) -> std::optional<int32_t> {
    if (op.out == DType::Bool || op.in_dtype(0) != op.out) return std::nullopt;
    if (!is_floating_point(op.out)) return op.in[0];
    const DType c = compute_of(op.out);
    return op.result(f(Math{op.b, c}, op.x(0, c)));
  };
}

/// A predicate on the input's value, Bool out: `f` on floating inputs (float16/bfloat16 widened exactly),
/// `integer` (a constant or a function of the integer) otherwise.
Builder predicate(std::function<int32_t(const Math&, int32_t)> f,
                  std::function<int32_t(KernelBuilder&, int32_t)> integer) {
  return [f = std::move(f), integer = std::move(integer)](Op& op) -> std::optional<int32_t> {
    if (op.out != DType::Bool) return std::nullopt;
    const DType in = op.in_dtype(0);
    if (!is_floating_point(in)) return integer(op.b, op.in[0]);
    const DType c = compute_of(in);
    return f(Math{op.b, c}, op.b.cast(op.in[0], c));
  };
}

std::function<int32_t(KernelBuilder&, int32_t)> always(bool v) {
  return [v](KernelBuilder& b, int32_t) { return b.constant_int(DType::Bool, v ? 1 : 0); };
}

/// eager's vsinh_full / vcosh_full: past |x| = 88 (float) / 709 (double), e^|x| / 2 as (e^(|x|/2) / 2) e^(|x|/2).
int32_t sinh_cosh(const Math& m, int32_t x, bool is_sinh) {
  const int32_t ax = m.call(ExprOp::Abs, x);
  const int32_t h = m.call(ExprOp::Exp, m.mul(ax, m.k(0.5)));
  const int32_t wide = m.mul(m.mul(h, m.k(0.5)), h);
  const int32_t limit = m.k(m.t == DType::Float32 ? 88.0 : 709.0);
  if (!is_sinh) return m.select(m.gt(ax, limit), wide, m.call(ExprOp::Cosh, x));
  return m.select(m.gt(ax, limit), m.select(m.lt(x, m.k(0)), m.neg(wide), wide), m.call(ExprOp::Sinh, x));
}

/// sign as 1, 0 or -1 (NaN and -0.0 give 0); bool unchanged.
std::optional<int32_t> sign(Op& op) {
  if (op.in_dtype(0) != op.out) return std::nullopt;
  if (op.out == DType::Bool) return op.in[0];
  const DType c = compute_of(op.out);
  KernelBuilder& b = op.b;
  const int32_t x = op.x(0, c);
  const int32_t zero = b.constant(c, 0), one = b.constant(c, 1);
  const int32_t minus_one = is_floating_point(c) ? b.constant(c, -1) : b.binary(ExprOp::Sub, zero, one);
  return op.result(b.select(b.binary(ExprOp::Gt, x, zero), one, b.select(b.binary(ExprOp::Lt, x, zero), minus_one, zero)));
}

/// nan_to_num: NaN -> nan, +inf -> posinf, -inf -> neginf (defaults 0 and the dtype's largest finite values),
/// each converted to the dtype; integers and bool unchanged.
std::optional<int32_t> nan_to_num(Op& op) {
  if (op.in_dtype(0) != op.out) return std::nullopt;
  if (!is_floating_point(op.out)) return op.in[0];
  double largest = std::numeric_limits<double>::max();
  if (op.out == DType::Float16) largest = 65504.0;
  else if (op.out == DType::BFloat16) largest = 3.38953139e38;
  else if (op.out == DType::Float32) largest = std::numeric_limits<float>::max();
  double values[3] = {0.0, largest, -largest};
  const char* names[3] = {"nan", "posinf", "neginf"};
  for (int i = 0; i < 3; ++i) {
    const ir::Attribute* a = op.attr(names[i]);
    if (a == nullptr) return std::nullopt;
    if (a->is_none()) continue;
    const std::optional<double> v = op.number(names[i]);
    if (!v) return std::nullopt;
    values[i] = *v;
  }
  const DType c = compute_of(op.out);
  const Math m{op.b, c};
  const int32_t x = op.x(0, c);
  const int32_t infinite = m.select(m.gt(x, m.k(0)), constant_as(op.b, op.out, values[1]),
                                    constant_as(op.b, op.out, values[2]));
  const int32_t r = m.select(op.b.binary(ExprOp::Ne, x, x), constant_as(op.b, op.out, values[0]),
                             m.select(op.b.binary(ExprOp::Eq, m.call(ExprOp::Abs, x), m.k(kInf)), infinite, x));
  return op.result(r);
}

/// logit(x) = log(x / (1 - x)), x clamped to [eps, 1 - eps] when eps is given; float16/bfloat16 round the
/// ratio to their dtype before the log, as eager (and PyTorch) do.
std::optional<int32_t> logit(Op& op) {
  if (!is_floating_point(op.out)) return std::nullopt;
  const ir::Attribute* a = op.attr("eps");
  if (a == nullptr || !(a->is_none() || a->kind() == ir::Attribute::Kind::Float)) return std::nullopt;
  const double e = a->is_none() ? -1.0 : a->to_float();
  const DType c = compute_of(op.out);
  const Math m{op.b, c};
  int32_t x = op.x(0, c);
  if (is_reduced(op.out)) {
    if (e >= 0) {
      const int32_t lo = m.k(e), hi = m.sub(m.k(1), m.k(e));  // 1.0f - float(e), in float
      x = m.select(m.lt(x, lo), lo, m.select(m.gt(x, hi), hi, x));
    }
    const int32_t ratio = op.b.cast(op.b.cast(m.div(x, m.sub(m.k(1), x)), op.out), c);
    return op.result(m.call(ExprOp::Log, ratio));
  }
  if (e >= 0) x = m.select(m.lt(x, m.k(e)), m.k(e), m.select(m.gt(x, m.k(1.0 - e)), m.k(1.0 - e), x));
  return op.result(m.call(ExprOp::Log, m.div(x, m.sub(m.k(1), x))));
}

/// round(x, decimals): half to even at 10^-decimals (eager's round_decimals_kernel).
std::optional<int32_t> round_decimals(Op& op) {
  const ir::Attribute* a = op.attr("decimals");
  if (a == nullptr || a->kind() != ir::Attribute::Kind::Int) return std::nullopt;
  if (!is_floating_point(op.out) || op.in_dtype(0) != op.out) return std::nullopt;
  const int64_t decimals = a->to_int();
  const bool negative = decimals < 0;
  const DType c = compute_of(op.out);
  const Math m{op.b, c};
  const int32_t ten_pow = m.k(std::pow(10.0, static_cast<double>(negative ? -decimals : decimals)));
  const int32_t x = op.x(0, c);
  if (negative) return op.result(m.mul(m.call(ExprOp::Round, m.div(x, ten_pow)), ten_pow));
  return op.result(m.div(m.call(ExprOp::Round, m.mul(x, ten_pow)), ten_pow));
}

/// The truth of a value as eager's logical ops see it: x != 0 (NaN is true).
int32_t truth(KernelBuilder& b, int32_t x) {
  if (b.dtype(x) == DType::Bool) return x;
  return b.binary(ExprOp::Ne, x, b.constant(b.dtype(x), 0));
}

}  // namespace

void add_unary_math(Table& t) {
  t["kiln::absolute"] = t.at("kiln::abs");
  t["kiln::negative"] = t.at("kiln::neg");
  t["kiln::floor"] = same_dtype_rounding([](const Math& m, int32_t x) { return m.call(ExprOp::Floor, x); });
  t["kiln::ceil"] = same_dtype_rounding([](const Math& m, int32_t x) { return m.call(ExprOp::Ceil, x); });
  t["kiln::round"] = same_dtype_rounding([](const Math& m, int32_t x) { return m.call(ExprOp::Round, x); });
  t["kiln::trunc"] = same_dtype_rounding([](const Math& m, int32_t x) { return m.call(ExprOp::Trunc, x); });
  t["kiln::fix"] = t.at("kiln::trunc");
  t["kiln::frac"] = same_dtype_rounding([](const Math& m, int32_t x) { return m.sub(x, m.call(ExprOp::Trunc, x)); });
  t["kiln::round.decimals"] = round_decimals;
  t["kiln::sign"] = sign;
  t["kiln::sgn"] = sign;  // real dtypes (complex outputs stay eager)
  t["kiln::conj_physical"] = [](Op& op) -> std::optional<int32_t> {  // real dtypes: a copy
    if (is_complex(op.in_dtype(0)) || op.in_dtype(0) != op.out) return std::nullopt;
    return op.in[0];
  };
  t["kiln::square"] = [](Op& op) -> std::optional<int32_t> {  // bool squares as int64 (the output dtype)
    if (op.out == DType::Bool) return std::nullopt;
    const DType c = compute_of(op.out);
    const int32_t x = op.x(0, c);
    return op.result(op.b.binary(ExprOp::Mul, x, x));
  };
  t["kiln::isnan"] = predicate([](const Math& m, int32_t x) { return m.b.binary(ExprOp::Ne, x, x); }, always(false));
  t["kiln::isinf"] = predicate(
      [](const Math& m, int32_t x) { return m.b.binary(ExprOp::Eq, m.call(ExprOp::Abs, x), m.k(kInf)); }, always(false));
  t["kiln::isfinite"] =
      predicate([](const Math& m, int32_t x) { return m.lt(m.call(ExprOp::Abs, x), m.k(kInf)); }, always(true));
  t["kiln::isposinf"] =
      predicate([](const Math& m, int32_t x) { return m.b.binary(ExprOp::Eq, x, m.k(kInf)); }, always(false));
  t["kiln::isneginf"] =
      predicate([](const Math& m, int32_t x) { return m.b.binary(ExprOp::Eq, x, m.k(-kInf)); }, always(false));
  t["kiln::signbit"] = predicate(
      [](const Math& m, int32_t x) { return m.lt(m.b.binary(ExprOp::Copysign, m.k(1), x), m.k(0)); },
      [](KernelBuilder& b, int32_t x) {
        const DType d = b.dtype(x);
        if (d == DType::Bool || d == DType::UInt8) return b.constant_int(DType::Bool, 0);
        return b.binary(ExprOp::Lt, x, b.constant_int(d, 0));
      });
  t["kiln::nan_to_num"] = nan_to_num;
  t["kiln::logit"] = logit;
  t["kiln::logical_not"] = [](Op& op) -> std::optional<int32_t> {
    if (op.out != DType::Bool || is_complex(op.in_dtype(0))) return std::nullopt;
    return op.b.unary(ExprOp::Not, truth(op.b, op.in[0]));
  };
  t["kiln::bitwise_not"] = [](Op& op) -> std::optional<int32_t> {
    if (is_floating_point(op.out) || op.in_dtype(0) != op.out) return std::nullopt;
    if (op.out == DType::Bool) return op.b.unary(ExprOp::Not, op.in[0]);
    return op.b.binary(ExprOp::Xor, op.in[0], op.b.constant_int(op.out, -1));
  };
  const std::pair<const char*, ExprOp> vector_math[] = {
      {"kiln::exp2", ExprOp::Exp2},   {"kiln::asin", ExprOp::Asin},   {"kiln::acos", ExprOp::Acos},
      {"kiln::atan", ExprOp::Atan},   {"kiln::asinh", ExprOp::Asinh}, {"kiln::acosh", ExprOp::Acosh},
      {"kiln::atanh", ExprOp::Atanh}, {"kiln::erfc", ExprOp::Erfc}};
  for (const auto& [name, e] : vector_math) t[name] = floating_unary(e);
  t["kiln::sinh"] = floating_unary([](const Math& m, int32_t x) { return sinh_cosh(m, x, true); });
  t["kiln::cosh"] = floating_unary([](const Math& m, int32_t x) { return sinh_cosh(m, x, false); });
  // x * (pi / 180) with the factor rounded to the compute dtype, as eager's scalar loop.
  t["kiln::deg2rad"] = floating_unary([](const Math& m, int32_t x) { return m.mul(x, m.k(0.017453292519943295)); });
  t["kiln::rad2deg"] = floating_unary([](const Math& m, int32_t x) { return m.mul(x, m.k(57.295779513082323)); });
}

}  // namespace kiln::codegen::pointwise_math

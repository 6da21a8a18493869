// The pointwise math of the activations and their backward ops, as
// eager/kernels/cpu/pointwise/per_capability/ActivationKernel.cpp computes
// them lane by lane. See Note [Pointwise math matches eager] (PointwiseMath.h)
// and Note [Contracted multiply-adds] (PointwiseMathOp.h).
#include <cmath>
#include <limits>

#include "codegen/PointwiseMathOp.h"

namespace kiln::codegen::pointwise_math {

namespace {

constexpr double kSqrt1_2 = 0.70710678118654752440;        // 1 / sqrt(2)
constexpr double kGeluBeta = 0.79788456080286535588;       // sqrt(2 / pi)
constexpr double kGeluKappa = 0.044715;
constexpr double kGeluPdfScale = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

/// A forward activation eager runs only on floating inputs (Accepts::Floating): f(m, numbers, x).
using Forward = std::function<int32_t(const Math&, const std::vector<double>&, int32_t)>;
/// A backward activation: f(m, numbers, grad, saved), in the inputs' common floating dtype.
using Backward = std::function<int32_t(const Math&, const std::vector<double>&, int32_t, int32_t)>;

/// The Scalar attributes `names` as doubles; nullopt when one is absent or not a number.
std::optional<std::vector<double>> numbers_of(const Op& op, const std::vector<const char*>& names) {
  std::vector<double> v;
  for (const char* name : names) {
    const std::optional<double> x = op.number(name);
    if (!x) return std::nullopt;
    v.push_back(*x);
  }
  return v;
}

Builder forward(std::vector<const char*> names, Forward f) {
  return [names = std::move(names), f = std::move(f)](Op& op) -> std::optional<int32_t> {
    if (!is_floating_point(op.out) || !is_floating_point(op.in_dtype(0))) return std::nullopt;
    const auto v = numbers_of(op, names);
    if (!v) return std::nullopt;
    const DType c = compute_of(op.out);
    return op.result(f(Math{op.b, c}, *v, op.x(0, c)));
  };
}

Builder backward(std::vector<const char*> names, Backward f) {
  return [names = std::move(names), f = std::move(f)](Op& op) -> std::optional<int32_t> {
    if (!is_floating_point(op.out)) return std::nullopt;
    const auto v = numbers_of(op, names);
    if (!v) return std::nullopt;
    const DType c = compute_of(op.out);
    return op.result(f(Math{op.b, c}, *v, op.x(0, c), op.x(1, c)));
  };
}

/// gelu's `approximate`: 0 "none", 1 "tanh", nullopt otherwise.
std::optional<bool> gelu_is_tanh(const Op& op) {
  const ir::Attribute* a = op.attr("approximate");
  if (a == nullptr || a->kind() != ir::Attribute::Kind::Str) return std::nullopt;
  if (a->to_str() == "none") return false;
  if (a->to_str() == "tanh") return true;
  return std::nullopt;
}

/// eager's vgelu_float: erf(u) as u P(u^2) / Q(u^2) on u clamped to +-3.92, the polynomials by Horner (fma).
int32_t gelu_float(const Math& m, int32_t x) {
  const int32_t u = m.clamp(m.mul(x, m.k(kSqrt1_2)), m.k(-3.92), m.k(3.92));
  const int32_t u2 = m.mul(u, u);
  int32_t p = m.k(1.9900680e-08);
  for (double c : {-1.9931676e-06, 1.4898599e-04, 3.9750407e-03, 5.1405720e-02, 2.0617990e-01, 1.1283787}) {
    p = m.fma(p, u2, m.k(c));
  }
  int32_t q = m.k(1.0244658e-03);
  for (double c : {1.4894345e-02, 1.1759135e-01, 5.1605099e-01, 1.0}) q = m.fma(q, u2, m.k(c));
  const int32_t erf = m.clamp(m.div(m.mul(u, p), q), m.k(-1), m.k(1));
  return m.mul(m.mul(x, m.k(0.5)), m.add(m.k(1), erf));
}

/// beta (x + kappa x^3), as eager writes it (the last product fused into the add).
int32_t gelu_tanh_inner(const Math& m, int32_t x, int32_t x_sq) {
  return m.mul(m.k(kGeluBeta), m.fma(m.mul(m.k(kGeluKappa), x_sq), x, x));
}

std::optional<int32_t> gelu(Op& op) {
  const auto tanh = gelu_is_tanh(op);
  if (!tanh || !is_floating_point(op.out) || !is_floating_point(op.in_dtype(0))) return std::nullopt;
  const DType c = compute_of(op.out);
  const Math m{op.b, c};
  const int32_t x = op.x(0, c);
  if (*tanh) {
    // (kappa * x * x) * x: eager's kappa * x * x * x
    const int32_t inner = m.mul(m.k(kGeluBeta), m.fma(m.mul(m.mul(m.k(kGeluKappa), x), x), x, x));
    return op.result(m.mul(m.mul(m.k(0.5), x), m.add(m.k(1), m.tanh(inner))));
  }
  if (c == DType::Float32) return op.result(gelu_float(m, x));
  return op.result(m.mul(m.mul(x, m.k(0.5)), m.add(m.k(1), m.call(ExprOp::Erf, m.mul(x, m.k(kSqrt1_2))))));
}

std::optional<int32_t> gelu_backward(Op& op) {
  const auto tanh = gelu_is_tanh(op);
  if (!tanh || !is_floating_point(op.out)) return std::nullopt;
  const DType c = compute_of(op.out);
  const Math m{op.b, c};
  const int32_t g = op.x(0, c), x = op.x(1, c);
  if (*tanh) {
    const int32_t x_sq = m.mul(x, x);
    const int32_t t = m.tanh(gelu_tanh_inner(m, x, x_sq));
    const int32_t left = m.mul(m.k(0.5), x);
    const int32_t left_derivative = m.mul(m.k(0.5), m.add(m.k(1), t));
    const int32_t right_derivative =
        m.mul(m.mul(m.mul(left, m.fma(m.neg(t), t, m.k(1))), m.k(kGeluBeta)), m.fma(m.k(3 * kGeluKappa), x_sq, m.k(1)));
    return op.result(m.mul(g, m.add(left_derivative, right_derivative)));
  }
  // cdf + x * pdf with cdf = 0.5 * (1 + erf(x / sqrt 2)): GCC fuses cdf's product into the add.
  const int32_t one_plus_erf = m.add(m.k(1), m.call(ExprOp::Erf, m.mul(x, m.k(kSqrt1_2))));
  const int32_t pdf = m.mul(m.k(kGeluPdfScale), m.call(ExprOp::Exp, m.mul(m.mul(x, x), m.k(-0.5))));
  return op.result(m.mul(g, m.fma(m.k(0.5), one_plus_erf, m.mul(x, pdf))));
}

/// elu's coefficients from (alpha, scale, input_scale): negcoef, poscoef, negiptcoef (as eager's doubles).
struct EluCoefficients {
  double negcoef, poscoef, negiptcoef;
};
EluCoefficients elu_coefficients(double alpha, double scale, double input_scale) {
  return {alpha * scale, scale, input_scale};
}

int32_t elu_of(const Math& m, const EluCoefficients& e, int32_t x) {
  return m.select(m.le(x, m.k(0)), m.mul(m.call(ExprOp::Expm1, m.mul(x, m.k(e.negiptcoef))), m.k(e.negcoef)),
                  m.mul(x, m.k(e.poscoef)));
}

/// hardtanh and relu6: min(max(x, lo), hi) as eager's selects; integers through their own loop.
std::optional<int32_t> hardtanh_of(Op& op, double lo, double hi, std::optional<int32_t> int_lo,
                                   std::optional<int32_t> int_hi) {
  if (op.out == DType::Bool || op.in_dtype(0) != op.out) return std::nullopt;
  const DType c = compute_of(op.out);
  const Math m{op.b, c};
  const int32_t x = op.x(0, c);
  if (!is_floating_point(c)) {
    if (!int_lo || !int_hi) return std::nullopt;
    const int32_t low_clamped = m.select(m.lt(x, *int_lo), *int_lo, x);
    return op.result(m.select(m.gt(low_clamped, *int_hi), *int_hi, low_clamped));
  }
  const int32_t low_clamped = m.select(m.le(x, m.k(lo)), m.k(lo), x);
  return op.result(m.select(m.ge(low_clamped, m.k(hi)), m.k(hi), low_clamped));
}

/// threshold and threshold_backward's Scalar `name` converted to the op's dtype (rounded through
/// float16/bfloat16), as a constant of the compute dtype.
std::optional<int32_t> threshold_scalar(const Op& op, const char* name) {
  return op.scalar(name, compute_of(op.out), op.out);
}

}  // namespace

void add_activation_math(Table& t) {
  t["kiln::gelu"] = gelu;
  t["kiln::gelu_backward"] = gelu_backward;
  t["kiln::silu_backward"] = backward({}, [](const Math& m, const auto&, int32_t g, int32_t x) {
    const int32_t s = m.sigmoid(x);
    return m.mul(m.mul(g, s), m.fma(x, m.sub(m.k(1), s), m.k(1)));
  });
  t["kiln::sigmoid_backward"] = backward({}, [](const Math& m, const auto&, int32_t g, int32_t y) {
    return m.mul(m.mul(g, m.sub(m.k(1), y)), y);
  });
  t["kiln::tanh_backward"] = backward({}, [](const Math& m, const auto&, int32_t g, int32_t y) {
    return m.mul(g, m.fma(m.neg(y), y, m.k(1)));
  });
  t["kiln::mish"] = forward({}, [](const Math& m, const auto&, int32_t x) {
    return m.mul(x, m.tanh(m.call(ExprOp::Log1p, m.call(ExprOp::Exp, x))));
  });
  t["kiln::mish_backward"] = backward({}, [](const Math& m, const auto&, int32_t g, int32_t x) {
    const int32_t s = m.sigmoid(x);
    const int32_t th = m.tanh(m.call(ExprOp::Log1p, m.call(ExprOp::Exp, x)));
    return m.mul(g, m.fma(m.mul(x, s), m.fma(m.neg(th), th, m.k(1)), th));
  });
  t["kiln::softplus"] = forward({"beta", "threshold"}, [](const Math& m, const auto& v, int32_t x) {
    const int32_t bx = m.mul(x, m.k(v[0]));
    return m.select(m.gt(bx, m.k(v[1])), x, m.div(m.call(ExprOp::Log1p, m.call(ExprOp::Exp, bx)), m.k(v[0])));
  });
  t["kiln::softplus_backward"] = backward({"beta", "threshold"}, [](const Math& m, const auto& v, int32_t g, int32_t x) {
    const int32_t bx = m.mul(x, m.k(v[0]));
    const int32_t z = m.call(ExprOp::Exp, bx);
    return m.select(m.gt(bx, m.k(v[1])), g, m.div(m.mul(g, z), m.add(z, m.k(1))));
  });
  t["kiln::leaky_relu"] = forward({"negative_slope"}, [](const Math& m, const auto& v, int32_t x) {
    return m.select(m.gt(x, m.k(0)), x, m.mul(x, m.k(v[0])));
  });
  t["kiln::leaky_relu_backward"] = backward({"negative_slope"}, [](const Math& m, const auto& v, int32_t g, int32_t x) {
    return m.select(m.gt(x, m.k(0)), g, m.mul(g, m.k(v[0])));
  });
  t["kiln::elu"] = forward({"alpha", "scale", "input_scale"}, [](const Math& m, const auto& v, int32_t x) {
    return elu_of(m, elu_coefficients(v[0], v[1], v[2]), x);
  });
  t["kiln::selu"] = forward({}, [](const Math& m, const auto&, int32_t x) {
    return elu_of(m, elu_coefficients(kSeluAlpha, kSeluScale, 1), x);
  });
  t["kiln::celu"] = [](Op& op) -> std::optional<int32_t> {
    const std::optional<double> alpha = op.number("alpha");
    if (!alpha || *alpha == 0) return std::nullopt;  // eager raises for alpha 0
    return forward({}, [a = *alpha](const Math& m, const auto&, int32_t x) {
      return elu_of(m, elu_coefficients(a, 1, 1.0 / a), x);
    })(op);
  };
  t["kiln::elu_backward"] = [](Op& op) -> std::optional<int32_t> {
    const ir::Attribute* is_result = op.attr("is_result");
    if (is_result == nullptr || is_result->kind() != ir::Attribute::Kind::Bool) return std::nullopt;
    const bool result = is_result->to_bool();
    return backward({"alpha", "scale", "input_scale"}, [result](const Math& m, const auto& v, int32_t g, int32_t x) {
      const EluCoefficients e = elu_coefficients(v[0], v[1], v[2]);
      if (result) {  // x is elu's result; NaN takes the negative side
        return m.select(m.gt(x, m.k(0)), m.mul(g, m.k(e.poscoef)),
                        m.mul(m.mul(g, m.k(e.negiptcoef)), m.add(x, m.k(e.negcoef))));
      }
      return m.select(m.gt(x, m.k(0)), m.mul(g, m.k(e.poscoef)),
                      m.mul(m.mul(m.mul(g, m.k(e.negiptcoef)), m.k(e.negcoef)),
                            m.call(ExprOp::Exp, m.mul(x, m.k(e.negiptcoef)))));
    })(op);
  };
  t["kiln::hardsigmoid"] = forward({}, [](const Math& m, const auto&, int32_t x) {
    return m.div(m.clamp(m.add(x, m.k(3)), m.k(0), m.k(6)), m.k(6));
  });
  t["kiln::hardswish"] = forward({}, [](const Math& m, const auto&, int32_t x) {
    return m.div(m.mul(x, m.clamp(m.add(x, m.k(3)), m.k(0), m.k(6))), m.k(6));
  });
  t["kiln::hardsigmoid_backward"] = backward({}, [](const Math& m, const auto&, int32_t g, int32_t x) {
    return m.select(m.both(m.gt(x, m.k(-3)), m.lt(x, m.k(3))), m.div(g, m.k(6)), m.k(0));
  });
  t["kiln::hardswish_backward"] = backward({}, [](const Math& m, const auto&, int32_t g, int32_t x) {
    const int32_t middle = m.mul(g, m.add(m.div(x, m.k(3)), m.k(0.5)));
    return m.select(m.le(x, m.k(-3)), m.k(0), m.select(m.ge(x, m.k(3)), g, middle));
  });
  t["kiln::hardtanh"] = [](Op& op) -> std::optional<int32_t> {
    const auto lo = op.number("min_val"), hi = op.number("max_val");
    if (!lo || !hi) return std::nullopt;
    const DType c = compute_of(op.out);
    return hardtanh_of(op, *lo, *hi, op.scalar("min_val", c, c), op.scalar("max_val", c, c));
  };
  t["kiln::relu6"] = [](Op& op) -> std::optional<int32_t> {
    const DType c = compute_of(op.out);
    if (op.out == DType::Bool) return std::nullopt;
    return hardtanh_of(op, 0, 6, op.b.constant_int(c, 0), op.b.constant_int(c, 6));
  };
  t["kiln::hardtanh_backward"] = backward({"min_val", "max_val"}, [](const Math& m, const auto& v, int32_t g, int32_t x) {
    return m.select(m.both(m.gt(x, m.k(v[0])), m.lt(x, m.k(v[1]))), g, m.k(0));  // NaN: 0
  });
  t["kiln::threshold"] = [](Op& op) -> std::optional<int32_t> {
    if (op.out == DType::Bool || op.in_dtype(0) != op.out) return std::nullopt;
    const auto th = threshold_scalar(op, "threshold"), value = threshold_scalar(op, "value");
    if (!th || !value) return std::nullopt;
    const Math m{op.b, compute_of(op.out)};
    return op.result(m.select(m.le(op.x(0, m.t), *th), *value, op.x(0, m.t)));
  };
  t["kiln::threshold_backward"] = [](Op& op) -> std::optional<int32_t> {
    if (op.out == DType::Bool) return std::nullopt;
    const auto th = threshold_scalar(op, "threshold");
    if (!th) return std::nullopt;
    const Math m{op.b, compute_of(op.out)};
    return op.result(m.select(m.le(op.x(1, m.t), *th), op.b.constant(m.t, 0), op.x(0, m.t)));
  };
  t["kiln::logit_backward"] = [](Op& op) -> std::optional<int32_t> {
    const ir::Attribute* a = op.attr("eps");
    if (a == nullptr || !(a->is_none() || a->kind() == ir::Attribute::Kind::Float)) return std::nullopt;
    const double eps = a->is_none() ? -1.0 : a->to_float();
    return backward({}, [eps](const Math& m, const auto&, int32_t g, int32_t x) {
      const int32_t lo = m.k(eps < 0 ? 0.0 : eps), hi = m.k(eps < 0 ? 1.0 : 1.0 - eps);
      const int32_t inside = m.div(g, m.mul(x, m.sub(m.k(1), x)));
      if (eps < 0) return m.select(m.either(m.lt(x, lo), m.gt(x, hi)), m.k(std::numeric_limits<double>::quiet_NaN()), inside);
      return m.select(m.both(m.ge(x, lo), m.le(x, hi)), inside, m.k(0));  // NaN: 0
    })(op);
  };
}

}  // namespace kiln::codegen::pointwise_math

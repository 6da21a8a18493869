// Activation loops and their backward ops, compiled per CPU capability.
// Formulas are PyTorch's (aten/src/ATen/native/cpu/Activation.cpp), lane by
// lane on Vec; float16/bfloat16 compute in float; the integer paths (relu,
// hardtanh, threshold, threshold_backward) through cpu_kernel.
// See Note [Scalar and Vec agree] (vec/VecBinary.h).
#include <cmath>
#include <type_traits>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/Loops.h"
#include "eager/kernels/cpu/PointwiseLoops.h"
#include "eager/kernels/cpu/pointwise/ActivationStubs.h"
#include "eager/kernels/cpu/pointwise/BinaryOps.h"
#include "eager/kernels/cpu/vec/VecBinary.h"
#include "eager/kernels/cpu/vec/VecUnary.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

constexpr double kSqrt1_2 = 0.70710678118654752440;         // 1 / sqrt(2)
constexpr double kGeluBeta = 0.79788456080286535588;       // sqrt(2 / pi)
constexpr double kGeluKappa = 0.044715;
constexpr double kGeluPdfScale = 0.39894228040143267794;   // 1 / sqrt(2 pi)

/// A floating one-input loop (the dtype was checked by the op).
template <typename VFn>
void floating_forward(TensorIterator& iter, const VFn& vfn) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (!floating_unary_vec<T>(iter, vfn)) fail_not_implemented("activation", iter.common_dtype());
  });
}

/// A floating two-input loop (grad_output, saved).
template <typename VFn>
void floating_backward(TensorIterator& iter, const VFn& vfn) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if (!floating_binary_vec<T>(iter, vfn)) fail_not_implemented("activation_backward", iter.common_dtype());
  });
}

/// A one-input loop on every dtype but bool: `vfn` for floating, `int_fn` (scalar) for integers.
template <typename VFn, typename IntFn>
void numeric_forward(TensorIterator& iter, const VFn& vfn, const IntFn& int_fn) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T> || std::is_floating_point_v<T>) {
      floating_unary_vec<T>(iter, vfn);
    } else if constexpr (!std::is_same_v<T, bool>) {
      cpu_kernel(iter, [&](T x) -> T { return int_fn(x); });
    } else {
      fail_not_implemented("activation", DType::Bool);
    }
  });
}

template <typename V>
V vsigmoid(V x) {
  return V::splat(1) / (V::splat(1) + vexp(-x));
}

template <typename V>
V vclamp(V x, V lo, V hi) {  // NaN stays NaN
  using T = lane_t<V>;
  return select<T>(x.v < lo.v, lo, select<T>(x.v > hi.v, hi, x));
}

/// gelu(x) = x/2 * (1 + erf(x / sqrt 2)) in float, erf(u) as u P(u^2) / Q(u^2)
/// for |u| <= 3.92 (erf is 1 to float precision beyond), P of degree 6 and Q
/// of degree 4 in u^2, fitted for this file by weighted least squares on
/// Chebyshev points (absolute error 3.2e-7 in float arithmetic, under
/// float32's tolerance; torch's own erf is an approximation of the same
/// order). No exp: SLEEF's 1-ulp erf costs five times torch's whole gelu, and
/// an exp-based erfc twice this. NaN stays NaN (vclamp). double keeps SLEEF's erf.
inline Vec<float> vgelu_float(Vec<float> x) {
  using V = Vec<float>;
  const V u = vclamp(x * V::splat(static_cast<float>(kSqrt1_2)), V::splat(-3.92f), V::splat(3.92f));
  const V u2 = u * u;
  V p = V::splat(1.9900680e-08f);
  p = p * u2 + V::splat(-1.9931676e-06f);
  p = p * u2 + V::splat(1.4898599e-04f);
  p = p * u2 + V::splat(3.9750407e-03f);
  p = p * u2 + V::splat(5.1405720e-02f);
  p = p * u2 + V::splat(2.0617990e-01f);
  p = p * u2 + V::splat(1.1283787f);
  V q = V::splat(1.0244658e-03f);
  q = q * u2 + V::splat(1.4894345e-02f);
  q = q * u2 + V::splat(1.1759135e-01f);
  q = q * u2 + V::splat(5.1605099e-01f);
  q = q * u2 + V::splat(1.0f);
  const V erf = vclamp(u * p / q, V::splat(-1.0f), V::splat(1.0f));  // 1 + erf >= 0: gelu(-inf) is nan, as torch
  return x * V::splat(0.5f) * (V::splat(1.0f) + erf);
}

// --- forward ---------------------------------------------------------------------------------

void relu_kernel(TensorIterator& iter, const ActivationArgs&) {
  numeric_forward(
      iter, [](auto x) { using V = decltype(x); return select<lane_t<V>>(x.v < V::splat(0).v, V::splat(0), x); },
      [](auto x) { return x < 0 ? decltype(x)(0) : x; });
}

void hardtanh_kernel(TensorIterator& iter, const ActivationArgs& args) {
  const double lo = args.p0.to_double();
  const double hi = args.p1.to_double();
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T> || std::is_floating_point_v<T>) {
      floating_unary_vec<T>(iter, [lo, hi](auto x) {
        using V = decltype(x);
        using L = lane_t<V>;
        const V vlo = vconst<L>(lo);
        const V vhi = vconst<L>(hi);
        const V low_clamped = select<L>(x.v <= vlo.v, vlo, x);  // min(max(x, lo), hi): hi wins when lo > hi
        return select<L>(low_clamped.v >= vhi.v, vhi, low_clamped);
      });
    } else if constexpr (!std::is_same_v<T, bool>) {
      const T tlo = args.p0.to<T>();
      const T thi = args.p1.to<T>();
      cpu_kernel(iter, [tlo, thi](T x) -> T {
        const T low_clamped = x < tlo ? tlo : x;
        return low_clamped > thi ? thi : low_clamped;
      });
    }
  });
}

void gelu_kernel(TensorIterator& iter, const ActivationArgs& args) {
  if (args.flag) {
    floating_forward(iter, [](auto x) {
      using V = decltype(x);
      using L = lane_t<V>;
      const V inner = vconst<L>(kGeluBeta) * (x + vconst<L>(kGeluKappa) * x * x * x);
      return vconst<L>(0.5) * x * (V::splat(1) + vtanh(inner));
    });
    return;
  }
  floating_forward(iter, [](auto x) {
    using V = decltype(x);
    using L = lane_t<V>;
    if constexpr (std::is_same_v<L, float>) {
      return vgelu_float(x);
    } else {
      return x * vconst<L>(0.5) * (V::splat(1) + verf(x * vconst<L>(kSqrt1_2)));
    }
  });
}

void silu_kernel(TensorIterator& iter, const ActivationArgs&) {
  floating_forward(iter, [](auto x) {
    using V = decltype(x);
    return x / (V::splat(1) + vexp(-x));
  });
}

void mish_kernel(TensorIterator& iter, const ActivationArgs&) {
  floating_forward(iter, [](auto x) { return x * vtanh(vlog1p(vexp(x))); });
}

void softplus_kernel(TensorIterator& iter, const ActivationArgs& args) {
  const double beta = args.p0.to_double();
  const double threshold = args.p1.to_double();
  floating_forward(iter, [beta, threshold](auto x) {
    using V = decltype(x);
    using L = lane_t<V>;
    const V bx = x * vconst<L>(beta);
    return select<L>(bx.v > vconst<L>(threshold).v, x, vlog1p(vexp(bx)) / vconst<L>(beta));
  });
}

void leaky_relu_kernel(TensorIterator& iter, const ActivationArgs& args) {
  const double slope = args.p0.to_double();
  floating_forward(iter, [slope](auto x) {
    using V = decltype(x);
    using L = lane_t<V>;
    return select<L>(x.v > V::splat(0).v, x, x * vconst<L>(slope));
  });
}

void elu_kernel(TensorIterator& iter, const ActivationArgs& args) {
  const double negcoef = args.p0.to_double() * args.p1.to_double();
  const double poscoef = args.p1.to_double();
  const double negiptcoef = args.p2.to_double();
  floating_forward(iter, [=](auto x) {
    using V = decltype(x);
    using L = lane_t<V>;
    return select<L>(x.v <= V::splat(0).v, vexpm1(x * vconst<L>(negiptcoef)) * vconst<L>(negcoef),
                     x * vconst<L>(poscoef));
  });
}

void hardsigmoid_kernel(TensorIterator& iter, const ActivationArgs&) {
  floating_forward(iter, [](auto x) {
    using V = decltype(x);
    using L = lane_t<V>;
    return vclamp(x + vconst<L>(3), V::splat(0), vconst<L>(6)) / vconst<L>(6);
  });
}

void hardswish_kernel(TensorIterator& iter, const ActivationArgs&) {
  floating_forward(iter, [](auto x) {
    using V = decltype(x);
    using L = lane_t<V>;
    return x * vclamp(x + vconst<L>(3), V::splat(0), vconst<L>(6)) / vconst<L>(6);
  });
}

void threshold_kernel(TensorIterator& iter, const ActivationArgs& args) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T> || std::is_floating_point_v<T>) {
      // The threshold and value as T (PyTorch converts both to the tensor's dtype first).
      const double th = static_cast<double>(static_cast<opmath_t<T>>(args.p0.to<T>()));
      const double value = static_cast<double>(static_cast<opmath_t<T>>(args.p1.to<T>()));
      floating_unary_vec<T>(iter, [th, value](auto x) {
        using L = lane_t<decltype(x)>;
        return select<L>(x.v <= vconst<L>(th).v, vconst<L>(value), x);
      });
    } else if constexpr (!std::is_same_v<T, bool>) {
      const T th = args.p0.to<T>();
      const T value = args.p1.to<T>();
      cpu_kernel(iter, [th, value](T x) -> T { return x <= th ? value : x; });
    }
  });
}

// --- backward ---------------------------------------------------------------------------------

void threshold_backward_kernel(TensorIterator& iter, const ActivationArgs& args) {
  visit_dtype(iter.common_dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_reduced_float_v<T> || std::is_floating_point_v<T>) {
      const double th = static_cast<double>(static_cast<opmath_t<T>>(args.p0.to<T>()));
      floating_binary_vec<T>(iter, [th](auto g, auto x) {
        using V = decltype(g);
        using L = lane_t<V>;
        return select<L>(x.v <= vconst<L>(th).v, V::splat(0), g);
      });
    } else if constexpr (!std::is_same_v<T, bool>) {
      const T th = args.p0.to<T>();
      cpu_kernel(iter, [th](T g, T x) -> T { return x <= th ? T(0) : g; });
    } else {
      fail_not_implemented("threshold_backward_cpu", DType::Bool);
    }
  });
}

void tanh_backward_kernel(TensorIterator& iter, const ActivationArgs&) {
  floating_backward(iter, [](auto g, auto y) {
    using V = decltype(g);
    return g * (V::splat(1) - y * y);
  });
}

void sigmoid_backward_kernel(TensorIterator& iter, const ActivationArgs&) {
  floating_backward(iter, [](auto g, auto y) {
    using V = decltype(g);
    return g * (V::splat(1) - y) * y;
  });
}

void gelu_backward_kernel(TensorIterator& iter, const ActivationArgs& args) {
  if (args.flag) {
    floating_backward(iter, [](auto g, auto x) {
      using V = decltype(g);
      using L = lane_t<V>;
      const V x_sq = x * x;
      const V inner = vconst<L>(kGeluBeta) * (x + vconst<L>(kGeluKappa) * x_sq * x);
      const V tanh_inner = vtanh(inner);
      const V left = vconst<L>(0.5) * x;
      const V right = V::splat(1) + tanh_inner;
      const V left_derivative = vconst<L>(0.5) * right;
      const V right_derivative = left * (V::splat(1) - tanh_inner * tanh_inner) * vconst<L>(kGeluBeta) *
                                 (V::splat(1) + vconst<L>(3 * kGeluKappa) * x_sq);
      return g * (left_derivative + right_derivative);
    });
    return;
  }
  floating_backward(iter, [](auto g, auto x) {
    using V = decltype(g);
    using L = lane_t<V>;
    const V cdf = vconst<L>(0.5) * (V::splat(1) + verf(x * vconst<L>(kSqrt1_2)));
    const V pdf = vconst<L>(kGeluPdfScale) * vexp(x * x * vconst<L>(-0.5));
    return g * (cdf + x * pdf);
  });
}

void silu_backward_kernel(TensorIterator& iter, const ActivationArgs&) {
  floating_backward(iter, [](auto g, auto x) {
    using V = decltype(g);
    const V s = vsigmoid(x);
    return g * s * (V::splat(1) + x * (V::splat(1) - s));
  });
}

void mish_backward_kernel(TensorIterator& iter, const ActivationArgs&) {
  floating_backward(iter, [](auto g, auto x) {
    using V = decltype(g);
    const V s = vsigmoid(x);
    const V t = vtanh(vlog1p(vexp(x)));
    return g * (t + x * s * (V::splat(1) - t * t));
  });
}

void softplus_backward_kernel(TensorIterator& iter, const ActivationArgs& args) {
  const double beta = args.p0.to_double();
  const double threshold = args.p1.to_double();
  floating_backward(iter, [beta, threshold](auto g, auto x) {
    using V = decltype(g);
    using L = lane_t<V>;
    const V bx = x * vconst<L>(beta);
    const V z = vexp(bx);
    return select<L>(bx.v > vconst<L>(threshold).v, g, g * z / (z + V::splat(1)));
  });
}

void leaky_relu_backward_kernel(TensorIterator& iter, const ActivationArgs& args) {
  const double slope = args.p0.to_double();
  floating_backward(iter, [slope](auto g, auto x) {
    using V = decltype(g);
    using L = lane_t<V>;
    return select<L>(x.v > V::splat(0).v, g, g * vconst<L>(slope));
  });
}

void elu_backward_kernel(TensorIterator& iter, const ActivationArgs& args) {
  const double negcoef = args.p0.to_double() * args.p1.to_double();
  const double poscoef = args.p1.to_double();
  const double negiptcoef = args.p2.to_double();
  if (args.flag) {  // the saved tensor is the result
    floating_backward(iter, [=](auto g, auto y) {
      using V = decltype(g);
      using L = lane_t<V>;
      return select<L>(y.v > V::splat(0).v, g * vconst<L>(poscoef),
                       g * vconst<L>(negiptcoef) * (y + vconst<L>(negcoef)));  // NaN takes the negative side
    });
    return;
  }
  floating_backward(iter, [=](auto g, auto x) {
    using V = decltype(g);
    using L = lane_t<V>;
    return select<L>(x.v > V::splat(0).v, g * vconst<L>(poscoef),
                     g * vconst<L>(negiptcoef) * vconst<L>(negcoef) * vexp(x * vconst<L>(negiptcoef)));
  });
}

void hardtanh_backward_kernel(TensorIterator& iter, const ActivationArgs& args) {
  const double lo = args.p0.to_double();
  const double hi = args.p1.to_double();
  floating_backward(iter, [lo, hi](auto g, auto x) {
    using V = decltype(g);
    using L = lane_t<V>;
    return select<L>((x.v > vconst<L>(lo).v) & (x.v < vconst<L>(hi).v), g, V::splat(0));  // NaN: 0, as PyTorch
  });
}

void hardsigmoid_backward_kernel(TensorIterator& iter, const ActivationArgs&) {
  floating_backward(iter, [](auto g, auto x) {
    using V = decltype(g);
    using L = lane_t<V>;
    return select<L>((x.v > vconst<L>(-3).v) & (x.v < vconst<L>(3).v), g / vconst<L>(6), V::splat(0));
  });
}

void hardswish_backward_kernel(TensorIterator& iter, const ActivationArgs&) {
  floating_backward(iter, [](auto g, auto x) {
    using V = decltype(g);
    using L = lane_t<V>;
    const V middle = g * (x / vconst<L>(3) + vconst<L>(0.5));
    return select<L>(x.v <= vconst<L>(-3).v, V::splat(0), select<L>(x.v >= vconst<L>(3).v, g, middle));  // NaN: NaN
  });
}

void logit_backward_kernel(TensorIterator& iter, const ActivationArgs& args) {
  const double eps = args.p0.to_double();
  floating_backward(iter, [eps](auto g, auto x) {
    using V = decltype(g);
    using L = lane_t<V>;
    const V lo = vconst<L>(eps < 0 ? 0.0 : eps);
    const V hi = vconst<L>(eps < 0 ? 1.0 : 1.0 - eps);
    const V inside = g / (x * (V::splat(1) - x));
    if (eps < 0) return select<L>((x.v < lo.v) | (x.v > hi.v), vconst<L>(NAN), inside);
    return select<L>((x.v >= lo.v) & (x.v <= hi.v), inside, V::splat(0));  // NaN: 0, as PyTorch
  });
}

}  // namespace
}  // namespace KILN_CPU_NS

#define KILN_REGISTER_ACTIVATION_(op) KILN_REGISTER_DISPATCH(op##_stub, &KILN_CPU_NS::op##_kernel);
KILN_FORALL_ACTIVATIONS(KILN_REGISTER_ACTIVATION_)
KILN_FORALL_ACTIVATION_BACKWARDS(KILN_REGISTER_ACTIVATION_)
#undef KILN_REGISTER_ACTIVATION_

}  // namespace kiln::native

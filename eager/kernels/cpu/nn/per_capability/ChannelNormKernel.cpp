// The per-channel loops of batch_norm and group_norm, compiled per CPU
// capability: runs of hw contiguous elements on Vec (float16/bfloat16 widened
// to float), summed per run and accumulated across runs in double. See
// Note [Channel statistics] (BatchNormOps.cpp).
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/nn/ChannelNormStubs.h"
#include "eager/kernels/cpu/nn/per_capability/NnVec.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

template <typename A>
using V = Vec<A>;

template <typename A>
V<A> load(const A* p, int64_t w, A pad) {
  return w == V<A>::size ? V<A>::loadu(p) : load_padded(p, w, pad);
}

/// sum of p[0, len).
template <typename A>
double run_sum(const A* p, int64_t len) {
  return static_cast<double>(hsum(sum_chunks<A>(len, [&](int64_t i, int64_t w) { return load(p + i, w, A(0)); })));
}

/// sum of (p[i] - mu)^2 (padding lanes hold mu, so they add 0).
template <typename A>
double run_sq_dev(const A* p, int64_t len, A mu) {
  const V<A> vmu = V<A>::splat(mu);
  return static_cast<double>(hsum(sum_chunks<A>(len, [&](int64_t i, int64_t w) {
    const V<A> d = load(p + i, w, mu) - vmu;
    return d * d;
  })));
}

/// sum of g[i] * (x[i] - center) (padding lanes of g hold 0).
template <typename A>
double run_dot_dev(const A* g, const A* x, int64_t len, A center) {
  const V<A> vc = V<A>::splat(center);
  return static_cast<double>(hsum(sum_chunks<A>(len, [&](int64_t i, int64_t w) {
    return load(g + i, w, A(0)) * (load(x + i, w, center) - vc);
  })));
}

/// run_sum(g) and run_dot_dev(g, x, center) in one pass (the same sums, term for term).
template <typename A>
std::pair<double, double> run_sum_and_dot_dev(const A* g, const A* x, int64_t len, A center) {
  const V<A> vc = V<A>::splat(center);
  const VecPair<A> sums = sum_chunks<A>(len, [&](int64_t i, int64_t w) {
    const V<A> gv = load(g + i, w, A(0));
    return VecPair<A>{gv, gv * (load(x + i, w, center) - vc)};
  });
  return {static_cast<double>(hsum(sums.first)), static_cast<double>(hsum(sums.second))};
}

int64_t channel_grain(ChannelLayout l) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(l.n * l.hw, 1)); }

template <typename T>
void moments_typed(const Tensor& x, ChannelLayout l, double* mean, double* var) {
  using A = opmath_t<T>;
  const T* xp = x.data_ptr<T>();
  const double count = static_cast<double>(l.n * l.hw);
  parallel_for(0, l.c, channel_grain(l), [&](int64_t c0, int64_t c1) {
    std::vector<A> buf;
    for (int64_t c = c0; c < c1; ++c) {
      double s = 0;
      for (int64_t i = 0; i < l.n; ++i) s += run_sum(as_compute_type<A>(xp + (i * l.c + c) * l.hw, l.hw, buf), l.hw);
      const double mu = s / count;
      double s2 = 0;
      for (int64_t i = 0; i < l.n; ++i) {
        s2 += run_sq_dev(as_compute_type<A>(xp + (i * l.c + c) * l.hw, l.hw, buf), l.hw, static_cast<A>(mu));
      }
      mean[c] = mu;
      var[c] = s2 / count;
    }
  });
}

template <typename T>
void grad_sums_typed(const Tensor& g, const Tensor* x, ChannelLayout l, const double* center, double* sum_g,
                     double* sum_gx) {
  using A = opmath_t<T>;
  const T* gp = g.data_ptr<T>();
  const T* xp = x ? x->data_ptr<T>() : nullptr;
  parallel_for(0, l.c, channel_grain(l), [&](int64_t c0, int64_t c1) {
    std::vector<A> gbuf, xbuf;
    for (int64_t c = c0; c < c1; ++c) {
      double s = 0, sx = 0;
      for (int64_t i = 0; i < l.n; ++i) {
        const int64_t at = (i * l.c + c) * l.hw;
        const A* gr = as_compute_type<A>(gp + at, l.hw, gbuf);
        s += run_sum(gr, l.hw);
        if (xp) sx += run_dot_dev(gr, as_compute_type<A>(xp + at, l.hw, xbuf), l.hw, static_cast<A>(center[c]));
      }
      sum_g[c] = s;
      if (xp) sum_gx[c] = sx;
    }
  });
}

/// out[0, hw) = x * b + c (+ g * a when g is given), in the compute type A.
template <typename A>
void affine_run(const A* g, const A* x, int64_t hw, A a, A b, A c, A* out) {
  constexpr int64_t W = V<A>::size;
  const V<A> va = V<A>::splat(a), vb = V<A>::splat(b), vc = V<A>::splat(c);
  int64_t i = 0;
  for (; i + W <= hw; i += W) {
    V<A> v = V<A>::loadu(x + i) * vb + vc;
    if (g) v = v + V<A>::loadu(g + i) * va;
    v.storeu(out + i);
  }
  if (i < hw) {
    const int64_t w = hw - i;
    V<A> v = load_padded(x + i, w, A(0)) * vb + vc;
    if (g) v = v + load_padded(g + i, w, A(0)) * va;
    v.storeu(out + i, w);
  }
}

/// One task per (sample, group): its cg * hw elements are contiguous and stay
/// in cache from the statistics to the output (Note [Channel statistics]).
template <typename T>
void group_forward_typed(const Tensor& x, ChannelLayout l, int64_t group, const double* weight, const double* bias,
                         double eps, double* mean, double* rstd, const Tensor& y) {
  using A = opmath_t<T>;
  const int64_t cg = l.c / group, len = cg * l.hw;
  const T* xp = x.data_ptr<T>();
  T* yp = y.data_ptr<T>();
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(len, 1));
  parallel_for(0, l.n * group, grain, [&](int64_t r0, int64_t r1) {
    std::vector<A> xbuf, obuf;
    for (int64_t r = r0; r < r1; ++r) {
      const A* xr = as_compute_type<A>(xp + r * len, len, xbuf);
      const double mu = run_sum(xr, len) / static_cast<double>(len);
      const double var = run_sq_dev(xr, len, static_cast<A>(mu)) / static_cast<double>(len);
      const double rs = 1.0 / std::sqrt(var + eps);
      mean[r] = mu;
      rstd[r] = rs;
      A* o = compute_target<A>(yp + r * len, len, obuf);
      const int64_t c0 = (r % group) * cg;
      for (int64_t j = 0; j < cg; ++j) {
        const double scale = weight[c0 + j] * rs;
        affine_run<A>(nullptr, xr + j * l.hw, l.hw, A(0), static_cast<A>(scale),
                      static_cast<A>(bias[c0 + j] - mu * scale), o + j * l.hw);
      }
      finish_target(o, yp + r * len, len);
    }
  });
}

template <typename T>
void group_backward_input_typed(const Tensor& g, const Tensor& x, ChannelLayout l, int64_t group, const double* mean,
                                const double* rstd, const double* weight, const Tensor& dx, double* sum_g_out,
                                double* sum_gd_out) {
  using A = opmath_t<T>;
  const int64_t cg = l.c / group, len = cg * l.hw;
  const T* gp = g.data_ptr<T>();
  const T* xp = x.data_ptr<T>();
  T* dp = dx.data_ptr<T>();
  const double m = static_cast<double>(len);
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(2 * len, 1));
  parallel_for(0, l.n * group, grain, [&](int64_t r0, int64_t r1) {
    std::vector<A> gbuf, xbuf, obuf;
    for (int64_t r = r0; r < r1; ++r) {
      const A* gr = as_compute_type<A>(gp + r * len, len, gbuf);
      const A* xr = as_compute_type<A>(xp + r * len, len, xbuf);
      const int64_t c0 = (r % group) * cg;
      const double mu = mean[r], rho = rstd[r];
      double sum_gw = 0, sum_gwd = 0;  // sums of g w and of g w (x - mean) over the group
      for (int64_t j = 0; j < cg; ++j) {
        const auto [sg, sgd] = run_sum_and_dot_dev(gr + j * l.hw, xr + j * l.hw, l.hw, static_cast<A>(mu));
        sum_gw += weight[c0 + j] * sg;
        sum_gwd += weight[c0 + j] * sgd;
        if (sum_g_out != nullptr) {
          const int64_t at = (r / group) * l.c + c0 + j;  // this task alone writes its group's channels
          sum_g_out[at] = sg;
          sum_gd_out[at] = sgd;
        }
      }
      const double b = -rho * rho * rho * sum_gwd / m;
      const double gm = -rho * sum_gw / m - b * mu;
      A* o = compute_target<A>(dp + r * len, len, obuf);
      for (int64_t j = 0; j < cg; ++j) {
        affine_run<A>(gr + j * l.hw, xr + j * l.hw, l.hw, static_cast<A>(rho * weight[c0 + j]), static_cast<A>(b),
                      static_cast<A>(gm), o + j * l.hw);
      }
      finish_target(o, dp + r * len, len);
    }
  });
}

template <typename T>
void affine_typed(const Tensor* g, const Tensor& x, ChannelLayout l, const double* alpha, const double* beta,
                  const double* gamma, const Tensor& out) {
  using A = opmath_t<T>;
  constexpr int64_t W = V<A>::size;
  const T* gp = g ? g->data_ptr<T>() : nullptr;
  const T* xp = x.data_ptr<T>();
  T* op = out.data_ptr<T>();
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(l.hw, 1));
  parallel_for(0, l.n * l.c, grain, [&](int64_t r0, int64_t r1) {
    std::vector<A> gbuf, xbuf, obuf;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r % l.c, at = r * l.hw;
      const A* xr = as_compute_type<A>(xp + at, l.hw, xbuf);
      const A* gr = gp ? as_compute_type<A>(gp + at, l.hw, gbuf) : nullptr;
      A* o = compute_target<A>(op + at, l.hw, obuf);
      const V<A> va = V<A>::splat(gp ? static_cast<A>(alpha[c]) : A(0));
      const V<A> vb = V<A>::splat(static_cast<A>(beta[c]));
      const V<A> vc = V<A>::splat(static_cast<A>(gamma[c]));
      for (int64_t i = 0; i < l.hw; i += W) {
        const int64_t w = std::min(W, l.hw - i);
        V<A> v = load(xr + i, w, A(0)) * vb + vc;
        if (gr) v = v + load(gr + i, w, A(0)) * va;
        if (w == W) {
          v.storeu(o + i);
        } else {
          v.storeu(o + i, w);
        }
      }
      finish_target(o, op + at, l.hw);
    }
  });
}

void channel_moments_kernel(const Tensor& x, ChannelLayout l, double* mean, double* var) {
  visit_floating(x.dtype(), [&](auto tag) { moments_typed<decltype(tag)>(x, l, mean, var); });
}

void channel_grad_sums_kernel(const Tensor& g, const Tensor* x, ChannelLayout l, const double* center, double* sum_g,
                              double* sum_gx) {
  visit_floating(g.dtype(), [&](auto tag) { grad_sums_typed<decltype(tag)>(g, x, l, center, sum_g, sum_gx); });
}

void channel_affine_kernel(const Tensor* g, const Tensor& x, ChannelLayout l, const double* alpha, const double* beta,
                           const double* gamma, const Tensor& out) {
  visit_floating(x.dtype(), [&](auto tag) { affine_typed<decltype(tag)>(g, x, l, alpha, beta, gamma, out); });
}

void group_norm_forward_kernel(const Tensor& x, ChannelLayout l, int64_t group, const double* weight,
                               const double* bias, double eps, double* mean, double* rstd, const Tensor& y) {
  visit_floating(x.dtype(), [&](auto tag) {
    group_forward_typed<decltype(tag)>(x, l, group, weight, bias, eps, mean, rstd, y);
  });
}

void group_norm_backward_input_kernel(const Tensor& g, const Tensor& x, ChannelLayout l, int64_t group,
                                      const double* mean, const double* rstd, const double* weight, const Tensor& dx,
                                      double* sum_g, double* sum_gd) {
  visit_floating(x.dtype(), [&](auto tag) {
    group_backward_input_typed<decltype(tag)>(g, x, l, group, mean, rstd, weight, dx, sum_g, sum_gd);
  });
}

}  // namespace

KILN_REGISTER_DISPATCH(group_norm_forward_stub, &group_norm_forward_kernel);
KILN_REGISTER_DISPATCH(group_norm_backward_input_stub, &group_norm_backward_input_kernel);
KILN_REGISTER_DISPATCH(channel_moments_stub, &channel_moments_kernel);
KILN_REGISTER_DISPATCH(channel_grad_sums_stub, &channel_grad_sums_kernel);
KILN_REGISTER_DISPATCH(channel_affine_stub, &channel_affine_kernel);

}  // namespace KILN_CPU_NS
}  // namespace kiln::native

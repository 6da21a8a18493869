// softmax / log_softmax loops and their backward, compiled per CPU capability.
// Rows along the last dim run on Vec over the row; other dims run on Vec over
// `inner` adjacent columns. See Note [Softmax computes in float] (SoftmaxOps.cpp).
#include <cmath>
#include <vector>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/nn/SoftmaxStubs.h"
#include "eager/kernels/cpu/nn/per_capability/NnVec.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

// --- forward --------------------------------------------------------------------------

template <typename A>
void softmax_row(const A* x, A* y, int64_t n, bool log) {
  using V = Vec<A>;
  constexpr int64_t W = V::size;
  const int64_t full = n - n % W;
  const V m = V::splat(row_max(x, n));
  V vsum = V::splat(0);
  for (int64_t i = 0; i < full; i += W) {
    const V e = vexp(V::loadu(x + i) - m);
    if (!log) e.storeu(y + i);
    vsum = vsum + e;
  }
  if (full < n) {
    const V e = vexp(load_padded(x + full, n - full, kNegInf<A>) - m);
    if (!log) e.storeu(y + full, n - full);
    vsum = vsum + e;
  }
  const A sum = hsum(vsum);
  if (log) {
    const V log_sum = V::splat(std::log(sum));
    for (int64_t i = 0; i < full; i += W) (V::loadu(x + i) - m - log_sum).storeu(y + i);
    if (full < n) (V::loadu(x + full, n - full) - m - log_sum).storeu(y + full, n - full);
    return;
  }
  const V scale = V::splat(A(1) / sum);
  for (int64_t i = 0; i < full; i += W) (V::loadu(y + i) * scale).storeu(y + i);
  if (full < n) (V::loadu(y + full, n - full) * scale).storeu(y + full, n - full);
}

/// One [n, inner] slice, reduced along n, Vec lanes over adjacent columns.
template <typename A>
void softmax_columns(const A* x, A* y, int64_t n, int64_t inner, bool log) {
  using V = Vec<A>;
  for (int64_t j = 0; j < inner; j += V::size) {
    const int64_t w = std::min<int64_t>(V::size, inner - j);
    auto load = [w](const A* p) { return w == V::size ? V::loadu(p) : V::loadu(p, w); };
    auto store = [w](V v, A* p) { w == V::size ? v.storeu(p) : v.storeu(p, w); };
    V m = V::splat(kNegInf<A>);
    for (int64_t d = 0; d < n; ++d) m = maximum(m, load(x + d * inner + j));
    V sum = V::splat(0);
    for (int64_t d = 0; d < n; ++d) {
      const V e = vexp(load(x + d * inner + j) - m);
      if (!log) store(e, y + d * inner + j);
      sum = sum + e;
    }
    if (log) {
      const V log_sum = vlog(sum);
      for (int64_t d = 0; d < n; ++d) store(load(x + d * inner + j) - m - log_sum, y + d * inner + j);
    } else {
      const V scale = V::splat(A(1)) / sum;
      for (int64_t d = 0; d < n; ++d) store(load(y + d * inner + j) * scale, y + d * inner + j);
    }
  }
}

template <typename T>
void softmax_typed(const Tensor& in, const Tensor& out, SoftmaxShape s, bool log) {
  using A = opmath_t<T>;
  const T* x = in.data_ptr<T>();
  T* y = out.data_ptr<T>();
  const int64_t slice = s.dim * s.inner;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(slice, 1));
  parallel_for(0, s.outer, grain, [&](int64_t begin, int64_t end) {
    std::vector<A> in_buffer, out_buffer;
    for (int64_t o = begin; o < end; ++o) {
      const A* src = as_compute_type<A>(x + o * slice, slice, in_buffer);
      A* dst = compute_target<A>(y + o * slice, slice, out_buffer);
      if (s.inner == 1) {
        softmax_row(src, dst, s.dim, log);
      } else {
        softmax_columns(src, dst, s.dim, s.inner, log);
      }
      finish_target(dst, y + o * slice, slice);
    }
  });
}

void softmax_kernel(const Tensor& in, const Tensor& out, SoftmaxShape shape, bool log) {
  visit_floating(in.dtype(), [&](auto tag) { softmax_typed<decltype(tag)>(in, out, shape, log); });
}

// --- backward -------------------------------------------------------------------------

template <typename A>
void softmax_backward_row(const A* g, const A* y, A* gx, int64_t n, bool log) {
  using V = Vec<A>;
  constexpr int64_t W = V::size;
  const int64_t full = n - n % W;
  V acc = V::splat(0);
  if (log) {
    for (int64_t i = 0; i < full; i += W) acc = acc + V::loadu(g + i);
    if (full < n) acc = acc + V::loadu(g + full, n - full);
    const V sum = V::splat(hsum(acc));
    for (int64_t i = 0; i < full; i += W) (V::loadu(g + i) - vexp(V::loadu(y + i)) * sum).storeu(gx + i);
    if (full < n) (V::loadu(g + full, n - full) - vexp(V::loadu(y + full, n - full)) * sum).storeu(gx + full, n - full);
    return;
  }
  for (int64_t i = 0; i < full; i += W) acc = acc + V::loadu(g + i) * V::loadu(y + i);
  if (full < n) acc = acc + V::loadu(g + full, n - full) * V::loadu(y + full, n - full);
  const V dot = V::splat(hsum(acc));
  for (int64_t i = 0; i < full; i += W) (V::loadu(y + i) * (V::loadu(g + i) - dot)).storeu(gx + i);
  if (full < n) (V::loadu(y + full, n - full) * (V::loadu(g + full, n - full) - dot)).storeu(gx + full, n - full);
}

template <typename A>
void softmax_backward_columns(const A* g, const A* y, A* gx, int64_t n, int64_t inner, bool log) {
  using V = Vec<A>;
  for (int64_t j = 0; j < inner; j += V::size) {
    const int64_t w = std::min<int64_t>(V::size, inner - j);
    auto load = [w](const A* p) { return w == V::size ? V::loadu(p) : V::loadu(p, w); };
    auto store = [w](V v, A* p) { w == V::size ? v.storeu(p) : v.storeu(p, w); };
    V acc = V::splat(0);
    for (int64_t d = 0; d < n; ++d) {
      const int64_t at = d * inner + j;
      acc = log ? acc + load(g + at) : acc + load(g + at) * load(y + at);
    }
    for (int64_t d = 0; d < n; ++d) {
      const int64_t at = d * inner + j;
      store(log ? load(g + at) - vexp(load(y + at)) * acc : load(y + at) * (load(g + at) - acc), gx + at);
    }
  }
}

template <typename T, typename R>
void softmax_backward_typed(const Tensor& grad, const Tensor& output, const Tensor& grad_input, SoftmaxShape s,
                            bool log) {
  using A = std::conditional_t<std::is_same_v<T, double> || std::is_same_v<R, double>, double, float>;
  const T* g = grad.data_ptr<T>();
  const T* y = output.data_ptr<T>();
  R* gx = grad_input.data_ptr<R>();
  const int64_t slice = s.dim * s.inner;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(slice, 1));
  parallel_for(0, s.outer, grain, [&](int64_t begin, int64_t end) {
    std::vector<A> g_buffer, y_buffer, out_buffer;
    for (int64_t o = begin; o < end; ++o) {
      const A* gs = as_compute_type<A>(g + o * slice, slice, g_buffer);
      const A* ys = as_compute_type<A>(y + o * slice, slice, y_buffer);
      A* dst = compute_target<A>(gx + o * slice, slice, out_buffer);
      if (s.inner == 1) {
        softmax_backward_row(gs, ys, dst, s.dim, log);
      } else {
        softmax_backward_columns(gs, ys, dst, s.dim, s.inner, log);
      }
      finish_target(dst, gx + o * slice, slice);
    }
  });
}

void softmax_backward_kernel(const Tensor& grad, const Tensor& output, const Tensor& grad_input, SoftmaxShape shape,
                             bool log) {
  visit_floating(output.dtype(), [&](auto out_tag) {
    visit_floating(grad_input.dtype(), [&](auto in_tag) {
      softmax_backward_typed<decltype(out_tag), decltype(in_tag)>(grad, output, grad_input, shape, log);
    });
  });
}

}  // namespace

KILN_REGISTER_DISPATCH(softmax_stub, &softmax_kernel);
KILN_REGISTER_DISPATCH(softmax_backward_stub, &softmax_backward_kernel);

}  // namespace KILN_CPU_NS
}  // namespace kiln::native

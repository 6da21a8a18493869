// The fused LSTM and GRU cell loops, compiled per CPU capability: row by row
// over [B, H] on Vec, float32 and float64 (the op checks the dtype). The
// formulas are written out in Note [Fused recurrent cells] (RnnCells.cpp).
#include <algorithm>
#include <cstdint>

#include "eager/kernels/Parallel.h"
#include "eager/kernels/cpu/RnnCellStubs.h"
#include "eager/kernels/cpu/kernels/NnVec.h"
#include "eager/kernels/cpu/vec/VecTanh.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

template <typename A>
using V = Vec<A>;

template <typename A>
V<A> vsigm(V<A> x) {
  return V<A>::splat(1) / (V<A>::splat(1) + vexp(-x));
}

/// fn(row, column, width) over B rows of H columns, rows split across threads.
template <typename A, typename Fn>
void for_rows(int64_t rows, int64_t hidden, const Fn& fn) {
  constexpr int64_t W = V<A>::size;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(hidden, 1));
  parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      for (int64_t j = 0; j < hidden; j += W) fn(b, j, std::min(W, hidden - j));
    }
  });
}

template <typename A>
void lstm_forward_typed(const Tensor& gates, const Tensor& cx, const Tensor& hy, const Tensor& cy) {
  const int64_t B = cx.size(0), H = cx.size(1);
  const A* g = gates.data_ptr<A>();
  const A* c = cx.data_ptr<A>();
  A* h_out = hy.data_ptr<A>();
  A* c_out = cy.data_ptr<A>();
  for_rows<A>(B, H, [&](int64_t b, int64_t j, int64_t w) {
    const A* row = g + b * 4 * H + j;
    const V<A> i = vsigm(load(row, w)), f = vsigm(load(row + H, w));
    const V<A> cell = vtanh(load(row + 2 * H, w)), o = vsigm(load(row + 3 * H, w));
    const V<A> c_new = f * load(c + b * H + j, w) + i * cell;
    store(c_new, c_out + b * H + j, w);
    store(o * vtanh(c_new), h_out + b * H + j, w);
  });
}

template <typename A>
void lstm_backward_typed(const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& gates, const Tensor& cx,
                         const Tensor& cy, const Tensor* grad_gates, const Tensor* grad_cx) {
  const int64_t B = cx.size(0), H = cx.size(1);
  const A* gh = grad_hy.data_ptr<A>();
  const A* gc = grad_cy.data_ptr<A>();
  const A* g = gates.data_ptr<A>();
  const A* c = cx.data_ptr<A>();
  const A* cn = cy.data_ptr<A>();
  A* dg = grad_gates != nullptr ? grad_gates->data_ptr<A>() : nullptr;
  A* dc = grad_cx != nullptr ? grad_cx->data_ptr<A>() : nullptr;
  const V<A> one = V<A>::splat(1);
  for_rows<A>(B, H, [&](int64_t b, int64_t j, int64_t w) {
    const A* row = g + b * 4 * H + j;
    const int64_t at = b * H + j;
    const V<A> i = vsigm(load(row, w)), f = vsigm(load(row + H, w));
    const V<A> cell = vtanh(load(row + 2 * H, w)), o = vsigm(load(row + 3 * H, w));
    const V<A> tc = vtanh(load(cn + at, w));
    const V<A> dh = load(gh + at, w);
    const V<A> dcy = load(gc + at, w) + dh * o * (one - tc * tc);  // through hy = o tanh(cy) and cy itself
    if (dc != nullptr) store(dcy * f, dc + at, w);
    if (dg == nullptr) return;
    A* out = dg + b * 4 * H + j;
    store(dcy * cell * i * (one - i), out, w);
    store(dcy * load(c + at, w) * f * (one - f), out + H, w);
    store(dcy * i * (one - cell * cell), out + 2 * H, w);
    store(dh * tc * o * (one - o), out + 3 * H, w);
  });
}

template <typename A>
void gru_forward_typed(const Tensor& xg, const Tensor& hg, const Tensor& hx, const Tensor& hy) {
  const int64_t B = hx.size(0), H = hx.size(1);
  const A* x = xg.data_ptr<A>();
  const A* hh = hg.data_ptr<A>();
  const A* h = hx.data_ptr<A>();
  A* out = hy.data_ptr<A>();
  for_rows<A>(B, H, [&](int64_t b, int64_t j, int64_t w) {
    const A* xr = x + b * 3 * H + j;
    const A* hr = hh + b * 3 * H + j;
    const V<A> r = vsigm(load(xr, w) + load(hr, w)), z = vsigm(load(xr + H, w) + load(hr + H, w));
    const V<A> n = vtanh(load(xr + 2 * H, w) + r * load(hr + 2 * H, w));
    store(n + z * (load(h + b * H + j, w) - n), out + b * H + j, w);  // (1 - z) n + z h
  });
}

template <typename A>
void gru_backward_typed(const Tensor& grad_hy, const Tensor& xg, const Tensor& hg, const Tensor& hx,
                        const Tensor* grad_x, const Tensor* grad_h, const Tensor* grad_hx) {
  const int64_t B = hx.size(0), H = hx.size(1);
  const A* gy = grad_hy.data_ptr<A>();
  const A* x = xg.data_ptr<A>();
  const A* hh = hg.data_ptr<A>();
  const A* h = hx.data_ptr<A>();
  A* dx = grad_x != nullptr ? grad_x->data_ptr<A>() : nullptr;
  A* dh = grad_h != nullptr ? grad_h->data_ptr<A>() : nullptr;
  A* dhx = grad_hx != nullptr ? grad_hx->data_ptr<A>() : nullptr;
  const V<A> one = V<A>::splat(1);
  for_rows<A>(B, H, [&](int64_t b, int64_t j, int64_t w) {
    const A* xr = x + b * 3 * H + j;
    const A* hr = hh + b * 3 * H + j;
    const int64_t at = b * H + j;
    const V<A> hn = load(hr + 2 * H, w);
    const V<A> r = vsigm(load(xr, w) + load(hr, w)), z = vsigm(load(xr + H, w) + load(hr + H, w));
    const V<A> n = vtanh(load(xr + 2 * H, w) + r * hn);
    const V<A> g = load(gy + at, w);
    const V<A> hprev = load(h + at, w);
    if (dhx != nullptr) store(g * z, dhx + at, w);
    const V<A> dn = g * (one - z) * (one - n * n);        // d n's pre-activation
    const V<A> dz = g * (hprev - n) * z * (one - z);       // d z's pre-activation
    const V<A> dr = dn * hn * r * (one - r);               // d r's pre-activation
    if (dx != nullptr) {
      A* o = dx + b * 3 * H + j;
      store(dr, o, w);
      store(dz, o + H, w);
      store(dn, o + 2 * H, w);
    }
    if (dh != nullptr) {
      A* o = dh + b * 3 * H + j;
      store(dr, o, w);
      store(dz, o + H, w);
      store(dn * r, o + 2 * H, w);
    }
  });
}

template <typename Fn>
void visit_float_or_double(DType dtype, Fn&& fn) {
  if (dtype == DType::Float64) {
    fn(double{});
  } else {
    fn(float{});
  }
}

void lstm_cell_forward_kernel(const Tensor& gates, const Tensor& cx, const Tensor& hy, const Tensor& cy) {
  visit_float_or_double(cx.dtype(), [&](auto tag) { lstm_forward_typed<decltype(tag)>(gates, cx, hy, cy); });
}
void lstm_cell_backward_kernel(const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& gates, const Tensor& cx,
                               const Tensor& cy, const Tensor* grad_gates, const Tensor* grad_cx) {
  visit_float_or_double(cx.dtype(), [&](auto tag) {
    lstm_backward_typed<decltype(tag)>(grad_hy, grad_cy, gates, cx, cy, grad_gates, grad_cx);
  });
}
void gru_cell_forward_kernel(const Tensor& xg, const Tensor& hg, const Tensor& hx, const Tensor& hy) {
  visit_float_or_double(hx.dtype(), [&](auto tag) { gru_forward_typed<decltype(tag)>(xg, hg, hx, hy); });
}
void gru_cell_backward_kernel(const Tensor& grad_hy, const Tensor& xg, const Tensor& hg, const Tensor& hx,
                              const Tensor* grad_x, const Tensor* grad_h, const Tensor* grad_hx) {
  visit_float_or_double(hx.dtype(), [&](auto tag) {
    gru_backward_typed<decltype(tag)>(grad_hy, xg, hg, hx, grad_x, grad_h, grad_hx);
  });
}

}  // namespace

KILN_REGISTER_DISPATCH(lstm_cell_forward_stub, &lstm_cell_forward_kernel);
KILN_REGISTER_DISPATCH(lstm_cell_backward_stub, &lstm_cell_backward_kernel);
KILN_REGISTER_DISPATCH(gru_cell_forward_stub, &gru_cell_forward_kernel);
KILN_REGISTER_DISPATCH(gru_cell_backward_stub, &gru_cell_backward_kernel);

}  // namespace KILN_CPU_NS
}  // namespace kiln::native

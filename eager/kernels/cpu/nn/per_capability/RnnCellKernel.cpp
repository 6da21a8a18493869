// The fused LSTM and GRU cell loops, compiled per CPU capability: row by row
// over [B, H] on Vec (the LSTM loops live in RnnCellMath.h), float32 and
// float64 (the op checks the dtype). The formulas are written out in
// Note [Fused recurrent cells] (RnnCells.cpp).
#include <cstdint>

#include "eager/kernels/cpu/nn/RnnCellStubs.h"
#include "eager/kernels/cpu/nn/per_capability/RnnCellMath.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

template <typename A>
using V = Vec<A>;

template <typename A>
void lstm_forward_typed(const Tensor& gates, const Tensor& cx, const Tensor& hy, const Tensor& cy) {
  lstm_forward_rows<A>(gates.data_ptr<A>(), cx.data_ptr<A>(), hy.data_ptr<A>(), cy.data_ptr<A>(), cx.size(0),
                       cx.size(1));
}

template <typename A>
void lstm_backward_typed(const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& gates, const Tensor& cx,
                         const Tensor& cy, const Tensor* grad_gates, const Tensor* grad_cx) {
  lstm_backward_rows<A>(grad_hy.data_ptr<A>(), nullptr, grad_cy.data_ptr<A>(), gates.data_ptr<A>(), cx.data_ptr<A>(),
                        cy.data_ptr<A>(), grad_gates != nullptr ? grad_gates->data_ptr<A>() : nullptr,
                        grad_cx != nullptr ? grad_cx->data_ptr<A>() : nullptr, cx.size(0), cx.size(1));
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

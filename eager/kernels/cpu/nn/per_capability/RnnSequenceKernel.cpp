// The whole-sequence LSTM loops (Note [Whole-sequence LSTM], RnnSequence.cpp),
// compiled per CPU capability: each step is one product with W_hh^T on the
// BLAS and the cell's pointwise loop (RnnCellMath.h), on raw pointers into
// the [T, B, *] buffers; no tensor is made per step.
#include <cstdint>
#include <cstring>
#include <vector>

#include "eager/kernels/cpu/linalg/Blas.h"
#include "eager/kernels/cpu/nn/RnnCellStubs.h"
#include "eager/kernels/cpu/nn/per_capability/RnnCellMath.h"

namespace kiln::native {
namespace KILN_CPU_NS {
namespace {

/// The time index of the s-th step taken.
inline int64_t step_time(int64_t s, int64_t steps, bool reverse) { return reverse ? steps - 1 - s : s; }

template <typename A>
void forward_typed(const Tensor& projected, const Tensor& hx, const Tensor& cx, const Tensor& w_hh_t, bool reverse,
                   const Tensor& output, const Tensor& gates, const Tensor& cells) {
  const int64_t T = projected.size(0), B = projected.size(1), H = hx.size(1);
  const int64_t gate_step = B * 4 * H, state_step = B * H;
  const A* x = projected.data_ptr<A>();
  const A* w = w_hh_t.data_ptr<A>();
  A* out = output.data_ptr<A>();
  A* g = gates.data_ptr<A>();
  A* c = cells.data_ptr<A>();
  const A* h_prev = hx.data_ptr<A>();
  const A* c_prev = cx.data_ptr<A>();
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = step_time(s, T, reverse);
    A* g_t = g + t * gate_step;
    std::memcpy(g_t, x + t * gate_step, static_cast<size_t>(gate_step) * sizeof(A));
    gemm_raw<A>(false, false, B, 4 * H, H, A(1), h_prev, H, w, 4 * H, A(1), g_t, 4 * H);
    lstm_forward_rows<A>(g_t, c_prev, out + t * state_step, c + t * state_step, B, H);
    h_prev = out + t * state_step;
    c_prev = c + t * state_step;
  }
}

template <typename A>
void backward_typed(const Tensor& grad_output, const Tensor& cx, const Tensor& w_hh_t, const Tensor& gates,
                    const Tensor& cells, bool reverse, const Tensor& grad_gates, const Tensor& grad_hx,
                    const Tensor& grad_cx) {
  const int64_t T = gates.size(0), B = gates.size(1), H = cx.size(1);
  const int64_t gate_step = B * 4 * H, state_step = B * H;
  const A* go = grad_output.data_ptr<A>();
  const A* w = w_hh_t.data_ptr<A>();
  const A* g = gates.data_ptr<A>();
  const A* c = cells.data_ptr<A>();
  A* dg = grad_gates.data_ptr<A>();
  A* dh = grad_hx.data_ptr<A>();  // the gradient reaching h from the later steps (grad_hy at first)
  A* dc = grad_cx.data_ptr<A>();  // likewise for c
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = step_time(s, T, reverse);
    const A* c_prev = s == 0 ? cx.data_ptr<A>() : c + step_time(s - 1, T, reverse) * state_step;
    A* dg_t = dg + t * gate_step;
    lstm_backward_rows<A>(go + t * state_step, dh, dc, g + t * gate_step, c_prev, c + t * state_step, dg_t, dc, B, H);
    gemm_raw<A>(false, true, B, H, 4 * H, A(1), dg_t, 4 * H, w, 4 * H, A(0), dh, H);  // dh_prev = dgates W_hh
  }
}

void lstm_sequence_forward_kernel(const Tensor& projected, const Tensor& hx, const Tensor& cx, const Tensor& w_hh_t,
                                  bool reverse, const Tensor& output, const Tensor& gates, const Tensor& cells) {
  visit_float_or_double(hx.dtype(), [&](auto tag) {
    forward_typed<decltype(tag)>(projected, hx, cx, w_hh_t, reverse, output, gates, cells);
  });
}

void lstm_sequence_backward_kernel(const Tensor& grad_output, const Tensor& cx, const Tensor& w_hh_t,
                                   const Tensor& gates, const Tensor& cells, bool reverse, const Tensor& grad_gates,
                                   const Tensor& grad_hx, const Tensor& grad_cx) {
  visit_float_or_double(cx.dtype(), [&](auto tag) {
    backward_typed<decltype(tag)>(grad_output, cx, w_hh_t, gates, cells, reverse, grad_gates, grad_hx, grad_cx);
  });
}

}  // namespace

KILN_REGISTER_DISPATCH(lstm_sequence_forward_stub, &lstm_sequence_forward_kernel);
KILN_REGISTER_DISPATCH(lstm_sequence_backward_stub, &lstm_sequence_backward_kernel);

}  // namespace KILN_CPU_NS
}  // namespace kiln::native

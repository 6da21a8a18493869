// The whole-sequence LSTM op (eager/ops/rnn.yaml): one layer direction over a
// fixed batch, forward and backward, each one op call.
//
// Note [Whole-sequence LSTM]
// --------------------------
// Stepped from Python, an LSTM layer is three ops per time step (addmm, the
// fused cell, a slice of the projected input) and as many autograd nodes; at a
// small batch (B = 8, H = 128) each step's work is a few microseconds, so the
// dispatch and the nodes cost more than the arithmetic, and the backward adds
// a [H, 4H] product per step for W_hh's gradient, accumulated into the same
// buffer T times. _lstm_sequence runs the T steps in one call
// (RnnSequenceKernel.cpp): per step, gates = projected[t] + h W_hh^T on the
// BLAS, then the fused cell (RnnCellMath.h). It keeps the gates'
// pre-activations [T, B, 4H] and the cells [T, B, H] as its workspace outputs.
// The backward walks the steps in reverse, writing each step's gate gradient
// into grad_projected (whose rows are what x W_ih^T + b needs) and carrying
// dh = dgates W_hh and dc back; W_hh's gradient is then one product,
// [h_{t-1}]^T [dgates_t] over all T*B rows at once (two calls: the steps whose
// previous state is an output, and the first step's hx). The reverse
// direction is the same walk with t running down.
//
// A second derivative: when the backward runs with grad mode on
// (create_graph=True), the formula helper lstm_sequence_backward
// (eager/autograd/RnnFormulas.h) takes the same steps with differentiable kiln
// ops instead, recomputing the forward from the op's inputs, as PyTorch does
// for its fused cells (_thnn_differentiable_lstm_cell_backward).
// nn/modules/rnn.py uses the op for float32/float64 layers without proj_size
// and without packed input; the others stay on the per-step loop.
#include <algorithm>
#include <tuple>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/linalg/Blas.h"
#include "eager/kernels/cpu/nn/RnnCellStubs.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(lstm_sequence_forward_fn, lstm_sequence_forward_stub);
KILN_DEFINE_DISPATCH(lstm_sequence_backward_fn, lstm_sequence_backward_stub);

namespace {

constexpr const char* kOp = "_lstm_sequence";

void check_state(const char* what, const Tensor& state, int64_t B, int64_t H, DType dtype) {
  KILN_CHECK(state.dim() == 2 && state.size(0) == B && state.size(1) == H, kOp, ": expected ", what, " of size [",
             B, ", ", H, "], got ", state.sizes());
  KILN_CHECK(state.dtype() == dtype, kOp, ": ", what, " must have the projected input's dtype");
}

/// Checks the forward's operands; returns H.
int64_t check_sequence(const Tensor& projected, const Tensor& hx, const Tensor& cx, const Tensor& w_hh_t) {
  KILN_CHECK(projected.dim() == 3, kOp, ": expected a 3-D projected input [T, B, 4H], got ", projected.sizes());
  KILN_CHECK_NOT_IMPLEMENTED(projected.dtype() == DType::Float32 || projected.dtype() == DType::Float64, kOp,
                             ": not implemented for this dtype (float32 and float64 only)");
  KILN_CHECK(hx.dim() == 2, kOp, ": expected a 2-D hx [B, H], got ", hx.sizes());
  const int64_t B = projected.size(1), H = hx.size(1);
  KILN_CHECK(projected.size(2) == 4 * H, kOp, ": projected input ", projected.sizes(), " does not match H = ", H,
             " (expected [T, B, 4H])");
  check_state("hx", hx, B, H, projected.dtype());
  check_state("cx", cx, B, H, projected.dtype());
  KILN_CHECK(w_hh_t.dim() == 2 && w_hh_t.size(0) == H && w_hh_t.size(1) == 4 * H, kOp, ": expected w_hh_t of size [",
             H, ", ", 4 * H, "], got ", w_hh_t.sizes());
  KILN_CHECK(w_hh_t.dtype() == projected.dtype(), kOp, ": w_hh_t must have the projected input's dtype");
  return H;
}

Tensor new_tensor(IntArrayRef sizes, const Tensor& like) { return empty(sizes, like.dtype(), like.device()); }

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> lstm_sequence_cpu(const Tensor& projected, const Tensor& hx,
                                                                     const Tensor& cx, const Tensor& w_hh_t,
                                                                     bool reverse) {
  const int64_t H = check_sequence(projected, hx, cx, w_hh_t);
  const int64_t T = projected.size(0), B = projected.size(1);
  Tensor output = new_tensor({T, B, H}, projected);
  Tensor gates = new_tensor({T, B, 4 * H}, projected);
  Tensor cells = new_tensor({T, B, H}, projected);
  if (T == 0 || B == 0) return {output, hx.clone(), cx.clone(), gates, cells};
  if (H > 0) {
    lstm_sequence_forward_stub(projected.contiguous(), hx.contiguous(), cx.contiguous(), w_hh_t.contiguous(), reverse,
                               output, gates, cells);
  }
  const int64_t last = reverse ? 0 : T - 1;
  return {output, output.select(0, last).clone(), cells.select(0, last).clone(), gates, cells};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> lstm_sequence_backward_cpu(
    const Tensor& grad_output, const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& hx, const Tensor& cx,
    const Tensor& w_hh_t, const Tensor& output, const Tensor& gates, const Tensor& cells, bool reverse) {
  const int64_t T = gates.size(0), B = gates.size(1), H = hx.size(1);
  KILN_CHECK(std::equal(grad_output.sizes().begin(), grad_output.sizes().end(), output.sizes().begin(),
                        output.sizes().end()), "_lstm_sequence_backward: grad_output ", grad_output.sizes(),
             " does not match the output ", output.sizes());
  Tensor grad_gates = new_tensor({T, B, 4 * H}, gates);
  Tensor grad_hx = grad_hy.contiguous().clone();  // carried back through the steps
  Tensor grad_cx = grad_cy.contiguous().clone();
  Tensor grad_w = zeros({H, 4 * H}, gates.dtype(), gates.device());
  if (T == 0 || B == 0 || H == 0 || gates.impl()->is_meta()) {  // meta: the check above is the meta function
    if (T == 0 || B == 0) grad_gates.zero_();
    return {grad_gates, grad_hx, grad_cx, grad_w};
  }
  const Tensor out = output.contiguous();
  lstm_sequence_backward_stub(grad_output.contiguous(), cx.contiguous(), w_hh_t.contiguous(), gates.contiguous(),
                              cells.contiguous(), reverse, grad_gates, grad_hx, grad_cx);
  // W_hh^T's gradient: sum over steps of h_prev^T dgates. The previous state of the steps after the first is
  // an output row block (output[0:T-1] forward, output[1:T] reverse); the first step's is hx.
  const Tensor hx_c = hx.contiguous();
  const auto weight_gradient = [&](auto tag) {
    using A = decltype(tag);
    const int64_t rows = (T - 1) * B;
    const A* outs = out.data_ptr<A>();
    const A* dg = grad_gates.data_ptr<A>();
    A* dw = grad_w.data_ptr<A>();
    const A* prev = reverse ? outs + B * H : outs;        // h_prev of steps 1.. (forward) or 0..T-2 (reverse)
    const A* dg_later = reverse ? dg : dg + B * 4 * H;     // their gate gradients
    const A* dg_first = reverse ? dg + (T - 1) * B * 4 * H : dg;
    if (rows > 0) gemm_raw<A>(true, false, H, 4 * H, rows, A(1), prev, H, dg_later, 4 * H, A(0), dw, 4 * H);
    gemm_raw<A>(true, false, H, 4 * H, B, A(1), hx_c.data_ptr<A>(), H, dg_first, 4 * H, A(1), dw, 4 * H);
  };
  if (gates.dtype() == DType::Float64) {
    weight_gradient(double{});
  } else {
    weight_gradient(float{});
  }
  return {grad_gates, grad_hx, grad_cx, grad_w};
}

}  // namespace kiln::native

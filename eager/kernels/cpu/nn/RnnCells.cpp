// The fused pointwise part of one LSTM or GRU step (eager/ops/rnn.yaml), after
// the gate matmuls the module does with linear.
//
// Note [Fused recurrent cells]
// ----------------------------
// Composed of kiln ops, one LSTM step is a dozen ops and nodes (chunk, three
// sigmoids, two tanhs, products and sums), each a pass over [B, 4H] or [B, H]
// and a dispatch; its backward twice that. The fused op reads the gate
// pre-activations once and writes the new state:
//   LSTM  i, f, g, o = sigmoid, sigmoid, tanh, sigmoid of the gate quarters
//         cy = f cx + i g,  hy = o tanh(cy)
//   GRU   r = sigmoid(xr + hr), z = sigmoid(xz + hz), n = tanh(xn + r hn)
//         hy = (1 - z) n + z hx
// and the backward recomputes the activations from the saved pre-activations
// (no extra buffers). LSTM: dcy = grad_cy + grad_hy o (1 - tanh(cy)^2), then
// di = dcy g i(1-i), df = dcy cx f(1-f), dg = dcy i (1-g^2),
// do = grad_hy tanh(cy) o(1-o), dcx = dcy f. GRU: dn = grad (1-z)(1-n^2),
// dz = grad (hx - n) z(1-z), dr = dn hn r(1-r); the hidden gates' n part is
// dn r, dhx = grad z. Each backward op computes every input's gradient in one
// pass. The backward ops have no derivatives of their own: when a backward
// runs with grad mode on (create_graph=True) the formula helpers in
// eager/autograd/RnnFormulas.h compute the same gradients with differentiable
// kiln ops instead, so a second derivative works (PyTorch's
// _thnn_differentiable_lstm_cell_backward). nn/modules/rnn.py keeps the
// composed cell for float16/bfloat16.
#include <tuple>

#include "eager/core/Error.h"
#include "eager/kernels/cpu/creation/Factories.h"
#include "eager/kernels/cpu/nn/RnnCellStubs.h"
#include "kiln/generated/Functions.h"
#include "kiln/generated/NativeFunctions.h"

namespace kiln::native {

KILN_DEFINE_DISPATCH(lstm_cell_forward_fn, lstm_cell_forward_stub);
KILN_DEFINE_DISPATCH(lstm_cell_backward_fn, lstm_cell_backward_stub);
KILN_DEFINE_DISPATCH(gru_cell_forward_fn, gru_cell_forward_stub);
KILN_DEFINE_DISPATCH(gru_cell_backward_fn, gru_cell_backward_stub);

namespace {

/// A [B, gates * H] gate tensor and a [B, H] state of one float32/float64 dtype.
void check_cell(const char* op, const Tensor& gates, const Tensor& state, int64_t count) {
  KILN_CHECK(gates.dim() == 2 && state.dim() == 2, op, ": expected 2-D gates and state, got ", gates.sizes(), " and ",
             state.sizes());
  KILN_CHECK(gates.size(0) == state.size(0) && gates.size(1) == count * state.size(1), op, ": gates ", gates.sizes(),
             " do not match a state of ", state.sizes(), " (expected [B, ", count, " * H])");
  KILN_CHECK(gates.dtype() == state.dtype(), op, ": gates and state must share a dtype");
  KILN_CHECK_NOT_IMPLEMENTED(state.dtype() == DType::Float32 || state.dtype() == DType::Float64, op,
                             ": not implemented for this dtype (float32 and float64 only)");
}

Tensor new_like(const Tensor& t) { return empty(t.sizes(), t.dtype(), t.device()); }

}  // namespace

std::tuple<Tensor, Tensor> lstm_cell_fused_cpu(const Tensor& gates, const Tensor& cx) {
  check_cell("_lstm_cell_fused", gates, cx, 4);
  const Tensor g = gates.contiguous(), c = cx.contiguous();
  Tensor hy = new_like(c), cy = new_like(c);
  if (c.numel() > 0) lstm_cell_forward_stub(g, c, hy, cy);
  return {hy, cy};
}

std::tuple<Tensor, Tensor> lstm_cell_fused_backward_cpu(const Tensor& grad_hy, const Tensor& grad_cy,
                                                        const Tensor& gates, const Tensor& cx, const Tensor& cy) {
  check_cell("_lstm_cell_fused_backward", gates, cx, 4);
  const Tensor g = gates.contiguous(), c = cx.contiguous(), cn = cy.contiguous();
  const Tensor gh = grad_hy.contiguous(), gc = grad_cy.contiguous();
  Tensor grad_gates = new_like(g), grad_cx = new_like(c);
  if (c.numel() > 0) lstm_cell_backward_stub(gh, gc, g, c, cn, &grad_gates, &grad_cx);
  return {grad_gates, grad_cx};
}

Tensor gru_cell_fused_cpu(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx) {
  check_cell("_gru_cell_fused", input_gates, hx, 3);
  check_cell("_gru_cell_fused", hidden_gates, hx, 3);
  const Tensor x = input_gates.contiguous(), h = hidden_gates.contiguous(), state = hx.contiguous();
  Tensor hy = new_like(state);
  if (state.numel() > 0) gru_cell_forward_stub(x, h, state, hy);
  return hy;
}

std::tuple<Tensor, Tensor, Tensor> gru_cell_fused_backward_cpu(const Tensor& grad_hy, const Tensor& input_gates,
                                                                const Tensor& hidden_gates, const Tensor& hx) {
  check_cell("_gru_cell_fused_backward", input_gates, hx, 3);
  const Tensor x = input_gates.contiguous(), h = hidden_gates.contiguous(), state = hx.contiguous();
  const Tensor g = grad_hy.contiguous();
  Tensor grad_x = new_like(x), grad_h = new_like(x), grad_hx = new_like(state);
  if (state.numel() > 0) gru_cell_backward_stub(g, x, h, state, &grad_x, &grad_h, &grad_hx);
  return {grad_x, grad_h, grad_hx};
}

}  // namespace kiln::native

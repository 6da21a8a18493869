// Backward formulas of the fused recurrent ops (eager/ops/rnn.yaml): the
// fused kernels when the backward runs without grad mode, the same gradients
// from differentiable kiln ops when it runs with it (create_graph=True), so a
// second derivative goes through them. See Note [Fused recurrent cells]
// (eager/kernels/cpu/nn/RnnCells.cpp) for the formulas and Note [Whole-sequence
// LSTM] (eager/kernels/cpu/nn/RnnSequence.cpp) for the sequence op.
#pragma once

#include <tuple>
#include <vector>

#include "eager/autograd/GradMode.h"
#include "kiln/generated/Functions.h"

namespace kiln::autograd::formula {

namespace rnn_detail {

[[nodiscard]] inline Tensor one_minus(const Tensor& x) { return kiln::rsub(x, Scalar(1.0)); }

[[nodiscard]] inline Tensor cat_columns(const std::vector<Tensor>& parts) { return kiln::cat(parts, 1); }

/// d(gates, cx) of one LSTM cell from (grad_hy, grad_cy), in differentiable ops; cy is recomputed.
[[nodiscard]] inline std::tuple<Tensor, Tensor> lstm_cell_composite(const Tensor& grad_hy, const Tensor& grad_cy,
                                                                     const Tensor& gates, const Tensor& cx) {
  const std::vector<Tensor> q = kiln::chunk(gates, 4, 1);
  const Tensor i = kiln::sigmoid(q[0]), f = kiln::sigmoid(q[1]), g = kiln::tanh(q[2]), o = kiln::sigmoid(q[3]);
  const Tensor tc = kiln::tanh(kiln::add(kiln::mul(f, cx), kiln::mul(i, g)));
  const Tensor dcy = kiln::add(grad_cy, kiln::mul(kiln::mul(grad_hy, o), one_minus(kiln::mul(tc, tc))));
  const Tensor d_i = kiln::mul(kiln::mul(dcy, g), kiln::mul(i, one_minus(i)));
  const Tensor d_f = kiln::mul(kiln::mul(dcy, cx), kiln::mul(f, one_minus(f)));
  const Tensor d_g = kiln::mul(kiln::mul(dcy, i), one_minus(kiln::mul(g, g)));
  const Tensor d_o = kiln::mul(kiln::mul(grad_hy, tc), kiln::mul(o, one_minus(o)));
  return {cat_columns({d_i, d_f, d_g, d_o}), kiln::mul(dcy, f)};
}

}  // namespace rnn_detail

/// d _lstm_cell_fused / d (gates, cx).
[[nodiscard]] inline std::tuple<Tensor, Tensor> lstm_cell_backward(const Tensor& grad_hy, const Tensor& grad_cy,
                                                                    const Tensor& gates, const Tensor& cx,
                                                                    const Tensor& cy) {
  if (GradMode::is_enabled()) return rnn_detail::lstm_cell_composite(grad_hy, grad_cy, gates, cx);
  return kiln::_lstm_cell_fused_backward(grad_hy, grad_cy, gates, cx, cy);
}

/// d _gru_cell_fused / d (input_gates, hidden_gates, hx).
[[nodiscard]] inline std::tuple<Tensor, Tensor, Tensor> gru_cell_backward(const Tensor& grad, const Tensor& input_gates,
                                                                           const Tensor& hidden_gates,
                                                                           const Tensor& hx) {
  if (!GradMode::is_enabled()) return kiln::_gru_cell_fused_backward(grad, input_gates, hidden_gates, hx);
  using rnn_detail::one_minus;
  const std::vector<Tensor> x = kiln::chunk(input_gates, 3, 1), h = kiln::chunk(hidden_gates, 3, 1);
  const Tensor r = kiln::sigmoid(kiln::add(x[0], h[0])), z = kiln::sigmoid(kiln::add(x[1], h[1]));
  const Tensor n = kiln::tanh(kiln::add(x[2], kiln::mul(r, h[2])));
  const Tensor dn = kiln::mul(kiln::mul(grad, one_minus(z)), one_minus(kiln::mul(n, n)));
  const Tensor dz = kiln::mul(kiln::mul(grad, kiln::sub(hx, n)), kiln::mul(z, one_minus(z)));
  const Tensor dr = kiln::mul(kiln::mul(dn, h[2]), kiln::mul(r, one_minus(r)));
  return {rnn_detail::cat_columns({dr, dz, dn}), rnn_detail::cat_columns({dr, dz, kiln::mul(dn, r)}), kiln::mul(grad, z)};
}

/// d _lstm_sequence / d (projected, hx, cx, w_hh_t). With grad mode on, the forward is recomputed from the
/// inputs in differentiable ops and the steps walked back with them.
[[nodiscard]] inline std::tuple<Tensor, Tensor, Tensor, Tensor> lstm_sequence_backward(
    const Tensor& grad_output, const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& hx, const Tensor& cx,
    const Tensor& w_hh_t, const Tensor& projected, const Tensor& output, const Tensor& gates, const Tensor& cells,
    bool reverse) {
  if (!GradMode::is_enabled()) {
    return kiln::_lstm_sequence_backward(grad_output, grad_hy, grad_cy, hx, cx, w_hh_t, output, gates, cells,
                                         reverse);
  }
  const int64_t T = projected.size(0);
  const auto time = [&](int64_t s) { return reverse ? T - 1 - s : s; };
  std::vector<Tensor> step_gates(T), h_prev(T), c_prev(T);
  Tensor h = hx, c = cx;
  for (int64_t s = 0; s < T; ++s) {
    const Tensor g = kiln::add(kiln::select(projected, 0, time(s)), kiln::mm(h, w_hh_t));
    const std::vector<Tensor> q = kiln::chunk(g, 4, 1);
    step_gates[s] = g;
    h_prev[s] = h;
    c_prev[s] = c;
    c = kiln::add(kiln::mul(kiln::sigmoid(q[1]), c), kiln::mul(kiln::sigmoid(q[0]), kiln::tanh(q[2])));
    h = kiln::mul(kiln::sigmoid(q[3]), kiln::tanh(c));
  }
  std::vector<Tensor> grad_steps(T);
  Tensor dh = grad_hy, dc = grad_cy, dw = kiln::zeros_like(w_hh_t);
  const Tensor w_hh = kiln::t(w_hh_t);
  for (int64_t s = T - 1; s >= 0; --s) {
    const Tensor dh_t = kiln::add(kiln::select(grad_output, 0, time(s)), dh);
    auto [d_gates, d_c] = rnn_detail::lstm_cell_composite(dh_t, dc, step_gates[s], c_prev[s]);
    grad_steps[time(s)] = d_gates;
    dc = d_c;
    dh = kiln::mm(d_gates, w_hh);
    dw = kiln::add(dw, kiln::mm(kiln::t(h_prev[s]), d_gates));
  }
  if (T == 0) return {kiln::zeros_like(projected), dh, dc, dw};
  return {kiln::stack(grad_steps, 0), dh, dc, dw};
}

}  // namespace kiln::autograd::formula

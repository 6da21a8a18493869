// Dispatch stubs of the fused recurrent-cell loops (per_capability/RnnCellKernel.cpp):
// the pointwise part of one LSTM or GRU step, after the gate matmuls. Every
// tensor is contiguous float32 or float64, [B, k*H] or [B, H]; see
// Note [Fused recurrent cells] (RnnCells.cpp).
#pragma once

#include "eager/kernels/cpu/CpuCapability.h"
#include "eager/ops/Tensor.h"

namespace kiln::native {

/// LSTM: gates [B, 4H] (input, forget, cell, output pre-activations), cx [B, H] -> hy, cy.
using lstm_cell_forward_fn = void (*)(const Tensor& gates, const Tensor& cx, const Tensor& hy, const Tensor& cy);
/// LSTM backward from grad_hy, grad_cy: grad_gates [B, 4H] when defined, grad_cx [B, H] when defined.
using lstm_cell_backward_fn = void (*)(const Tensor& grad_hy, const Tensor& grad_cy, const Tensor& gates,
                                       const Tensor& cx, const Tensor& cy, const Tensor* grad_gates,
                                       const Tensor* grad_cx);
/// GRU: input gates and hidden gates [B, 3H] (reset, update, new), hx [B, H] -> hy.
using gru_cell_forward_fn = void (*)(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx,
                                     const Tensor& hy);
/// GRU backward from grad_hy into whichever of grad_input_gates, grad_hidden_gates [B, 3H] and grad_hx are defined.
using gru_cell_backward_fn = void (*)(const Tensor& grad_hy, const Tensor& input_gates, const Tensor& hidden_gates,
                                      const Tensor& hx, const Tensor* grad_input_gates,
                                      const Tensor* grad_hidden_gates, const Tensor* grad_hx);

/// A whole LSTM layer direction (Note [Whole-sequence LSTM], RnnSequence.cpp): projected [T, B, 4H], hx and cx
/// [B, H], w_hh_t [H, 4H] -> output [T, B, H], the pre-activation gates [T, B, 4H] and the cells [T, B, H].
using lstm_sequence_forward_fn = void (*)(const Tensor& projected, const Tensor& hx, const Tensor& cx,
                                          const Tensor& w_hh_t, bool reverse, const Tensor& output,
                                          const Tensor& gates, const Tensor& cells);
/// Its backward through the steps: grad_gates [T, B, 4H], and grad_hx, grad_cx [B, H] (which arrive holding
/// grad_hy and grad_cy). W_hh's gradient is one product afterwards (RnnSequence.cpp).
using lstm_sequence_backward_fn = void (*)(const Tensor& grad_output, const Tensor& cx, const Tensor& w_hh_t,
                                           const Tensor& gates, const Tensor& cells, bool reverse,
                                           const Tensor& grad_gates, const Tensor& grad_hx, const Tensor& grad_cx);

KILN_DECLARE_DISPATCH(lstm_cell_forward_fn, lstm_cell_forward_stub);
KILN_DECLARE_DISPATCH(lstm_cell_backward_fn, lstm_cell_backward_stub);
KILN_DECLARE_DISPATCH(gru_cell_forward_fn, gru_cell_forward_stub);
KILN_DECLARE_DISPATCH(gru_cell_backward_fn, gru_cell_backward_stub);
KILN_DECLARE_DISPATCH(lstm_sequence_forward_fn, lstm_sequence_forward_stub);
KILN_DECLARE_DISPATCH(lstm_sequence_backward_fn, lstm_sequence_backward_stub);

}  // namespace kiln::native

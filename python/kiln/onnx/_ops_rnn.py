"""Converters: kiln's fused recurrent ops (eager/ops/rnn.yaml): a whole LSTM
layer direction as one ONNX LSTM, and the fused LSTM/GRU cell steps as their
gate arithmetic (kiln unrolls GRU and RNN layers into steps at capture)."""

from __future__ import annotations

import numpy as np

from kiln.onnx._operands import squeeze, unsqueeze
from kiln.onnx._registry import converts


def _gate_permutation(hidden: int) -> list:
    """Rows of kiln's (torch's) LSTM gate order i, f, g, o in ONNX's order i, o, f, c."""
    i, f, g, o = (list(range(k * hidden, (k + 1) * hidden)) for k in range(4))
    return i + o + f + g


@converts("kiln::_lstm_sequence", args="projected hx cx w_hh_t reverse")
def _lstm_sequence(cx, a):
    """One direction of one layer: ``projected`` [T, B, 4H] is x W_ih^T + b_ih + b_hh already, so it is ONNX
    LSTM's input X with W the identity (gate rows permuted to ONNX's order) and R = W_hh (permuted)."""
    t = a.out_dtype()
    hidden = a.sizes("hx")[-1]
    perm = cx.b.constant(np.asarray(_gate_permutation(hidden), dtype=np.int64), "int64")
    x = cx.b.op("Gather", [a.tensor("projected"), perm], axis=2)
    w = cx.b.constant(np.eye(4 * hidden).reshape(1, 4 * hidden, 4 * hidden), t)
    w_hh = cx.b.op("Transpose", [a.tensor("w_hh_t")], perm=[1, 0])
    r = unsqueeze(cx, cx.b.op("Gather", [w_hh, perm], axis=0), [0])
    h0 = unsqueeze(cx, a.tensor("hx"), [0])
    c0 = unsqueeze(cx, a.tensor("cx"), [0])
    y, yh, yc = cx.b.op("LSTM", [x, w, r, "", "", h0, c0], outputs=3, hidden_size=hidden,
                        direction="reverse" if a.value("reverse") else "forward")
    # Y is [T, num_directions, B, H]; Y_h / Y_c are [num_directions, B, H]. The gates and cells outputs are the
    # backward's workspace: no ONNX form (a use of them fails to resolve).
    return [squeeze(cx, y, [1]), squeeze(cx, yh, [0]), squeeze(cx, yc, [0]), None, None]


def _chunks(cx, x: str, count: int, hidden: int) -> list:
    return cx.b.op("Split", [x, cx.b.ints([hidden] * count)], outputs=count, axis=-1)


@converts("kiln::_lstm_cell_fused", args="gates cx")
def _lstm_cell(cx, a):
    """(hy, cy) of one step from the summed gate pre-activations [B, 4H] (order i, f, g, o) and the cell."""
    hidden = a.sizes("cx")[-1]
    i, f, g, o = _chunks(cx, a.tensor("gates"), 4, hidden)
    sig = lambda v: cx.b.op("Sigmoid", [v])  # noqa: E731
    c = cx.b.op("Add", [cx.b.op("Mul", [sig(f), a.tensor("cx")]),
                        cx.b.op("Mul", [sig(i), cx.b.op("Tanh", [g])])])
    h = cx.b.op("Mul", [sig(o), cx.b.op("Tanh", [c])])
    return [h, c]


@converts("kiln::_gru_cell_fused", args="input_gates hidden_gates hx")
def _gru_cell(cx, a):
    """h' = (1 - z) n + z h with r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z), n = tanh(x_n + r h_n)."""
    t = a.out_dtype()
    hidden = a.sizes("hx")[-1]
    xr, xz, xn = _chunks(cx, a.tensor("input_gates"), 3, hidden)
    hr, hz, hn = _chunks(cx, a.tensor("hidden_gates"), 3, hidden)
    r = cx.b.op("Sigmoid", [cx.b.op("Add", [xr, hr])])
    z = cx.b.op("Sigmoid", [cx.b.op("Add", [xz, hz])])
    n = cx.b.op("Tanh", [cx.b.op("Add", [xn, cx.b.op("Mul", [r, hn])])])
    one_minus_z = cx.b.op("Sub", [cx.b.constant(1.0, t), z])
    return cx.b.op("Add", [cx.b.op("Mul", [one_minus_z, n]), cx.b.op("Mul", [z, a.tensor("hx")])])

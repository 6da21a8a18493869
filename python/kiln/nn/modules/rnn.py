"""RNN, LSTM and GRU (multi-layer, bidirectional, batch_first, inter-layer
dropout) and their cells, with torch's parameter names, shapes, gate orders
(LSTM: input, forget, cell, output; GRU: reset, update, new) and
initialisation (uniform in +-1/sqrt(hidden_size)), LSTM's proj_size, and
PackedSequence inputs (nn/utils/rnn.py). The input projection of a whole
sequence is one matmul per layer and direction; the recurrence is a loop over
time steps of kiln ops, so autograd differentiates it like any other graph; the pointwise part of an LSTM or GRU step is one fused op
(Note [Fused recurrent cells], eager/kernels/cpu/nn/RnnCells.cpp), and an LSTM layer over a fixed batch is
one op for all its steps (Note [Whole-sequence LSTM], eager/kernels/cpu/nn/RnnSequence.cpp). A packed sequence runs on a shrinking
batch: step t updates the first batch_sizes[t] (longest) sequences and leaves
the others' state as it was, so each sequence's final state is its own last
step's (the reverse direction starts each sequence from h0 at its last step)."""

from __future__ import annotations

import math

from kiln import _C
from kiln.nn import functional as F
from kiln.nn import init
from kiln.nn.modules._factory import empty_parameter, factory_kwargs
from kiln.nn.modules.module import Module
from kiln.nn.utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _fused_dtypes():
    return (_C.float32, _C.float64)


def _f():
    return _C._functions


def _cell_step(mode, x_proj, h, c, w_hh_t, b_hh, w_hr=None):
    """One time step: x_proj = x W_ih^T + b_ih (precomputed), w_hh_t = W_hh^T; returns (h, c)
    (LSTM's h projected by w_hr when it has proj_size)."""
    kiln = _f()
    fused = x_proj.dtype in _fused_dtypes() and x_proj.dim() == 2
    if mode == "LSTM" and fused:  # Note [Fused recurrent cells] (eager/kernels/cpu/nn/RnnCells.cpp)
        gates = kiln.addmm(x_proj if b_hh is None else x_proj + b_hh, h, w_hh_t)
        h, c = kiln._lstm_cell_fused(gates, c)
        return (h if w_hr is None else F.linear(h, w_hr)), c
    h_proj = kiln.matmul(h, w_hh_t) if b_hh is None else kiln.matmul(h, w_hh_t) + b_hh
    if mode == "GRU" and fused:
        return kiln._gru_cell_fused(x_proj, h_proj, h), None
    if mode == "LSTM":
        i, f, g, o = (x_proj + h_proj).chunk(4, -1)
        c = kiln.sigmoid(f) * c + kiln.sigmoid(i) * kiln.tanh(g)
        h = kiln.sigmoid(o) * kiln.tanh(c)
        return (h if w_hr is None else F.linear(h, w_hr)), c
    if mode == "GRU":
        xr, xz, xn = x_proj.chunk(3, -1)
        hr, hz, hn = h_proj.chunk(3, -1)
        r = kiln.sigmoid(xr + hr)
        z = kiln.sigmoid(xz + hz)
        n = kiln.tanh(xn + r * hn)
        return (1 - z) * n + z * h, None
    pre = x_proj + h_proj
    return (kiln.tanh(pre) if mode == "RNN_TANH" else kiln.relu(pre)), None


def _whole_sequence(mode, projected, packed, w_hr):
    """Whether a layer direction runs as one _lstm_sequence op (eager/kernels/cpu/nn/RnnSequence.cpp): LSTM on
    the CPU in float32/float64 over a fixed batch, without proj_size."""
    return (mode == "LSTM" and not packed and w_hr is None and projected.dtype in _fused_dtypes()
            and projected.device.type == "cpu")


def _steps(projected, batch_sizes, packed):
    """The per-step slices of a layer's projected input: rows of the packed data, or time steps.
    One unbind / split (whose backward is one stack / cat), not a select per step (whose
    backwards would each write a zero-filled copy of the whole sequence)."""
    if not packed:
        return list(projected.unbind(0))
    return list(projected.split(batch_sizes, 0))


def _keep_rest(new, old):
    """new's rows, then old's rows past them (the sequences that ended keep their state)."""
    if old is None or new.shape[0] == old.shape[0]:
        return new
    return _f().cat([new, old[new.shape[0]:]], 0)


def _run_forward(mode, steps, batch_sizes, h, c, w_hh_t, b_hh, w_hr):
    """Step 0 to T-1; returns (outputs per step, final h, final c) over the whole batch."""
    outputs = []
    for step, size in zip(steps, batch_sizes):
        if size != h.shape[0]:  # a packed batch shrinking: the first `size` sequences go on
            h_in, c_in = h[:size], (c[:size] if c is not None else None)
        else:
            h_in, c_in = h, c
        h_new, c_new = _cell_step(mode, step, h_in, c_in, w_hh_t, b_hh, w_hr)
        outputs.append(h_new)
        h = _keep_rest(h_new, h)
        c = _keep_rest(c_new, c) if c is not None else None
    return outputs, h, c


def _run_reverse(mode, steps, batch_sizes, h0, c0, w_hh_t, b_hh, w_hr):
    """Step T-1 down to 0; a sequence joins (from h0) at its own last step."""
    kiln = _f()
    outputs = [None] * len(steps)
    h = c = None
    for t in range(len(steps) - 1, -1, -1):
        size = batch_sizes[t]
        joined = 0 if h is None else h.shape[0]
        if size > joined:  # sequences whose last step is t start here
            h = h0[:size] if h is None else kiln.cat([h, h0[joined:size]], 0)
            if c0 is not None:
                c = c0[:size] if c is None else kiln.cat([c, c0[joined:size]], 0)
        h, c = _cell_step(mode, steps[t], h, c, w_hh_t, b_hh, w_hr)
        outputs[t] = h
    if h is None:
        return outputs, h0, c0
    return outputs, h, c


class RNNBase(Module):
    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None) -> None:
        kwargs = factory_kwargs(device, dtype)
        super().__init__()
        if not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        directions = 2 if bidirectional else 1
        gates = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                names = [f"weight_ih{suffix}", f"weight_hh{suffix}"]
                setattr(self, names[0], empty_parameter((gates, layer_input), kwargs))
                setattr(self, names[1], empty_parameter((gates, real_hidden), kwargs))
                if bias:
                    names += [f"bias_ih{suffix}", f"bias_hh{suffix}"]
                    setattr(self, f"bias_ih{suffix}", empty_parameter((gates,), kwargs))
                    setattr(self, f"bias_hh{suffix}", empty_parameter((gates,), kwargs))
                if proj_size > 0:
                    names.append(f"weight_hr{suffix}")
                    setattr(self, f"weight_hr{suffix}", empty_parameter((proj_size, hidden_size), kwargs))
                self._flat_weights_names.extend(names)
        self.reset_parameters()

    def flatten_parameters(self) -> None:
        """A no-op, as torch's is off cuDNN: kiln keeps no fused weight buffer to compact."""
        return None

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _weights(self, layer, direction):
        suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
        get = lambda name: getattr(self, name + suffix) if self.bias or "weight" in name else None  # noqa: E731
        w_hr = getattr(self, "weight_hr" + suffix) if self.proj_size > 0 else None
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), w_hr

    def _run(self, input, hx, cx):
        kiln = _f()
        packed = isinstance(input, PackedSequence)
        if packed:
            batch_sizes = [int(v) for v in input.batch_sizes.tolist()]
            x, batched, batch = input.data, True, batch_sizes[0]
            if x.dim() != 2:
                raise ValueError(f"{type(self).__name__}: Expected packed input data to be 2D, got {x.dim()}D")
        else:
            batched = input.dim() == 3
            if input.dim() not in (2, 3):
                raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
            x = input if batched else input.unsqueeze(1)  # (T, B, F) or (B, T, F)
            if self.batch_first and batched:
                x = x.transpose(0, 1)
            batch = x.shape[1]
            batch_sizes = [batch] * x.shape[0]
            if not batch_sizes:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{x.shape[-1]}")
        directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size

        def initial(state, size):
            shape = (self.num_layers * directions, batch, size)
            if state is None:
                return kiln.zeros(shape, dtype=x.dtype, device=x.device)
            s = state if batched else state.unsqueeze(1)
            if tuple(s.shape) != shape:
                raise RuntimeError(f"Expected hidden size {shape}, got {list(s.shape)}")
            if packed and input.sorted_indices is not None:  # the caller's batch order -> sorted
                s = s.index_select(1, input.sorted_indices)
            return s

        h0 = initial(hx, real_hidden)
        c0 = initial(cx, self.hidden_size) if self.mode == "LSTM" else None
        h_last, c_last = [], []
        layer_input = x
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._weights(layer, direction)
                index = layer * directions + direction
                projected = F.linear(layer_input, w_ih, b_ih)  # every step at once
                if self.mode != "GRU" and b_hh is not None:  # (GRU's b_hh sits inside r * (h W_hn + b_hn))
                    projected, b_hh = projected + b_hh, None
                # W_hh^T laid out once for every step's matmul (a transposed operand is slower for small B)
                w_hh_t = w_hh.t().contiguous()
                if _whole_sequence(self.mode, projected, packed, w_hr):  # Note [Whole-sequence LSTM]
                    out, h, c = kiln._lstm_sequence(projected, h0[index], c0[index], w_hh_t, direction == 1)[:3]
                    outputs.append(out)
                    h_last.append(h)
                    c_last.append(c)
                    continue
                steps = _steps(projected, batch_sizes, packed)
                run = _run_reverse if direction == 1 else _run_forward
                step_outputs, h, c = run(self.mode, steps, batch_sizes, h0[index],
                                         c0[index] if c0 is not None else None, w_hh_t, b_hh, w_hr)
                if not step_outputs:
                    outputs.append(kiln.zeros((0, batch, real_hidden), dtype=x.dtype, device=x.device))
                else:
                    outputs.append(kiln.cat(step_outputs, 0) if packed else kiln.stack(step_outputs, 0))
                h_last.append(h)
                c_last.append(c)
            layer_input = outputs[0] if directions == 1 else kiln.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        output = layer_input
        h_n = kiln.stack(h_last, 0)
        c_n = kiln.stack(c_last, 0) if self.mode == "LSTM" else None
        if packed:
            if input.unsorted_indices is not None:  # sorted -> the caller's batch order
                h_n = h_n.index_select(1, input.unsorted_indices)
                c_n = c_n.index_select(1, input.unsorted_indices) if c_n is not None else None
            return input._replace(data=output), h_n, c_n
        if self.batch_first and batched:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(1)
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if c_n is not None else None
        return output, h_n, c_n

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    def __init__(self, *args, nonlinearity: str = "tanh", **kwargs) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)

    def forward(self, input, hx=None):
        output, h_n, _ = self._run(input, hx, None)
        return output, h_n


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        h0, c0 = hx if hx is not None else (None, None)
        output, h_n, c_n = self._run(input, h0, c0)
        return output, (h_n, c_n)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        output, h_n, _ = self._run(input, hx, None)
        return output, h_n


class RNNCellBase(Module):
    def __init__(self, input_size: int, hidden_size: int, bias: bool, gates: int, device=None, dtype=None) -> None:
        kwargs = factory_kwargs(device, dtype)
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = empty_parameter((gates * hidden_size, input_size), kwargs)
        self.weight_hh = empty_parameter((gates * hidden_size, hidden_size), kwargs)
        if bias:
            self.bias_ih = empty_parameter((gates * hidden_size,), kwargs)
            self.bias_hh = empty_parameter((gates * hidden_size,), kwargs)
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _step(self, mode, input, h, c):
        kiln = _f()
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if h is None:
            h = kiln.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
        elif not batched:
            h = h.unsqueeze(0)
        if mode == "LSTM":
            c = kiln.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device) if c is None else (
                c if batched else c.unsqueeze(0))
        h, c = _cell_step(mode, F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh.t(), self.bias_hh)
        if not batched:
            h = h.squeeze(0)
            c = c.squeeze(0) if c is not None else None
        return h, c


class RNNCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device=None,
                 dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return self._step("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", input, hx, None)[0]


class LSTMCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        h, c = hx if hx is not None else (None, None)
        return self._step("LSTM", input, h, c)


class GRUCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        return self._step("GRU", input, hx, None)[0]

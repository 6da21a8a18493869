"""RNN, LSTM, GRU and their cells (python/kiln/nn/modules/rnn.py) against
torch with the same parameters: outputs, final states and every gradient,
over layers, directions, batch_first, unbatched inputs and given initial
states; parameter names, shapes and reprs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import raised


def _copy_parameters(kmod, tmod):
    knames = [n for n, _ in kmod.named_parameters()]
    tnames = [n for n, _ in tmod.named_parameters()]
    assert knames == tnames
    for name, tp in tmod.named_parameters():
        kp = dict(kmod.named_parameters())[name]
        assert tuple(kp.shape) == tuple(tp.shape)
        kp.data.copy_(kiln.from_numpy(tp.detach().numpy().copy()))


def _data(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


CASES = [
    ("LSTM", {"num_layers": 2}, (5, 3, 4), False),
    ("LSTM", {"bidirectional": True, "batch_first": True}, (3, 5, 4), True),
    ("LSTM", {"bias": False}, (5, 4), False),
    ("GRU", {"num_layers": 2, "bidirectional": True}, (4, 2, 4), True),
    ("GRU", {"batch_first": True}, (2, 6, 4), False),
    ("RNN", {"nonlinearity": "relu", "num_layers": 3}, (4, 2, 4), True),
    ("RNN", {}, (3, 4), True),
]


@pytest.mark.parametrize("name, kwargs, shape, with_state", CASES)
def test_recurrent_layers_match_torch(name, kwargs, shape, with_state):
    tmod = getattr(torch.nn, name)(4, 3, **kwargs).double()
    kmod = getattr(kiln.nn, name)(4, 3, **kwargs).double()
    assert repr(kmod) == repr(tmod)
    _copy_parameters(kmod, tmod)
    x = _data(shape, 1)
    directions = 2 if kwargs.get("bidirectional") else 1
    layers = kwargs.get("num_layers", 1)
    batched = len(shape) == 3
    batch = (shape[0] if kwargs.get("batch_first") else shape[1]) if batched else None
    state_shape = (layers * directions, batch, 3) if batched else (layers * directions, 3)
    results = []
    for L, mod in ((kiln, kmod), (torch, tmod)):
        xt = L.tensor(x, requires_grad=True)
        state = None
        leaves = [xt]
        if with_state:
            h0 = L.tensor(_data(state_shape, 2), requires_grad=True)
            leaves.append(h0)
            if name == "LSTM":
                c0 = L.tensor(_data(state_shape, 3), requires_grad=True)
                leaves.append(c0)
                state = (h0, c0)
            else:
                state = h0
        out, final = mod(xt, state) if state is not None else mod(xt)
        finals = list(final) if isinstance(final, tuple) else [final]
        total = sum((o * L.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)))).sum()
                    for o in [out] + finals)
        grads = L.autograd.grad(total, leaves + list(mod.parameters()))
        results.append((out, finals, grads))
    (kout, kfinals, kgrads), (tout, tfinals, tgrads) = results
    assert_matches(kout, tout)
    for k, t in zip(kfinals, tfinals):
        assert_matches(k, t)
    for k, t in zip(kgrads, tgrads):
        assert_matches(k, t)


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(name, batched):
    tmod = getattr(torch.nn, name)(4, 3).double()
    kmod = getattr(kiln.nn, name)(4, 3).double()
    assert repr(kmod) == repr(tmod)
    _copy_parameters(kmod, tmod)
    x = _data((2, 4) if batched else (4,), 5)
    h = _data((2, 3) if batched else (3,), 6)
    outs = []
    for L, mod in ((kiln, kmod), (torch, tmod)):
        xt, ht = L.tensor(x, requires_grad=True), L.tensor(h, requires_grad=True)
        state = (ht, ht * 0.5) if name == "LSTMCell" else ht
        out = mod(xt, state)
        out = out if isinstance(out, tuple) else (out,)
        total = sum((o * L.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)))).sum() for o in out)
        outs.append((out, L.autograd.grad(total, [xt, ht] + list(mod.parameters()))))
    for k, t in zip(outs[0][0], outs[1][0]):
        assert_matches(k, t)
    for k, t in zip(outs[0][1], outs[1][1]):
        assert_matches(k, t)
    assert_matches(kmod(kiln.tensor(x))[0] if name == "LSTMCell" else kmod(kiln.tensor(x)),
                   tmod(torch.tensor(x))[0] if name == "LSTMCell" else tmod(torch.tensor(x)))


def test_dropout_between_layers_only_in_training():
    m = kiln.nn.LSTM(4, 3, num_layers=2, dropout=0.5)
    x = kiln.randn(5, 2, 4)
    m.eval()
    a, _ = m(x)
    b, _ = m(x)
    assert kiln.equal(a, b)
    m.train()
    kiln.manual_seed(0)
    c, _ = m(x)
    kiln.manual_seed(1)
    d, _ = m(x)
    assert not kiln.equal(c, d)


ERRORS = [
    ("input_size", lambda L: L.nn.GRU(4, 3)(L.ones(2, 1, 5))),
    ("state_shape", lambda L: L.nn.RNN(4, 3)(L.ones(2, 1, 4), L.ones(2, 1, 3))),
    ("dropout_range", lambda L: L.nn.LSTM(4, 3, dropout=1.5)),
    ("nonlinearity", lambda L: L.nn.RNN(4, 3, nonlinearity="sigmoid")),
]


@pytest.mark.parametrize("name, fn", ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_match_torch(name, fn):
    assert_same_failure(raised(lambda: fn(kiln)), raised(lambda: fn(torch)), message=name in ("dropout_range",
                                                                                               "nonlinearity"))


@pytest.mark.parametrize("name, kwargs, shape", [
    ("LSTM", {"bidirectional": True}, (4, 3, 4)),        # the whole-sequence op, both directions
    ("LSTM", {"proj_size": 2}, (4, 3, 4)),               # the per-step loop with the fused cell
    ("GRU", {}, (4, 3, 4)),                              # the fused GRU cell
])
def test_second_derivatives_through_the_fused_recurrent_ops(name, kwargs, shape):
    """create_graph=True through the fused ops: the gradient of a function of the input gradient reaches
    the weights, as torch's does."""
    tmod = getattr(torch.nn, name)(4, 3, **kwargs).double()
    kmod = getattr(kiln.nn, name)(4, 3, **kwargs).double()
    _copy_parameters(kmod, tmod)
    x = _data(shape, 4)
    results = []
    for L, mod in ((kiln, kmod), (torch, tmod)):
        xt = L.tensor(x, requires_grad=True)
        out, _ = mod(xt)
        (gx,) = L.autograd.grad((out * out).sum(), xt, create_graph=True)
        grads = L.autograd.grad((gx * gx).sum(), [xt] + list(mod.parameters()))
        results.append((gx, grads))
    (kgx, kgrads), (tgx, tgrads) = results
    assert_matches(kgx, tgx)
    for k, t in zip(kgrads, tgrads):
        assert_matches(k, t)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("steps, batch", [(0, 3), (1, 3), (7, 1), (5, 0)])
def test_whole_sequence_lstm_edge_sizes_match_torch(dtype, steps, batch):
    """No steps, one step, one sequence and an empty batch through the whole-sequence op."""
    tmod = torch.nn.LSTM(4, 3).to(getattr(torch, dtype))
    kmod = kiln.nn.LSTM(4, 3).to(getattr(kiln, dtype))
    _copy_parameters(kmod, tmod)
    x = _data((steps, batch, 4), 5).astype(dtype)
    h0, c0 = _data((1, batch, 3), 6).astype(dtype), _data((1, batch, 3), 7).astype(dtype)
    results = []
    for L, mod in ((kiln, kmod), (torch, tmod)):
        try:
            leaves = [L.tensor(v, requires_grad=True) for v in (x, h0, c0)]
            out, (h, c) = mod(leaves[0], (leaves[1], leaves[2]))
        except Exception as error:  # torch refuses some empty shapes; kiln must refuse them the same way
            results.append(error)
            continue
        total = (out * 2).sum() + (h * 3).sum() + (c * 5).sum()
        grads = L.autograd.grad(total, leaves + list(mod.parameters()), allow_unused=True)
        results.append((out, h, c, grads))
    if isinstance(results[1], Exception):
        assert_same_failure(results[0] if isinstance(results[0], Exception) else None, results[1], message=False)
        return
    assert not isinstance(results[0], Exception), results[0]
    for k, t in zip(results[0][:3], results[1][:3]):
        assert_matches(k, t)
    for k, t in zip(results[0][3], results[1][3]):
        if t is None:
            assert k is None or not k.abs().sum().item()
        else:
            assert_matches(k, t)


def test_whole_sequence_lstm_rejects_bad_operands():
    run = kiln._C._functions._lstm_sequence
    z = kiln.zeros
    with pytest.raises(RuntimeError, match=r"_lstm_sequence: projected input \[4, 3, 7\] does not match H = 2"):
        run(z(4, 3, 7), z(3, 2), z(3, 2), z(2, 8), False)
    with pytest.raises(RuntimeError, match=r"_lstm_sequence: expected cx of size \[3, 2\], got \[2, 2\]"):
        run(z(4, 3, 8), z(3, 2), z(2, 2), z(2, 8), False)
    with pytest.raises(RuntimeError, match=r"_lstm_sequence: expected w_hh_t of size \[2, 8\], got \[8, 2\]"):
        run(z(4, 3, 8), z(3, 2), z(3, 2), z(8, 2), False)
    with pytest.raises(NotImplementedError, match="_lstm_sequence: not implemented for this dtype"):
        run(z(4, 3, 8, dtype=kiln.float16), z(3, 2, dtype=kiln.float16), z(3, 2, dtype=kiln.float16),
            z(2, 8, dtype=kiln.float16), False)

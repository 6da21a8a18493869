"""nn.utils.rnn (PackedSequence, pack_padded_sequence, pad_packed_sequence,
pack_sequence, pad_sequence, unpad/unpack_sequence) and the recurrent layers
on packed input and with LSTM's proj_size, against torch with the same
parameters: packed data and bookkeeping, outputs, final states (in the
caller's batch order) and every gradient; torch's errors for bad lengths."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.nn.utils import rnn as trnn

import kiln
from kiln.nn.utils import rnn as krnn
from test_nn_rnn import _copy_parameters
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import raised


def _sequences(lengths, features=4, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal((n, features)) for n in lengths]
    return ([kiln.tensor(a, requires_grad=True) for a in arrays], [torch.tensor(a, requires_grad=True) for a in arrays])


def _assert_packed(k, t):
    assert_matches(k.data, t.data)
    assert_matches(k.batch_sizes, t.batch_sizes, exact=True)
    for name in ("sorted_indices", "unsorted_indices"):
        kv, tv = getattr(k, name), getattr(t, name)
        assert (kv is None) == (tv is None), name
        if tv is not None:
            assert_matches(kv, tv, exact=True)


@pytest.mark.parametrize("lengths,enforce_sorted", [([5, 3, 1], True), ([3, 5, 1, 5], False), ([2], True)])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_pad_round_trip(lengths, enforce_sorted, batch_first):
    ks, ts = _sequences(lengths)
    kp, tp = krnn.pad_sequence(ks, batch_first=batch_first), trnn.pad_sequence(ts, batch_first=batch_first)
    assert_matches(kp, tp)
    k_packed = krnn.pack_padded_sequence(kp, kiln.tensor(lengths), batch_first=batch_first,
                                         enforce_sorted=enforce_sorted)
    t_packed = trnn.pack_padded_sequence(tp, torch.tensor(lengths), batch_first=batch_first,
                                         enforce_sorted=enforce_sorted)
    _assert_packed(k_packed, t_packed)
    _assert_packed(krnn.pack_sequence(ks, enforce_sorted=enforce_sorted),
                   trnn.pack_sequence(ts, enforce_sorted=enforce_sorted))
    for total in (None, max(lengths) + 2):
        k_out, k_len = krnn.pad_packed_sequence(k_packed, batch_first=batch_first, padding_value=-1.0,
                                                total_length=total)
        t_out, t_len = trnn.pad_packed_sequence(t_packed, batch_first=batch_first, padding_value=-1.0,
                                                total_length=total)
        assert_matches(k_out, t_out)
        assert_matches(k_len, t_len, exact=True)
    # gradients flow back through packing and unpacking
    weight = np.cos(np.arange(t_out.numel())).reshape(tuple(t_out.shape))
    (k_out * kiln.tensor(weight)).sum().backward()
    (t_out * torch.tensor(weight)).sum().backward()
    for k, t in zip(ks, ts):
        assert_matches(k.grad, t.grad)
    for k, t in zip(krnn.unpack_sequence(k_packed), trnn.unpack_sequence(t_packed)):
        assert_matches(k, t)
    for k, t in zip(krnn.unpad_sequence(kp, kiln.tensor(lengths), batch_first),
                    trnn.unpad_sequence(tp, torch.tensor(lengths), batch_first)):
        assert_matches(k, t)


def test_pad_sequence_left():
    ks, ts = _sequences([2, 4, 3])
    for batch_first in (False, True):
        assert_matches(krnn.pad_sequence(ks, batch_first, 7.0, "left"), trnn.pad_sequence(ts, batch_first, 7.0, "left"))


def test_packing_errors():
    cases = [
        lambda R, L: R.pack_padded_sequence(L.zeros(5, 3, 2), [1, 5, 3]),
        lambda R, L: R.pack_padded_sequence(L.zeros(5, 3, 2), [5, 3]),
        lambda R, L: R.pack_padded_sequence(L.zeros(5, 3, 2), [5, 3, 0]),
        lambda R, L: R.pad_packed_sequence(R.pack_sequence([L.zeros(4, 2)]), total_length=2),
        lambda R, L: R.pad_sequence([L.zeros(2)], padding_side="middle"),
    ]
    for case in cases:
        assert_same_failure(raised(lambda: case(krnn, kiln)), raised(lambda: case(trnn, torch)))


RNN_CASES = [
    ("LSTM", {"num_layers": 2}),
    ("LSTM", {"bidirectional": True}),
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True}),
    ("GRU", {"bidirectional": True, "num_layers": 2}),
    ("RNN", {"nonlinearity": "relu"}),
]


@pytest.mark.parametrize("name,kwargs", RNN_CASES)
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("with_state", [False, True])
def test_recurrent_layers_on_packed_input(name, kwargs, enforce_sorted, with_state):
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    tmod = getattr(torch.nn, name)(4, 3, **kwargs).double()
    kmod = getattr(kiln.nn, name)(4, 3, **kwargs).double()
    _copy_parameters(kmod, tmod)
    directions = 2 if kwargs.get("bidirectional") else 1
    layers = kwargs.get("num_layers", 1)
    h_size = kwargs.get("proj_size") or 3
    rng = np.random.default_rng(3)
    h0 = rng.standard_normal((layers * directions, len(lengths), h_size))
    c0 = rng.standard_normal((layers * directions, len(lengths), 3))
    results = []
    for lib, R, mod in ((kiln, krnn, kmod), (torch, trnn, tmod)):
        seqs = [lib.tensor(a, requires_grad=True) for a in
                (np.random.default_rng(10 + i).standard_normal((n, 4)) for i, n in enumerate(lengths))]
        packed = R.pack_sequence(seqs, enforce_sorted=enforce_sorted)
        state = None
        leaves = list(seqs)
        if with_state:
            h = lib.tensor(h0, requires_grad=True)
            c = lib.tensor(c0, requires_grad=True)
            state = (h, c) if name == "LSTM" else h
            leaves += [h, c] if name == "LSTM" else [h]
        out, final = mod(packed, state)
        finals = list(final) if name == "LSTM" else [final]
        padded, _ = R.pad_packed_sequence(out, batch_first=True)
        loss = (padded * lib.tensor(np.cos(np.arange(padded.numel())).reshape(tuple(padded.shape)))).sum()
        for i, f in enumerate(finals):
            loss = loss + (f * lib.tensor(np.sin(np.arange(f.numel()) + i).reshape(tuple(f.shape)))).sum()
        loss.backward()
        results.append((out, padded, finals, [leaf.grad for leaf in leaves],
                        [p.grad for _, p in mod.named_parameters()]))
    (k_out, k_pad, k_fin, k_grads, k_pgrads), (t_out, t_pad, t_fin, t_grads, t_pgrads) = results
    _assert_packed(k_out, t_out)
    assert_matches(k_pad, t_pad)
    for k, t in zip(k_fin, t_fin):
        assert_matches(k, t)
    for k, t in zip(k_grads + k_pgrads, t_grads + t_pgrads):
        assert_matches(k, t)


@pytest.mark.parametrize("batch_first", [False, True])
def test_lstm_proj_size_on_padded_input(batch_first):
    tmod = torch.nn.LSTM(4, 5, num_layers=2, proj_size=2, batch_first=batch_first).double()
    kmod = kiln.nn.LSTM(4, 5, num_layers=2, proj_size=2, batch_first=batch_first).double()
    assert repr(kmod) == repr(tmod)
    _copy_parameters(kmod, tmod)
    x = np.random.default_rng(4).standard_normal((3, 6, 4))
    kx, tx = kiln.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (ko, (kh, kc)), (to, (th, tc)) = kmod(kx), tmod(tx)
    for k, t in ((ko, to), (kh, th), (kc, tc)):
        assert_matches(k, t)
    (ko.sum() + kh.sum() * 2 + kc.sum() * 3).backward()
    (to.sum() + th.sum() * 2 + tc.sum() * 3).backward()
    assert_matches(kx.grad, tx.grad)
    for (_, kp), (_, tp) in zip(kmod.named_parameters(), tmod.named_parameters()):
        assert_matches(kp.grad, tp.grad)


def test_proj_size_errors():
    for make in (lambda nn: nn.LSTM(4, 3, proj_size=3), lambda nn: nn.LSTM(4, 3, proj_size=-1),
                 lambda nn: nn.GRU(4, 3, proj_size=1)):
        assert_same_failure(raised(lambda: make(kiln.nn)), raised(lambda: make(torch.nn)))


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fused_and_composed_cells_match_torch(name, dtype):
    # float32 runs the fused cell (Note [Fused recurrent cells]); bfloat16 the composed one
    tmod = getattr(torch.nn, name)(4, 6, num_layers=2).to(getattr(torch, dtype))
    kmod = getattr(kiln.nn, name)(4, 6, num_layers=2).to(getattr(kiln, dtype))
    for (_, tp), (_, kp) in zip(tmod.named_parameters(), kmod.named_parameters()):
        kp.data.copy_(kiln.from_numpy(tp.detach().float().numpy().copy()).to(getattr(kiln, dtype)))
    x = np.random.default_rng(6).standard_normal((5, 3, 4))
    tx = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    kx = kiln.tensor(x, dtype=getattr(kiln, dtype), requires_grad=True)
    ko, to = kmod(kx)[0], tmod(tx)[0]
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 3e-2, "atol": 3e-2}
    np.testing.assert_allclose(ko.detach().float().numpy(), to.detach().float().numpy(), **tol)
    ko.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(kx.grad.float().numpy(), tx.grad.float().numpy(), **tol)


def test_fused_cell_checks_its_inputs():
    F = kiln._C._functions
    with pytest.raises(RuntimeError, match="_lstm_cell_fused"):
        F._lstm_cell_fused(kiln.zeros(3, 7), kiln.zeros(3, 2))
    with pytest.raises(RuntimeError, match="_gru_cell_fused"):
        F._gru_cell_fused(kiln.zeros(3, 6), kiln.zeros(2, 6), kiln.zeros(3, 2))
    with pytest.raises(NotImplementedError, match="_lstm_cell_fused"):
        F._lstm_cell_fused(kiln.zeros(3, 8, dtype=kiln.float16), kiln.zeros(3, 2, dtype=kiln.float16))

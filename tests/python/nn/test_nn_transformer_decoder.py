"""TransformerDecoderLayer, TransformerDecoder and Transformer against torch
with the same parameters (loaded through state_dict, so the children's names
match): outputs and every gradient, post- and pre-norm, masks, batch_first."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import raised


def _load(kmod, tmod):
    tstate = tmod.state_dict()
    kstate = kmod.state_dict()
    assert list(kstate) == list(tstate)
    kmod.load_state_dict({k: kiln.from_numpy(v.detach().numpy().copy()) for k, v in tstate.items()})


def _data(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _compare(make, call, arrays):
    tmod = make(torch).double().eval()
    kmod = make(kiln).double().eval()
    _load(kmod, tmod)
    results = []
    for L, mod in ((kiln, kmod), (torch, tmod)):
        xs = [L.tensor(a, requires_grad=True) for a in arrays]
        out = call(L, mod, *xs)
        seed = L.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        grads = L.autograd.grad((out * seed).sum(), xs + list(mod.parameters()))
        results.append((out, grads))
    assert_matches(results[0][0], results[1][0])
    for k, t in zip(results[0][1], results[1][1]):
        assert_matches(k, t)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer_matches_torch(norm_first, batch_first):
    def make(L):
        return L.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=batch_first,
                                            norm_first=norm_first)

    tgt_shape, mem_shape = ((2, 5, 8), (2, 7, 8)) if batch_first else ((5, 2, 8), (7, 2, 8))

    def call(L, mod, tgt, mem):
        mask = L.nn.Transformer.generate_square_subsequent_mask(5, dtype=L.float64)
        return mod(tgt, mem, tgt_mask=mask)

    _compare(make, call, [_data(tgt_shape, 1), _data(mem_shape, 2)])


def test_decoder_stack_and_transformer_match_torch():
    def make_decoder(L):
        layer = L.nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0, activation="gelu")
        return L.nn.TransformerDecoder(layer, 2, norm=L.nn.LayerNorm(8))

    _compare(make_decoder, lambda L, m, t, mem: m(t, mem), [_data((4, 2, 8), 3), _data((6, 2, 8), 4)])

    def make_transformer(L):
        return L.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=12,
                                dropout=0.0, batch_first=True)

    def call(L, m, src, tgt):
        pad = L.tensor([[False] * 5 + [True], [False] * 6])
        return m(src, tgt, src_key_padding_mask=pad, memory_key_padding_mask=pad,
                 tgt_mask=m.generate_square_subsequent_mask(4, dtype=L.float64))

    _compare(make_transformer, call, [_data((2, 6, 8), 5), _data((2, 4, 8), 6)])


def test_transformer_checks_match_torch():
    km = kiln.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    tm = torch.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8)
    assert_same_failure(raised(lambda: km(kiln.ones(3, 2, 8), kiln.ones(4, 3, 8))),
                        raised(lambda: tm(torch.ones(3, 2, 8), torch.ones(4, 3, 8))))
    assert_same_failure(raised(lambda: km(kiln.ones(3, 2, 6), kiln.ones(4, 2, 6))),
                        raised(lambda: tm(torch.ones(3, 2, 6), torch.ones(4, 2, 6))))
    assert [n for n, _ in km.named_parameters()] == [n for n, _ in tm.named_parameters()]

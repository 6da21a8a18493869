"""F.embedding_bag and nn.EmbeddingBag (kiln/nn/_embedding_bag.py) against
torch: sum, mean and max over 1-D input with offsets (empty bags,
include_last_offset) and 2-D input, padding_idx, per_sample_weights; the
weight's gradient; errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import raised

WEIGHT = np.random.default_rng(0).standard_normal((7, 3))
INPUT = np.array([1, 2, 4, 5, 4, 3, 2, 0, 6, 6])
OFFSETS = np.array([0, 4, 4, 6, 9])


def _run(kwargs, input_array=INPUT, offsets=OFFSETS, weights=None):
    results = []
    for L in (kiln, torch):
        w = L.tensor(WEIGHT, requires_grad=True)
        args = [L.tensor(input_array), w]
        if offsets is not None:
            args.append(L.tensor(offsets))
        extra = dict(kwargs)
        psw = None
        if weights is not None:
            psw = L.tensor(weights, requires_grad=True)
            extra["per_sample_weights"] = psw
        out = L.nn.functional.embedding_bag(*args, **extra)
        seed = L.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))
        grads = L.autograd.grad((out * seed).sum(), [w] + ([psw] if psw is not None else []))
        results.append((out, grads))
    assert_matches(results[0][0], results[1][0])
    for k, t in zip(results[0][1], results[1][1]):
        assert_matches(k, t)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_bag_with_offsets_matches_torch(mode, padding_idx):
    _run({"mode": mode, "padding_idx": padding_idx})
    _run({"mode": mode, "padding_idx": padding_idx, "include_last_offset": True},
         offsets=np.array([0, 4, 4, 6, 9, 10]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_of_2d_input_matches_torch(mode):
    _run({"mode": mode}, input_array=INPUT.reshape(2, 5), offsets=None)


def test_per_sample_weights_and_module():
    _run({"mode": "sum"}, weights=np.linspace(0.5, 2.0, INPUT.size))
    _run({"mode": "sum"}, input_array=INPUT.reshape(5, 2), offsets=None,
         weights=np.linspace(0.5, 2.0, INPUT.size).reshape(5, 2))
    kmod, tmod = kiln.nn.EmbeddingBag(7, 3, mode="max", padding_idx=1), torch.nn.EmbeddingBag(7, 3, mode="max",
                                                                                            padding_idx=1)
    assert repr(kmod) == repr(tmod)
    assert float(kmod.weight[1].abs().sum()) == 0.0
    kmod.weight.data.copy_(kiln.from_numpy(tmod.weight.detach().numpy().copy()))
    assert_matches(kmod(kiln.tensor(INPUT), kiln.tensor(OFFSETS)), tmod(torch.tensor(INPUT), torch.tensor(OFFSETS)))


ERRORS = [
    ("bad_index", lambda L: L.nn.functional.embedding_bag(L.tensor([1, 9]), L.ones(7, 3), L.tensor([0]))),
    ("weights_mode", lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.ones(7, 3), L.tensor([0]),
                                                             mode="max", per_sample_weights=L.ones(2))),
    ("no_offsets", lambda L: L.nn.functional.embedding_bag(L.tensor([1, 2]), L.ones(7, 3))),
    ("3d_input", lambda L: L.nn.functional.embedding_bag(L.ones(2, 2, 2, dtype=L.int64), L.ones(7, 3))),
    ("first_offset_not_0", lambda L: L.nn.functional.embedding_bag(L.tensor([0, 1, 2]), L.ones(5, 2), L.tensor([1]))),
    ("include_last_offset_without_offsets", lambda L: L.nn.functional.embedding_bag(
        L.tensor([0, 1]), L.ones(5, 2), L.tensor([], dtype=L.int64), include_last_offset=True)),
    ("last_offset_past_input", lambda L: L.nn.functional.embedding_bag(L.tensor([0, 1, 2]), L.ones(5, 2),
                                                                      L.tensor([0, 4]))),
    ("last_offset_past_input_include_last", lambda L: L.nn.functional.embedding_bag(
        L.tensor([0, 1, 2]), L.ones(5, 2), L.tensor([0, 1, 4]), include_last_offset=True)),
]


def test_decreasing_offsets_are_an_error():
    # torch checks this only on some paths ("Expected i < index_size", depending on its threads); kiln always does
    with pytest.raises(RuntimeError, match=r"offsets must not decrease, but got \[0, 2, 1\]"):
        kiln.nn.functional.embedding_bag(kiln.tensor([0, 1, 2]), kiln.ones(5, 2), kiln.tensor([0, 2, 1]))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_empty_input_still_reaches_the_weight(mode):
    # No rows at all: the zero result still hangs off the weight, whose gradient is zeros (as torch's).
    kw, tw = kiln.ones(5, 2, requires_grad=True), torch.ones(5, 2, requires_grad=True)
    kout = kiln.nn.functional.embedding_bag(kiln.tensor([], dtype=kiln.int64), kw, kiln.tensor([0, 0]), mode=mode)
    tout = torch.nn.functional.embedding_bag(torch.tensor([], dtype=torch.int64), tw, torch.tensor([0, 0]), mode=mode)
    assert_matches(kout, tout)
    (kg,) = kiln.autograd.grad(kout.sum(), [kw])
    (tg,) = torch.autograd.grad(tout.sum(), [tw])
    assert_matches(kg, tg)


@pytest.mark.parametrize("name, fn", ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_match_torch(name, fn):
    assert_same_failure(raised(lambda: fn(kiln)), raised(lambda: fn(torch)))

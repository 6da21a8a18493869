"""The margin and NLL losses of kiln/nn/_losses.py and their modules against torch:
values for every reduction, gradients of every differentiable input, and
torch's errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import raised


def _d(shape, seed, low=-2, high=2):
    return np.random.default_rng(seed).uniform(low, high, shape)


def _signs(shape, seed):
    return np.where(np.random.default_rng(seed).random(shape) < 0.5, -1.0, 1.0)


CASES = {
    "MarginRankingLoss": ({"margin": 0.3}, lambda: [_d((6,), 0), _d((6,), 1), _signs((6,), 2)], 2),
    "HingeEmbeddingLoss": ({"margin": 1.5}, lambda: [_d((3, 4), 0), _signs((3, 4), 1)], 1),
    "SoftMarginLoss": ({}, lambda: [_d((3, 4), 0), _signs((3, 4), 1)], 1),
    "CosineEmbeddingLoss": ({"margin": 0.2}, lambda: [_d((4, 5), 0), _d((4, 5), 1), _signs((4,), 2)], 2),
    "TripletMarginLoss": ({"margin": 0.5, "swap": True}, lambda: [_d((4, 5), 0), _d((4, 5), 1), _d((4, 5), 2)], 3),
    "PoissonNLLLoss": ({}, lambda: [_d((3, 4), 0), _d((3, 4), 1, 0, 4)], 1),
    "PoissonNLLLoss full": ({"log_input": False, "full": True}, lambda: [_d((3, 4), 0, 0.1, 3), _d((3, 4), 1, 0, 4)],
                            1),
    "GaussianNLLLoss": ({"full": True}, lambda: [_d((3, 4), 0), _d((3, 4), 1), _d((3, 4), 2, 0.1, 2)], 3),
    "GaussianNLLLoss var per row": ({}, lambda: [_d((3, 4), 0), _d((3, 4), 1), _d((3,), 2, 0.1, 2)], 3),
    "MultiLabelSoftMarginLoss": ({}, lambda: [_d((3, 4), 0), (_d((3, 4), 1) > 0).astype(float)], 1),
    "MultiMarginLoss": ({"margin": 0.7}, lambda: [_d((4, 5), 0), np.array([0, 3, 4, 1])], 1),
    "MultiMarginLoss p2": ({"p": 2}, lambda: [_d((4, 5), 0), np.array([2, 2, 0, 1])], 1),
}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", list(CASES))
def test_losses_match_torch_with_gradients(case, reduction):
    kwargs, make, differentiable = CASES[case]
    name = case.split(" ")[0]
    arrays = make()
    results = []
    for L in (kiln, torch):
        xs = [L.tensor(a, requires_grad=i < differentiable and a.dtype == np.float64) if a.dtype == np.float64
              else L.tensor(a) for i, a in enumerate(arrays)]
        loss = getattr(L.nn, name)(reduction=reduction, **kwargs)(*xs)
        seed = L.tensor(np.cos(np.arange(loss.numel())).reshape(tuple(loss.shape)))
        grads = L.autograd.grad((loss * seed).sum(), [x for x in xs if x.requires_grad])
        results.append((loss, grads))
    assert_matches(results[0][0], results[1][0])
    for k, t in zip(results[0][1], results[1][1]):
        assert_matches(k, t)


ERRORS = [
    ("margin_ranking_dims", lambda L: L.nn.functional.margin_ranking_loss(L.ones(3), L.ones(3, 1), L.ones(3))),
    ("multi_margin_p", lambda L: L.nn.MultiMarginLoss(p=3)),
    ("gaussian_negative_var", lambda L: L.nn.functional.gaussian_nll_loss(L.ones(3), L.ones(3), -L.ones(3))),
    ("gaussian_var_size", lambda L: L.nn.functional.gaussian_nll_loss(L.ones(3, 4), L.ones(3, 4), L.ones(2))),
    ("multi_margin_empty", lambda L: L.nn.functional.multi_margin_loss(L.ones(0, 0), L.zeros(0, dtype=L.int64))),
    ("multi_margin_3d", lambda L: L.nn.functional.multi_margin_loss(L.ones(2, 3, 1), L.tensor([0, 1]))),
    ("multi_margin_target_range", lambda L: L.nn.functional.multi_margin_loss(L.ones(2, 3), L.tensor([0, 3]))),
    ("multi_margin_negative_target", lambda L: L.nn.functional.multi_margin_loss(L.ones(2, 3), L.tensor([0, -1]))),
    ("multi_margin_target_size", lambda L: L.nn.functional.multi_margin_loss(L.ones(2, 3), L.tensor([0, 1, 2]))),
]


@pytest.mark.parametrize("name, fn", ERRORS, ids=[n for n, _ in ERRORS])
def test_errors_match_torch(name, fn):
    assert_same_failure(raised(lambda: fn(kiln)), raised(lambda: fn(torch)), message=name != "margin_ranking_dims")


def test_logsigmoid_is_stable_and_matches_torch():
    x = np.array([-100.0, -20.0, -1.0, 0.0, 2.0, 50.0, 800.0])
    kx, tx = kiln.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    kout, tout = kiln.nn.functional.logsigmoid(kx), torch.nn.functional.logsigmoid(tx)
    assert_matches(kout, tout)
    kout.sum().backward()
    tout.sum().backward()
    assert_matches(kx.grad, tx.grad)
    assert_matches(kiln.nn.LogSigmoid()(kiln.tensor(x)), torch.nn.LogSigmoid()(torch.tensor(x)))

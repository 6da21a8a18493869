"""nll_loss and cross_entropy against torch: reductions, class weights,
ignore_index, spatial dims, dtypes, gradients, gradcheck, out-of-range targets."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import kiln
from nn_compare import FLOATS, REDUCED, F, close, grad_pair, index_pair, pair
from torch_compare import assert_same_error

REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def targets(n, classes, seed=0, ignore=None):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, classes, size=n)
    if ignore is not None:
        t[::3] = ignore
    return index_pair(t)


@pytest.mark.parametrize("reduction", list(REDUCTIONS))
@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_nll_loss(reduction, dtype, weighted, ignore_index):
    k, t = pair((6, 5), dtype, requires_grad=True)
    kt_, tt = targets(6, 5, ignore=ignore_index if ignore_index >= 0 else None)
    kw, tw = pair((5,), dtype, low=0.5, high=2.0) if weighted else (None, None)
    ko = F.nll_loss(k, kt_, kw, REDUCTIONS[reduction], ignore_index)
    to = TF.nll_loss(t, tt, tw, reduction=reduction, ignore_index=ignore_index)
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)


@pytest.mark.parametrize("reduction", list(REDUCTIONS))
def test_nll_loss_unbatched_and_spatial(reduction):
    k, t = pair((5,), requires_grad=True)
    ko = F.nll_loss(k, kiln.tensor(3), None, REDUCTIONS[reduction])
    to = TF.nll_loss(t, torch.tensor(3), reduction=reduction)
    close(ko, to)
    k, t = pair((2, 4, 3, 3), requires_grad=True)
    rng = np.random.default_rng(1)
    kt_, tt = index_pair(rng.integers(0, 4, size=(2, 3, 3)))
    ko = F.nll_loss(k, kt_, None, REDUCTIONS[reduction])
    to = TF.nll_loss(t, tt, reduction=reduction)
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)


def test_nll_loss_all_ignored_is_nan():
    k, t = pair((3, 4))
    kt_, tt = index_pair([-100, -100, -100])
    close(F.nll_loss(k, kt_), TF.nll_loss(t, tt))


def test_nll_loss_empty_batch():
    k, t = pair((0, 4))
    kt_, tt = index_pair(np.zeros(0, dtype=np.int64))
    for name, r in REDUCTIONS.items():
        close(F.nll_loss(k, kt_, None, r), TF.nll_loss(t, tt, reduction=name))


@pytest.mark.parametrize("reduction", list(REDUCTIONS))
@pytest.mark.parametrize("shape", [(0, 4), (0, 3, 5)])
def test_nll_loss_empty_batch_backward(reduction, shape):
    # The per-element gradient of an empty batch is empty: nothing may read its first element.
    x = kiln.zeros(*shape, dtype=kiln.float64, requires_grad=True)
    target = kiln.zeros(shape[:1] + shape[2:], dtype=kiln.int64)
    tx = torch.zeros(*shape, dtype=torch.float64, requires_grad=True)
    ttarget = torch.zeros(shape[:1] + shape[2:], dtype=torch.int64)
    kloss, tloss = kiln.nn.functional.nll_loss(x, target, reduction=reduction), TF.nll_loss(tx, ttarget, reduction=reduction)
    (kgrad,) = kiln.autograd.grad(kloss, [x], kiln.ones(tuple(kloss.shape), dtype=kiln.float64))
    (tgrad,) = torch.autograd.grad(tloss, [tx], torch.ones(tloss.shape, dtype=torch.float64))
    close(kgrad, tgrad)


@pytest.mark.parametrize("reduction", list(REDUCTIONS))
@pytest.mark.parametrize("dtype", FLOATS + REDUCED)
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy(reduction, dtype, weighted):
    k, t = pair((7, 11), dtype, requires_grad=True)
    kt_, tt = targets(7, 11, ignore=4)
    kw, tw = pair((11,), dtype, low=0.5, high=2.0) if weighted else (None, None)
    ko = F.cross_entropy_loss(k, kt_, kw, REDUCTIONS[reduction], 4)
    to = TF.cross_entropy(t, tt, tw, reduction=reduction, ignore_index=4)
    tol = {"rtol": 1e-2, "atol": 2e-3} if dtype in REDUCED else {}
    close(ko, to, **tol)
    grad_pair(ko, to)
    close(k.grad, t.grad, **tol)


def test_cross_entropy_spatial_and_noncontiguous():
    k, t = pair((3, 5, 4), requires_grad=True)
    rng = np.random.default_rng(2)
    kt_, tt = index_pair(rng.integers(0, 5, size=(3, 4)))
    ko, to = F.cross_entropy_loss(k, kt_), TF.cross_entropy(t, tt)
    close(ko, to)
    grad_pair(ko, to)
    close(k.grad, t.grad)
    k, t = pair((6, 5), noncontiguous=True)
    kt_, tt = targets(6, 5)
    close(F.cross_entropy_loss(k, kt_), TF.cross_entropy(t, tt))


def test_gradcheck():
    k, _ = pair((4, 5), "float64", requires_grad=True)
    kw, _ = pair((5,), "float64", low=0.5, high=2.0)
    kt_, _ = targets(4, 5)
    for r in (0, 1, 2):
        assert kiln.autograd.gradcheck(lambda x: F.nll_loss(x, kt_, kw, r), (k,))
        assert kiln.autograd.gradcheck(lambda x: F.cross_entropy_loss(x, kt_, kw, r), (k,))


@pytest.mark.parametrize("bad", [10, -1, 5])
def test_target_out_of_bounds(bad):
    k, t = pair((3, 5))
    kt_, tt = index_pair([0, bad, 1])
    assert_same_error(lambda: F.nll_loss(k, kt_), lambda: TF.nll_loss(t, tt))
    assert_same_error(lambda: F.cross_entropy_loss(k, kt_), lambda: TF.cross_entropy(t, tt))


def test_shape_errors():
    k, t = pair((3, 5))
    kt_, tt = index_pair([0, 1])
    assert_same_error(lambda: F.nll_loss(k, kt_), lambda: TF.nll_loss(t, tt))
    kw, tw = pair((4,))
    kt_, tt = index_pair([0, 1, 2])
    assert_same_error(lambda: F.nll_loss(k, kt_, kw), lambda: TF.nll_loss(t, tt, tw))
    assert_same_error(lambda: F.cross_entropy_loss(k, kt_, None, 1, -100, 1.5),
                      lambda: TF.cross_entropy(t, tt, label_smoothing=1.5))

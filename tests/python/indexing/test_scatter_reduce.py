"""scatter_reduce (sum, prod, mean, amax, amin; include_self), Tensor.scatter_reduce_,
and index_reduce(_) against torch: values over dtypes, dims and repeated indices
(ties and zeros included, where the gradients' special cases live), gradients of
self and src (Note [scatter_reduce gradients]), out=, NaN propagation, and
torch's errors for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import raised

REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


def _pair(a, dtype, requires_grad=False):
    a = np.asarray(a)
    k = kiln.from_numpy(a.copy()).to(getattr(kiln, dtype))
    t = torch.from_numpy(a.copy()).to(getattr(torch, dtype))
    if requires_grad:
        k.requires_grad_(True)
        t.requires_grad_(True)
    return k, t


def _case(seed, self_shape=(4, 3), src_shape=(5, 3), dim=0, low=-2, high=3):
    rng = np.random.default_rng(seed)
    self_ = rng.integers(low, high, self_shape).astype(np.float64)  # small integers: many ties and zeros
    src = rng.integers(low, high, src_shape).astype(np.float64)
    index = rng.integers(0, self_shape[dim], src_shape)
    return self_, src, index


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "float16", "bfloat16"])
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_values(dtype, reduce, include_self, dim):
    self_, src, index = _case(dim + 10, (4, 5), (3, 5) if dim == 0 else (4, 7), dim if dim >= 0 else 1)
    ks, ts = _pair(self_, dtype)
    kx, tx = _pair(src, dtype)
    k = ks.scatter_reduce(dim, kiln.from_numpy(index), kx, reduce, include_self=include_self)
    t = ts.scatter_reduce(dim, torch.from_numpy(index), tx, reduce, include_self=include_self)
    assert_matches(k, t, exact=dtype in ("int64", "int32", "float64"))


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradients(reduce, include_self, seed):
    self_, src, index = _case(seed)
    ks, ts = _pair(self_, "float64", requires_grad=True)
    kx, tx = _pair(src, "float64", requires_grad=True)
    k = kiln.scatter_reduce(ks, 0, kiln.from_numpy(index), kx, reduce, include_self=include_self)
    t = torch.scatter_reduce(ts, 0, torch.from_numpy(index), tx, reduce, include_self=include_self)
    weight = np.random.default_rng(seed + 100).standard_normal(tuple(t.shape))
    (k * kiln.from_numpy(weight)).sum().backward()
    (t * torch.from_numpy(weight)).sum().backward()
    assert_matches(ks.grad, ts.grad)
    assert_matches(kx.grad, tx.grad)


def test_nan_propagates_through_amax_and_amin():
    nan = float("nan")
    for reduce, src in (("amax", [1.0, nan, 3.0]), ("amin", [nan, 1.0, 3.0])):
        k = kiln.zeros(3).scatter_reduce(0, kiln.tensor([0, 0, 2]), kiln.tensor(src), reduce)
        t = torch.zeros(3).scatter_reduce(0, torch.tensor([0, 0, 2]), torch.tensor(src), reduce)
        assert_matches(k, t)


def test_inplace_and_out():
    self_, src, index = _case(5)
    for reduce in REDUCTIONS:
        ks, ts = _pair(self_, "float64")
        kx, tx = _pair(src, "float64")
        ki, ti = kiln.from_numpy(index), torch.from_numpy(index)
        k_out, t_out = kiln.empty(0, dtype=kiln.float64), torch.empty(0, dtype=torch.float64)
        kiln.scatter_reduce(ks, 0, ki, kx, reduce, include_self=False, out=k_out)
        torch.scatter_reduce(ts, 0, ti, tx, reduce, include_self=False, out=t_out)
        assert_matches(k_out, t_out, exact=True)
        assert ks.scatter_reduce_(0, ki, kx, reduce) is ks
        ts.scatter_reduce_(0, ti, tx, reduce)
        assert_matches(ks, ts, exact=True)
    # the in-place form records for autograd (through copy_)
    ks, ts = _pair(self_, "float64", requires_grad=True)
    kx, tx = _pair(src, "float64", requires_grad=True)
    (ks * 1).scatter_reduce_(0, kiln.from_numpy(index), kx, "amax").sum().backward()
    (ts * 1).scatter_reduce_(0, torch.from_numpy(index), tx, "amax").sum().backward()
    assert_matches(ks.grad, ts.grad)
    assert_matches(kx.grad, tx.grad)


def test_integer_mean_rounds_down_and_bool():
    k = kiln.tensor([-5, 7, 9]).scatter_reduce(0, kiln.tensor([0, 0, 1]), kiln.tensor([2, 2, 4]), "mean")
    t = torch.tensor([-5, 7, 9]).scatter_reduce(0, torch.tensor([0, 0, 1]), torch.tensor([2, 2, 4]), "mean")
    assert_matches(k, t, exact=True)
    for reduce in ("sum", "prod", "amax", "amin"):
        k = kiln.tensor([True, False]).scatter_reduce(0, kiln.tensor([0, 1, 1]), kiln.tensor([False, True, False]),
                                                      reduce, include_self=False)
        t = torch.tensor([True, False]).scatter_reduce(0, torch.tensor([0, 1, 1]),
                                                       torch.tensor([False, True, False]), reduce, include_self=False)
        assert_matches(k, t, exact=True)


def test_scatter_reduce_errors():
    cases = [
        lambda L: L.zeros(3).scatter_reduce(0, L.tensor([0, 1]), L.ones(2), "foo"),
        lambda L: L.zeros(3).scatter_reduce(0, L.tensor([0, 1]), L.ones(2, dtype=L.float64), "sum"),
        lambda L: L.zeros(3).scatter_reduce(0, L.tensor([0, 5]), L.ones(2), "amax"),
        lambda L: L.zeros(3).scatter_reduce(0, L.tensor([0.0, 1.0]), L.ones(2), "sum"),
        lambda L: L.zeros(3, 2).scatter_reduce(0, L.tensor([0, 1]), L.ones(2), "sum"),
        lambda L: L.tensor([True]).scatter_reduce(0, L.tensor([0]), L.tensor([True]), "mean"),
    ]
    for case in cases:
        assert_same_failure(raised(lambda: case(kiln)), raised(lambda: case(torch)))
    x = kiln.zeros(3)
    raised(lambda: x.scatter_reduce_(0, kiln.tensor([0, 7]), kiln.ones(2), "sum"))
    assert x.tolist() == [0.0, 0.0, 0.0]  # a bad index leaves self as it was


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_reduce(reduce, include_self, dim):
    rng = np.random.default_rng(dim)
    self_ = rng.integers(-2, 3, (4, 5)).astype(np.float64)
    source = rng.integers(-2, 3, (6, 5) if dim == 0 else (4, 6)).astype(np.float64)
    index = rng.integers(0, self_.shape[dim], 6)
    ks, ts = _pair(self_, "float64", requires_grad=True)
    kx, tx = _pair(source, "float64", requires_grad=True)
    k = ks.index_reduce(dim, kiln.from_numpy(index), kx, reduce, include_self=include_self)
    t = ts.index_reduce(dim, torch.from_numpy(index), tx, reduce, include_self=include_self)
    assert_matches(k, t)
    weight = rng.standard_normal(tuple(t.shape))
    (k * kiln.from_numpy(weight)).sum().backward()
    (t * torch.from_numpy(weight)).sum().backward()
    assert_matches(ks.grad, ts.grad)
    assert_matches(kx.grad, tx.grad)
    k2, t2 = ks.detach().clone(), ts.detach().clone()
    k2.index_reduce_(dim, kiln.from_numpy(index), kx.detach(), reduce, include_self=include_self)
    t2.index_reduce_(dim, torch.from_numpy(index), tx.detach(), reduce, include_self=include_self)
    assert_matches(k2, t2)
    assert_matches(kiln.index_reduce(ks.detach(), dim, kiln.from_numpy(index), kx.detach(), reduce),
                   torch.index_reduce(ts.detach(), dim, torch.from_numpy(index), tx.detach(), reduce))


def test_index_reduce_errors():
    cases = [
        lambda L: L.zeros(3, 2).index_reduce_(0, L.tensor([0, 5]), L.ones(2, 2), "prod"),
        lambda L: L.zeros(3, 2).index_reduce_(0, L.tensor([0, 1]), L.ones(3, 2), "prod"),
        lambda L: L.zeros(3, 2).index_reduce_(0, L.tensor([[0, 1]]), L.ones(2, 2), "prod"),
        lambda L: L.zeros(3, 2).index_reduce_(0, L.tensor([0, 1]), L.ones(2, 2, dtype=L.float64), "prod"),
        lambda L: L.zeros(3, 2).index_reduce_(0, L.tensor([0.0, 1.0]), L.ones(2, 2), "prod"),
        lambda L: L.zeros(3, 2).index_reduce_(0, L.tensor([0, 1]), L.ones(2, 3), "prod"),
        lambda L: L.zeros(3).index_reduce(0, L.tensor([0]), L.ones(1), "sum"),
    ]
    for case in cases:
        assert_same_failure(raised(lambda: case(kiln)), raised(lambda: case(torch)))

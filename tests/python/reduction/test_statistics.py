"""median, nanmedian, kthvalue, quantile, nanquantile, cummax, cummin,
logcumsumexp, unique, unique_consecutive, bincount and histc
(python/kiln/_statistics.py) against torch: values over dims, keepdim, NaNs
and integer dtypes; indices where PyTorch defines them (and otherwise checked
to point at the value: Note [Order statistics through a stable sort]);
errors by type and text; gradients of the differentiable ones."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_matches, assert_same_failure
from torch_compare import numpy_pair as _pair, raised


def _data(shape, seed=0, dtype="float64", nan=False, ties=True):
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        return rng.integers(-4, 5, shape).astype(dtype)
    values = (rng.integers(-6, 7, shape) * 0.5 if ties else rng.standard_normal(shape)).astype(dtype)
    if nan and values.size >= 4:
        values.flat[rng.choice(values.size, max(1, values.size // 5), replace=False)] = np.nan
    return values


def _check_indices_point_at_values(kx, dim, keepdim, values, indices):
    gathered = kx.gather(dim, indices if keepdim else indices.unsqueeze(dim))
    gathered = gathered if keepdim else gathered.squeeze(dim)
    np.testing.assert_array_equal(gathered.numpy(), values.numpy())


SHAPES = [(7,), (4, 6), (3, 5, 4)]


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype, nan", [("float64", False), ("float64", True), ("float32", True), ("int64", False)])
def test_median_matches_torch(name, shape, dtype, nan):
    kx, tx = _pair(_data(shape, len(shape), dtype, nan))
    assert_matches(getattr(kiln, name)(kx), getattr(torch, name)(tx), exact=True)
    for dim in range(-len(shape), len(shape)):
        for keepdim in (False, True):
            k = getattr(kiln, name)(kx, dim, keepdim)
            t = getattr(torch, name)(tx, dim, keepdim)
            assert_matches(k.values, t.values, exact=True)
            _check_indices_point_at_values(kx, dim, keepdim, k.values, k.indices)
            if not nan and dtype != "int64":  # distinct values: the index is unique
                pass
    distinct_k, distinct_t = _pair(_data(shape, 5, "float64", ties=False))
    k, t = getattr(distinct_k, name)(0), getattr(distinct_t, name)(0)
    assert_matches(k.indices, t.indices, exact=True)


def test_median_of_a_zero_dim_and_empty_tensor():
    assert_matches(kiln.median(kiln.tensor(2.5)), torch.median(torch.tensor(2.5)), exact=True)
    k, t = kiln.median(kiln.tensor(2.5), 0), torch.median(torch.tensor(2.5), 0)
    assert_matches(k.values, t.values, exact=True)
    assert_matches(k.indices, t.indices, exact=True)
    assert_matches(kiln.median(kiln.ones(0)), torch.median(torch.ones(0)), exact=True)


@pytest.mark.parametrize("k", [1, 3, 6])
def test_kthvalue_matches_torch(k):
    kx, tx = _pair(_data((4, 6), 3, ties=False))
    for dim, keepdim in [(1, False), (-1, True)]:
        kr, tr = kiln.kthvalue(kx, k, dim, keepdim), torch.kthvalue(tx, k, dim, keepdim)
        assert_matches(kr.values, tr.values, exact=True)
        assert_matches(kr.indices, tr.indices, exact=True)
    kt, tt = _pair(_data((4, 6), 3))
    assert_matches(kiln.kthvalue(kt, k).values, torch.kthvalue(tt, k).values, exact=True)


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_matches_torch(name, interpolation):
    for nan in (False, True):
        kx, tx = _pair(_data((4, 7), 1, nan=nan, ties=False))
        for q in (0.0, 0.3, 0.5, 1.0, [0.1, 0.75]):
            kq = kiln.tensor(q, dtype=kiln.float64) if isinstance(q, list) else q
            tq = torch.tensor(q, dtype=torch.float64) if isinstance(q, list) else q
            for kwargs in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}, {"keepdim": True}):
                k = getattr(kiln, name)(kx, kq, interpolation=interpolation, **kwargs)
                t = getattr(torch, name)(tx, tq, interpolation=interpolation, **kwargs)
                assert_matches(k, t)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype, nan", [("float64", False), ("float32", True), ("int64", False)])
def test_cummax_cummin_match_torch_with_their_indices(name, dtype, nan):
    kx, tx = _pair(_data((3, 9), 2, dtype, nan))
    for dim in (0, 1, -1):
        k, t = getattr(kiln, name)(kx, dim), getattr(torch, name)(tx, dim)
        assert_matches(k.values, t.values, exact=True)
        assert_matches(k.indices, t.indices, exact=True)
    k, t = getattr(kx, name)(1), getattr(tx, name)(1)
    assert_matches(k.indices, t.indices, exact=True)


def test_logcumsumexp_matches_torch():
    for data in (_data((3, 9), 0, ties=False) * 5, np.array([-1000.0, 0.0, 1.0, -np.inf, 800.0])):
        kx, tx = _pair(data)
        for dim in range(data.ndim):
            assert_matches(kiln.logcumsumexp(kx, dim), torch.logcumsumexp(tx, dim))
    assert_matches(kiln.logcumsumexp(kiln.tensor([1, 2, 3]), 0), torch.logcumsumexp(torch.tensor([1., 2., 3.]), 0))


@pytest.mark.parametrize("dtype", ["int64", "float32", "bool"])
def test_unique_and_unique_consecutive_match_torch(dtype):
    data = _data((5, 4), 4, "int64") if dtype != "bool" else _data((5, 4), 4, "int64") > 0
    data = data.astype(dtype)
    kx, tx = _pair(data)
    for kwargs in ({}, {"return_inverse": True}, {"return_counts": True},
                   {"return_inverse": True, "return_counts": True}):
        for fn in ("unique", "unique_consecutive"):
            k, t = getattr(kiln, fn)(kx, **kwargs), getattr(torch, fn)(tx, **kwargs)
            for a, b in zip(k if isinstance(k, tuple) else (k,), t if isinstance(t, tuple) else (t,)):
                assert_matches(a, b, exact=True)
    rows = np.array([[1, 2], [1, 2], [0, 5], [1, 1], [0, 5]], dtype=np.int64)
    kr, tr = _pair(rows)
    for dim in (0, 1):
        for fn in ("unique", "unique_consecutive"):
            k = getattr(kiln, fn)(kr, return_inverse=True, return_counts=True, dim=dim)
            t = getattr(torch, fn)(tr, return_inverse=True, return_counts=True, dim=dim)
            for a, b in zip(k, t):
                assert_matches(a, b, exact=True)


def test_bincount_and_histc_match_torch():
    kx, tx = _pair(np.array([0, 1, 1, 3, 7, 3]))
    assert_matches(kiln.bincount(kx), torch.bincount(tx), exact=True)
    assert_matches(kiln.bincount(kx, minlength=10), torch.bincount(tx, minlength=10), exact=True)
    kw, tw = _pair(np.array([0.5, 1.0, 1.0, 2.0, -1.0, 0.25]))
    assert_matches(kiln.bincount(kx, kw), torch.bincount(tx, tw))
    kw32, tw32 = _pair(np.array([1, 2, 3, 4, 5, 6], dtype=np.int32))
    assert_matches(kiln.bincount(kx, kw32), torch.bincount(tx, tw32))
    assert_matches(kiln.bincount(kiln.tensor([], dtype=kiln.int64)), torch.bincount(torch.tensor([], dtype=torch.int64)))
    kh, th = _pair(_data((50,), 7, ties=False).astype(np.float32))
    for kwargs in ({}, {"bins": 7}, {"bins": 4, "min": -1, "max": 1}, {"bins": 3, "min": 2, "max": 2}):
        assert_matches(kiln.histc(kh, **kwargs), torch.histc(th, **kwargs))


ERRORS = [
    ("median_empty_dim", lambda L: L.median(L.ones(0, 3), 0)),
    ("median_bad_dim", lambda L: L.median(L.ones(2, 3), 2)),
    ("kthvalue_range", lambda L: L.kthvalue(L.ones(2, 3), 4)),
    ("quantile_int", lambda L: L.quantile(L.tensor([1, 2]), 0.5)),
    ("quantile_range", lambda L: L.quantile(L.ones(3), 1.5)),
    ("quantile_interpolation", lambda L: L.quantile(L.ones(3), 0.5, interpolation="cubic")),
    ("bincount_negative", lambda L: L.bincount(L.tensor([1, -1]))),
    ("bincount_2d", lambda L: L.bincount(L.ones(2, 2, dtype=L.int64))),
    ("bincount_float", lambda L: L.bincount(L.ones(2))),
    ("bincount_weights", lambda L: L.bincount(L.tensor([0, 1]), L.ones(3))),
    ("histc_int", lambda L: L.histc(L.tensor([1, 2]))),
    ("histc_bins", lambda L: L.histc(L.ones(3), bins=0)),
    ("histc_range", lambda L: L.histc(L.ones(3), min=2, max=1)),
]


@pytest.mark.parametrize("name, fn", ERRORS, ids=[n for n, _ in ERRORS])
def test_statistics_errors_match_torch(name, fn):
    assert_same_failure(raised(lambda: fn(kiln)), raised(lambda: fn(torch)))


GRADIENTS = {
    "median": lambda L, x: [L.median(x), L.median(x, 1).values, L.nanmedian(x, 0).values],
    "kthvalue": lambda L, x: L.kthvalue(x, 2, 1).values,
    "quantile": lambda L, x: [L.quantile(x, 0.3), L.quantile(x, L.tensor([0.2, 0.9], dtype=L.float64), dim=1)],
    "cummax": lambda L, x: [L.cummax(x, 1).values, L.cummin(x, 0).values],
    "logcumsumexp": lambda L, x: L.logcumsumexp(x, 1),
}


@pytest.mark.parametrize("case", list(GRADIENTS))
def test_statistics_gradients_match_torch(case):
    data = _data((4, 5), 9, ties=False)
    grads = []
    for L in (kiln, torch):
        x = L.tensor(data, dtype=L.float64, requires_grad=True)
        outs = GRADIENTS[case](L, x)
        outs = outs if isinstance(outs, list) else [outs]
        total = sum((o * L.tensor(np.cos(np.arange(o.numel())).reshape(tuple(o.shape)))).sum() for o in outs)
        grads.append(L.autograd.grad(total, [x])[0].numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-9, atol=1e-12)

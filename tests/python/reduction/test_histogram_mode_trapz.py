"""histogram / histogramdd, mode, combinations, trapz, gradient, kaiser_window,
segment_reduce against torch (bit-exact where torch's arithmetic is reproduced op for
op, torch.testing tolerances where only the summation order differs), and the random
samplers poisson, binomial, Tensor.cauchy_ / geometric_ / log_normal_ by their
distributions (kiln's stream is not torch's): moments, frequencies against the exact
pmf, support, dtypes, reproducibility under a seed, and torch's errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import kiln
from torch_compare import as_kiln_text, assert_same_error, assert_same_tensor

FLOATS = ["float32", "float64"]


def _pair(a, dtype=None, requires_grad=False):
    a = np.asarray(a)
    if dtype is not None:
        a = a.astype(dtype)
    k, t = kiln.from_numpy(a.copy()), torch.from_numpy(a.copy())
    if requires_grad:
        k.requires_grad_(True)
        t.requires_grad_(True)
    return k, t


def _close(k, t, **tol):
    assert tuple(k.shape) == tuple(t.shape)
    assert str(k.dtype) == as_kiln_text(str(t.dtype))
    if k.dtype in (kiln.float16, kiln.bfloat16):
        k, t = k.to(kiln.float64), t.double()
    torch.testing.assert_close(torch.from_numpy(np.array(k.detach().numpy())), t.detach(), equal_nan=True, **tol)


def _grads_close(k, t, **tol):
    assert k.grad is not None, "kiln produced no gradient"
    _close(k.grad, t.grad, **tol)


# --- histogram ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 4), (2, 3, 5)])
@pytest.mark.parametrize("bins", [1, 5, 13])
def test_histogram_int_bins_bit_exact(dtype, shape, bins):
    k, t = _pair(np.random.default_rng(bins).standard_normal(shape) * 3, dtype)
    kh, th = kiln.histogram(k, bins), torch.histogram(t, bins)
    assert type(kh).__name__ == "histogram" and kh._fields == ("hist", "bin_edges")
    assert_same_tensor(kh.hist, th.hist)
    assert_same_tensor(kh.bin_edges, th.bin_edges)


@pytest.mark.parametrize("dtype", FLOATS)
def test_histogram_edges_values_on_edges_and_many_bins(dtype):
    # Values exactly on the edges (the rightmost one in the last bin) and a fine grid of bins.
    k, t = _pair(np.linspace(-1, 1, 201), dtype)
    for bins in (10, 100, 200, 999):
        for args in ({}, {"range": (-1.0, 1.0)}, {"range": (-0.3, 0.7)}, {"range": (0.1, 0.1)}):
            kh, th = kiln.histogram(k, bins, **args), torch.histogram(t, bins, **args)
            assert_same_tensor(kh.hist, th.hist)
            assert_same_tensor(kh.bin_edges, th.bin_edges)
    k, t = _pair(np.random.default_rng(0).random(20000), dtype)
    assert_same_tensor(kiln.histogram(k, 1000).hist, torch.histogram(t, 1000).hist)


def test_histogram_constant_input_and_empty_input_edges():
    for values in ([2.5, 2.5, 2.5], [], [0.0]):
        k, t = _pair(np.array(values, dtype=np.float32))
        for bins in (1, 2, 7):
            kh, th = kiln.histogram(k, bins), torch.histogram(t, bins)
            assert_same_tensor(kh.hist, th.hist)
            assert_same_tensor(kh.bin_edges, th.bin_edges)


@pytest.mark.parametrize("dtype", FLOATS)
def test_histogram_tensor_bins_weight_density(dtype):
    rng = np.random.default_rng(3)
    k, t = _pair(rng.standard_normal((5, 8)), dtype)
    edges = np.array([-3.0, -1.0, -0.5, -0.5, 0.0, 0.25, 2.0])
    ke, te = _pair(edges, dtype)
    kw, tw = _pair(rng.random(40), dtype)
    assert_same_tensor(kiln.histogram(k, ke).hist, torch.histogram(t, te).hist)
    assert_same_tensor(kiln.histogram(k, ke).bin_edges, torch.histogram(t, te).bin_edges)
    _close(kiln.histogram(k, ke, weight=kw).hist, torch.histogram(t, te, weight=tw).hist)
    _close(kiln.histogram(k, 6, weight=kw, density=True).hist, torch.histogram(t, 6, weight=tw, density=True).hist)
    assert_same_tensor(kiln.histogram(k, 6, density=True).hist, torch.histogram(t, 6, density=True).hist)
    _close(kiln.histogram(k, ke, density=True).hist, torch.histogram(t, te, density=True).hist)
    # A weight of another shape but the same element count is flattened, as torch.
    _close(kiln.histogram(k, 4, weight=kw.reshape(8, 5)).hist, torch.histogram(t, 4, weight=tw.reshape(8, 5)).hist)
    assert_same_tensor(kiln.histogram(kiln.tensor([0.0, 1.0]), 2, weight=kiln.zeros(2), density=True).hist,
                       torch.histogram(torch.tensor([0.0, 1.0]), 2, weight=torch.zeros(2), density=True).hist)


def test_histogram_non_contiguous_out_method_and_default_bins():
    base = np.random.default_rng(4).standard_normal((6, 10)).astype(np.float32)
    k, t = _pair(base)
    kv, tv = k.t()[::2], t.t()[::2]
    assert not kv.is_contiguous()
    assert_same_tensor(kiln.histogram(kv, 7, range=(-1.0, 2.0)).hist, torch.histogram(tv, 7, range=(-1.0, 2.0)).hist)
    assert_same_tensor(kv.histogram(5).hist, tv.histogram(5).hist)
    assert_same_tensor(kiln.histogram(k).hist, torch.histogram(t).hist)
    assert kiln.histogram(k).hist.shape == (100,)
    hist_out, edges_out = kiln.empty(0), kiln.empty(0)
    result = kiln.histogram(k, 4, out=(hist_out, edges_out))
    assert type(result).__name__ == "histogram_out" and result.hist is hist_out and result.bin_edges is edges_out
    assert_same_tensor(hist_out, torch.histogram(t, 4).hist)
    assert_same_tensor(edges_out, torch.histogram(t, 4).bin_edges)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_histogram_half_precision_with_range_or_edges(dtype):
    x = np.random.default_rng(7).random(50)
    k, t = kiln.tensor(x).to(getattr(kiln, dtype)), torch.tensor(x).to(getattr(torch, dtype))
    ke, te = kiln.tensor([0.0, 0.3, 0.5, 1.0]).to(k.dtype), torch.tensor([0.0, 0.3, 0.5, 1.0]).to(t.dtype)
    for kh, th in ((kiln.histogram(k, 6, range=(0.0, 1.0)), torch.histogram(t, 6, range=(0.0, 1.0))),
                   (kiln.histogram(k, ke), torch.histogram(t, te)),
                   (kiln.histogramdd(k.reshape(25, 2), 3, range=[0.0, 1.0, 0.2, 0.8]),
                    torch.histogramdd(t.reshape(25, 2), 3, range=[0.0, 1.0, 0.2, 0.8]))):
        _close(kh.hist, th.hist)
        for ke2, te2 in zip(kh.bin_edges if isinstance(kh.bin_edges, tuple) else [kh.bin_edges],
                            th.bin_edges if isinstance(th.bin_edges, tuple) else [th.bin_edges]):
            _close(ke2, te2, rtol=0, atol=0)
    assert_same_error(lambda: kiln.histogram(k, 3), lambda: torch.histogram(t, 3))


def test_histogram_is_not_differentiable_like_torch():
    k, t = _pair(np.array([0.1, 0.5, 0.7], dtype=np.float32), requires_grad=True)
    kh, th = kiln.histogram(k, 3), torch.histogram(t, 3)
    assert kh.hist.requires_grad == th.hist.requires_grad is True
    assert kh.bin_edges.requires_grad == th.bin_edges.requires_grad is True
    assert_same_error(lambda: kh.hist.sum().backward(), lambda: th.hist.sum().backward())
    kd, td = kiln.histogramdd(k.reshape(3, 1), 2), torch.histogramdd(t.reshape(3, 1), 2)
    assert_same_error(lambda: kd.hist.sum().backward(), lambda: td.hist.sum().backward())
    assert_same_error(lambda: kd.bin_edges[0].sum().backward(), lambda: td.bin_edges[0].sum().backward())
    assert not kiln.histogram(k.detach(), 3).hist.requires_grad


def _histogram_cases():
    x = np.random.default_rng(5).random(10).astype(np.float32)
    return [
        lambda m: m.histogram(m.arange(5), 3),
        lambda m: m.histogram(m.arange(5), m.tensor([0, 2, 4])),
        lambda m: m.histogram(m.tensor(x), 0),
        lambda m: m.histogram(m.tensor(x), -1),
        lambda m: m.histogram(m.tensor(x), m.tensor([0.0, 1.0], dtype=m.float64)),
        lambda m: m.histogram(m.tensor(x), m.tensor([[0.0, 1.0]])),
        lambda m: m.histogram(m.tensor(x), m.tensor([0.0])),
        lambda m: m.histogram(m.tensor(x), m.tensor([])),
        lambda m: m.histogram(m.tensor(x), 3, range=(1.0, 0.0)),
        lambda m: m.histogram(m.tensor(x), 3, range=(0.0, float("inf"))),
        lambda m: m.histogram(m.tensor(x), 3, range=(0.0, 1.0, 2.0)),
        lambda m: m.histogram(m.tensor(x), 3, weight=m.ones(9)),
        lambda m: m.histogram(m.tensor(x), 3, weight=m.ones(10, dtype=m.float64)),
        lambda m: m.histogram(m.tensor(x), 3, weight=m.ones(10, dtype=m.int64)),
        lambda m: m.histogram(m.tensor([1.0, float("nan")]), 3),
        lambda m: m.histogram(m.tensor([1.0, float("inf")]), 3),
        lambda m: m.histogram(m.tensor(x).half(), 3),
        lambda m: m.histogramdd(m.tensor(x), 3),
        lambda m: m.histogramdd(m.tensor(x).reshape(5, 2), [3]),
        lambda m: m.histogramdd(m.tensor(x).reshape(5, 2), [3, 0]),
        lambda m: m.histogramdd(m.tensor(x).reshape(5, 2), -1),
        lambda m: m.histogramdd(m.tensor(x).reshape(5, 2), [3, 2], range=[0.0, 1.0]),
        lambda m: m.histogramdd(m.tensor(x).reshape(5, 2), 3, range=[0.0, 1.0, 2.0, 1.0]),
        lambda m: m.histogramdd(m.tensor(x).reshape(5, 2), 3, range=[0.0, 1.0, 0.0, float("nan")]),
        lambda m: m.histogramdd(m.tensor(x).reshape(5, 2), [m.tensor([0.0, 1.0])]),
        lambda m: m.histogramdd(m.tensor(x).reshape(5, 2), 3, weight=m.ones(5, 2)),
        lambda m: m.histogramdd(m.tensor(x).reshape(5, 2), 3, weight=m.ones(5, dtype=m.float64)),
        lambda m: m.histogramdd(m.ones(4, 2, dtype=m.int64), 3),
    ]


@pytest.mark.parametrize("case", range(len(_histogram_cases())))
def test_histogram_errors_match_torch(case):
    fn = _histogram_cases()[case]
    assert_same_error(lambda: fn(kiln), lambda: fn(torch))


def test_histogram_bins_of_the_wrong_type_raise_type_error():
    assert_same_error(lambda: kiln.histogramdd(kiln.ones(3, 2), [kiln.tensor([0.0, 1.0]), 2]),
                      lambda: torch.histogramdd(torch.ones(3, 2), [torch.tensor([0.0, 1.0]), 2]))
    assert_same_error(lambda: kiln.histogram(kiln.ones(3), 2.5), lambda: torch.histogram(torch.ones(3), 2.5),
                      message=False)
    assert_same_error(lambda: kiln.histogram(kiln.ones(3), kiln.tensor([0.0, 1.0]), range=(0.0, 1.0)),
                      lambda: torch.histogram(torch.ones(3), torch.tensor([0.0, 1.0]), range=(0.0, 1.0)),
                      message=False)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(9, 1), (11, 2), (0, 2), (4, 3, 3)])
def test_histogramdd_matches_torch(dtype, shape):
    rng = np.random.default_rng(shape[0])
    k, t = _pair(rng.standard_normal(shape), dtype)
    n = shape[-1]
    kw, tw = _pair(rng.random(shape[:-1]), dtype)
    for bins in (3, [2, 4, 1][:n]):
        kd, td = kiln.histogramdd(k, bins), torch.histogramdd(t, bins)
        assert type(kd).__name__ == "histogramdd" and isinstance(kd.bin_edges, tuple)
        assert_same_tensor(kd.hist, td.hist)
        assert len(kd.bin_edges) == len(td.bin_edges)
        for ke, te in zip(kd.bin_edges, td.bin_edges):
            assert_same_tensor(ke, te)
        _close(kiln.histogramdd(k, bins, weight=kw, density=True).hist,
               torch.histogramdd(t, bins, weight=tw, density=True).hist)
    window = [-1.0, 1.0, 0.0, 2.0, -0.5, 0.5][:2 * n]
    assert_same_tensor(kiln.histogramdd(k, 4, range=window).hist, torch.histogramdd(t, 4, range=window).hist)
    edges = [np.sort(rng.standard_normal(m)) for m in (4, 2, 5)[:n]]
    kd = kiln.histogramdd(k, [kiln.from_numpy(e.astype(dtype)) for e in edges], weight=kw)
    td = torch.histogramdd(t, [torch.from_numpy(e.astype(dtype)) for e in edges], weight=tw)
    _close(kd.hist, td.hist)
    for ke, te in zip(kd.bin_edges, td.bin_edges):
        assert_same_tensor(ke, te)


def test_histogramdd_non_contiguous_points():
    k, t = _pair(np.random.default_rng(6).random((3, 12)).astype(np.float32))
    kv, tv = k.t(), t.t()
    assert_same_tensor(kiln.histogramdd(kv, [2, 3, 2]).hist, torch.histogramdd(tv, [2, 3, 2]).hist)


# --- mode ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "uint8", "float16"])
@pytest.mark.parametrize("shape", [(1,), (16,), (5, 7), (3, 16, 2)])
def test_mode_values_and_indices_match_torch_on_short_dims(dtype, shape):
    # torch's CPU kernel sorts each slice with std::sort: an insertion sort (stable) for up to 16
    # elements, so the index torch returns there is the mode's last occurrence.
    rng = np.random.default_rng(len(shape) * 7 + shape[0])
    k, t = _pair(rng.integers(0, 4, shape), dtype)
    for dim in range(-len(shape), len(shape)):
        for keepdim in (False, True):
            km, tm = kiln.mode(k, dim, keepdim), torch.mode(t, dim, keepdim)
            assert type(km).__name__ == "mode" and km._fields == ("values", "indices")
            assert_same_tensor(km.values, tm.values)
            assert_same_tensor(km.indices, tm.indices)


@pytest.mark.parametrize("dtype", ["int64", "float32", "float16", "bool", "int8"])
def test_mode_long_dims_report_torchs_index(dtype):
    # Past 16 elements torch's index comes from std::sort's introsort order of equal values; kiln runs the
    # same sort (Note [mode's index]), so values and indices agree at every length.
    rng = np.random.default_rng(8)
    for n in (17, 50, 300, 5000):
        x = rng.integers(0, max(n // 4, 2), (4, n))
        k, t = _pair(x)
        k, t = k.to(getattr(kiln, dtype)), t.to(getattr(torch, dtype))
        for dim in (-1, 0):
            km, tm = kiln.mode(k, dim), torch.mode(t, dim)
            assert_same_tensor(km.values, tm.values)
            assert_same_tensor(km.indices, tm.indices)


def test_mode_gradient_reaches_the_reported_index():
    x = np.array([[1.0, 2.0, 2.0, 3.0, 2.0, 1.0] * 5], dtype=np.float64)
    k, t = kiln.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    kiln.mode(k, 1).values.sum().backward()
    torch.mode(t, 1).values.sum().backward()
    assert_same_tensor(k.grad, t.grad)


def test_mode_with_nan_reports_a_nan_free_smallest_most_frequent_value():
    # torch's comparator is no strict order with NaN; kiln sorts NaN last, each its own run
    x = [1.0, float("nan"), 1.0, 2.0, float("nan")]
    km = kiln.mode(kiln.tensor(x))
    assert km.values.item() == torch.mode(torch.tensor(x)).values.item() == 1.0
    assert x[km.indices.item()] == 1.0


def test_mode_bool_scalar_empty_non_contiguous_method_and_out():
    k, t = _pair(np.array([True, False, True, False, False]))
    assert_same_tensor(kiln.mode(k).values, torch.mode(t).values)
    assert_same_tensor(kiln.mode(k).indices, torch.mode(t).indices)
    ks, ts = kiln.tensor(5.0), torch.tensor(5.0)
    assert_same_tensor(kiln.mode(ks).values, torch.mode(ts).values)
    assert_same_tensor(kiln.mode(ks, 0).indices, torch.mode(ts, 0).indices)
    for shape, dim in (((0, 3), 1), ((2, 0), 0), ((0, 3), -1)):
        km, tm = kiln.mode(kiln.empty(shape), dim, True), torch.mode(torch.empty(shape), dim, True)
        assert_same_tensor(km.values, tm.values, check_values=False)
        assert_same_tensor(km.indices, tm.indices)
    base = np.random.default_rng(9).integers(0, 3, (6, 8)).astype(np.float32)
    k, t = _pair(base)
    assert_same_tensor(k.t()[1::2].mode(1).values, t.t()[1::2].mode(1).values)
    assert_same_tensor(k.t()[1::2].mode(dim=0, keepdim=True).indices, t.t()[1::2].mode(dim=0, keepdim=True).indices)
    values, indices = kiln.empty(0), kiln.empty(0, dtype=kiln.int64)
    result = kiln.mode(k, 0, out=(values, indices))
    assert type(result).__name__ == "mode_out" and result.values is values
    assert_same_tensor(values, torch.mode(t, 0).values)
    assert_same_tensor(indices, torch.mode(t, 0).indices)


def test_mode_errors_match_torch():
    for fn in (lambda m: m.mode(m.empty(0)), lambda m: m.mode(m.empty(2, 0), 1), lambda m: m.mode(m.empty(2, 0), -1),
               lambda m: m.mode(m.ones(3), 1), lambda m: m.mode(m.tensor(1.0), 1),
               lambda m: m.mode(m.ones(2), out=(m.empty(0, dtype=m.float64), m.empty(0, dtype=m.int64)))):
        assert_same_error(lambda: fn(kiln), lambda: fn(torch))
    assert_same_error(lambda: kiln.mode(kiln.ones(2), dim=0.5), lambda: torch.mode(torch.ones(2), dim=0.5))


def test_mode_gradient_goes_to_the_chosen_index():
    x = np.random.default_rng(10).integers(0, 3, (4, 6)).astype(np.float64)
    for dim in (0, 1):
        k, t = _pair(x, requires_grad=True)
        g = np.random.default_rng(dim).standard_normal(6 if dim == 0 else 4)
        (kiln.mode(k, dim).values * kiln.from_numpy(g.copy())).sum().backward()
        (torch.mode(t, dim).values * torch.from_numpy(g.copy())).sum().backward()
        _grads_close(k, t)


# --- combinations --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_combinations_match_torch(dtype, n):
    k, t = _pair(np.arange(1, n + 1) % 2 if dtype == "bool" else np.arange(1, n + 1) * 1.5, dtype)
    for r in range(5):
        for with_replacement in (False, True):
            assert_same_tensor(kiln.combinations(k, r, with_replacement),
                               torch.combinations(t, r, with_replacement))
    assert_same_tensor(kiln.combinations(k), torch.combinations(t))
    assert_same_tensor(kiln.combinations(k, with_replacement=True), torch.combinations(t, with_replacement=True))


def test_combinations_non_contiguous_gradient_and_errors():
    k, t = _pair(np.arange(12.0).reshape(3, 4))
    assert_same_tensor(kiln.combinations(k[:, 1], 3), torch.combinations(t[:, 1], 3))
    k, t = _pair(np.array([1.0, -2.0, 3.0, 0.5]), requires_grad=True)
    (kiln.combinations(k, 3, True) ** 2 * kiln.arange(3.0)).sum().backward()
    (torch.combinations(t, 3, True) ** 2 * torch.arange(3.0)).sum().backward()
    _grads_close(k, t)
    for fn in (lambda m: m.combinations(m.ones(3), -1), lambda m: m.combinations(m.ones(3, 1)),
               lambda m: m.combinations(m.tensor(1.0))):
        assert_same_error(lambda: fn(kiln), lambda: fn(torch))
    assert_same_error(lambda: kiln.combinations(kiln.ones(3), 2.0), lambda: torch.combinations(torch.ones(3), 2.0))


# --- trapz ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_trapz_matches_torch(dtype):
    rng = np.random.default_rng(11)
    k, t = _pair(rng.integers(-5, 9, (3, 5, 4)), dtype)
    kx, tx = _pair(np.cumsum(rng.random(5)), "float64" if dtype == "float64" else "float32")
    for dim in (-1, 0, 1):
        assert_same_tensor(kiln.trapz(k, dim=dim), torch.trapz(t, dim=dim))
        assert_same_tensor(kiln.trapz(k, dx=0.3, dim=dim), torch.trapz(t, dx=0.3, dim=dim))
        assert_same_tensor(kiln.trapz(k, dx=2, dim=dim), torch.trapz(t, dx=2, dim=dim))
    # With sample points torch sums the trapezoids with its own reduction order: equal to rounding.
    _close(kiln.trapz(k, kx, dim=1), torch.trapz(t, tx, dim=1))
    _close(kiln.trapz(k, x=kx[:4]), torch.trapz(t, x=tx[:4]))
    kx2, tx2 = _pair(rng.integers(0, 9, (5, 4)), dtype)
    assert_same_tensor(kiln.trapz(k, kx2, dim=1), torch.trapz(t, tx2, dim=1))
    assert_same_tensor(kiln.trapz(k, kx2), torch.trapz(t, tx2))
    assert_same_tensor(kiln.trapz(k.transpose(0, 2), dim=1), torch.trapz(t.transpose(0, 2), dim=1))
    ke, te = _pair(np.ones((2, 0)), dtype)
    assert_same_tensor(kiln.trapz(ke), torch.trapz(te))
    assert_same_tensor(kiln.trapz(ke, dim=0), torch.trapz(te, dim=0))


def test_trapz_gradient_and_errors():
    rng = np.random.default_rng(12)
    k, t = _pair(rng.standard_normal((3, 6)), requires_grad=True)
    kx, tx = _pair(np.cumsum(rng.random(6)), requires_grad=True)
    (kiln.trapz(k, kx) * kiln.tensor([1.0, -2.0, 0.5], dtype=kiln.float64)).sum().backward()
    (torch.trapz(t, tx) * torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)).sum().backward()
    _grads_close(k, t)
    _grads_close(kx, tx)
    k, t = _pair(rng.standard_normal((3, 6)), requires_grad=True)
    kiln.trapz(k, dx=0.5, dim=0).sum().backward()
    torch.trapz(t, dx=0.5, dim=0).sum().backward()
    _grads_close(k, t)
    y = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    for fn in (lambda m: m.trapz(m.tensor(1.0)), lambda m: m.trapz(m.tensor(y), m.tensor([0.0, 1.0])),
               lambda m: m.trapz(m.tensor(y), dim=1), lambda m: m.trapz(m.tensor([True, False])),
               lambda m: m.trapz(m.tensor([True, False]), m.tensor([0.0, 1.0]))):
        assert_same_error(lambda: fn(kiln), lambda: fn(torch))
    assert_same_tensor(kiln.trapz(kiln.tensor(y), dx=True), torch.trapz(torch.tensor(y), dx=True))
    for fn in (lambda m: m.trapz(m.tensor(y), 2.0), lambda m: m.trapz(m.tensor(y), m.tensor(y), dx=2),
               lambda m: m.trapz(m.tensor(y), dx=1j)):
        assert_same_error(lambda: fn(kiln), lambda: fn(torch), message=False)


# --- gradient ------------------------------------------------------------------------------------------------


def _gradient_cases(m, dtype):
    rng = np.random.default_rng(13)
    y = m.tensor(rng.standard_normal((4, 5, 3)) * 4).to(getattr(m, dtype))
    cx = m.tensor(np.cumsum(rng.random(4) + 0.1))
    cy = m.tensor(np.cumsum(rng.random(5) + 0.1), dtype=m.float64)
    ci = m.tensor([0, 1, 3, 4, 7])
    return [
        lambda: m.gradient(y), lambda: m.gradient(y, spacing=2.0), lambda: m.gradient(y, spacing=3),
        lambda: m.gradient(y, spacing=[0.5, 2.0, -1.0]), lambda: m.gradient(y, spacing=(0.5, 2, 4.0)),
        lambda: m.gradient(y, dim=1), lambda: m.gradient(y, dim=-1), lambda: m.gradient(y, dim=[2, 0]),
        lambda: m.gradient(y, spacing=1.5, dim=(0, 1)), lambda: m.gradient(y, spacing=[0.25], dim=1),
        lambda: m.gradient(y, spacing=[cx], dim=0), lambda: m.gradient(y, spacing=[cy, cx], dim=[1, 0]),
        lambda: m.gradient(y, spacing=[ci], dim=1), lambda: m.gradient(y, spacing=(cx, cy, m.tensor([0.0, 2, 3]))),
        lambda: m.gradient(y, spacing=m.tensor(2.0), dim=1),
        lambda: m.gradient(y, edge_order=2), lambda: m.gradient(y, spacing=0.7, edge_order=2, dim=0),
        lambda: m.gradient(y, spacing=[cy], dim=1, edge_order=2), lambda: m.gradient(y, spacing=[ci], dim=1,
                                                                                     edge_order=2),
        lambda: m.gradient(y.transpose(0, 2), dim=[0, 2], edge_order=2),
        lambda: m.gradient(y[:2], dim=0), lambda: m.gradient(y[:, :3], dim=1, edge_order=2),
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8"])
def test_gradient_matches_torch(dtype):
    for kfn, tfn in zip(_gradient_cases(kiln, dtype), _gradient_cases(torch, dtype)):
        kr, tr = kfn(), tfn()
        assert isinstance(kr, tuple) and len(kr) == len(tr)
        for a, b in zip(kr, tr):
            _close(a, b, rtol=1e-6 if dtype != "float64" else 1e-13, atol=1e-6)


def test_gradient_scalar_and_empty_inputs():
    kr, tr = kiln.gradient(kiln.ones(3, 4), spacing=[1, True]), torch.gradient(torch.ones(3, 4), spacing=[1, True])
    for a, b in zip(kr, tr):
        assert_same_tensor(a, b)
    assert_same_error(lambda: kiln.gradient(kiln.tensor(2.0), dim=0), lambda: torch.gradient(torch.tensor(2.0), dim=0))
    assert_same_error(lambda: kiln.gradient(kiln.ones(3), spacing=[kiln.tensor(1.0)]),
                      lambda: torch.gradient(torch.ones(3), spacing=[torch.tensor(1.0)]))
    assert kiln.gradient(kiln.tensor(1.0)) == () == torch.gradient(torch.tensor(1.0))
    (k,), (t,) = kiln.gradient(kiln.ones(0, 3), dim=1), torch.gradient(torch.ones(0, 3), dim=1)
    assert_same_tensor(k, t)
    (k,), (t,) = kiln.gradient(kiln.tensor([1.0, 3.0])), torch.gradient(torch.tensor([1.0, 3.0]))
    assert_same_tensor(k, t)


def test_gradient_is_differentiable():
    rng = np.random.default_rng(14)
    k, t = _pair(rng.standard_normal((5, 4)), requires_grad=True)
    kc, tc = _pair(np.cumsum(rng.random(5) + 0.2), requires_grad=True)
    g = rng.standard_normal((2, 5, 4))
    for edge_order in (1, 2):
        kr = kiln.gradient(k, spacing=[kc], dim=0, edge_order=edge_order) + kiln.gradient(k, dim=1,
                                                                                          edge_order=edge_order)
        tr = torch.gradient(t, spacing=[tc], dim=0, edge_order=edge_order) + torch.gradient(t, dim=1,
                                                                                            edge_order=edge_order)
        sum((r * kiln.from_numpy(gi.copy())).sum() for r, gi in zip(kr, g)).backward()
        sum((r * torch.from_numpy(gi.copy())).sum() for r, gi in zip(tr, g)).backward()
        _grads_close(k, t)
        _grads_close(kc, tc)


def test_gradient_errors_match_torch():
    y = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    cases = [
        lambda m: m.gradient(m.tensor(y), spacing=[2.0]),
        lambda m: m.gradient(m.tensor(y), spacing=[2.0, 3.0], dim=1),
        lambda m: m.gradient(m.tensor(y), spacing=[2.0], dim=[1, 0]),
        lambda m: m.gradient(m.tensor(y), dim=[1, 1]),
        lambda m: m.gradient(m.tensor(y), dim=2),
        lambda m: m.gradient(m.tensor(y), spacing=[m.ones(2, 2)], dim=0),
        lambda m: m.gradient(m.tensor(y), edge_order=2),
        lambda m: m.gradient(m.tensor(y), edge_order=3),
        lambda m: m.gradient(m.tensor(y), edge_order=0),
        lambda m: m.gradient(m.tensor([1.0])),
        lambda m: m.gradient(m.tensor([1, 2, 4], dtype=m.uint8)),
        lambda m: m.gradient(m.tensor([True, False, True])),
        lambda m: m.gradient(m.ones(0, 3)),
        lambda m: m.gradient(m.tensor(y), spacing=[m.tensor([0.0, 1.0])]),
        lambda m: m.gradient(m.tensor(y), spacing=[1.0, m.tensor([0.0, 1.0, 3.0, 4.0])]),
    ]
    for fn in cases:
        assert_same_error(lambda: fn(kiln), lambda: fn(torch))
    assert_same_error(lambda: kiln.gradient(kiln.tensor(y), spacing=kiln.tensor([0.0, 1.0, 2.0, 3.0]), dim=1),
                      lambda: torch.gradient(torch.tensor(y), spacing=torch.tensor([0.0, 1.0, 2.0, 3.0]), dim=1),
                      message=False)


# --- kaiser_window -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_kaiser_window_matches_torch(dtype):
    tol = {"float32": {"rtol": 2e-6, "atol": 1e-7}, "float64": {"rtol": 1e-12, "atol": 1e-15},
           "float16": {"rtol": 1e-3, "atol": 1e-7}, "bfloat16": {"rtol": 8e-3, "atol": 1e-7}}[dtype]
    for length in (0, 1, 2, 3, 5, 16, 51):
        for periodic in (True, False):
            for beta in (12.0, 0.0, 5.0, -3.0, 30.0):
                k = kiln.kaiser_window(length, periodic, beta, dtype=getattr(kiln, dtype))
                t = torch.kaiser_window(length, periodic, beta, dtype=getattr(torch, dtype))
                _close(k, t, **tol)
                assert k.stride() == t.stride()
    _close(kiln.kaiser_window(7), torch.kaiser_window(7), rtol=2e-6, atol=1e-7)
    _close(kiln.kaiser_window(7, periodic=False), torch.kaiser_window(7, periodic=False), rtol=2e-6, atol=1e-7)
    k, t = kiln.kaiser_window(4, requires_grad=True), torch.kaiser_window(4, requires_grad=True)
    assert k.requires_grad and t.requires_grad and k.is_leaf


def test_kaiser_window_errors():
    assert_same_error(lambda: kiln.kaiser_window(-1), lambda: torch.kaiser_window(-1))
    assert_same_error(lambda: kiln.kaiser_window(5, dtype=kiln.int64),
                      lambda: torch.kaiser_window(5, dtype=torch.int64))
    assert_same_error(lambda: kiln.kaiser_window(5.0), lambda: torch.kaiser_window(5.0))


# --- segment_reduce -------------------------------------------------------------------------------------------

REDUCTIONS = ["sum", "mean", "max", "min", "prod"]


def _segments_pair(dtype, shape, seed, ties=False):
    rng = np.random.default_rng(seed)
    data = rng.integers(-2, 3, shape).astype(dtype) if ties else rng.standard_normal(shape).astype(dtype)
    return _pair(data)


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_segment_reduce_lengths_and_offsets_match_torch(reduce, dtype):
    k, t = _segments_pair(dtype, (9, 3), 15)
    lengths = np.array([2, 0, 4, 1, 2, 0])
    kl, tl = _pair(lengths)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    ko, to = _pair(offsets.astype(np.int32))
    tol = {"rtol": 1e-6, "atol": 1e-6} if dtype == "float32" else {}
    for initial in (None, 0.5, -1.0):
        _close(kiln.segment_reduce(k, reduce, lengths=kl, initial=initial),
               torch.segment_reduce(t, reduce, lengths=tl, initial=initial), **tol)
        _close(kiln.segment_reduce(k, reduce, offsets=ko, initial=initial),
               torch.segment_reduce(t, reduce, offsets=to, initial=initial), **tol)
    _close(kiln.segment_reduce(k[::2], reduce, lengths=kiln.tensor([1, 4], dtype=kiln.int32)),
           torch.segment_reduce(t[::2], reduce, lengths=torch.tensor([1, 4], dtype=torch.int32)), **tol)
    partial_k, partial_t = kiln.tensor([1, 3, 3, 7]), torch.tensor([1, 3, 3, 7])
    _close(kiln.segment_reduce(k, reduce, offsets=partial_k), torch.segment_reduce(t, reduce, offsets=partial_t), **tol)
    short_k, short_t = kiln.tensor([2, 3]), torch.tensor([2, 3])
    _close(kiln.segment_reduce(k, reduce, lengths=short_k, unsafe=True),
           torch.segment_reduce(t, reduce, lengths=short_t, unsafe=True), **tol)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_segment_reduce_inner_axis_and_empty(reduce):
    k, t = _segments_pair("float64", (2, 5, 3), 16)
    kl, tl = _pair(np.array([[2, 0, 3], [5, 0, 0]]))
    for axis in (1, -2):
        _close(kiln.segment_reduce(k, reduce, lengths=kl, axis=axis),
               torch.segment_reduce(t, reduce, lengths=tl, axis=axis))
    ko, to = _pair(np.array([[0, 1, 5], [0, 0, 4]]))
    _close(kiln.segment_reduce(k, reduce, offsets=ko, axis=1), torch.segment_reduce(t, reduce, offsets=to, axis=1))
    _close(kiln.segment_reduce(kiln.empty(0), reduce, lengths=kiln.tensor([0, 0])),
           torch.segment_reduce(torch.empty(0), reduce, lengths=torch.tensor([0, 0])))
    _close(kiln.segment_reduce(kiln.empty(0, 2), reduce, lengths=kiln.tensor([0]), initial=3.0),
           torch.segment_reduce(torch.empty(0, 2), reduce, lengths=torch.tensor([0]), initial=3.0))
    _close(kiln.segment_reduce(k.half(), reduce, lengths=kl, axis=1),
           torch.segment_reduce(t.half(), reduce, lengths=tl, axis=1), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("initial", [None, 1.0, 2.0])
def test_segment_reduce_gradients_match_torch(reduce, initial):
    # Integer-valued data gives ties (max / min share the gradient) and zeros (prod's special case).
    for seed, shape, lengths, axis in ((17, (10,), [3, 0, 2, 4, 1], 0), (18, (2, 6, 2), [[3, 3], [0, 6]], 1),
                                       (19, (7, 3), [0, 7], 0)):
        rng = np.random.default_rng(seed)
        data = rng.integers(-2, 3, shape).astype(np.float64)
        k, t = _pair(data, requires_grad=True)
        kl, tl = _pair(np.array(lengths))
        kr = kiln.segment_reduce(k, reduce, lengths=kl, axis=axis, initial=initial)
        tr = torch.segment_reduce(t, reduce, lengths=tl, axis=axis, initial=initial)
        _close(kr, tr)
        g = rng.standard_normal(tuple(tr.shape))
        (kr * kiln.from_numpy(g.copy())).sum().backward()
        (tr * torch.from_numpy(g.copy())).sum().backward()
        _grads_close(k, t)


def test_segment_reduce_nan_and_prod_zero_gradients():
    data = np.array([1.0, np.nan, 2.0, 0.0, 0.0, 3.0, 0.0, 4.0, 5.0])
    for reduce in ("max", "min", "prod"):
        k, t = _pair(data, requires_grad=True)
        kr = kiln.segment_reduce(k, reduce, lengths=kiln.tensor([3, 2, 2, 2]))
        tr = torch.segment_reduce(t, reduce, lengths=torch.tensor([3, 2, 2, 2]))
        _close(kr, tr)
        kr.sum().backward()
        tr.sum().backward()
        _grads_close(k, t)


def test_segment_reduce_errors_match_torch():
    d = np.arange(6.0, dtype=np.float32)
    cases = [
        lambda m: m.segment_reduce(m.tensor(d), "sum"),
        lambda m: m.segment_reduce(m.tensor(d), "sum", indices=m.tensor([1, 5])),
        lambda m: m.segment_reduce(m.tensor(d), "foo", lengths=m.tensor([6])),
        lambda m: m.segment_reduce(m.tensor(d), "SUM", lengths=m.tensor([6])),
        lambda m: m.segment_reduce(m.tensor(d), "sum", lengths=m.tensor([2, 3])),
        lambda m: m.segment_reduce(m.tensor(d), "sum", lengths=m.tensor([-1, 7])),
        lambda m: m.segment_reduce(m.tensor(d), "sum", lengths=m.tensor([2.0, 4.0])),
        lambda m: m.segment_reduce(m.arange(6), "sum", lengths=m.tensor([2, 4])),
        lambda m: m.segment_reduce(m.tensor(d).reshape(2, 3), "sum", lengths=m.tensor([1, 2]), axis=1),
        lambda m: m.segment_reduce(m.tensor(d).reshape(3, 2), "sum", lengths=m.tensor([[1, 2]])),
        lambda m: m.segment_reduce(m.tensor(d), "sum", lengths=m.tensor([6]), axis=1),
        lambda m: m.segment_reduce(m.tensor(1.0), "sum", lengths=m.tensor([1])),
        lambda m: m.segment_reduce(m.tensor(d), "sum", lengths=m.tensor([[3, 3]])),
        lambda m: m.segment_reduce(m.empty(0), "sum", lengths=m.tensor([], dtype=m.int64)),
    ]
    for fn in cases:
        assert_same_error(lambda: fn(kiln), lambda: fn(torch))
    assert_same_tensor(kiln.segment_reduce(kiln.tensor(d), "amax", lengths=kiln.tensor([2, 4])),
                       torch.segment_reduce(torch.tensor(d), "amax", lengths=torch.tensor([2, 4])))


# --- random: poisson / binomial ----------------------------------------------------------------------------


def _assert_moments(sample, mean, var, n):
    """Sample mean and variance within 6 standard errors (the variance's from a 4th-moment bound)."""
    values = sample.double().numpy()
    assert abs(values.mean() - mean) <= 6 * math.sqrt(var / n) + 1e-12, (values.mean(), mean)
    assert abs(values.var() - var) <= 6 * math.sqrt(3 * var * var / n + var / n) + 1e-12, (values.var(), var)


def _assert_frequencies(sample, pmf, support):
    """Each value's frequency within 6 binomial standard errors of its probability."""
    values = sample.double().numpy()
    n = values.size
    for k in support:
        p = pmf(k)
        assert abs((values == k).mean() - p) <= 6 * math.sqrt(p * (1 - p) / n) + 1e-4, (k, (values == k).mean(), p)


N = 100_000


def test_poisson_moments_support_and_frequencies():
    kiln.manual_seed(20)
    for rate in (0.0, 0.5, 3.0, 9.9, 10.0, 15.0, 60.0, 5000.0):
        sample = kiln.poisson(kiln.full((N,), rate))
        values = sample.numpy()
        assert sample.dtype == kiln.float32
        assert (values >= 0).all() and (values == np.floor(values)).all()
        _assert_moments(sample, rate, rate, N)
    for rate in (2.5, 15.0):
        sample = kiln.poisson(kiln.full((N,), rate, dtype=kiln.float64))
        _assert_frequencies(sample, lambda k: math.exp(-rate + k * math.log(rate) - math.lgamma(k + 1)),
                            range(int(rate * 2)))


def test_poisson_dtypes_shapes_seeds_and_gradient():
    rates = kiln.tensor([[0.5, 20.0], [3.0, 0.0]])
    for dtype in (kiln.float32, kiln.float64, kiln.float16, kiln.bfloat16):
        result = kiln.poisson(rates.to(dtype))
        assert result.dtype == dtype and result.shape == (2, 2)
    assert kiln.poisson(rates.t()).shape == (2, 2)
    assert kiln.poisson(kiln.empty(0, 3)).shape == (0, 3)
    kiln.manual_seed(5)
    first = kiln.poisson(kiln.full((1000,), 4.0))
    kiln.manual_seed(5)
    assert kiln.equal(first, kiln.poisson(kiln.full((1000,), 4.0)))
    g1, g2 = kiln.Generator().manual_seed(7), kiln.Generator().manual_seed(7)
    a, b = kiln.poisson(kiln.full((1000,), 30.0), g1), kiln.poisson(kiln.full((1000,), 30.0), generator=g2)
    assert kiln.equal(a, b) and not kiln.equal(a, kiln.poisson(kiln.full((1000,), 30.0), g1))
    k, t = _pair(np.array([1.0, 12.0]), requires_grad=True)
    kr, tr = kiln.poisson(k), torch.poisson(t)
    assert kr.requires_grad == tr.requires_grad
    kr.sum().backward()
    tr.sum().backward()
    _grads_close(k, t)


def test_poisson_errors():
    for fn in (lambda m: m.poisson(m.tensor([-1.0, 2.0])), lambda m: m.poisson(m.tensor([float("nan")])),
               lambda m: m.poisson(m.tensor([1, 2]))):
        assert_same_error(lambda: fn(kiln), lambda: fn(torch))


@pytest.mark.parametrize("count,prob", [(10, 0.3), (5, 0.9), (100, 0.5), (1000, 0.02), (1000, 0.97), (40, 0.2),
                                        (1e6, 0.3), (3, 0.5)])
def test_binomial_moments_and_support(count, prob):
    kiln.manual_seed(21)
    sample = kiln.binomial(kiln.full((N,), float(count)), kiln.full((N,), prob))
    values = sample.numpy()
    assert sample.dtype == kiln.float32
    assert (values >= 0).all() and (values <= count).all() and (values == np.floor(values)).all()
    _assert_moments(sample, count * prob, count * prob * (1 - prob), N)


def test_binomial_frequencies_match_the_pmf():
    kiln.manual_seed(22)
    for count, prob in ((12, 0.35), (60, 0.45), (80, 0.8)):
        sample = kiln.binomial(kiln.full((N,), float(count), dtype=kiln.float64), kiln.full((N,), prob,
                                                                                            dtype=kiln.float64))
        _assert_frequencies(sample, lambda k: math.comb(count, k) * prob ** k * (1 - prob) ** (count - k),
                            range(count + 1))


def test_binomial_edges_broadcast_dtypes_seed_and_errors():
    count = kiln.tensor([10.0, 20.0, 0.0, -3.0, 7.0])
    prob = kiln.tensor([1.0, 0.0, 0.5, 0.5, 1.5])
    assert kiln.binomial(count, prob).tolist() == torch.binomial(torch.tensor(count.tolist()),
                                                                 torch.tensor(prob.tolist())).tolist()
    assert kiln.binomial(kiln.tensor([[10.0], [20.0]]), kiln.tensor([0.5, 0.2])).shape == (2, 2)
    assert kiln.binomial(kiln.tensor(10.0), kiln.tensor(0.5)).shape == ()
    assert kiln.binomial(count.double(), prob.double()).dtype == kiln.float64
    kiln.manual_seed(3)
    first = kiln.binomial(kiln.full((500,), 50.0), kiln.full((500,), 0.4))
    kiln.manual_seed(3)
    assert kiln.equal(first, kiln.binomial(kiln.full((500,), 50.0), kiln.full((500,), 0.4)))
    g = kiln.Generator().manual_seed(1)
    assert kiln.binomial(kiln.full((5,), 9.0), kiln.full((5,), 0.4), generator=g).shape == (5,)
    cases = [
        lambda m: m.binomial(m.tensor([10, 20]), m.tensor([0.5, 0.1])),
        lambda m: m.binomial(m.tensor([10.0, 20.0]), m.tensor([0.5, 0.1], dtype=m.float64)),
        lambda m: m.binomial(m.tensor([10.0, 20.0]).half(), m.tensor([0.5, 0.1]).half()),
        lambda m: m.binomial(m.tensor([10.0, 20.0]), m.tensor([0.5, 0.2, 0.3])),
    ]
    for fn in cases:
        assert_same_error(lambda: fn(kiln), lambda: fn(torch))
    kc, tc = _pair(np.array([10.0, 20.0], dtype=np.float32), requires_grad=True)
    kr, tr = kiln.binomial(kc, kiln.tensor([0.5, 0.1])), torch.binomial(tc, torch.tensor([0.5, 0.1]))
    assert kr.requires_grad == tr.requires_grad
    assert_same_error(lambda: kr.sum().backward(), lambda: tr.sum().backward())


# --- random: in-place samplers -------------------------------------------------------------------------------


def test_cauchy_quartiles_dtypes_and_errors():
    kiln.manual_seed(23)
    for dtype in (kiln.float32, kiln.float64):
        x = kiln.empty(N, dtype=dtype)
        assert x.cauchy_(2.0, 0.5) is x and x.dtype == dtype
        q = np.quantile(x.numpy(), [0.25, 0.5, 0.75])
        assert np.allclose(q, [1.5, 2.0, 2.5], atol=0.02), q
    assert kiln.empty(3, dtype=kiln.float16).cauchy_().dtype == kiln.float16
    for fn in (lambda m: m.empty(3).cauchy_(0, 0), lambda m: m.empty(3).cauchy_(0, -1),
               lambda m: m.empty(3).cauchy_(0, float("nan")), lambda m: m.empty(3, dtype=m.int64).cauchy_(),
               lambda m: m.empty(3, dtype=m.bool).cauchy_(), lambda m: m.zeros(3, requires_grad=True).cauchy_()):
        assert_same_error(lambda: fn(kiln), lambda: fn(torch))


def test_geometric_moments_support_dtypes_and_errors():
    kiln.manual_seed(24)
    for p in (0.5, 0.1, 0.9, 0.01):
        x = kiln.empty(N, dtype=kiln.float64).geometric_(p)
        values = x.numpy()
        assert (values >= 1).all() and (values == np.floor(values)).all()
        _assert_moments(x, 1 / p, (1 - p) / p ** 2, N)
    x = kiln.empty(N, dtype=kiln.int64).geometric_(0.25)
    assert x.dtype == kiln.int64 and int(x.min()) >= 1
    _assert_moments(x, 4.0, 12.0, N)
    assert kiln.empty(4, dtype=kiln.int32).geometric_(p=0.5).dtype == kiln.int32
    for fn in (lambda m: m.empty(3).geometric_(0), lambda m: m.empty(3).geometric_(1),
               lambda m: m.empty(3).geometric_(1.5), lambda m: m.empty(3).geometric_(float("nan")),
               lambda m: m.empty(3, dtype=m.bool).geometric_(0.5)):
        assert_same_error(lambda: fn(kiln), lambda: fn(torch))


def test_log_normal_moments_dtypes_and_errors():
    kiln.manual_seed(25)
    x = kiln.empty(N, dtype=kiln.float64).log_normal_(0.5, 0.75)
    assert (x.numpy() > 0).all()
    _assert_moments(kiln.log(x), 0.5, 0.75 ** 2, N)
    y = kiln.empty(N).log_normal_()
    _assert_moments(kiln.log(y), 1.0, 4.0, N)
    assert kiln.empty(3, dtype=kiln.bfloat16).log_normal_().dtype == kiln.bfloat16
    for fn in (lambda m: m.empty(3).log_normal_(1, 0), lambda m: m.empty(3).log_normal_(1, -1),
               lambda m: m.empty(3, dtype=m.int64).log_normal_()):
        assert_same_error(lambda: fn(kiln), lambda: fn(torch))


def test_in_place_samplers_are_reproducible_and_fill_views():
    for name, args in (("cauchy_", ()), ("geometric_", (0.3,)), ("log_normal_", ())):
        g1, g2 = kiln.Generator().manual_seed(9), kiln.Generator().manual_seed(9)
        a = getattr(kiln.empty(64), name)(*args, generator=g1)
        b = getattr(kiln.empty(64), name)(*args, generator=g2)
        assert kiln.equal(a, b)
        kiln.manual_seed(11)
        c = getattr(kiln.empty(64), name)(*args)
        kiln.manual_seed(11)
        assert kiln.equal(c, getattr(kiln.empty(64), name)(*args))
        base = kiln.zeros(4, 6)
        view = base[:, ::2]
        getattr(view, name)(*args)
        assert bool((base[:, 1::2] == 0).all()) and bool((base[:, ::2] != 0).all())


@pytest.mark.parametrize("call", [
    lambda L: L.trapezoid(L.arange(4.0), dim=1),                                 # dim out of range
    lambda L: L.trapezoid(L.tensor(2.0)),                                         # 0-d y
    lambda L: L.trapezoid(L.arange(4.0), L.arange(3.0)),                          # x of the wrong length
    lambda L: L.trapezoid(L.arange(6).reshape(2, 3)),                             # integer y
    lambda L: L.trapezoid(L.arange(6.0).reshape(2, 3), dx=0.5, dim=0),
    lambda L: L.trapezoid(L.arange(6.0).reshape(2, 3), L.tensor([1.0, 3.0, 4.0])),
    lambda L: L.trapezoid(L.zeros(2, 0)),
])
def test_trapezoid_shares_trapz_checks_and_values(call):
    outcomes = []
    for L in (kiln, torch):
        try:
            outcomes.append(call(L).tolist())
        except Exception as error:  # noqa: BLE001  (the type and text are what is compared)
            outcomes.append((type(error).__name__, str(error)))
    assert outcomes[0] == outcomes[1]

"""renorm (renorm_), bucketize, isin, unravel_index, ger, fill_diagonal_,
diagonal_scatter / select_scatter / slice_scatter, the hann / hamming /
blackman / bartlett windows and the top-level in-place gcd_ / lcm_ / ldexp_ /
i0_ against torch: values, gradients, non-contiguous inputs and torch's
exception types and words."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kiln
from tolerant_compare import assert_fails_alike as _same_error, assert_matches
from torch_compare import raised


def _pair(a, dtype="float64", requires_grad=False):
    a = np.ascontiguousarray(np.asarray(a)).astype(dtype)
    k, t = kiln.from_numpy(a.copy()), torch.from_numpy(a.copy())
    if requires_grad:
        k.requires_grad_(True)
        t.requires_grad_(True)
    return k, t




def _grads_match(kfn, tfn, arrays):
    pairs = [_pair(a, requires_grad=True) for a in arrays]
    k_out, t_out = kfn(*[k for k, _ in pairs]), tfn(*[t for _, t in pairs])
    g = np.random.default_rng(3).standard_normal(tuple(t_out.shape))
    (k_out * kiln.from_numpy(g.copy())).sum().backward()
    (t_out * torch.from_numpy(g.copy())).sum().backward()
    for k, t in pairs:
        assert k.grad is not None
        torch.testing.assert_close(torch.from_numpy(k.grad.numpy().copy()), t.grad)


@pytest.mark.parametrize("p, dim, maxnorm", [(2, 0, 5.0), (1, 1, 3.0), (3.5, -1, 0.5), (2, 2, 100.0), (2, 1, 0.0)])
def test_renorm_values_gradient_and_in_place(p, dim, maxnorm):
    a = np.random.default_rng(1).standard_normal((3, 4, 5)) * 3
    k, t = _pair(a)
    assert_matches(kiln.renorm(k, p, dim, maxnorm), torch.renorm(t, p, dim, maxnorm))
    assert_matches(k.mT.renorm(p, dim, maxnorm), t.mT.renorm(p, dim, maxnorm))
    kv, tv = k.clone(), t.clone()
    assert kv.renorm_(p, dim, maxnorm) is kv
    tv.renorm_(p, dim, maxnorm)
    assert_matches(kv, tv)
    _grads_match(lambda x: kiln.renorm(x, p, dim, maxnorm), lambda x: torch.renorm(x, p, dim, maxnorm), [a])


@pytest.mark.parametrize("case", ["1-D", "p=0", "p<0", "maxnorm<0", "dim"])
def test_renorm_errors(case):
    def make(lib):
        x = lib.ones(3, 4)
        return {"1-D": lambda: lib.renorm(lib.ones(3), 2, 0, 1.0), "p=0": lambda: lib.renorm(x, 0, 0, 1.0),
                "p<0": lambda: lib.renorm(x, -1, 0, 1.0), "maxnorm<0": lambda: lib.renorm(x, 2, 0, -5),
                "dim": lambda: lib.renorm(x, 2, 3, 1.0)}[case]

    _same_error(make(kiln), make(torch))


@pytest.mark.filterwarnings("ignore:torch.searchsorted.*input value tensor is non-contiguous")
@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("out_int32", [False, True])
def test_bucketize(right, out_int32):
    boundaries = np.array([1.0, 3.0, 5.0, 7.0, 9.0])
    values = np.array([[0.0, 1.0, 4.0], [9.0, 9.5, 5.0]])
    kb, tb = _pair(boundaries)
    kv, tv = _pair(values)
    assert_matches(kiln.bucketize(kv, kb, right=right, out_int32=out_int32),
                   torch.bucketize(tv, tb, right=right, out_int32=out_int32), exact=True)
    assert_matches(kiln.bucketize(kv.mT, kb, right=right), torch.bucketize(tv.mT, tb, right=right), exact=True)
    assert_matches(kiln.bucketize(3.0, kb, right=right), torch.bucketize(3.0, tb, right=right), exact=True)
    _same_error(lambda: kiln.bucketize(kv, kb.reshape(5, 1)), lambda: torch.bucketize(tv, tb.reshape(5, 1)))


@pytest.mark.parametrize("invert", [False, True])
def test_isin(invert):
    k, t = _pair(np.array([[1, 2, 3], [4, 5, 2]]), "int64")
    kt, tt = _pair(np.array([2, 5, 9]), "int64")
    assert_matches(kiln.isin(k, kt, invert=invert), torch.isin(t, tt, invert=invert), exact=True)
    assert_matches(kiln.isin(k.mT, kt, invert=invert), torch.isin(t.mT, tt, invert=invert), exact=True)
    assert_matches(kiln.isin(k, 2, invert=invert), torch.isin(t, 2, invert=invert), exact=True)
    assert_matches(kiln.isin(5, kt, invert=invert), torch.isin(5, tt, invert=invert), exact=True)
    kf, tf = _pair(np.array([1.5, 2.0]), "float64")
    assert_matches(kiln.isin(kf, kt), torch.isin(tf, tt), exact=True)
    assert_matches(kiln.isin(k, kt[:0]), torch.isin(t, tt[:0]), exact=True)


def test_unravel_index():
    k, t = _pair(np.array([[4, 7], [-1, 12]]), "int64")
    for shape in [(3, 4), (2, 2, 3), 12, (12,)]:
        for kr, tr in zip(kiln.unravel_index(k, shape), torch.unravel_index(t, shape)):
            assert_matches(kr, tr, exact=True)
    _same_error(lambda: kiln.unravel_index(kiln.tensor([1.0]), (3, 4)),
                lambda: torch.unravel_index(torch.tensor([1.0]), (3, 4)))


def test_ger():
    a, b = np.arange(3.0), np.arange(4.0) - 1
    k1, t1 = _pair(a)
    k2, t2 = _pair(b)
    assert_matches(kiln.ger(k1, k2), torch.ger(t1, t2), exact=True)
    assert_matches(k1.ger(k2), t1.ger(t2), exact=True)
    _grads_match(kiln.ger, torch.ger, [a, b])


@pytest.mark.parametrize("shape, wrap", [((4, 4), False), ((3, 5), False), ((7, 3), False), ((7, 3), True),
                                          ((8, 3), True), ((3, 3, 3), False), ((2, 6), True)])
def test_fill_diagonal_(shape, wrap):
    k, t = _pair(np.zeros(shape))
    assert k.fill_diagonal_(2.5, wrap=wrap) is k
    t.fill_diagonal_(2.5, wrap=wrap)
    assert_matches(k, t, exact=True)
    k, t = _pair(np.zeros(shape[::-1]))
    k.mT.fill_diagonal_(-1.0, wrap=wrap)
    t.mT.fill_diagonal_(-1.0, wrap=wrap)
    assert_matches(k, t, exact=True)


def test_fill_diagonal_errors():
    _same_error(lambda: kiln.ones(3).fill_diagonal_(2), lambda: torch.ones(3).fill_diagonal_(2))
    _same_error(lambda: kiln.ones(3, 4, 3).fill_diagonal_(2), lambda: torch.ones(3, 4, 3).fill_diagonal_(2))


@pytest.mark.parametrize("name, src_shape, args", [
    ("diagonal_scatter", (3,), ()), ("diagonal_scatter", (2,), (-1,)), ("diagonal_scatter", (3,), (1,)), ("diagonal_scatter", (3,), (0, 1, 0)),
    ("select_scatter", (4,), (0, 1)), ("select_scatter", (3,), (1, -1)),
    ("slice_scatter", (2, 4), (0, 0, 3, 2)), ("slice_scatter", (3, 2), (1, 1, None, 2)), ("slice_scatter", (3, 4), ()),
])
def test_scatter_composites(name, src_shape, args):
    a, s = np.random.default_rng(4).standard_normal((3, 4)), np.random.default_rng(5).standard_normal(src_shape)
    k, t = _pair(a)
    ks, ts = _pair(s)
    assert_matches(getattr(kiln, name)(k, ks, *args), getattr(torch, name)(t, ts, *args), exact=True)
    assert_matches(getattr(k, name)(ks, *args), getattr(t, name)(ts, *args), exact=True)
    assert_matches(k, t, exact=True)  # the input is untouched
    _grads_match(lambda x, y: getattr(kiln, name)(x, y, *args), lambda x, y: getattr(torch, name)(x, y, *args), [a, s])


def test_scatter_composites_errors():
    _same_error(lambda: kiln.diagonal_scatter(kiln.zeros(3, 3), kiln.ones(2)),
                lambda: torch.diagonal_scatter(torch.zeros(3, 3), torch.ones(2)))
    _same_error(lambda: kiln.select_scatter(kiln.zeros(3, 3), kiln.ones(2), 0, 1),
                lambda: torch.select_scatter(torch.zeros(3, 3), torch.ones(2), 0, 1))
    _same_error(lambda: kiln.slice_scatter(kiln.zeros(4, 3), kiln.ones(3, 3), 0, 0, 4, 2),
                lambda: torch.slice_scatter(torch.zeros(4, 3), torch.ones(3, 3), 0, 0, 4, 2))


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window"])
@pytest.mark.parametrize("length", [0, 1, 2, 5, 16, 33])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, length, periodic):
    assert_matches(getattr(kiln, name)(length, periodic), getattr(torch, name)(length, periodic))
    assert_matches(getattr(kiln, name)(length, periodic, dtype=kiln.float64),
                   getattr(torch, name)(length, periodic, dtype=torch.float64))


def test_window_options_and_errors():
    assert_matches(kiln.hamming_window(9, True, 0.5, 0.4, dtype=kiln.float64),
                   torch.hamming_window(9, True, 0.5, 0.4, dtype=torch.float64))
    assert kiln.hann_window(4, requires_grad=True).requires_grad
    _same_error(lambda: kiln.hann_window(-1), lambda: torch.hann_window(-1))
    _same_error(lambda: kiln.blackman_window(3, dtype=kiln.int64), lambda: torch.blackman_window(3, dtype=torch.int64),
                message=False)
    assert "blackman_window expects floating point dtypes" in str(raised(
        lambda: kiln.blackman_window(3, dtype=kiln.int64)))


def test_top_level_in_place_numerics():
    k, t = _pair(np.array([12, 18, -9]), "int64")
    ko, to = _pair(np.array([8, 12, 6]), "int64")
    assert kiln.gcd_(k, ko) is k
    torch.gcd_(t, to)
    assert_matches(k, t, exact=True)
    kiln.lcm_(k, ko)
    torch.lcm_(t, to)
    assert_matches(k, t, exact=True)
    kf, tf = _pair(np.array([0.5, -3.0, 7.0]))
    kiln.ldexp_(kf, ko)
    torch.ldexp_(tf, to)
    assert_matches(kf, tf, exact=True)
    kiln.i0_(kf)
    torch.i0_(tf)
    assert_matches(kf, tf)

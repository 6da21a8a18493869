"""The reductions beyond the core table, against torch: vector and matrix norms
(torch.linalg.vector_norm, torch.norm, Tensor.norm, torch.linalg.norm and
matrix_norm), aminmax, var_mean/std_mean, count_nonzero, and the out= forms of
every reduction (dtype rules, resizing, errors). Values, gradients, errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import kiln
from torch_compare import assert_same_error, raised, values


def _pair(array, dtype="float32", requires_grad=False):
    k = kiln.tensor(array, dtype=getattr(kiln, dtype), requires_grad=requires_grad)
    t = torch.tensor(array, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    return k, t


def _close(k, t, rtol=None, atol=None):
    ks = k if isinstance(k, tuple) else (k,)
    ts = t if isinstance(t, tuple) else (t,)
    assert len(ks) == len(ts)
    for a, b in zip(ks, ts):
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype).removeprefix("kiln.") == str(b.dtype).removeprefix("torch.")
        torch.testing.assert_close(torch.from_numpy(np.asarray(values(a))).to(b.dtype), b.detach(), rtol=rtol,
                                   atol=atol, equal_nan=True)


RNG = np.random.default_rng(11)
X = RNG.standard_normal((4, 5, 6))
X[0, 0, 0] = 0.0

ORDS = [2, 1, 0, 3, 0.5, -1, math.inf, -math.inf]
DIMS = [None, 0, -1, (0, 2), (1, 2)]


@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_vector_norm_values_and_gradients_match_torch(ord, dim, keepdim):
    k, t = _pair(X, "float64", requires_grad=True)
    kn = kiln.linalg.vector_norm(k, ord, dim, keepdim)
    tn = torch.linalg.vector_norm(t, ord, dim, keepdim)
    _close(kn, tn)
    if ord == 0:
        return  # torch's ord-0 norm has no gradient (a count)
    g = RNG.standard_normal(tuple(tn.shape))
    kn.backward(kiln.tensor(g, dtype=kiln.float64))
    tn.backward(torch.tensor(g, dtype=torch.float64))
    _close(k.grad, t.grad)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_vector_norm_layouts_and_low_precision(layout, dtype):
    k, t = _pair(X, dtype)
    view = {"contiguous": lambda a: a, "transposed": lambda a: a.transpose(0, 2), "sliced": lambda a: a[:, ::2]}
    k, t = view[layout](k), view[layout](t)
    loose = dict(rtol=1e-2, atol=1e-2) if dtype != "float32" else {}
    for ord in (2, 1, math.inf):
        _close(kiln.linalg.vector_norm(k, ord, 1), torch.linalg.vector_norm(t, ord, 1), **loose)
    _close(kiln.linalg.vector_norm(k, dtype=kiln.float64) if dtype == "float32" else kiln.linalg.vector_norm(
        k, dtype=kiln.float32), torch.linalg.vector_norm(t, dtype=torch.float64) if dtype == "float32" else
        torch.linalg.vector_norm(t, dtype=torch.float32), **loose)


def test_vector_norm_gradient_at_zero_is_zero_as_torch():
    for ord in (2, 3, math.inf):
        k, t = _pair(np.zeros(3), "float64", requires_grad=True)
        kiln.linalg.vector_norm(k, ord).backward()
        torch.linalg.vector_norm(t, ord).backward()
        _close(k.grad, t.grad)


def test_vector_norm_gradcheck():
    x = kiln.tensor(RNG.standard_normal((3, 4)), dtype=kiln.float64, requires_grad=True)
    for ord in (2, 1.5, 3):
        assert kiln.autograd.gradcheck(lambda a: kiln.linalg.vector_norm(a, ord, 1), (x,))


@pytest.mark.parametrize("case", [
    lambda L: L.linalg.vector_norm(L.tensor([1, 2])),
    lambda L: L.linalg.vector_norm(L.ones(2), 2, dtype=L.int64),
    lambda L: L.linalg.vector_norm(L.ones(2), 2, dtype=L.float16),
    lambda L: L.linalg.vector_norm(L.empty(0), math.inf),
    lambda L: L.linalg.vector_norm(L.empty(0), -1),
    lambda L: L.linalg.vector_norm(L.empty(3, 0), -math.inf, 1),
    lambda L: L.linalg.vector_norm(L.ones(2, 3), 2, 2),
])
def test_vector_norm_errors_match_torch(case):
    assert_same_error(lambda: case(kiln), lambda: case(torch))


def test_vector_norm_of_empty_tensors_matches_torch():
    for ord in (2, 1, 0):
        _close(kiln.linalg.vector_norm(kiln.empty(0), ord), torch.linalg.vector_norm(torch.empty(0), ord))
    _close(kiln.linalg.vector_norm(kiln.empty(0, 3), math.inf, 1), torch.linalg.vector_norm(torch.empty(0, 3), math.inf, 1))


@pytest.mark.parametrize("call", [
    lambda L, x: L.norm(x),
    lambda L, x: L.norm(x, p="fro", dim=(0, 1)),
    lambda L, x: L.norm(x, 1, 0),
    lambda L, x: L.norm(x, math.inf, dim=1, keepdim=True),
    lambda L, x: x.norm(),
    lambda L, x: x.norm(3, -1),
    lambda L, x: x.norm(p="fro", dim=(1, 2), keepdim=True),
    lambda L, x: L.linalg.norm(x),
    lambda L, x: L.linalg.norm(x, dim=1),
    lambda L, x: L.linalg.norm(x, 1, dim=-1),
    lambda L, x: L.linalg.norm(x, "fro", dim=(0, 2)),
    lambda L, x: L.linalg.norm(x[0], math.inf),
    lambda L, x: L.linalg.norm(x[0], -1),
    lambda L, x: L.linalg.norm(x[0, 0], 3),
    lambda L, x: L.linalg.matrix_norm(x),
    lambda L, x: L.linalg.matrix_norm(x, math.inf),
    lambda L, x: L.linalg.matrix_norm(x, -math.inf, keepdim=True),
    lambda L, x: L.linalg.matrix_norm(x, 1, dim=(0, 2)),
    lambda L, x: L.linalg.matrix_norm(x, -1, dim=(2, 0)),
])
def test_norm_front_ends_match_torch(call):
    k, t = _pair(X, "float64", requires_grad=True)
    kn, tn = call(kiln, k), call(torch, t)
    _close(kn, tn)
    kn.sum().backward()
    tn.sum().backward()
    _close(k.grad, t.grad)


def test_norms_through_the_singular_values():
    # (values and gradients over dims and dtypes: test_linalg_decompositions.py)
    a = np.arange(6.0).reshape(2, 3) ** 1.5
    _close(kiln.norm(kiln.tensor(a), p="nuc"), torch.norm(torch.tensor(a), p="nuc"))
    _close(kiln.linalg.matrix_norm(kiln.tensor(a), 2), torch.linalg.matrix_norm(torch.tensor(a), 2))
    assert_same_error(lambda: kiln.linalg.matrix_norm(kiln.ones(3)), lambda: torch.linalg.matrix_norm(torch.ones(3)))


# --- aminmax ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bfloat16"])
@pytest.mark.parametrize("kwargs", [{}, {"dim": 0}, {"dim": -1, "keepdim": True}, {"keepdim": True}])
def test_aminmax_matches_torch(dtype, kwargs):
    array = RNG.integers(0, 9, size=(5, 7)) if dtype in ("int64", "uint8") else RNG.standard_normal((5, 7))
    k, t = _pair(array, dtype)
    km, tm = kiln.aminmax(k, **kwargs), torch.aminmax(t, **kwargs)
    _close(tuple(km), tuple(tm))
    assert type(km).__name__ == "aminmax" and km.min is km[0] and km.max is km[1]
    _close(tuple(k.t().aminmax(**kwargs)), tuple(t.t().aminmax(**kwargs)))


def test_aminmax_gradient_and_nan_match_torch():
    a = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 0.0]])
    for kwargs in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}):
        k, t = _pair(a, "float64", requires_grad=True)
        kmn, kmx = kiln.aminmax(k, **kwargs)
        tmn, tmx = torch.aminmax(t, **kwargs)
        (kmn.sum() + 2 * kmx.sum()).backward()
        (tmn.sum() + 2 * tmx.sum()).backward()
        _close(k.grad, t.grad)
        k.grad = None
        t.grad = None
        kiln.aminmax(k, **kwargs).max.sum().backward()  # only one output used
        torch.aminmax(t, **kwargs).max.sum().backward()
        _close(k.grad, t.grad)
    k, t = _pair([[1.0, float("nan")], [2.0, 3.0]])
    _close(tuple(kiln.aminmax(k, dim=1)), tuple(torch.aminmax(t, dim=1)))
    _close(tuple(kiln.aminmax(k)), tuple(torch.aminmax(t)))


@pytest.mark.parametrize("case", [lambda L: L.aminmax(L.empty(0)), lambda L: L.aminmax(L.empty(2, 0), dim=1),
                                  lambda L: L.aminmax(L.ones(2), dim=2)])
def test_aminmax_errors_match_torch(case):
    assert_same_error(lambda: case(kiln), lambda: case(torch))


# --- var_mean, std_mean, count_nonzero -------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda L, x: L.var_mean(x),
    lambda L, x: L.var_mean(x, 1),
    lambda L, x: L.var_mean(x, (0, 2), unbiased=False, keepdim=True),
    lambda L, x: L.var_mean(x, dim=0, correction=0),
    lambda L, x: L.var_mean(x, False),
    lambda L, x: L.std_mean(x),
    lambda L, x: L.std_mean(x, -1, keepdim=True),
    lambda L, x: L.std_mean(x, dim=(0, 1), correction=2),
])
def test_var_mean_and_std_mean_match_torch(call):
    k, t = _pair(X, "float64", requires_grad=True)
    kv, tv = call(kiln, k), call(torch, t)
    assert isinstance(kv, tuple) and len(kv) == 2
    _close(tuple(kv), tuple(tv))
    (kv[0].sum() + 3 * kv[1].sum()).backward()
    (tv[0].sum() + 3 * tv[1].sum()).backward()
    _close(k.grad, t.grad)


@pytest.mark.parametrize("call", [
    lambda L, x: L.count_nonzero(x),
    lambda L, x: L.count_nonzero(x, 1),
    lambda L, x: L.count_nonzero(x, dim=(0, 2)),
    lambda L, x: x.count_nonzero(-1),
    lambda L, x: L.count_nonzero(x > 0.5, 0),
])
def test_count_nonzero_matches_torch(call):
    a = RNG.integers(-1, 2, size=(3, 4, 5)).astype(np.float32)
    k, t = _pair(a)
    kc, tc = call(kiln, k), call(torch, t)
    _close(kc, tc)
    _close(call(kiln, k.transpose(0, 2)), call(torch, t.transpose(0, 2)))


def test_count_nonzero_errors_match_torch():
    assert_same_error(lambda: kiln.count_nonzero(kiln.ones(2, 3), (0, 0)),
                      lambda: torch.count_nonzero(torch.ones(2, 3), (0, 0)), message=False)


# --- out= forms ------------------------------------------------------------------------------

OUT_CASES = {
    "sum": lambda L, x, o: L.sum(x, 0, out=o),
    "sum keepdim": lambda L, x, o: L.sum(x, (0, 1), keepdim=True, out=o),
    "sum dtype": lambda L, x, o: L.sum(x, 1, dtype=L.float64, out=o),
    "nansum": lambda L, x, o: L.nansum(x, 1, out=o),
    "mean": lambda L, x, o: L.mean(x, 0, out=o),
    "prod": lambda L, x, o: L.prod(x, 1, out=o),
    "amax": lambda L, x, o: L.amax(x, 0, out=o),
    "amin": lambda L, x, o: L.amin(x, (0, 1), out=o),
    "argmax": lambda L, x, o: L.argmax(x, 1, out=o),
    "argmin": lambda L, x, o: L.argmin(x, out=o),
    "all": lambda L, x, o: L.all(x, 0, out=o),
    "all full": lambda L, x, o: L.all(x, out=o),
    "any": lambda L, x, o: L.any(x, 1, out=o),
    "any full": lambda L, x, o: L.any(x, out=o),
    "var": lambda L, x, o: L.var(x, 0, out=o),
    "std": lambda L, x, o: L.std(x, 1, correction=0, out=o),
    "logsumexp": lambda L, x, o: L.logsumexp(x, 1, out=o),
    "cumsum": lambda L, x, o: L.cumsum(x, 0, out=o),
    "cumprod": lambda L, x, o: L.cumprod(x, 1, out=o),
    "vector_norm": lambda L, x, o: L.linalg.vector_norm(x, 2, 0, out=o),
}


@pytest.mark.parametrize("name", list(OUT_CASES))
@pytest.mark.parametrize("out_dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("out_shape", [(0,), (4,), (2, 2)])
def test_out_forms_match_torch(name, out_dtype, out_shape):
    fn = OUT_CASES[name]
    a = RNG.standard_normal((3, 4)) / 4 + 1
    k, t = _pair(a)
    ko = kiln.zeros(out_shape, dtype=getattr(kiln, out_dtype))
    to = torch.zeros(out_shape, dtype=getattr(torch, out_dtype))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the resize warning of a non-empty out of the wrong shape
        if raised(lambda: fn(torch, t, to.clone())) is not None:
            assert_same_error(lambda: fn(kiln, k, ko), lambda: fn(torch, t, to), message=out_dtype != "bool" or
                              name not in ("cumsum", "cumprod"))
            return
        kr, tr = fn(kiln, k, ko), fn(torch, t, to)
    assert kr is ko
    _close(ko, to)
    _close(kr, tr)


def test_out_resize_warns_like_torch():
    with pytest.warns(UserWarning, match="resized"):
        kiln.sum(kiln.ones(3, 4), 0, out=kiln.zeros(5))


@pytest.mark.parametrize("correction", [0, 1, 2, 3])
@pytest.mark.parametrize("op", ["var", "std", "var_mean"])
def test_variance_gradients_with_a_correction_at_or_past_the_count(op, correction):
    # torch's 2 / (N - correction) is not clamped: past N the factor turns negative, at N it is infinite
    values = [[2.0], [1.0]]
    k = kiln.tensor(values, dtype=kiln.float64, requires_grad=True)
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)

    def run(lib, x):
        out = lib.var_mean(x, dim=0, correction=correction)[0] if op == "var_mean" else getattr(x, op)(
            dim=0, correction=correction)
        return out.sum()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (kg,) = kiln.autograd.grad(run(kiln, k), [k])
        (tg,) = torch.autograd.grad(run(torch, t), [t])
    np.testing.assert_array_equal(kg.numpy(), tg.numpy())
